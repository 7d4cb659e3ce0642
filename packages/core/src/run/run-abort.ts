/**
 * How a run can be aborted. Only the caller's signal or the consumer of a stream can abort a run.
 * A run with neither races nothing against an abort and hands its providers, tools and redactor a
 * shared signal that never aborts (`neverAborts`) rather than one of its own: in Node 20 a new
 * `AbortController` costs about 5 µs, half of a plain run.
 */
export class RunAbort {
  /** The run's signal when something can abort the run, else undefined: what abort races, the model call and `isAbortError` use. */
  readonly cancel: AbortSignal | undefined;
  /** The signal providers, tools and the redactor get. */
  readonly signal: AbortSignal;

  /** `controller` is the stream's, or one that follows the caller's signal; none when nothing can abort the run. */
  constructor(controller?: AbortController) {
    this.cancel = controller?.signal;
    this.signal = this.cancel ?? neverAborts();
  }
}

/** How many runs share one `neverAborts()` signal. */
export const RUNS_PER_SIGNAL = 256;

let shared: AbortSignal | undefined;
let handedOut = 0;

/**
 * A signal that never aborts. It keeps no listeners (none could ever be called, so an SDK that adds
 * one per request without removing it leaks nothing), and a new one replaces it every
 * `RUNS_PER_SIGNAL` calls: Node keeps a reference to every `AbortSignal.any` made from a signal on
 * that signal, so one signal shared for good would grow with each.
 */
export function neverAborts(): AbortSignal {
  if (!shared || handedOut === RUNS_PER_SIGNAL) {
    const signal = new AbortController().signal;
    const ignore = () => {};
    Object.defineProperties(signal, { addEventListener: { value: ignore }, removeEventListener: { value: ignore } });
    shared = signal;
    handedOut = 0;
  }
  handedOut++;
  return shared;
}
