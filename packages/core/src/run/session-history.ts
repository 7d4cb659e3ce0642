import { historiesIn } from '../policies/wrap-provider.js';
import { checkId, checkInteger, checkOptionNames, optionNames, shortId } from '../backend/checks.js';
import { abortable } from '../backend/deadline.js';
import { ConfigurationError, CtxError, describe, InvalidInputError } from '../errors.js';
import type { HistoryProvider } from '../history/history-provider.js';
import { isDeepFrozen } from '../messages/frozen.js';
import { Message } from '../messages/message.js';
import { AgentSession } from '../session/agent-session.js';
import type { JsonObject } from '../contracts/json.js';
import type { AgentView, ContextProvider } from '../contracts/run-view.js';
import type { SessionMetadata } from '../contracts/session.js';
import { checkContextProviders } from './agent-options.js';
import type { Agent, ForkSessionOptions } from './agent.js';
import { type DefaultHistory, defaultHistory } from './default-history.js';
import { type AgentRuntime, executeRun } from './execute-run.js';
import { settleTurnStored } from './turn-stored.js';
import { runHooks } from './provider-hooks.js';
import { isoNow } from '../messages/iso-now.js';

/** The history providers of one session. */
interface Histories {
  /** The history a run loads: the first history provider that loads, or the default in-memory one. */
  primary: HistoryProvider;
  /** Every history provider of the session (those that only store too), `primary` first. */
  all: HistoryProvider[];
  /** Every provider of the session (the default history included when the rule adds it), for the hooks. */
  providers: readonly ContextProvider[];
}

/** The newest messages a rewind by id reads first (see `readBack`). */
const REWIND_WINDOW = 64;

const FORK_OPTIONS = optionNames<ForkSessionOptions>()({ atMessageId: true, sessionId: true, signal: true });
const REGENERATE_OPTIONS = ['messageId', 'options', 'contextProviders', 'signal'] as const;

/**
 * The agent's operations on a session's stored conversation: read it, fork it at a message,
 * rewind it to a message, and regenerate a turn. Each works on every history provider of the
 * session: the one a run loads decides where a message is, and each other one (an audit log that
 * only stores) is cut at the same point in the conversation: after the last message it shares
 * with what the loading history keeps.
 */
export function sessionHistory(runtime: AgentRuntime): Pick<Agent, 'getHistory' | 'forkSession' | 'rewindSession' | 'regenerate'> {
  const { options } = runtime;
  const { name, client, providerTimeoutMs } = options;
  /** The undos of failed forks still running, by the fork's session id. */
  const undoing = new Map<string, Promise<unknown>>();
  /** The agent as the hooks of a session's providers see it. */
  const viewOf = (histories: Histories): AgentView => ({ name, client, contextProviders: histories.providers });

  /**
   * Runs `phase` of every provider of `histories` that has it: `onRewind` bounded like a lifecycle
   * hook; `onSessionForked`, whose work grows with the history, under `signal` only (as the copies).
   * @throws ProviderError for a hook that failed, or the abort reason.
   */
  const hooks = <K extends 'onRewind' | 'onSessionForked'>(
    histories: Histories,
    phase: K,
    signal: AbortSignal | undefined,
    call: (provider: ContextProvider & Required<Pick<ContextProvider, K>>, agent: AgentView, signal: AbortSignal) => unknown,
  ) => {
    const agent = viewOf(histories);
    const having = histories.providers.filter((p): p is ContextProvider & Required<Pick<ContextProvider, K>> => !!p[phase]);
    if (!having.length) return Promise.resolve([]);
    return runHooks(
      having,
      phase,
      signal ?? new AbortController().signal,
      providerTimeoutMs,
      async (p, hookSignal) => {
        await call(p, agent, hookSignal);
      },
      phase !== 'onSessionForked',
    );
  };

  /**
   * The session's history providers. An operation that `changes` the conversation is refused when
   * the service keeps it: ctx can neither copy nor change that one.
   * @throws ConfigurationError for something that is not a session, a conversation the service
   *   keeps (when `changes`), or when no history loads the conversation.
   */
  const historiesOf = (session: AgentSession, what: string, changes: boolean, history: DefaultHistory = runtime.history): Histories => {
    if (typeof session?.sessionId !== 'string' || typeof session.state !== 'object' || session.state === null) {
      throw new ConfigurationError(`Agent "${name}": ${what} takes an AgentSession.`);
    }
    const service = session.serviceSessionId;
    const kept = `the service keeps its conversation (serviceSessionId ${shortId(service ?? '')})`;
    if (changes && service !== undefined) {
      throw new ConfigurationError(
        `Agent "${name}" cannot ${what} session ${shortId(session.sessionId)}: ${kept}, which ctx can neither copy nor change. Start a new session instead.`,
      );
    }
    // `store: false`: whether the service keeps the conversation is the session's own serviceSessionId.
    const providers = history.providersFor(session, { store: false });
    const all = historiesIn(providers);
    const primary = all.find((p) => p.loadMessages === true || (p.loadMessages === 'auto' && service === undefined));
    if (!primary) {
      throw new ConfigurationError(
        `Agent "${name}" cannot ${what} session ${shortId(session.sessionId)}: ${kept} and no history provider of the agent loads it (loadMessages: true would).`,
      );
    }
    return { primary, all: [primary, ...all.filter((p) => p !== primary)], providers };
  };

  /** Every message of the session in `provider`, oldest first. */
  const read = (provider: HistoryProvider, session: AgentSession, signal: AbortSignal | undefined) =>
    abortable(provider.getMessages(session.sessionId, { state: slotOf(session, provider), ...(signal ? { signal } : {}) }), signal);

  /**
   * What a rewind to `messageId` reads of the loading history: its newest messages back to that one
   * (read in windows growing 4-fold from 64, each a `getMessages` with a `limit`), so a rewind by a
   * few turns reads a few messages however long the history. All of them when the cut is not by id
   * (`messageId` undefined), when the history cannot pop, or when another history or an `onRewind`
   * hook needs the messages kept.
   */
  const readBack = async (histories: Histories, session: AgentSession, messageId: string | undefined, signal: AbortSignal | undefined) => {
    const { primary } = histories;
    if (messageId === undefined || !primary.popMessages || histories.all.length > 1 || histories.providers.some((p) => p.onRewind)) {
      return read(primary, session, signal);
    }
    const state = slotOf(session, primary);
    for (let limit = REWIND_WINDOW; ; limit *= 4) {
      const args = { state, limit, ...(signal ? { signal } : {}) };
      const messages = await abortable(primary.getMessages(session.sessionId, args), signal);
      if (messages.length < limit || messages.some((m) => m.id === messageId)) return messages;
    }
  };

  /**
   * Where each other history is cut so that it keeps what `primary` keeps: after the last message
   * it shares with the kept part of the loading history (`keptIds`); at the start when it shares none.
   * Resolves to each provider's messages and its cut.
   */
  const cutsOf = async (histories: Histories, session: AgentSession, keptIds: ReadonlySet<string>, signal: AbortSignal | undefined) =>
    Promise.all(
      histories.all.slice(1).map(async (provider) => {
        const messages = await read(provider, session, signal);
        let cut = messages.length;
        while (cut > 0 && !keptIds.has(messages[cut - 1]!.id)) cut--;
        return { provider, messages, cut };
      }),
    );

  /**
   * Removes everything from index `cut` of the loading history on, and the same part of every other
   * history (see `cutsOf`). `locate` finds the cut in the loading history's messages. Every provider
   * that has something to remove must pop or replace, checked before anything is removed. Clears
   * `session.pending` when the calls it holds are removed. Resolves to what left the loading history.
   */
  const rewindAt = async (
    session: AgentSession,
    histories: Histories,
    locate: (messages: readonly Message[]) => number,
    signal: AbortSignal | undefined,
    messageId?: string,
  ): Promise<Message[]> => {
    const { primary } = histories;
    const messages = await readBack(histories, session, messageId, signal);
    const cut = locate(messages);
    // The other histories are cut where they share the kept part (none: nothing to compare).
    const others =
      histories.all.length > 1 ? await cutsOf(histories, session, new Set(messages.slice(0, cut).map((m) => m.id)), signal) : [];
    const plan = [{ provider: primary, messages, cut }, ...others].filter((step) => step.cut < step.messages.length);
    for (const { provider } of plan) {
      if (!provider.popMessages && !provider.replaceMessages) {
        throw new ConfigurationError(
          `Agent "${name}" cannot rewind session ${shortId(session.sessionId)}: history provider "${provider.sourceId}" can neither pop nor replace messages (no popMessages or replaceMessages); nothing was removed.`,
        );
      }
    }
    const removed = messages.slice(cut);
    // What other providers derived from the removed messages (their vectors) goes first: a failure
    // between the two writes leaves a history that still holds a message nothing recalls, never
    // a recall of a message the history no longer holds.
    if (removed.length && histories.providers.some((p) => p.onRewind)) {
      const kept = messages.slice(0, cut);
      await hooks(histories, 'onRewind', signal, (p, agent, hookSignal) =>
        p.onRewind({ agent, session, state: session.state[p.sourceId] ?? {}, removed, kept, signal: hookSignal }),
      );
    }
    for (const { provider, messages: stored, cut: at } of plan) {
      const args = { state: slotOf(session, provider), ...(signal ? { signal } : {}) };
      const done: Promise<unknown> = provider.popMessages
        ? provider.popMessages(session.sessionId, { ...args, count: stored.length - at })
        : provider.replaceMessages!(session.sessionId, stored.slice(0, at), args);
      await abortable(done, signal);
    }
    const waiting = new Set(session.pending?.approvals.map((a) => a.callId));
    if (removed.some((m) => Message.functionCalls(m).some((c) => waiting.has(c.callId)))) session.pending = undefined;
    return removed;
  };

  /** The refusal of a fork at a message the loading history does not hold: the caller's mistake. */
  const notInHistory = (session: AgentSession, atMessageId: string, histories: Histories, cause?: unknown) =>
    new InvalidInputError(
      `Cannot fork session ${shortId(session.sessionId)} at message ${shortId(atMessageId)}: it is not in the history (provider "${histories.primary.sourceId}"); nothing was copied.`,
      cause === undefined ? undefined : { cause },
    );

  /**
   * Why the loading history's `forkMessages` refused the fork (`error`: an `InvalidInputError`, or
   * the `ConfigurationError` of a backend written before refusals became `InvalidInputError`):
   * `notInHistory` when the message is not in it (read again to be sure), else `error` as it is.
   */
  const unknownForkPoint = async (
    session: AgentSession,
    atMessageId: string,
    histories: Histories,
    error: unknown,
    signal: AbortSignal | undefined,
  ): Promise<unknown> => {
    const messages = await read(histories.primary, session, signal).catch(() => undefined);
    return messages && !messages.some((m) => m.id === atMessageId) ? notInHistory(session, atMessageId, histories, error) : error;
  };

  return {
    async getHistory(session, { limit, signal } = {}) {
      if (limit !== undefined) checkInteger('getHistory', 'limit', limit);
      signal?.throwIfAborted();
      const { primary } = historiesOf(session, 'read the history of', false);
      const args = { state: slotOf(session, primary), ...(limit !== undefined ? { limit } : {}), ...(signal ? { signal } : {}) };
      return abortable(primary.getMessages(session.sessionId, args), signal);
    },

    async forkSession(session, forkOptions = {}) {
      checkOptionNames('agent.forkSession', forkOptions, FORK_OPTIONS);
      const { atMessageId, sessionId, signal } = forkOptions;
      const histories = historiesOf(session, 'fork', true);
      signal?.throwIfAborted();
      if (atMessageId !== undefined) checkId(atMessageId, 'message id to fork at');
      if (sessionId !== undefined) {
        checkId(sessionId, 'session id of the fork');
        if (sessionId === session.sessionId) {
          throw new ConfigurationError(`A fork needs a session id of its own; ${shortId(sessionId)} is the id of the session forked.`);
        }
        // A fork retried under the same id waits for the undo of the one that failed, which would remove its copy.
        await abortable(undoing.get(sessionId) ?? Promise.resolve(), signal);
        // A backend keyed by session id must not mix the copy into a conversation it already holds.
        const held = await Promise.all(
          histories.all.map((p) => abortable(p.getMessages(sessionId, { state: {}, limit: 1, ...(signal ? { signal } : {}) }), signal)),
        );
        const taken = histories.all.filter((_, i) => held[i]!.length > 0).map((p) => p.sourceId);
        if (taken.length) {
          throw new ConfigurationError(
            `Cannot fork into session ${shortId(sessionId)}: history provider(s) ${taken.map((id) => `"${id}"`).join(', ')} already hold messages of it. Fork into a new id (leave sessionId out) or delete that session first.`,
          );
        }
      }
      // Where each history is cut: the loading one at the message, the others after the last message they share with it.
      let cuts: Array<{ provider: HistoryProvider; at: string | undefined; empty: boolean }>;
      if (atMessageId === undefined || histories.all.length === 1) {
        cuts = histories.all.map((provider) => ({ provider, at: atMessageId, empty: false }));
      } else {
        const messages = await read(histories.primary, session, signal);
        const end = messages.findIndex((m) => m.id === atMessageId) + 1;
        if (end === 0) throw notInHistory(session, atMessageId, histories);
        const keptIds = new Set(messages.slice(0, end).map((m) => m.id));
        const others = await cutsOf(histories, session, keptIds, signal);
        cuts = [
          { provider: histories.primary, at: atMessageId, empty: false },
          ...others.map(({ provider, messages: stored, cut }) => ({ provider, at: stored[cut - 1]?.id, empty: cut === 0 })),
        ];
      }
      const now = isoNow();
      const { title, userId, custom } = session.metadata;
      const metadata: SessionMetadata = {
        createdAt: now,
        updatedAt: now,
        ...(title !== undefined ? { title } : {}),
        ...(userId !== undefined ? { userId } : {}),
        ...(custom !== undefined ? { custom: structuredClone(custom) } : {}),
        forkedFrom: { sessionId: session.sessionId, ...(atMessageId !== undefined ? { messageId: atMessageId } : {}) },
      };
      const fork = new AgentSession({ ...(sessionId !== undefined ? { sessionId } : {}), metadata });
      for (const sourceId of Object.keys(session.state)) fork.state[sourceId] = copyJson(session.state[sourceId]!);
      const copied: HistoryProvider[] = [];
      // Set once every history is copied: a refusal after it comes from no copy that never happened.
      let copiesDone = false;
      // The providers that derive data from the fork's messages, once their `onSessionForked` hooks started.
      let forked: ContextProvider[] = [];
      try {
        for (const { provider, at, empty } of cuts) {
          const toState = slotOf(fork, provider);
          copied.push(provider);
          if (empty) {
            await abortable(clearHistory(provider, fork.sessionId, toState, signal), signal);
          } else {
            const args = { fromState: slotOf(session, provider), toState, ...(at !== undefined ? { atMessageId: at } : {}) };
            await abortable(provider.forkMessages(session.sessionId, fork.sessionId, { ...args, ...(signal ? { signal } : {}) }), signal);
          }
          // A slot the source did not have stays absent unless the provider wrote to it.
          if (!(provider.sourceId in fork.state) && Object.keys(toState).length > 0) fork.state[provider.sourceId] = toState;
        }
        copiesDone = true;
        if (histories.providers.some((p) => p.onSessionForked)) {
          const messages = await read(histories.primary, fork, signal);
          forked = histories.providers.filter((p) => p.onSessionForked && !copied.includes(p as HistoryProvider));
          await hooks(histories, 'onSessionForked', signal, async (p, agent, hookSignal) => {
            const state = fork.state[p.sourceId] ?? {};
            await p.onSessionForked({ agent, source: session, session: fork, state, messages, signal: hookSignal });
            if (!(p.sourceId in fork.state) && Object.keys(state).length > 0) fork.state[p.sourceId] = state;
          });
        }
      } catch (error) {
        // A refusal of forkMessages (a message it does not hold: InvalidInputError, or ConfigurationError
        // from a backend written before) comes before it writes anything.
        const beforeWrite = !copiesDone && (InvalidInputError.isInstance(error) || ConfigurationError.isInstance(error));
        const toClear = beforeWrite ? copied.slice(0, -1) : copied;
        // The loading history refused the message first (one history: it was not read before): the caller's mistake when it is not there.
        const failure =
          beforeWrite && atMessageId !== undefined && copied.length === 1
            ? await unknownForkPoint(session, atMessageId, histories, error, signal)
            : error;
        await undoFork({ agent: viewOf(histories), fork, copied: toClear, forked, undoing, timeoutMs: providerTimeoutMs }, failure, signal);
      }
      return fork;
    },

    async rewindSession(session, messageId, { signal } = {}) {
      const histories = historiesOf(session, 'rewind', true);
      checkId(messageId, 'message id to rewind to');
      signal?.throwIfAborted();
      return rewindAt(
        session,
        histories,
        (messages) => {
          const at = messages.findIndex((m) => m.id === messageId);
          if (at === -1) {
            throw new InvalidInputError(
              `Cannot rewind session ${shortId(session.sessionId)} to message ${shortId(messageId)}: it is not in the history (provider "${histories.primary.sourceId}"); nothing was removed.`,
            );
          }
          return at;
        },
        signal,
        messageId,
      );
    },

    async regenerate(session, regenerateOptions = {}) {
      checkOptionNames('agent.regenerate', regenerateOptions, REGENERATE_OPTIONS);
      const { messageId, ...runOptions } = regenerateOptions;
      const history = runOptions.contextProviders
        ? defaultHistory(options.client, checkContextProviders(runOptions.contextProviders))
        : runtime.history;
      const histories = historiesOf(session, 'regenerate a turn of', true, history);
      if (messageId !== undefined) checkId(messageId, 'message id of the turn to regenerate');
      runOptions.signal?.throwIfAborted();
      let input: Message[] = [];
      await rewindAt(
        session,
        histories,
        (messages) => {
          const turn = turnAt(messages, messageId);
          if (!turn) {
            const where =
              messageId === undefined
                ? 'it holds no user message'
                : `message ${shortId(messageId)} is not in it, or no user message comes before it`;
            throw new InvalidInputError(
              `Cannot regenerate a turn of session ${shortId(session.sessionId)}: ${where} (history provider "${histories.primary.sourceId}"); nothing was removed.`,
            );
          }
          input = messages.slice(turn.start, turn.end);
          // The input stays stored: the run replaces it as a retry of the same turn, so a failed run loses nothing.
          return turn.end;
        },
        runOptions.signal,
      );
      return settleTurnStored(await executeRun(runtime, input, { ...runOptions, session }));
    },
  };
}

/**
 * A deep copy of plain JSON that shares the deep-frozen parts, which cannot change (the messages
 * of the in-memory history): a fork costs the structure of its state, not a second copy of the
 * conversation.
 */
function copyJson<T>(value: T): T {
  if (typeof value !== 'object' || value === null || isDeepFrozen(value)) return value;
  if (Array.isArray(value)) return value.map(copyJson) as T;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    // `__proto__` is an own data key in JSON: define it, as assigning it would set the prototype.
    if (key === '__proto__')
      Object.defineProperty(out, key, { value: copyJson(item), enumerable: true, writable: true, configurable: true });
    else out[key] = copyJson(item);
  }
  return out as T;
}

/** The provider's state slot of the session, or a throwaway `{}` (a slot is created only by a run). */
function slotOf(session: AgentSession, provider: HistoryProvider): JsonObject {
  return session.state[provider.sourceId] ?? {};
}

/**
 * The turn holding `messageId` (default: the last turn): its input is the consecutive user
 * messages that open it, from `start` to `end`; undefined when there is no such turn.
 */
function turnAt(messages: readonly Message[], messageId: string | undefined): { start: number; end: number } | undefined {
  let last = messageId === undefined ? messages.length - 1 : messages.findIndex((m) => m.id === messageId);
  if (last === -1) return undefined;
  while (last >= 0 && messages[last]!.role !== 'user') last--;
  if (last === -1) return undefined;
  let start = last;
  while (start > 0 && messages[start - 1]!.role === 'user') start--;
  let end = last + 1;
  while (end < messages.length && messages[end]!.role === 'user') end++;
  return { start, end };
}

/** Removes the session's messages from `provider` (`clearMessages`, else `replaceMessages` with none; nothing without either). */
async function clearHistory(
  provider: HistoryProvider,
  sessionId: string,
  state: JsonObject,
  signal: AbortSignal | undefined,
): Promise<void> {
  const args = { state, ...(signal ? { signal } : {}) };
  if (provider.clearMessages) await provider.clearMessages(sessionId, args);
  else await provider.replaceMessages?.(sessionId, [], args);
}

/** What a failed fork leaves to remove. */
interface ForkUndo {
  /** The agent forking (what the hooks see). */
  agent: AgentView;
  fork: AgentSession;
  /** The histories that copied, or may have copied, messages under the fork's id. */
  copied: readonly HistoryProvider[];
  /** The other providers whose `onSessionForked` started: each removes what it derived through `onSessionDeleted`. */
  forked: readonly ContextProvider[];
  /** The undos still running, by fork id: a fork retried under the same id waits for its own. */
  undoing: Map<string, Promise<unknown>>;
  /** The agent's `providerTimeoutMs`: each `onSessionDeleted` is bounded like a lifecycle hook. */
  timeoutMs: number | undefined;
}

/**
 * After a fork failed: removes the copies already made under the fork's id (each history's, and
 * what each provider whose `onSessionForked` started derived from them, through its
 * `onSessionDeleted`), then throws `error` (the abort reason when the signal aborted: the removal
 * then goes on in the background, and a fork retried under the same id waits for it).
 * @throws CtxError naming the providers whose copy could not be removed.
 */
async function undoFork(
  { agent, fork, copied, forked, undoing, timeoutMs }: ForkUndo,
  error: unknown,
  signal: AbortSignal | undefined,
): Promise<never> {
  const steps: Array<{ sourceId: string; run: () => Promise<unknown> }> = [
    ...copied.map((p) => ({ sourceId: p.sourceId, run: () => clearHistory(p, fork.sessionId, slotOf(fork, p), undefined) })),
    ...forked.flatMap((p) =>
      p.onSessionDeleted
        ? [
            {
              sourceId: p.sourceId,
              // The removal must happen even when the fork was aborted: it runs under a signal of its own,
              // bounded by the provider's timeout like every lifecycle hook.
              run: () =>
                runHooks([p], 'onSessionDeleted', new AbortController().signal, timeoutMs, (q, hookSignal) =>
                  q.onSessionDeleted!({ agent, session: fork, state: fork.state[q.sourceId] ?? {}, signal: hookSignal }),
                ),
            },
          ]
        : [],
    ),
  ];
  if (steps.length === 0) throw error;
  const undo = Promise.allSettled(steps.map((step) => step.run()));
  undoing.set(fork.sessionId, undo);
  void undo.then(() => {
    if (undoing.get(fork.sessionId) === undo) undoing.delete(fork.sessionId);
  });
  const outcomes = await abortable(undo, signal).catch(() => undefined);
  const left = (outcomes ?? []).flatMap((o, i) => (o.status === 'rejected' ? [`"${steps[i]!.sourceId}" (${describe(o.reason)})`] : []));
  if (left.length) {
    throw new CtxError(
      `Forking into session ${shortId(fork.sessionId)} failed (${describe(error)}), and what was already copied could not be removed from ${left.join(', ')}. Delete session ${shortId(fork.sessionId)} to remove it.`,
      { cause: error },
    );
  }
  throw error;
}
