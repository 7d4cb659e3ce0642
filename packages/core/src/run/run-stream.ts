import type { AgentResponse } from '../spec/agent-response.js';
import type { ChatResponseUpdate } from '../spec/chat-client.js';
import type { AgentRunStream } from './agent.js';

/** Receives each update of a streaming run; the run waits for the promise it returns, if any. */
export type UpdateSink = (update: ChatResponseUpdate) => Promise<void> | undefined;

/**
 * Turns a run that pushes updates into a stream the caller pulls. Until the caller iterates,
 * updates wait in a queue. Once it iterates, an update goes straight to a caller waiting for one;
 * otherwise the run waits until the caller takes it (backpressure: the run is at most one update
 * ahead). A caller that stops iterating early aborts the run through `controller`.
 */
export function createRunStream(start: (onUpdate: UpdateSink, controller: AbortController) => Promise<AgentResponse>): AgentRunStream {
  const queue: ChatResponseUpdate[] = [];
  /** The caller's pending `next()`, when it waits for an update. */
  let waiting: { resolve: (result: IteratorResult<ChatResponseUpdate>) => void; reject: (error: unknown) => void } | undefined;
  /** Lets the run go on once the caller took the queued updates. */
  let resumeRun: (() => void) | undefined;
  let iterating = false;
  let done = false;
  const controller = new AbortController();

  const resume = () => {
    const go = resumeRun;
    resumeRun = undefined;
    go?.();
  };
  const end = (): Promise<IteratorResult<ChatResponseUpdate>> =>
    response.then(() => ({ done: true, value: undefined }) as IteratorResult<ChatResponseUpdate>);
  const onUpdate: UpdateSink = (update) => {
    if (waiting) {
      const { resolve } = waiting;
      waiting = undefined;
      resolve({ done: false, value: update });
      return undefined;
    }
    queue.push(update);
    // After the caller stopped, the run must reach its abort check rather than wait for nobody.
    return iterating && !controller.signal.aborted ? new Promise<void>((resolve) => (resumeRun = resolve)) : undefined;
  };
  const response = start(onUpdate, controller).finally(() => {
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
      resume();
      return new Promise((resolve, reject) => (waiting = { resolve, reject }));
    },
    return() {
      if (!done) controller.abort(new DOMException('The stream consumer stopped reading.', 'AbortError'));
      resume();
      return Promise.resolve({ done: true, value: undefined });
    },
  };
  return {
    response,
    [Symbol.asyncIterator]() {
      iterating = true;
      return iterator;
    },
  };
}
