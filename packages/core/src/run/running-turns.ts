import { shortId } from '../backend/checks.js';
import { MAX_TURN_LEASE_MS } from '../backend/turn-lease.js';
import { ConcurrencyError, ConfigurationError, InvalidInputError } from '../errors.js';
import { sameMessageContent } from '../history/message-conflict.js';
import { describeValue } from '../messages/json.js';
import type { Message } from '../messages/message.js';
import type { AgentResponse } from '../contracts/agent-response.js';

/**
 * How hosted runs treat a turn that is running now in another request (`AgentOptions.runningTurns`):
 * the same input message ids on the same session, a double submit or a retry on a slow network.
 */
export interface RunningTurnsOptions {
  /**
   * How long a hosted run waits for the same turn running in another request to end, in
   * milliseconds, before it fails with a `ConcurrencyError` with `turnRunning: true`. `0` does not
   * wait. Default 60000.
   */
  waitMs?: number;
  /**
   * How long the lease a hosted run holds on its turn in the `sessionStore` (`leaseTurn`) lasts
   * without renewal, in milliseconds, 100 to 3,600,000: how long a turn whose process died keeps
   * other processes waiting. Renewed every third of it while the run goes on. Default 15000.
   */
  leaseMs?: number;
}

/** `RunningTurnsOptions` checked, with the defaults. */
export interface CheckedRunningTurns {
  waitMs: number;
  leaseMs: number;
}

/** The shortest lease a run asks for: renewed every third of it, it must outlast a store round trip. */
const MIN_LEASE_MS = 100;

/**
 * Checks `AgentOptions.runningTurns`.
 * @throws ConfigurationError for an unknown option, a `waitMs` that is not a non-negative integer,
 *   or a `leaseMs` that is not an integer from 100 to 3,600,000.
 */
export function checkRunningTurns(options: RunningTurnsOptions | undefined): CheckedRunningTurns {
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new ConfigurationError(`createAgent: runningTurns must be an object { waitMs?, leaseMs? }, got ${describeValue(options)}.`);
  }
  for (const name of Object.keys(options ?? {})) {
    if (name !== 'waitMs' && name !== 'leaseMs')
      throw new ConfigurationError(`createAgent: runningTurns has no option ${JSON.stringify(name)}; it takes waitMs and leaseMs.`);
  }
  const waitMs = options?.waitMs ?? 60_000;
  if (!Number.isInteger(waitMs) || waitMs < 0)
    throw new ConfigurationError(`createAgent: runningTurns.waitMs must be a non-negative integer (ms), got ${describeValue(waitMs)}.`);
  const leaseMs = options?.leaseMs ?? 15_000;
  if (!Number.isInteger(leaseMs) || leaseMs < MIN_LEASE_MS || leaseMs > MAX_TURN_LEASE_MS) {
    throw new ConfigurationError(
      `createAgent: runningTurns.leaseMs must be an integer from ${MIN_LEASE_MS} to ${MAX_TURN_LEASE_MS} (ms), got ${describeValue(leaseMs)}.`,
    );
  }
  return { waitMs, leaseMs };
}

/** How a run of a turn ended, as the requests waiting for it see it. */
export type TurnOutcome =
  | { response: AgentResponse }
  | {
      error: unknown;
      /** The run ended because its own caller aborted it (a closed connection): the turn is still to run. */
      abandoned: boolean;
    };

/** A turn running in this process, which other hosted runs of the same turn wait for. */
interface Flight {
  /** The run's input messages, to tell a repeat of the turn from other messages reusing its ids. */
  inputs: readonly Message[];
  outcome: Promise<TurnOutcome>;
  /** How many runs wait for it (each takes a copy of the response: one is kept from the first caller's changes only then). */
  waiters: number;
}

/** Ends a flight: removes it, then tells its waiters how the run ended (a response is copied for them). */
export type EndFlight = (outcome: TurnOutcome) => void;

/**
 * The turns of hosted runs running in this process, by session, user and input message ids: one
 * per agent. A hosted run of a turn that is running here waits for it (`wait`) instead of running it.
 */
export class RunningTurns {
  readonly #flights = new Map<string, Flight>();

  constructor(readonly options: CheckedRunningTurns) {}

  /** The flight of a turn running now, by its key (`flightKey`). */
  get(key: string): Flight | undefined {
    return this.#flights.get(key);
  }

  /** Registers a turn as running here; the returned function ends it. */
  start(key: string, inputs: readonly Message[]): EndFlight {
    let end!: (outcome: TurnOutcome) => void;
    const outcome = new Promise<TurnOutcome>((resolve) => {
      end = resolve;
    });
    const flight: Flight = { inputs, outcome, waiters: 0 };
    this.#flights.set(key, flight);
    return (result) => {
      if (this.#flights.get(key) === flight) this.#flights.delete(key);
      // A copy for the waiters, so that what the first caller does with its response never reaches them.
      end(flight.waiters > 0 && 'response' in result ? { response: structuredClone(result.response) } : result);
    };
  }
}

/** The agents' running turns (keyed by each agent's runtime object, so they go with the agent). */
const perAgent = new WeakMap<object, RunningTurns>();

/** The running turns of the agent whose runtime is `owner`, made with `options` on first use. */
export function runningTurnsOf(owner: object, options: CheckedRunningTurns): RunningTurns {
  let turns = perAgent.get(owner);
  if (!turns) {
    turns = new RunningTurns(options);
    perAgent.set(owner, turns);
  }
  return turns;
}

/** The key of a turn in this process: the session, the user (a turn is never shared across users) and the input ids. */
export function flightKey(sessionId: string, userId: string | undefined, inputs: readonly Message[]): string {
  return JSON.stringify([sessionId, userId ?? null, ...inputs.map((m) => m.id)]);
}

/**
 * The key of a turn in a store's lease (`TurnLease.turn`): the SHA-256 of its input message ids, in
 * base64url (43 characters).
 */
export async function leaseKey(inputs: readonly Message[]): Promise<string> {
  const bytes = new TextEncoder().encode(JSON.stringify(inputs.map((m) => m.id)));
  const digest = new Uint8Array(await globalThis.crypto.subtle.digest('SHA-256', bytes));
  let binary = '';
  for (const byte of digest) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/**
 * Checks that a run of a turn running now sends the same messages: other content under the same
 * ids is the caller's mistake, not a repeat of the turn.
 * @throws InvalidInputError naming the message and the session; nothing has run or been stored.
 */
export function checkSameInputs(sessionId: string, running: readonly Message[], inputs: readonly Message[]): void {
  inputs.forEach((input, i) => {
    if (sameMessageContent(running[i], input)) return;
    throw new InvalidInputError(
      `Input message ${shortId(input.id)} has the id of another message running now in session ${shortId(sessionId)}: give every new message a new id, and send a message again only to retry it. Nothing was run or stored.`,
    );
  });
}

/** The error of a request whose turn runs in another request and did not end within `waitMs`. */
export function turnRunningError(sessionId: string, inputs: readonly Message[], waitMs: number): ConcurrencyError {
  return new ConcurrencyError(
    sessionId,
    `Session ${shortId(sessionId)}: the same turn (input message ${shortId(inputs[0]!.id)}) is running in another request and did not end within ${waitMs} ms (runningTurns.waitMs). Nothing of this request ran or was stored: send the same request again a little later (while the turn still runs it waits for it and answers with its reply; once it has ended, the request runs as a retry of the turn, stored once).`,
    { turnRunning: true },
  );
}

/**
 * Waits for `outcome` until `deadline` (`performance.now()` time; `Infinity` for none) or `signal`.
 * @throws the abort reason when `signal` aborts, or `onDeadline()` when the deadline passes first.
 */
export function waitUntil<T>(outcome: Promise<T>, signal: AbortSignal | undefined, deadline: number, onDeadline: () => Error): Promise<T> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    const onAbort = () => {
      done();
      reject(signal!.reason);
    };
    const timer =
      deadline === Number.POSITIVE_INFINITY
        ? undefined
        : setTimeout(
            () => {
              done();
              reject(onDeadline());
            },
            Math.max(0, deadline - performance.now()),
          );
    signal?.addEventListener('abort', onAbort, { once: true });
    outcome.then(
      (value) => {
        done();
        resolve(value);
      },
      (error: unknown) => {
        done();
        reject(error);
      },
    );
  });
}
