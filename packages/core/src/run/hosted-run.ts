import { checkId, checkOptionNames, checkSessionId, optionNames, shortId } from '../backend/checks.js';
import { abortable, pause } from '../backend/deadline.js';
import { ConcurrencyError, ConfigurationError, describe, InvalidInputError, isAbortError } from '../errors.js';
import { generateId } from '../messages/id.js';
import type { Message } from '../messages/message.js';
import { AgentSession } from '../session/agent-session.js';
import { markSaved, type SaveQueue, saveMerging, setSessionBase } from '../session/session-merge.js';
import { sessionMethods } from '../session/session-methods.js';
import type { AgentResponse } from '../contracts/agent-response.js';
import type { ContextProvider } from '../contracts/run-view.js';
import type { SessionStore, StoredSession, TurnLease } from '../contracts/session-store.js';
import { checkContextProviders } from './agent-options.js';
import type { AgentInput, AgentRunOptions } from './agent.js';
import { type DefaultHistory, defaultHistory } from './default-history.js';
import { type AgentRuntime, toMessages } from './execute-run.js';
import { awaitPostReplyWork } from './post-reply-work.js';
import type { RunStreamSink } from './run-stream.js';
import { clearSessionData } from './session-lifecycle.js';
import { owesTurnStored, settleTurnStored } from './turn-stored.js';
import { checkSameInputs, flightKey, leaseKey, runningTurnsOf, turnRunningError, waitUntil } from './running-turns.js';
import { storedReply } from './stored-reply.js';

/** What a streaming hosted run hands over, so that a reply it did not run itself still reaches the caller's stream. */
export interface HostedStream {
  /** Where the caller reads. */
  sink: RunStreamSink;
  /** Aborts when the caller stops reading. */
  controller: AbortController;
}

/** The first pause between two looks at a lease held in another process, in ms; doubled up to `MAX_POLL_MS`. */
const FIRST_POLL_MS = 25;
const MAX_POLL_MS = 500;

const RUN_OPTIONS = optionNames<AgentRunOptions>()({
  session: true,
  sessionId: true,
  userId: true,
  options: true,
  contextProviders: true,
  approvals: true,
  signal: true,
});

/**
 * A run, hosted when it names a `sessionId`: the session is loaded from the agent's `sessionStore`
 * (a new one, owned by `userId`, when the store does not hold the id: stored before the run, so no
 * other user can take the id meanwhile), `execute` runs it, the providers' work after the reply is
 * waited for (`awaitPostReplyWork`), and the session is saved, merging what other runs saved
 * meanwhile (`agent.saveSession`). Without `sessionId`, `execute` runs as given. Either way the
 * providers' `onTurnStored` hooks run once the turn is stored (`settleTurnStored`). The input is
 * checked (`InvalidInputError`) before a new session is stored, so a refused input leaves nothing
 * behind.
 *
 * A turn runs once: a hosted run whose input messages (by id; not a string input, not a run with
 * `approvals`) are those of a turn running now on the session waits for it and answers with its
 * reply instead of running it again (`runOnce`). `stream`: where a streaming run's caller reads.
 * @throws ConfigurationError for `sessionId` with `session`, `sessionId` without a `sessionStore`,
 *   `userId` without `sessionId`, or a blank `sessionId` or `userId`; before anything runs.
 * @throws InvalidInputError when `userId` is given and the session belongs to another user (or to
 *   none), or when the input reuses the ids of a turn running now with other content; before
 *   anything runs or is stored.
 * @throws ConcurrencyError when the save met a change it cannot merge (`turnStored` says whether
 *   the turn is stored anyway), or with `turnRunning: true` when the same turn runs in another
 *   request and did not end within `runningTurns.waitMs`, or with `sessionDeleted: true` when the
 *   session was deleted while the turn ran (what the turn stored is removed first).
 */
export async function hostedRun(
  runtime: AgentRuntime,
  runOptions: AgentRunOptions,
  queue: SaveQueue,
  input: AgentInput,
  execute: (options: AgentRunOptions) => Promise<AgentResponse>,
  stream?: HostedStream,
): Promise<AgentResponse> {
  checkOptionNames('agent.run', runOptions, RUN_OPTIONS);
  const { sessionId, userId, ...rest } = runOptions;
  const { name, client, sessionStore: store } = runtime.options;
  if (sessionId === undefined) {
    if (userId !== undefined) {
      throw new ConfigurationError(
        `Agent "${name}": a run's userId names the owner of its sessionId; pass sessionId with it (for a session you pass yourself, set its metadata.userId).`,
      );
    }
    return settleTurnStored(await execute(runOptions)); // the turn is stored once the run ends
  }
  checkSessionId(sessionId);
  if (userId !== undefined) checkId(userId, 'userId of a hosted run');
  if (rest.session) {
    throw new ConfigurationError(
      `Agent "${name}": a run takes either a session or a sessionId (got both, session ${shortId(rest.session.sessionId)} and sessionId ${shortId(sessionId)}). Pass sessionId to have the agent load and save the session, or session to do it yourself.`,
    );
  }
  if (!store) {
    throw new ConfigurationError(
      `Agent "${name}" has no sessionStore, so it cannot load session ${shortId(sessionId)}; pass one to createAgent, or pass the session itself (session).`,
    );
  }
  const providers = rest.contextProviders ? checkContextProviders(rest.contextProviders) : runtime.options.contextProviders;
  const history = rest.contextProviders ? defaultHistory(client, providers) : runtime.history;
  const checkInput = () => toMessages(input, runtime.options.limits);
  const hosted = new HostedTurn({ runtime, store, sessionId, userId, rest, providers, history, queue, execute, checkInput, stream });
  // A string is a new message (a new id) every time: only messages given with their ids can repeat a turn.
  const inputs = typeof input === 'string' || rest.approvals !== undefined ? [] : checkInput();
  return inputs.length > 0 ? hosted.runOnce(inputs) : hosted.run(await hosted.load());
}

/** What one hosted run works with. */
interface HostedTurnInit {
  runtime: AgentRuntime;
  store: SessionStore;
  sessionId: string;
  userId: string | undefined;
  /** The run's options without `sessionId` and `userId`. */
  rest: Omit<AgentRunOptions, 'sessionId' | 'userId'>;
  /** The run's providers (the agent's, or the run's own `contextProviders`, checked). */
  providers: readonly ContextProvider[];
  history: DefaultHistory;
  queue: SaveQueue;
  execute: (options: AgentRunOptions) => Promise<AgentResponse>;
  checkInput: () => Message[];
  stream: HostedStream | undefined;
}

/** One hosted run: load, run once (or wait for the run of the same turn), save. */
class HostedTurn {
  readonly #init: HostedTurnInit;
  /** What ends a wait for another run of the turn: the run's signal, and a streaming caller that stops reading. */
  readonly #waitSignal: AbortSignal | undefined;

  constructor(init: HostedTurnInit) {
    this.#init = init;
    const { rest, stream } = init;
    const stopped = stream?.controller.signal;
    this.#waitSignal = rest.signal && stopped ? AbortSignal.any([rest.signal, stopped]) : (rest.signal ?? stopped);
  }

  /** The session, loaded (or created) and checked for the user (see `load`). */
  load(): Promise<AgentSession> {
    const { runtime, store, sessionId, userId, history, queue, rest, checkInput } = this.#init;
    const { restoreSession } = sessionMethods(runtime.options.name, history.validators, store, queue);
    const adopt = (stored: StoredSession): AgentSession => {
      if (userId !== undefined && stored.session.metadata.userId !== userId) {
        throw new InvalidInputError(
          `Session ${shortId(sessionId)} cannot be used by user ${shortId(userId)}: it belongs to ${stored.session.metadata.userId === undefined ? 'no user (it was saved without a userId)' : 'another user'}. Nothing was run or stored. Give each new conversation an id the server generates (generateId()) and hands to the client, so ids of other users are never guessed or reused.`,
        );
      }
      const session = restoreSession(stored.session);
      session.etag = stored.etag;
      setSessionBase(session, stored.session);
      return session;
    };
    return load(store, sessionId, userId, rest.signal ? { signal: rest.signal } : {}, adopt, checkInput);
  }

  /**
   * Runs the turn on `session`, waits for the providers' work after the reply, saves the session,
   * then runs the `onTurnStored` hooks. A delete wins over the turn: when the session was deleted
   * while it ran (its save finds it gone; or, after a failed run or `onTurnStored` hooks, a look at
   * the store does), what the run's providers stored for it is removed (`onSessionDeleted`), and the
   * run fails with a `ConcurrencyError` with `sessionDeleted: true`.
   */
  async run(session: AgentSession): Promise<AgentResponse> {
    const { runtime, store, sessionId, rest, providers, history, queue, execute } = this.#init;
    const { signal } = rest;
    let response: AgentResponse;
    try {
      response = await execute({ ...rest, session });
      await awaitPostReplyWork({ providers, sessionId, timeoutMs: runtime.options.providerTimeoutMs, signal, emit: runtime.emit });
      await queue(sessionId, signal, () => saveMerging(store, session, { providers: history.validators, signal }));
    } catch (error) {
      // A save that found the session gone says so; any other failure may come after writes (a
      // history storing each model call), so the store is asked. The look and the removal go on
      // after a caller that aborted has left: it is answered at once, and nothing is left behind.
      const settled = (async () => {
        const deleted = (ConcurrencyError.isInstance(error) && error.sessionDeleted === true) || (await this.#gone(session, error));
        return deleted ? await this.#removeTurn(session, error) : error;
      })();
      throw await abortable(settled, signal).catch((aborted: unknown) => aborted);
    }
    if (!owesTurnStored(response)) return response;
    // Still inside the turn's flight and lease: a repeat of this turn waits until what is derived from it is written too.
    await settleTurnStored(response);
    // The hooks wrote after the save, so a delete that came after the save may have missed it. A
    // caller that aborts meanwhile is answered at once, as above.
    const removed = this.#gone(session).then((gone) => (gone ? this.#removeTurn(session, undefined) : undefined));
    const outcome = await abortable(removed, signal);
    if (outcome) throw outcome;
    return response;
  }

  /**
   * Whether the store no longer holds the session (it was deleted while the turn ran). A store that
   * cannot be read answers no: with `failure`, the run fails with that as it is; without, the run
   * succeeds, with a `session-check-failed` warning.
   */
  async #gone(session: AgentSession, failure?: unknown): Promise<boolean> {
    const { runtime, store, sessionId } = this.#init;
    try {
      // No signal: a run its caller aborted is still checked.
      return (await store.get(sessionId)) === undefined;
    } catch (error) {
      if (failure === undefined) {
        runtime.emit?.({
          type: 'warning',
          code: 'session-check-failed',
          message: `Session ${shortId(session.sessionId)}: after the turn was stored, whether the session was deleted meanwhile could not be read (${describe(error)}); if it was, call agent.deleteSession again to remove what the turn stored.`,
        });
      }
      return false;
    }
  }

  /**
   * Removes what the run's providers stored for the turn of a session deleted while it ran, and
   * answers the error the run fails with: `sessionDeleted: true`, and `turnStored: false` once the
   * removal is done (`true` when it failed: then the error says to delete the session again).
   */
  async #removeTurn(session: AgentSession, failure: unknown): Promise<ConcurrencyError> {
    const { runtime, sessionId, rest, history } = this.#init;
    const { name, client, providerTimeoutMs } = runtime.options;
    const id = shortId(sessionId);
    const providers = history.providersFor(session, rest.options ?? {});
    try {
      // Not the caller's signal: a caller that went away still leaves nothing behind.
      await clearSessionData({ name, client, providers, session, signal: new AbortController().signal, timeoutMs: providerTimeoutMs });
    } catch (error) {
      return new ConcurrencyError(
        sessionId,
        `Session ${id} was deleted while this turn ran, and removing what the turn stored failed (${describe(error)}): its messages may be left in the history. Call agent.deleteSession(${JSON.stringify(sessionId)}) again to remove them; do not run the turn again.`,
        { cause: error, turnStored: true, sessionDeleted: true },
      );
    }
    return new ConcurrencyError(
      sessionId,
      `Session ${id} was deleted while this turn ran (agent.deleteSession or agent.deleteUserData): nothing of the turn is kept (what its providers stored, its reply included, was removed). Do not run it again on this session id: that would start a new conversation under it.`,
      { ...(failure === undefined ? {} : { cause: failure }), turnStored: false, sessionDeleted: true },
    );
  }

  /**
   * Runs the turn of `inputs` once. When a run of it is running in this process (same session,
   * user and input ids), waits for it and answers with a copy of its response; when that run fails,
   * fails with its error, unless it failed because its own caller aborted it (a closed connection):
   * then the turn is still to run, and runs here. Otherwise runs it (`runLeased`), and the runs of
   * the same turn that start meanwhile wait for this one.
   * @throws InvalidInputError when the running turn has other content under these ids.
   * @throws ConcurrencyError with `turnRunning: true` when it did not end within `runningTurns.waitMs`.
   */
  async runOnce(inputs: Message[]): Promise<AgentResponse> {
    const { runtime, sessionId, userId } = this.#init;
    const turns = runningTurnsOf(runtime, runtime.options.runningTurns);
    const { waitMs } = turns.options;
    const deadline = performance.now() + waitMs;
    const key = flightKey(sessionId, userId, inputs);
    for (let flight = turns.get(key); flight; flight = turns.get(key)) {
      checkSameInputs(sessionId, flight.inputs, inputs);
      flight.waiters++;
      const outcome = await waitUntil(flight.outcome, this.#waitSignal, deadline, () => turnRunningError(sessionId, inputs, waitMs));
      if ('response' in outcome) return this.#answer(structuredClone(outcome.response));
      if (!outcome.abandoned) throw outcome.error;
    }
    const end = turns.start(key, inputs);
    try {
      const response = await this.#runLeased(inputs, deadline);
      end({ response });
      return response;
    } catch (error) {
      end({ error, abandoned: isAbortError(error, this.#waitSignal) });
      throw error;
    }
  }

  /**
   * Runs the turn holding the store's lease on it (`leaseTurn`, when the store has it; else just
   * runs). When another process holds it, waits (pausing between looks, until `deadline`) until the
   * lease is free, takes it, and answers with the reply that process stored, or runs the turn
   * when it stored none (it failed, or died and its lease expired).
   */
  async #runLeased(inputs: Message[], deadline: number): Promise<AgentResponse> {
    const { runtime, store, sessionId, rest, history } = this.#init;
    const session = await this.load();
    if (typeof store.leaseTurn !== 'function' || typeof store.releaseTurn !== 'function') return this.run(session);
    const { leaseMs, waitMs } = runtime.options.runningTurns;
    const lease: TurnLease = { turn: await leaseKey(inputs), holder: generateId(), ttlMs: leaseMs };
    const signal = this.#waitSignal;
    if (await store.leaseTurn(sessionId, { ...lease, ...(signal ? { signal } : {}) })) return this.#holding(lease, () => this.run(session));
    for (let attempt = 0; ; attempt++) {
      const left = deadline - performance.now();
      if (left <= 0) throw turnRunningError(sessionId, inputs, waitMs);
      await pause(Math.min(left, FIRST_POLL_MS * 2 ** Math.min(attempt, 5), MAX_POLL_MS), signal);
      if (await store.leaseTurn(sessionId, { ...lease, ...(signal ? { signal } : {}) })) break;
    }
    return this.#holding(lease, async () => {
      const fresh = await this.load();
      const reply = await storedReply(runtime, history, fresh, inputs, rest.options ?? {}, rest.signal);
      return reply ? this.#answer(reply) : this.run(fresh);
    });
  }

  /**
   * Runs `work` holding `lease`: renews it every third of its `ttlMs` meanwhile, then releases it
   * (after the save, so a request waiting for the turn finds it stored). A renewal that finds the
   * lease taken, or a renewal or release that fails, is a `turn-lease-failed` warning: the lease
   * expires by itself, and the turn is stored once either way.
   */
  async #holding<T>(lease: TurnLease, work: () => Promise<T>): Promise<T> {
    const { runtime, store, sessionId } = this.#init;
    const warn = (message: string) => runtime.emit?.({ type: 'warning', code: 'turn-lease-failed', message });
    const id = shortId(sessionId);
    let timer: ReturnType<typeof setTimeout> | undefined;
    let renewing: Promise<void> | undefined;
    let held = true;
    const schedule = () => {
      timer = setTimeout(
        () => {
          renewing = store.leaseTurn!(sessionId, lease).then(
            (still) => {
              if (still || !held) return;
              held = false;
              warn(
                `The lease on a turn of session ${id} expired while it ran and another request took it (the process was too busy to renew it within ${lease.ttlMs} ms, runningTurns.leaseMs); that request may run the turn too. It is stored once.`,
              );
            },
            (error: unknown) => warn(`The lease on a turn of session ${id} could not be renewed: ${describe(error)}.`),
          );
          void renewing.then(() => {
            if (held && timer !== undefined) schedule();
          });
        },
        Math.max(1, Math.floor(lease.ttlMs / 3)),
      );
      (timer as { unref?: () => void }).unref?.();
    };
    schedule();
    try {
      return await work();
    } finally {
      clearTimeout(timer);
      timer = undefined;
      await renewing;
      try {
        // No signal: the lease is released even when the run was aborted.
        await store.releaseTurn!(sessionId, { turn: lease.turn, holder: lease.holder });
      } catch (error) {
        warn(`The lease on a turn of session ${id} could not be released (it expires within ${lease.ttlMs} ms): ${describe(error)}.`);
      }
    }
  }

  /** A reply this request did not run itself, handed to a streaming caller as one update per message. */
  async #answer(response: AgentResponse): Promise<AgentResponse> {
    const sink = this.#init.stream?.sink;
    if (sink) {
      for (const m of response.messages) {
        await sink.push({ messageId: m.id, role: m.role, contents: m.contents, ...(m.metadata ? { metadata: m.metadata } : {}) });
      }
    }
    return response;
  }
}

/**
 * The stored session `sessionId` (`adopt` checks its owner), or a new one owned by `userId`, stored
 * at once (`ifMatch: null`) so that the id is taken; when another writer stored it first, theirs.
 */
async function load(
  store: SessionStore,
  sessionId: string,
  userId: string | undefined,
  signalOption: { signal?: AbortSignal },
  adopt: (stored: StoredSession) => AgentSession,
  checkInput: () => void,
): Promise<AgentSession> {
  // Read without `userId`, so a session of another user is told apart from none (and not re-created).
  const stored = await store.get(sessionId, signalOption);
  if (stored) return adopt(stored);
  checkInput();
  const session = new AgentSession(userId === undefined ? { sessionId } : { sessionId, userId });
  try {
    markSaved(session, session.toJSON(), await store.set(session.toJSON(), { ifMatch: null, ...signalOption }));
    return session;
  } catch (error) {
    if (!ConcurrencyError.isInstance(error)) throw error;
  }
  const created = await store.get(sessionId, signalOption);
  if (!created) {
    throw new ConcurrencyError(
      sessionId,
      `Session ${shortId(sessionId)} was created and deleted by other writers while this run started; nothing was run or stored. Run it again.`,
      { turnStored: false },
    );
  }
  return adopt(created);
}
