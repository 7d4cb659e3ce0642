import type { AgentResponse } from '../spec/agent-response.js';
import type { ChatResponseUpdate } from '../spec/chat-client.js';
import type { AgentRunStream } from './agent.js';

/** Receives each update of a streaming run; the run waits for the promise it returns. */
export type UpdateSink = (update: ChatResponseUpdate) => Promise<void> | undefined;

/**
 * Turns a run that pushes updates into a stream the caller pulls. Updates wait in a queue; once
 * the caller iterates, the run waits for it to take each one (backpressure). A caller that stops
 * iterating early aborts the run through `controller`.
 */
export function createRunStream(start: (onUpdate: UpdateSink, controller: AbortController) => Promise<AgentResponse>): AgentRunStream {
  const queue: ChatResponseUpdate[] = [];
  let wakeConsumer: (() => void) | undefined;
  let resumeRun: (() => void) | undefined;
  let iterating = false;
  let done = false;
  const controller = new AbortController();
  const onUpdate: UpdateSink = (update) => {
    queue.push(update);
    wakeConsumer?.();
    return iterating ? new Promise<void>((resolve) => (resumeRun = resolve)) : undefined;
  };
  const response = start(onUpdate, controller).finally(() => {
    done = true;
    wakeConsumer?.();
  });
  response.catch(() => {}); // the caller sees the error through iteration or `response`
  return {
    response,
    async *[Symbol.asyncIterator]() {
      iterating = true;
      try {
        while (true) {
          const update = queue.shift();
          if (update) {
            yield update;
          } else if (done) {
            break;
          } else {
            resumeRun?.();
            await new Promise<void>((resolve) => (wakeConsumer = resolve));
            wakeConsumer = undefined;
          }
        }
        await response;
      } finally {
        if (!done) controller.abort(new DOMException('The stream consumer stopped reading.', 'AbortError'));
        resumeRun?.();
      }
    },
  };
}
