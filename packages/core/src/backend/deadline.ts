import { BackendUnavailableError, CtxError, describe } from '../errors.js';

/** Options of `withDeadline`. */
export interface DeadlineOptions {
  /** How long the call may take, in milliseconds. */
  timeoutMs: number;
  /** The caller's signal: when it aborts, the call is abandoned and `withDeadline` rejects with its reason. */
  signal?: AbortSignal | undefined;
  /** The backend's name for `BackendUnavailableError.backend`, e.g. `redis`. */
  backend: string;
  /** What the call does, for messages: e.g. `Redis saveMessages for session "s1"`. No secrets, no message text. */
  operation: string;
  /** Appended to the timeout message: what to do about it. Default: raise `timeoutMs` or check the service. */
  hint?: string;
  /**
   * Turns what the call threw into a ctx error. Default: ctx errors pass through; anything else
   * becomes a `BackendUnavailableError` naming the operation, with the original as `cause`.
   */
  mapError?: (error: unknown) => Error;
}

/**
 * Runs one backend call with a deadline. `call` receives a signal that aborts at the deadline or
 * when the caller's `signal` does; `withDeadline` settles at that moment even if `call` ignores its
 * signal, so nothing a backend does can hang a run. It rejects with the caller's abort reason when
 * the caller aborted, with a `BackendUnavailableError` at the deadline, and with
 * `mapError(error)` when the call failed. A `call` that declares no parameter gets no signal, and
 * none is made for it (an `AbortController` costs more than the rest of this function).
 *
 * A write abandoned at the deadline can still commit: the signal stops the client waiting, not the
 * server, which may apply a write it already received after `withDeadline` rejected. The caller then
 * sees a failure for a write that happened, and retries it. So every write a backend makes must be
 * atomic and safe to repeat: one transaction or script per batch (a read never sees half of one),
 * messages de-duplicated by id (a retried `saveMessages` stores nothing twice), and a store's write
 * conditional on the etag (a retried `set` of a committed save fails with `ConcurrencyError`, which
 * the agent's merge resolves, instead of overwriting newer data).
 */
export async function withDeadline<T>(call: (signal: AbortSignal) => Promise<T>, options: DeadlineOptions): Promise<T> {
  const { timeoutMs, signal, backend, operation } = options;
  signal?.throwIfAborted();
  const controller = call.length > 0 ? new AbortController() : undefined;
  let ended: { reason: unknown } | undefined; // the deadline passed or the caller aborted
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onAbort: (() => void) | undefined;
  const deadline = new Promise<never>((_, reject) => {
    const end = (reason: unknown) => {
      ended = { reason };
      controller?.abort(reason);
      reject(reason);
    };
    timer = setTimeout(() => {
      const hint = options.hint ?? 'Check that the service is reachable, or raise timeoutMs if it is just slow.';
      end(new BackendUnavailableError(backend, `${operation} did not answer within ${timeoutMs} ms. ${hint}`));
    }, timeoutMs);
    if (signal) {
      onAbort = () => end(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
    }
  });
  let pending: Promise<T> | undefined;
  try {
    pending = controller ? call(controller.signal) : (call as () => Promise<T>)();
    return await Promise.race([pending, deadline]);
  } catch (error) {
    // Once the deadline passed or the caller aborted, that is the outcome, whatever the call threw on its way out.
    if (ended) throw ended.reason;
    throw (options.mapError ?? defaultMapError(backend, operation))(error);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal?.removeEventListener('abort', onAbort);
    pending?.catch(() => {});
  }
}

function defaultMapError(backend: string, operation: string): (error: unknown) => Error {
  return (error) =>
    CtxError.isInstance(error) ? error : new BackendUnavailableError(backend, `${operation} failed: ${describe(error)}`, { cause: error });
}

/**
 * `promise`, or the abort reason as soon as `signal` aborts (the work behind `promise` is not
 * cancelled: use it for work other callers share).
 */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) {
    promise.catch(() => {}); // nobody waits for it any more: a later failure is not unhandled
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
