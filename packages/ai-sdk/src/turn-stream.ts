import {
  type AgentResponse,
  type AgentRunStream,
  BackendUnavailableError,
  type ChatResponseUpdate,
  ConcurrencyError,
  InvalidInputError,
  type JsonValue,
  type StreamOutcome,
  type StreamReadItem,
  type StreamLimit,
  type StreamRef,
  type StreamStore,
  type StreamWriter,
} from '@ctx/core';
import type { ReplySoFar } from './stopped-reply.js';
import type { UIMessage, UIMessageChunk } from './ui-message.js';
import { DEFAULT_UI_ERROR_TEXT, type ToUIMessageStreamOptions, teedUIMessageStream } from './ui-message-stream.js';

/**
 * The type of the stored chunk that holds a turn's input as the page sent it (`{ type, message }`),
 * the first of its stream: `runningTurnInput` reads it, and no page is sent it.
 */
export const INPUT_CHUNK_TYPE = 'ctx-turn-input';

/** What `produceTurn` needs: the run, already past its first update, and the stream it writes. */
export interface TurnProduction {
  /** The run. */
  stream: AgentRunStream;
  /** Its iterator, with `first` already read from it. */
  updates: AsyncIterator<ChatResponseUpdate>;
  first: IteratorResult<ChatResponseUpdate>;
  /** The stream of the turn in the store, opened by this request. */
  writer: StreamWriter;
  /** What was said so far, fed with every update. */
  reply: ReplySoFar;
  /** Stores what was said once a stop aborted the run; resolves to the stored turn's response. */
  storeStopped: () => Promise<AgentResponse>;
  /** How the UI chunks are made. */
  streamOptions: ToUIMessageStreamOptions;
  /** Told of each failure of the stream store (the reply goes on without it). */
  onStoreError: ((error: unknown) => void) | undefined;
  /** The turn's input as the page sent it (a user message), stored first; undefined for answers to approvals. */
  input: UIMessage | undefined;
}

/**
 * Streams a run's UI chunks (as the protocol's server-sent events) to the request that started it
 * and into the stream store, so any request can replay them. The run no longer depends on the request: a page that goes away (a
 * reload) leaves it running to its end, and only a stop (`writer.stopSignal`) aborts it, after
 * which what was said is stored (`storeStopped`) and the stream ends with a `finish` chunk.
 */
export function produceTurn(production: TurnProduction): ReadableStream<Uint8Array> {
  const { writer, streamOptions, onStoreError, reply } = production;
  const { run, stopping, wasStopped } = stoppableRun(production);
  const sink = new StoreSink(writer, onStoreError);
  // Stored first, in the same append as the first chunks: one append fewer before the page's first chunk.
  if (production.input) {
    const input = { type: INPUT_CHUNK_TYPE, message: production.input } as unknown as JsonValue;
    sink.hold(input, JSON.stringify(input));
  }
  let last: string | undefined;
  return teedUIMessageStream(run, streamOptions, {
    // Each update is seen here, as it is read: no promise of its own per update to collect what was said.
    update: (update) => reply.add(update),
    // A read failing because the stop aborted the run ends the updates; the response is then the stored stopped reply's.
    readFailed: stopping,
    chunks(chunks, json) {
      last = chunks[chunks.length - 1]?.type;
      sink.push(chunks as unknown as JsonValue[], json);
    },
    end: () => sink.close(wasStopped() ? 'stopped' : last === 'finish' ? 'finished' : 'failed'),
  });
}

/**
 * The run as a stream again (its first update first) whose response, once a stop aborted the run,
 * is the stored stopped reply's; `stopping` tells whether a failure is that stop's (and then marks
 * the turn stopped).
 */
function stoppableRun(production: TurnProduction): { run: AgentRunStream; stopping: () => boolean; wasStopped: () => boolean } {
  const { stream, updates, first, writer, reply, storeStopped } = production;
  let held: IteratorResult<ChatResponseUpdate> | undefined = first;
  let stopped = false;
  // A stop after the model's last answer was ignored (the turn is being stored): a failure then is the run's own.
  const stopping = () => writer.stopSignal.aborted && !reply.answered && (stopped = true);
  // Reads go straight to the run's iterator: one promise per update, as reading the run itself.
  const iterator: AsyncIterator<ChatResponseUpdate> = {
    next: () => {
      if (held === undefined) return updates.next();
      const result = held;
      held = undefined;
      return Promise.resolve(result);
    },
    return: async (value?: unknown) => {
      held = undefined;
      return (await updates.return?.(value)) ?? { done: true, value: undefined };
    },
  };
  const response = stream.response.then(
    (done) => done,
    (error: unknown) => {
      if (stopping()) return storeStopped();
      throw error;
    },
  );
  response.catch(() => {});
  return { run: { response, [Symbol.asyncIterator]: () => iterator }, stopping, wasStopped: () => stopped };
}

/**
 * Appends chunks to the store in the background, batching what arrives while an append is under
 * way, so the page never waits for the store. A store with `appendJson` is given the chunks' JSON
 * texts the page is sent (each chunk serialized once), another the chunks themselves. A batch the store could not take (unreachable) is
 * sent again with the next one; a stream that is no longer this writer's is given up. A stream
 * past the store's limits takes no more chunks but stays open (the store records the limit), so a
 * stop still reaches the turn, and is closed with the turn's outcome.
 */
class StoreSink {
  /** The chunks for the next append: JSON texts for `appendJson`, else the chunks. */
  private pending: Array<JsonValue | string> = [];
  private flushing: Promise<void> | undefined;
  private broken = false;
  /** Whether the stream reached a limit of the store: no more appends, closed at the end all the same. */
  private limited = false;

  constructor(
    private readonly writer: StreamWriter,
    private readonly onStoreError: ((error: unknown) => void) | undefined,
  ) {}

  /** Queues a chunk (and its JSON text) for the next append without starting one. */
  hold(chunk: JsonValue, json: string): void {
    this.pending.push(this.writer.appendJson ? json : chunk);
  }

  /** Queues chunks (and their JSON texts) and starts an append unless one is under way. */
  push(chunks: readonly JsonValue[], json: readonly string[]): void {
    if (this.broken) return;
    const taken = this.writer.appendJson ? json : chunks;
    for (let i = 0; i < taken.length; i++) this.pending.push(taken[i]!);
    this.flushing ??= this.flush();
  }

  async close(outcome: StreamOutcome): Promise<void> {
    await this.flushing;
    if (!this.broken && this.pending.length > 0) await (this.flushing = this.flush());
    if (this.broken && !this.limited) return;
    try {
      await this.writer.close(!this.limited && this.pending.length > 0 ? 'failed' : outcome);
    } catch (error) {
      this.report(error);
      this.writer.release();
    }
  }

  private async flush(): Promise<void> {
    try {
      while (this.pending.length > 0 && !this.broken) {
        const batch = this.pending;
        this.pending = [];
        try {
          if (this.writer.appendJson) await this.writer.appendJson(batch as string[]);
          else await this.writer.append(batch as JsonValue[]);
        } catch (error) {
          this.report(error);
          if (BackendUnavailableError.isInstance(error)) {
            this.pending = [...batch, ...this.pending]; // sent again with the next chunk, or at the close
            return;
          }
          this.broken = true;
          this.pending = [];
          // Over the store's limits: kept open (renewed, stoppable) and closed with the turn's outcome,
          // readers told why the chunks stop short. A chunk the store refused: the stream ends here.
          // No longer this writer's: nothing to do.
          if (InvalidInputError.isInstance(error) && error.limit !== undefined) this.limited = true;
          else if (InvalidInputError.isInstance(error)) await this.writer.close('failed').catch(() => this.writer.release());
          else if (!ConcurrencyError.isInstance(error)) this.writer.release();
        }
      }
    } finally {
      this.flushing = undefined;
    }
  }

  private report(error: unknown): void {
    try {
      this.onStoreError?.(error);
    } catch {
      // the stream does not depend on the callback
    }
  }
}

/** A stored turn being read: its first item (undefined when the store holds no such stream), and the rest as UI chunks. */
export interface StoredTurnRead {
  /** The first item read, or undefined when the stream does not exist. */
  first: StreamReadItem | undefined;
  /** The stream's chunks from the first, following it live until it ends. */
  chunks(): ReadableStream<UIMessageChunk>;
  /** Gives the read up. */
  cancel(): void;
}

/**
 * The error that ends a resumed reply whose stream outgrew the store's `limit`: an
 * `InvalidInputError` with that `limit`, saying that the rest is not kept and what to do.
 */
export function replyOutgrewStoreError(ref: StreamRef, limit: StreamLimit): InvalidInputError {
  return new InvalidInputError(
    `The reply of turn "${ref.turnId}" in conversation "${ref.sessionId}" outgrew the stream store's ${limit}, so the rest of it cannot be resumed: this page shows it only up to there. The turn itself goes on, and its whole reply is stored when it ends: reload then to see it (it can still be stopped meanwhile). To resume replies this long, raise the stream store's ${limit}.`,
    { limit },
  );
}

/** Options of `readStoredTurn` for a stream that reached a limit of the store while it runs. */
export interface StoredTurnLimit {
  /** The limit reached (`StreamInfo.limitReached`). */
  limitReached: StreamLimit;
  /** How many chunks the stream holds (`StreamInfo.chunkCount`): no more will come, so the read ends after them. */
  chunkCount: number;
}

/**
 * Reads a turn's stream from its first chunk and follows it; `signal` ends the wait for the first
 * chunk (a page that went away before it), not the read after it. When the producer went away (the
 * stream `abandoned`), or the store is lost mid-read, the chunks end with an `error` chunk
 * (`onError`'s text), so the page knows the reply ended; a read never waits on a dead producer. A
 * stream that outgrew the store's limits ends with an `error` chunk of `replyOutgrewStoreError`:
 * once it ends, or, with `limited` (a running stream known to be past a limit), after its stored chunks.
 */
export async function readStoredTurn(
  streams: StreamStore,
  ref: StreamRef,
  onError: ToUIMessageStreamOptions['onError'],
  signal?: AbortSignal,
  limited?: StoredTurnLimit,
): Promise<StoredTurnRead> {
  const abort = new AbortController();
  const items = streams.read({ sessionId: ref.sessionId, turnId: ref.turnId }, { signal: abort.signal })[Symbol.asyncIterator]();
  // The wait for the first chunk ends with `signal` (the page went away): `first` is then undefined.
  const giveUp = () => abort.abort();
  signal?.addEventListener('abort', giveUp, { once: true });
  if (signal?.aborted) giveUp();
  let start: IteratorResult<StreamReadItem>;
  try {
    // A running stream past a limit with no chunk but the input: nothing to wait for.
    start = limited && limited.chunkCount === 0 ? { done: true, value: undefined } : await items.next();
    if (!start.done && start.value.type === 'chunk' && (start.value.chunk as { type?: unknown }).type === INPUT_CHUNK_TYPE) {
      start = limited && start.value.index >= limited.chunkCount - 1 ? { done: true, value: undefined } : await items.next();
    }
  } finally {
    signal?.removeEventListener('abort', giveUp);
  }
  let held: IteratorResult<StreamReadItem> | undefined = start;
  let ended = false;
  const cancel = () => {
    abort.abort();
    void items.return?.()?.catch(() => {});
  };
  return {
    first: start.done ? undefined : start.value,
    cancel,
    chunks: () =>
      new ReadableStream<UIMessageChunk>({
        async pull(controller) {
          if (ended) return;
          let next: IteratorResult<StreamReadItem>;
          try {
            next = held ?? (await items.next());
          } catch {
            // The store was lost mid-read: the reply ends here for this page, as an abandoned one.
            next = { done: false, value: { type: 'end', status: 'abandoned' } };
          }
          held = undefined;
          if (next.done) {
            ended = true;
            return controller.close();
          }
          const item = next.value;
          if (item.type === 'chunk') {
            const chunk = item.chunk as unknown as UIMessageChunk;
            if (chunk.type === 'finish' || chunk.type === 'error') ended = true;
            controller.enqueue(chunk);
            if (!ended && limited && item.index >= limited.chunkCount - 1) {
              // The last chunk the store took: no more will come, though the turn runs on.
              ended = true;
              controller.enqueue({ type: 'error', errorText: errorText(onError, replyOutgrewStoreError(ref, limited.limitReached)) });
            }
            if (ended) {
              cancel();
              controller.close();
            }
            return;
          }
          ended = true;
          if (item.limitReached) {
            controller.enqueue({ type: 'error', errorText: errorText(onError, replyOutgrewStoreError(ref, item.limitReached)) });
          } else if (item.status === 'abandoned' || item.status === 'failed') {
            const cut = new BackendUnavailableError(
              'stream-store',
              `The reply of turn "${ref.turnId}" ended before it finished (${item.status}): the server producing it stopped. Send the message again.`,
            );
            controller.enqueue({ type: 'error', errorText: errorText(onError, cut) });
          }
          controller.close();
        },
        cancel,
      }),
  };
}

function errorText(onError: ToUIMessageStreamOptions['onError'], error: unknown): string {
  if (!onError) return DEFAULT_UI_ERROR_TEXT;
  try {
    return onError(error);
  } catch {
    return DEFAULT_UI_ERROR_TEXT;
  }
}
