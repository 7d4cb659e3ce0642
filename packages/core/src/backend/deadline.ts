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
 * `operation` and `hint` are read only when a message needs them (they may be getters).
 *
 * A write abandoned at the deadline can still commit: the signal stops the client waiting, not the
 * server, which may apply a write it already received after `withDeadline` rejected. The caller then
 * sees a failure for a write that happened, and retries it. So every write a backend makes must be
 * atomic and safe to repeat: one transaction or script per batch (a read never sees half of one),
 * messages de-duplicated by id (a retried `saveMessages` stores nothing twice), and a store's write
 * conditional on the etag (a retried `set` of a committed save fails with `ConcurrencyError`, which
 * the agent's merge resolves, instead of overwriting newer data).
 */
export function withDeadline<T>(call: (signal: AbortSignal) => Promise<T>, options: DeadlineOptions): Promise<T> {
  const { timeoutMs, signal } = options;
  if (signal?.aborted) return Promise.reject(signal.reason);
  const controller = call.length > 0 ? new AbortController() : undefined;
  // One promise settled by whichever comes first: the call, the deadline or the caller's abort.
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    let onAbort: (() => void) | undefined;
    const finish = () => {
      settled = true;
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener('abort', onAbort);
    };
    // The deadline passed or the caller aborted: that is the outcome, whatever the call does on its way out.
    const end = (reason: unknown) => {
      if (settled) return;
      finish();
      controller?.abort(reason);
      reject(reason);
    };
    const timer = setTimeout(() => {
      const hint = options.hint ?? 'Check that the service is reachable, or raise timeoutMs if it is just slow.';
      end(new BackendUnavailableError(options.backend, `${options.operation} did not answer within ${timeoutMs} ms. ${hint}`));
    }, timeoutMs);
    if (signal) {
      onAbort = () => end(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
    }
    const failed = (error: unknown) => {
      if (settled) return;
      finish();
      try {
        reject((options.mapError ?? defaultMapError(options.backend, options.operation))(error));
      } catch (mapping) {
        reject(mapping);
      }
    };
    let pending: Promise<T>;
    try {
      pending = controller ? call(controller.signal) : (call as () => Promise<T>)();
    } catch (error) {
      failed(error);
      return;
    }
    Promise.resolve(pending).then((value) => {
      if (settled) return;
      finish();
      resolve(value);
    }, failed);
  });
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

/**
 * Resolves after `ms` milliseconds, or rejects with the abort reason as soon as `signal` aborts
 * (at once when it already has): a wait between two attempts that never outlives its caller.
 */
export function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
