import { generateId } from '../messages/id.js';
import type { AgentResponse } from '../contracts/agent-response.js';
import type { ChatResponse, ChatResponseUpdate } from '../contracts/chat-client.js';
import type { AgentRunStream } from './agent.js';
import { createResponseAssembler, type ResponseAssembler } from './assemble-response.js';

/** Where a streaming run sends what its caller reads. */
export interface RunStreamSink {
  /** Hands one update the run made (a tool message) to the caller; returns a promise to wait for when the caller has not taken it yet. */
  push(update: ChatResponseUpdate): Promise<void> | undefined;
  /**
   * Streams one model call to the caller: once the caller iterates, each of its reads pulls the
   * client's stream directly. Resolves with the assembled response once the client's stream
   * ended; rejects with the client's failure, or with the abort reason as soon as the run aborts
   * (the client's stream is then closed without waiting for it).
   */
  pipe(updates: AsyncIterable<ChatResponseUpdate>): Promise<ChatResponse>;
}

/** The model stream being piped to the caller. */
interface Source {
  iterator: AsyncIterator<ChatResponseUpdate>;
  assembler: ResponseAssembler;
  resolve: (response: ChatResponse) => void;
  reject: (error: unknown) => void;
}

type Result = IteratorResult<ChatResponseUpdate>;

/** An `AbortController` that also tells the run stream, with no listener on its signal. */
class RunController extends AbortController {
  constructor(private readonly onAbort: (reason: unknown) => void) {
    super();
  }

  override abort(reason?: unknown): void {
    if (this.signal.aborted) return;
    super.abort(reason);
    this.onAbort(this.signal.reason);
  }
}

/**
 * Turns a run into a stream the caller pulls. While the model streams, each read of the caller
 * pulls the client's stream directly: the client is read no faster than the caller reads
 * (backpressure), and an update costs one promise reaction more than iterating the client itself.
 * Until the caller iterates, the run reads on by itself and updates wait in a queue. An update the
 * run makes itself goes straight to a caller waiting for one, else the run waits until the caller
 * takes it. A caller that stops iterating early aborts the run through `controller`.
 */
export function createRunStream(start: (sink: RunStreamSink, controller: AbortController) => Promise<AgentResponse>): AgentRunStream {
  const queue: ChatResponseUpdate[] = [];
  /** The caller's pending `next()`, when it waits for the run rather than for the client. */
  let waiting: { resolve: (result: Result) => void; reject: (error: unknown) => void } | undefined;
  /** Lets the run go on once the caller took the queued updates. */
  let resumeRun: (() => void) | undefined;
  let source: Source | undefined;
  /** Whether a read of `source` is under way: at most one is, whoever started it. */
  let reading = false;
  let iterating = false;
  let done = false;

  const resume = () => {
    const go = resumeRun;
    resumeRun = undefined;
    go?.();
  };
  const end = (): Promise<Result> => response.then(() => ({ done: true, value: undefined }) as Result);
  /** What the caller gets when the run, not the client, has the next update (or the end). */
  const later = (): Promise<Result> => (done ? end() : new Promise<Result>((resolve, reject) => (waiting = { resolve, reject })));
  /** Ends the piped model stream: with the response, or failed with `error`. */
  const close = (failed: boolean, error?: unknown) => {
    const piped = source!;
    source = undefined;
    if (failed) piped.reject(error);
    else piped.resolve(piped.assembler.response);
  };
  /** The caller's own read: the client's result goes straight back to it. */
  const onPull = (result: Result): Result | Promise<Result> => {
    reading = false;
    if (!source) return later(); // the run was aborted meanwhile
    if (result.done) {
      close(false);
      return later();
    }
    source.assembler.add(result.value);
    return result;
  };
  const onPullError = (error: unknown): Promise<Result> => {
    reading = false;
    if (source) close(true, error);
    return later();
  };
  /** A read the run starts: for a caller already waiting, or ahead of a caller that does not iterate yet. */
  const read = () => {
    reading = true;
    source!.iterator.next().then(onRead, onReadError);
  };
  const onRead = (result: Result) => {
    reading = false;
    if (!source) return;
    if (result.done) return close(false);
    source.assembler.add(result.value);
    const taker = waiting;
    waiting = undefined;
    if (taker) taker.resolve(result);
    else queue.push(result.value);
    if (!iterating) read(); // nobody pulls yet: the run reads on by itself
  };
  const onReadError = (error: unknown) => {
    reading = false;
    if (source) close(true, error);
  };
  const controller = new RunController((reason) => {
    if (!source) return;
    const { iterator } = source;
    close(true, reason);
    try {
      Promise.resolve(iterator.return?.()).catch(() => {});
    } catch {
      // a stream that cannot be closed is no longer read either way
    }
  });

  const sink: RunStreamSink = {
    push(update) {
      const taker = waiting;
      waiting = undefined;
      if (taker) {
        taker.resolve({ done: false, value: update });
        return undefined;
      }
      queue.push(update);
      // After the caller stopped, the run must reach its abort check rather than wait for nobody.
      return iterating && !controller.signal.aborted ? new Promise<void>((resolve) => (resumeRun = resolve)) : undefined;
    },
    pipe(updates) {
      const { signal } = controller;
      if (signal.aborted) return Promise.reject(signal.reason);
      return new Promise<ChatResponse>((resolve, reject) => {
        source = { iterator: updates[Symbol.asyncIterator](), assembler: createResponseAssembler(generateId), resolve, reject };
        if (waiting || !iterating) read();
      });
    },
  };

  const response = start(sink, controller).finally(() => {
    done = true;
    const pending = waiting;
    waiting = undefined;
    if (pending) end().then(pending.resolve, pending.reject);
  });
  response.catch(() => {}); // the caller sees the error through iteration or `response`

  const iterator: AsyncIterator<ChatResponseUpdate> = {
    next() {
      const update = queue.shift();
      if (update) {
        if (queue.length === 0) resume();
        return Promise.resolve({ done: false, value: update });
      }
      if (done) return end();
      if (source && !reading) {
        reading = true;
        return source.iterator.next().then(onPull, onPullError);
      }
      if (!source) resume();
      return later();
    },
    return() {
      if (!done) controller.abort(new DOMException('The stream consumer stopped reading.', 'AbortError'));
      resume();
      return Promise.resolve({ done: true, value: undefined });
    },
  };
  return new RunStream(response, () => {
    iterating = true;
    return iterator;
  });
}

/** The stream handed to the caller (a class, so no object with a computed key is made per run). */
class RunStream implements AgentRunStream {
  constructor(
    readonly response: Promise<AgentResponse>,
    private readonly open: () => AsyncIterator<ChatResponseUpdate>,
  ) {}

  [Symbol.asyncIterator](): AsyncIterator<ChatResponseUpdate> {
    return this.open();
  }
}
