import type { ProviderPhase } from './contracts/events.js';

const BASE = 'ctx.error';
const baseSymbol = Symbol.for(BASE);

function hasMarker(error: unknown, marker: string): boolean {
  if (typeof error !== 'object' || error === null) return false;
  try {
    return (error as Record<symbol, unknown>)[Symbol.for(marker)] === true;
  } catch {
    return false; // a Proxy whose trap throws is no CtxError
  }
}

/**
 * Base class of every error ctx throws. `CtxError.isInstance(e)` (and each subclass's) works
 * across duplicate installs of `@ctx/core`, where `instanceof` does not.
 */
export class CtxError extends Error {
  private readonly [baseSymbol] = true;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CtxError';
  }

  /** Whether `error` is a `CtxError` from any copy of `@ctx/core`. */
  static isInstance(error: unknown): error is CtxError {
    return hasMarker(error, BASE);
  }
}

const CONFIGURATION = `${BASE}.configuration`;
const configurationSymbol = Symbol.for(CONFIGURATION);
/** The agent, a provider or a backend was set up wrongly (duplicate source ids, bad options, bad credentials). */
export class ConfigurationError extends CtxError {
  private readonly [configurationSymbol] = true;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ConfigurationError';
  }
  static override isInstance(error: unknown): error is ConfigurationError {
    return hasMarker(error, CONFIGURATION);
  }
}

const SESSION_STATE = `${BASE}.session-state`;
const sessionStateSymbol = Symbol.for(SESSION_STATE);
/** Session JSON or a provider's state is malformed. `path` names the offending place, e.g. `$.state.memory.messages[3].role`. */
export class SessionStateError extends CtxError {
  private readonly [sessionStateSymbol] = true;
  /** JSON path of the offending value. */
  readonly path: string;
  /** What is wrong there. */
  readonly problem: string;
  /** The session the data belongs to, when the code that found the problem knew it. */
  readonly sessionId: string | undefined;
  /** `options.sessionId` names the session in the message (quoted and shortened, ids only). */
  constructor(path: string, problem: string, options?: { cause?: unknown; sessionId?: string | undefined }) {
    const session = options?.sessionId === undefined ? '' : ` of session ${JSON.stringify(truncate(options.sessionId))}`;
    super(`Invalid session data${session} at ${path}: ${problem}`, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SessionStateError';
    this.path = path;
    this.problem = problem;
    this.sessionId = options?.sessionId;
  }

  /**
   * This error naming `sessionId` (a new error with the same path, problem and cause), or this one
   * as it is when it names a session already or `sessionId` is undefined.
   */
  inSession(sessionId: string | undefined): SessionStateError {
    if (sessionId === undefined || this.sessionId !== undefined) return this;
    const named = new SessionStateError(this.path, this.problem, { cause: this.cause, sessionId });
    named.stack = this.stack?.replace(this.message, named.message);
    return named;
  }
  static override isInstance(error: unknown): error is SessionStateError {
    return hasMarker(error, SESSION_STATE);
  }
}

const PROVIDER = `${BASE}.provider`;
const providerSymbol = Symbol.for(PROVIDER);
/** A context provider failed. `cause` holds what it threw. */
export class ProviderError extends CtxError {
  private readonly [providerSymbol] = true;
  /** The failing provider's `sourceId`. */
  readonly sourceId: string;
  /** The hook that failed. */
  readonly phase: ProviderPhase;
  constructor(sourceId: string, phase: ProviderPhase, cause: unknown) {
    super(`Context provider "${sourceId}" failed in ${phase}: ${describe(cause)}`, { cause });
    this.name = 'ProviderError';
    this.sourceId = sourceId;
    this.phase = phase;
  }
  static override isInstance(error: unknown): error is ProviderError {
    return hasMarker(error, PROVIDER);
  }
}

const CONCURRENCY = `${BASE}.concurrency`;
const concurrencySymbol = Symbol.for(CONCURRENCY);
/**
 * A write lost an optimistic-concurrency race: the stored value changed since it was read, and the
 * two could not be merged. `agent.saveSession` and a hosted run (`agent.run(input, { sessionId })`)
 * merge first, so from them it means a real conflict; `turnStored` then says what to do.
 */
export class ConcurrencyError extends CtxError {
  private readonly [concurrencySymbol] = true;
  /** The session whose write conflicted. */
  readonly sessionId: string;
  /**
   * Whether the turn of the run whose save failed is stored anyway, where that is known: `true` when
   * a history provider that keeps messages outside the session (Redis, Cosmos DB) stored it (do not
   * run it again: only the session's own changes were lost), `false` when nothing of it was stored
   * (run it again with the same input message, same id: it is stored once). Undefined when the
   * write was not a run's (a store's own `set`, a save with no run since the last save).
   */
  readonly turnStored: boolean | undefined;
  /**
   * `true` when a hosted run found the same turn (the same input message ids, on the same session)
   * running in another request and it was not stored within the agent's `runningTurns.waitMs`:
   * nothing of this request ran or was stored; send the same request again a little later: while
   * the turn still runs it waits again, and once it has ended the request runs as a retry of the
   * turn (stored once, its reply replacing the earlier one). Undefined otherwise.
   */
  readonly turnRunning: boolean | undefined;
  /**
   * `true` when the session was deleted (`agent.deleteSession`, `agent.deleteUserData`) while the
   * run's turn ran: a hosted run then removes what its providers stored for the turn before it
   * fails (`turnStored` is `false` once that is done), so nothing of the conversation is kept. Do
   * not run the turn again on this session id: that would start a new conversation under it.
   * Undefined otherwise.
   */
  readonly sessionDeleted: boolean | undefined;
  constructor(
    sessionId: string,
    message?: string,
    options?: { cause?: unknown; turnStored?: boolean; turnRunning?: boolean; sessionDeleted?: boolean },
  ) {
    super(
      message ?? `Session "${truncate(sessionId)}" was changed by another writer since it was read; reload it and retry.`,
      options?.cause === undefined ? undefined : { cause: options.cause },
    );
    this.name = 'ConcurrencyError';
    this.sessionId = sessionId;
    this.turnStored = options?.turnStored;
    this.turnRunning = options?.turnRunning;
    this.sessionDeleted = options?.sessionDeleted;
  }
  static override isInstance(error: unknown): error is ConcurrencyError {
    return hasMarker(error, CONCURRENCY);
  }
}

const BACKEND = `${BASE}.backend-unavailable`;
const backendSymbol = Symbol.for(BACKEND);
/** A backend (database, search service, model API) could not be reached or kept failing after retries. */
export class BackendUnavailableError extends CtxError {
  private readonly [backendSymbol] = true;
  /** Which backend, e.g. `redis` or `openai`. */
  readonly backend: string;
  constructor(backend: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'BackendUnavailableError';
    this.backend = backend;
  }
  static override isInstance(error: unknown): error is BackendUnavailableError {
    return hasMarker(error, BACKEND);
  }
}

const WINDOW = `${BASE}.context-window-exceeded`;
const windowSymbol = Symbol.for(WINDOW);
/** The request does not fit the model's context window. Compact the conversation or lower budgets. */
export class ContextWindowExceededError extends CtxError {
  private readonly [windowSymbol] = true;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ContextWindowExceededError';
  }
  static override isInstance(error: unknown): error is ContextWindowExceededError {
    return hasMarker(error, WINDOW);
  }
}

const TOOL = `${BASE}.tool-execution`;
const toolSymbol = Symbol.for(TOOL);
/** A tool failed. The agent sends the message back to the model as the call's result and reports this error through diagnostics. */
export class ToolExecutionError extends CtxError {
  private readonly [toolSymbol] = true;
  /** The tool's name. */
  readonly toolName: string;
  /** The function call's id. */
  readonly callId: string;
  constructor(toolName: string, callId: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ToolExecutionError';
    this.toolName = toolName;
    this.callId = callId;
  }
  static override isInstance(error: unknown): error is ToolExecutionError {
    return hasMarker(error, TOOL);
  }
}

const INVALID_INPUT = `${BASE}.invalid-input`;
const invalidInputSymbol = Symbol.for(INVALID_INPUT);
/**
 * The caller's request is wrong, not the setup: input over a limit (`limit` names it), a run input
 * that is not a valid message, an unknown or repeated approval id, approvals without their session,
 * new input while calls wait for approval, a hosted run naming a session that belongs to another
 * user, an input message reusing the id of another stored message (a history provider finds it
 * before the model is called; the pipeline lets it through unwrapped). Nothing ran and nothing was stored; fix the request and send it again. An HTTP app answers
 * it with 400.
 */
export class InvalidInputError extends CtxError {
  private readonly [invalidInputSymbol] = true;
  /** The limit the input broke, e.g. `maxMessageBytes`; undefined when the input is malformed rather than too large. */
  readonly limit: string | undefined;
  constructor(message: string, options?: { cause?: unknown; limit?: string }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'InvalidInputError';
    this.limit = options?.limit;
  }
  static override isInstance(error: unknown): error is InvalidInputError {
    return hasMarker(error, INVALID_INPUT);
  }
}

/** A short, single-line description of any thrown value. Never throws (not for a bigint, a cycle or a hostile Proxy either). */
export function describe(error: unknown): string {
  try {
    if (error instanceof Error) return `${error.name}: ${error.message}`;
    return truncate(typeof error === 'string' ? error : (JSON.stringify(error) ?? String(error)));
  } catch {
    try {
      return truncate(String(error));
    } catch {
      return typeof error;
    }
  }
}

/** Shortens long ids for error messages. */
export function truncate(text: string, max = 80): string {
  return text.length <= max ? text : `${text.slice(0, max)}…(${text.length} chars)`;
}

/** Whether `error` ended a run because its `signal` was aborted (a backend's own timeout is not an abort). */
export function isAbortError(error: unknown, signal: AbortSignal | undefined): boolean {
  if (!signal?.aborted) return false;
  return error === signal.reason || (error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError'));
}
