/**
 * How a run can be aborted. Only the caller's signal or the consumer of a stream can abort a run:
 * a run with neither races nothing against an abort, and makes its `AbortController` only when it
 * hands a signal to a provider, a tool or the redactor (in Node 20 one costs about 5 µs, half of
 * a plain run; a run without providers or tool calls needs none).
 */
export class RunAbort {
  #controller: AbortController | undefined;
  /** The run's signal when something can abort the run, else undefined: what abort races, the model call and `isAbortError` use. */
  readonly cancel: AbortSignal | undefined;

  /** `controller` is the stream's, or one that follows the caller's signal; none when nothing can abort the run. */
  constructor(controller?: AbortController) {
    this.#controller = controller;
    this.cancel = controller?.signal;
  }

  /** The run's signal, made on first read when nothing can abort the run (it then never aborts). */
  get signal(): AbortSignal {
    return (this.#controller ??= new AbortController()).signal;
  }
}
