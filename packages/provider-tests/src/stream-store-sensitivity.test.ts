/**
 * The stream-store suite must fail for stores that break the contract. Each broken variant of
 * `InMemoryStreamStore` below has one fault and lists the tests that must fail because of it (run
 * as `it.fails`, so a test that wrongly passes turns this file red) while every other test still
 * passes.
 */
// @module-tag seeded-fault
import {
  InMemoryStreamStore,
  type JsonValue,
  type OpenStreamOptions,
  type OpenStreamResult,
  type ReadStreamOptions,
  type StreamCallOptions,
  type StreamReadItem,
  type StreamRef,
  type StreamStoreOptions,
  type StreamWriter,
} from '@ctx/core';
import { describeStreamStore, type StreamStoreCreateOptions } from './index.js';

/** One store per set of options, shared by every call (as one backend is), for each broken class. */
function sharedBy<S>(make: (options: StreamStoreOptions) => S): (options: StreamStoreCreateOptions) => S {
  const stores = new Map<string, S>();
  return (options) => {
    const key = JSON.stringify(options);
    let store = stores.get(key);
    if (store === undefined) stores.set(key, (store = make(options)));
    return store;
  };
}

/** A store whose writers are changed by `wrap`. */
class WrappedWriters extends InMemoryStreamStore {
  constructor(
    options: StreamStoreOptions,
    readonly wrap: (writer: StreamWriter) => StreamWriter,
  ) {
    super(options);
  }
  override async open(ref: StreamRef, options?: OpenStreamOptions): Promise<OpenStreamResult> {
    const opened = await super.open(ref, options);
    return opened.created ? { ...opened, writer: this.wrap(opened.writer) } : opened;
  }
}

/** A store whose reads are changed by `map`. */
class MappedReads extends InMemoryStreamStore {
  constructor(
    options: StreamStoreOptions,
    readonly map: (items: AsyncIterable<StreamReadItem>, ref: StreamRef, options: ReadStreamOptions) => AsyncIterable<StreamReadItem>,
  ) {
    super(options);
  }
  override read(ref: StreamRef, options: ReadStreamOptions = {}): AsyncIterable<StreamReadItem> {
    return this.map(super.read(ref, options), ref, options);
  }
}

/** Replays from the first chunk whatever `fromIndex` says. */
class IgnoresFromIndex extends InMemoryStreamStore {
  override read(ref: StreamRef, options: ReadStreamOptions = {}): AsyncIterable<StreamReadItem> {
    return super.read(ref, { ...options, fromIndex: 0 });
  }
}

/** Ends a read as finished as soon as it would have to wait for the next chunk: no live follow. */
async function* replayOnly(items: AsyncIterable<StreamReadItem>): AsyncGenerator<StreamReadItem> {
  const iterator = items[Symbol.asyncIterator]();
  for (;;) {
    const next = await Promise.race([iterator.next(), new Promise<'wait'>((resolve) => setImmediate(() => resolve('wait')))]);
    if (next === 'wait') {
      yield { type: 'end', status: 'finished' };
      return;
    }
    if (next.done) return;
    yield next.value;
    if (next.value.type === 'end') return;
  }
}
class NoLiveFollow extends InMemoryStreamStore {
  override read(ref: StreamRef, options: ReadStreamOptions = {}): AsyncIterable<StreamReadItem> {
    return replayOnly(super.read(ref, options));
  }
}

/** Reports an abandoned stream as finished. */
async function* abandonedAsFinished(items: AsyncIterable<StreamReadItem>): AsyncGenerator<StreamReadItem> {
  for await (const item of items) yield item.type === 'end' && item.status === 'abandoned' ? { type: 'end', status: 'finished' } : item;
}

/** Hands every reader the same chunk objects. */
function sharedChunks(): (items: AsyncIterable<StreamReadItem>, ref: StreamRef) => AsyncIterable<StreamReadItem> {
  const cache = new Map<string, JsonValue>();
  return async function* (items, ref) {
    for await (const item of items) {
      if (item.type !== 'chunk') {
        yield item;
        continue;
      }
      const key = `${JSON.stringify([ref.sessionId, ref.turnId])}:${item.index}`;
      if (!cache.has(key)) cache.set(key, item.chunk);
      yield { ...item, chunk: cache.get(key)! };
    }
  };
}

/** Opens a new stream for every open, even while the same turn runs. */
class NeverJoins extends InMemoryStreamStore {
  override async open(ref: StreamRef, options?: OpenStreamOptions): Promise<OpenStreamResult> {
    const opened = await super.open(ref, options);
    if (opened.created) return opened;
    // A fresh store for the double submit: a second stream of the same turn.
    return new InMemoryStreamStore().open(ref, options);
  }
}

/** Lets a second turn of a session start while one runs. */
class AllowsTwoTurns extends InMemoryStreamStore {
  override async open(ref: StreamRef, options?: OpenStreamOptions): Promise<OpenStreamResult> {
    try {
      return await super.open(ref, options);
    } catch {
      return new InMemoryStreamStore().open(ref, options);
    }
  }
}

/** Swallows refused appends: an append after the close resolves as if it were stored. */
const swallowsRefusedAppends = (writer: StreamWriter): StreamWriter => ({
  ...writer,
  stopSignal: writer.stopSignal,
  append: (chunks: readonly JsonValue[], o?: StreamCallOptions) =>
    writer.append(chunks, o).catch((error: unknown) => {
      if ((error as Error).name === 'ConcurrencyError') return;
      throw error;
    }),
  close: writer.close,
  release: writer.release,
});

/** A stop request never reaches the producer: its stopSignal never aborts. */
const deafToStops = (writer: StreamWriter): StreamWriter => ({ ...writer, stopSignal: new AbortController().signal });

/** Takes the texts of `appendJson` for chunks: a reader gets each text as a string, not the chunk it encodes. */
const textsAsChunks = (writer: StreamWriter): StreamWriter => ({
  ...writer,
  stopSignal: writer.stopSignal,
  appendJson: (json: readonly string[], o?: StreamCallOptions) => writer.append(json, o),
});

/** Stores are created without the limits and lifetime a test asks for. */
const ignoresOptions = () => new InMemoryStreamStore();

/** Truncates ids to 64 characters: long ids that share a prefix meet. */
class TruncatesIds extends InMemoryStreamStore {
  #cut = (ref: StreamRef): StreamRef => ({ sessionId: ref.sessionId.slice(0, 64), turnId: ref.turnId.slice(0, 64) });
  override open(ref: StreamRef, options?: OpenStreamOptions) {
    return super.open(this.#cut(ref), options);
  }
  override read(ref: StreamRef, options?: ReadStreamOptions) {
    return super.read(this.#cut(ref), options);
  }
  override find(sessionId: string, options?: StreamCallOptions) {
    return super.find(sessionId.slice(0, 64), options);
  }
}

const REPLAY = 'a closed stream replays from its first chunk, in order, then ends with its outcome; fromIndex starts later';
const LIVE = 'a reader started before the first chunk follows the stream live, on another store instance, until the close';
const READERS = 'readers at once, and readers that join mid-stream, each get every chunk once, in order';
const COPIES = 'chunks are kept as exact JSON copies: a change to an appended or a read value changes nothing stored';
const JOIN =
  'opening the running turn again joins it (created: false); another turn of the session is refused with ConcurrencyError (turnRunning)';
const AFTER_CLOSE =
  'writes after the close are refused with ConcurrencyError and write nothing; a repeated close with the same outcome resolves';
const REOPEN = 'a turn whose stream ended can be opened again: a new, empty stream replaces it';
const LIMITS = 'an append past maxChunks or maxBytes throws InvalidInputError naming the limit and appends nothing of its batch';
const STOPPABLE_PAST_LIMIT =
  'a stream past a limit stays open: a stop from another instance still reaches its writer, and readers end with the outcome and the limit';
const STOP = 'requestStop from another store instance aborts the producer’s stopSignal; readers then end with stopped';
const ABANDONED =
  'a producer that stops renewing its lease ends readers as abandoned; the turn can then be opened again, and the old writer is refused';
const KEEPS_LEASE = 'a live producer keeps its lease while it appends nothing for several lease periods';
const SIGNAL = 'a read ends when its signal aborts, quietly and without an end item, while the stream still runs';
const TTL = 'a stream is gone ttlMs after its close: find and read see nothing';
const APPEND_JSON =
  'appendJson, where a writer has it, keeps the texts with the chunks of append, in order, within the limits, and refuses what is not text';
const BAD_ARGUMENTS = 'blank session and turn ids, a bad outcome and a bad fromIndex are refused with ConfigurationError';
const HOSTILE = 'hostile session and turn ids are kept apart, each stream under its own key';

describeStreamStore('fault: ignores fromIndex', {
  create: sharedBy((options) => new IgnoresFromIndex(options)),
  expectedFailures: [REPLAY, READERS, BAD_ARGUMENTS],
});

describeStreamStore('fault: replays what is stored, then ends without following', {
  create: sharedBy((options) => new NoLiveFollow(options)),
  expectedFailures: [LIVE, READERS, ABANDONED, KEEPS_LEASE, SIGNAL],
});

describeStreamStore('fault: reports an abandoned stream as finished', {
  create: sharedBy((options) => new MappedReads(options, abandonedAsFinished)),
  expectedFailures: [ABANDONED],
});

describeStreamStore('fault: hands every reader the same chunk objects', {
  create: sharedBy((options) => new MappedReads(options, sharedChunks())),
  expectedFailures: [COPIES],
});

describeStreamStore('fault: a double submit opens a second stream of the turn', {
  create: sharedBy((options) => new NeverJoins(options)),
  expectedFailures: [JOIN],
});

describeStreamStore('fault: a second turn of a session starts while one runs', {
  create: sharedBy((options) => new AllowsTwoTurns(options)),
  expectedFailures: [JOIN],
});

describeStreamStore('fault: an append after the close resolves', {
  create: sharedBy((options) => new WrappedWriters(options, swallowsRefusedAppends)),
  expectedFailures: [AFTER_CLOSE, REOPEN, ABANDONED],
});

describeStreamStore('fault: a stop request never reaches the producer', {
  create: sharedBy((options) => new WrappedWriters(options, deafToStops)),
  expectedFailures: [STOP, STOPPABLE_PAST_LIMIT],
});

describeStreamStore('fault: ignores the lifetime and limits asked for', {
  create: sharedBy(ignoresOptions),
  expectedFailures: [LIMITS, STOPPABLE_PAST_LIMIT, ABANDONED, TTL, APPEND_JSON],
});

describeStreamStore('fault: appendJson stores the texts themselves as chunks', {
  create: sharedBy((options) => new WrappedWriters(options, textsAsChunks)),
  expectedFailures: [APPEND_JSON],
});

describeStreamStore('fault: truncates ids to 64 characters', {
  create: sharedBy((options) => new TruncatesIds(options)),
  expectedFailures: [HOSTILE],
});
