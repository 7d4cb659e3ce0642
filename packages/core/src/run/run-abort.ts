/**
 * How a run can be aborted. Only the caller's signal or the consumer of a stream can abort a run.
 * A run with neither races nothing against an abort and hands its providers, tools and redactor
 * `NEVER_ABORTS` rather than a signal of its own: in Node 20 a new `AbortController` costs about
 * 5 µs, half of a plain run.
 */
export class RunAbort {
  /** The run's signal when something can abort the run, else undefined: what abort races, the model call and `isAbortError` use. */
  readonly cancel: AbortSignal | undefined;
  /** The signal providers, tools and the redactor get. */
  readonly signal: AbortSignal;

  /** `controller` is the stream's, or one that follows the caller's signal; none when nothing can abort the run. */
  constructor(controller?: AbortController) {
    this.cancel = controller?.signal;
    this.signal = this.cancel ?? NEVER_ABORTS;
  }
}

/**
 * The signal of every run nothing can abort. It never aborts, so a listener on it could never be
 * called: it keeps none, and an SDK that adds one per request without removing it leaks nothing.
 */
export const NEVER_ABORTS: AbortSignal = neverAborts();

function neverAborts(): AbortSignal {
  const signal = new AbortController().signal;
  const ignore = () => {};
  Object.defineProperties(signal, { addEventListener: { value: ignore }, removeEventListener: { value: ignore } });
  return signal;
}
