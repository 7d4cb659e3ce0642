import {
  BackendUnavailableError,
  ConcurrencyError,
  ConfigurationError,
  ContextWindowExceededError,
  CtxError,
  InvalidInputError,
  ProviderError,
  SessionStateError,
  ToolExecutionError,
} from './errors.js';

/**
 * The `limit`s of an `InvalidInputError` that measure what the caller sent, answered with 413:
 * the agent's `limits` (`maxMessageBytes`, `maxInputBytes`) and the size of a request body
 * (`maxBodyBytes`, `maxMessages`: `@ctx/ai-sdk`'s route). Other limits (`topK`) are a 400.
 */
const REQUEST_SIZE_LIMITS: ReadonlySet<string> = new Set(['maxMessageBytes', 'maxInputBytes', 'maxBodyBytes', 'maxMessages']);

/** Seconds after which a request refused because its turn is running (`turnRunning`) is worth sending again. */
const TURN_RUNNING_RETRY_AFTER = 1;

/** The generic text of each 5xx answer: a 5xx error's own message may name internals (hosts, keys, paths). */
const SERVER_MESSAGES: Readonly<Record<number, string>> = {
  500: 'The server could not answer this request. It has been logged; try again later.',
  502: 'A service the server depends on failed; try again later.',
  503: 'A service the server depends on is unavailable; try again later.',
};

/** The JSON body of an HTTP error answer, as `errorBody` builds it. */
export interface ErrorBody {
  error: {
    /**
     * The error's class: `InvalidInputError`, `ConcurrencyError`, ... (`CtxError` for any other
     * subclass, `Error` for what is no ctx error). Never taken from the error's own `name`.
     */
    type: string;
    /** A 4xx error's message (what the caller did wrong and what to do); a generic sentence for a 5xx. */
    message: string;
    /** `InvalidInputError`: the limit the request broke (`maxMessageBytes`, ...). */
    limit?: string;
    /** `ConcurrencyError`: whether the turn is stored anyway (run it again only when `false`). */
    turnStored?: boolean;
    /** `ConcurrencyError`: the session was deleted while the turn ran; nothing of it is kept (do not send it again). */
    sessionDeleted?: boolean;
    /** `ConcurrencyError`: the same turn is running now; send the same request again after `retryAfter`. */
    turnRunning?: boolean;
    /** Seconds to wait before sending the request again; set the `Retry-After` header to it. */
    retryAfter?: number;
  };
}

/**
 * The HTTP status of a failed request, from the error's class (the table in the core README): the
 * caller's mistakes are 4xx, everything else the server's 5xx.
 *
 * - `InvalidInputError`: 400, or 413 when its `limit` is a limit on the size of what the caller
 *   sent (`maxMessageBytes`, `maxInputBytes`, `maxBodyBytes`, `maxMessages`). A hosted run naming
 *   another user's session is one too (400): a route that wants 404 checks the owner first
 *   (`agent.getSession(id, { userId })`), as `@ctx/ai-sdk`'s `handleChatRequest` does.
 * - `ConcurrencyError`: 409 (with `turnRunning`, a retry hint: see `errorBody`).
 * - `BackendUnavailableError`: 503; `ProviderError`: 502.
 * - `ConfigurationError`, `SessionStateError`, `ContextWindowExceededError`,
 *   `ToolExecutionError`, any other `CtxError`, and anything that is not a `CtxError`: 500.
 *
 * No class means "not found": a route answers 404 itself when `agent.getSession` finds nothing.
 * Never throws.
 */
export function httpStatusOf(error: unknown): number {
  if (InvalidInputError.isInstance(error)) {
    const limit = read(() => error.limit);
    return typeof limit === 'string' && REQUEST_SIZE_LIMITS.has(limit) ? 413 : 400;
  }
  if (ConcurrencyError.isInstance(error)) return 409;
  if (BackendUnavailableError.isInstance(error)) return 503;
  if (ProviderError.isInstance(error)) return 502;
  return 500;
}

/**
 * The JSON body of a failed request: `{ error: { type, message, ...fields } }`, plain JSON. A 4xx
 * carries the error's message (the caller's own mistake: what to fix) and its safe fields
 * (`limit`; `turnStored`, `sessionDeleted`, `turnRunning`). A 5xx carries the class and a generic sentence only:
 * its message and `cause` may name hosts, keys or paths, so log the error itself on the server.
 * A `ConcurrencyError` with `turnRunning: true` (the same turn runs in another request) carries
 * `retryAfter` (seconds): set the `Retry-After` header to it and send the same request again.
 * Never throws.
 */
export function errorBody(error: unknown): ErrorBody {
  const status = httpStatusOf(error);
  const type = typeOf(error);
  if (status >= 500) return { error: { type, message: SERVER_MESSAGES[status] ?? SERVER_MESSAGES[500]! } };
  const message = read(() => (error as Error).message);
  const body: ErrorBody = {
    error: { type, message: typeof message === 'string' && message !== '' ? message : 'The request was refused.' },
  };
  if (InvalidInputError.isInstance(error)) {
    const limit = read(() => error.limit);
    if (typeof limit === 'string') body.error.limit = limit;
  } else if (ConcurrencyError.isInstance(error)) {
    const turnStored = read(() => error.turnStored);
    if (typeof turnStored === 'boolean') body.error.turnStored = turnStored;
    if (read(() => error.sessionDeleted) === true) body.error.sessionDeleted = true;
    if (read(() => error.turnRunning) === true) {
      body.error.turnRunning = true;
      body.error.retryAfter = TURN_RUNNING_RETRY_AFTER;
    }
  }
  return body;
}

/** The class name of `error` for `ErrorBody.type`, from the class markers alone (literal: a bundler may rename classes). */
function typeOf(error: unknown): string {
  const classes: ReadonlyArray<readonly [string, (value: unknown) => boolean]> = [
    ['InvalidInputError', InvalidInputError.isInstance],
    ['ConcurrencyError', ConcurrencyError.isInstance],
    ['BackendUnavailableError', BackendUnavailableError.isInstance],
    ['ProviderError', ProviderError.isInstance],
    ['ConfigurationError', ConfigurationError.isInstance],
    ['SessionStateError', SessionStateError.isInstance],
    ['ContextWindowExceededError', ContextWindowExceededError.isInstance],
    ['ToolExecutionError', ToolExecutionError.isInstance],
  ];
  for (const [name, is] of classes) if (is(error)) return name;
  return CtxError.isInstance(error) ? 'CtxError' : 'Error';
}

/** A property of a value that may be hostile (a Proxy whose getter throws): undefined then. */
function read<T>(get: () => T): T | undefined {
  try {
    return get();
  } catch {
    return undefined;
  }
}
