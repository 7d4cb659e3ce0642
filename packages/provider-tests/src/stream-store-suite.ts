import {
  ConcurrencyError,
  ConfigurationError,
  InvalidInputError,
  type JsonValue,
  type ReadStreamOptions,
  type StreamReadItem,
  type StreamRef,
  type StreamStore,
  type StreamWriter,
} from '@ctx/core';
import { afterAll, afterEach, beforeAll, describe, expect } from 'vitest';
import { BLANK_SESSION_IDS, describeId, expectRejection, HOSTILE_SESSION_IDS } from './fixtures.js';
import { createRegistrar, randomTag, type ConformanceSuiteOptions, type MaybePromise } from './suite-options.js';

/** The lifetimes and limits a test asks of the store it creates; absent ones take the store's defaults. */
export interface StreamStoreCreateOptions {
  /** How long a stream is kept after it ends, in ms. */
  ttlMs?: number;
  /** How long a producer's lease lasts without a renewal, in ms. */
  leaseMs?: number;
  /** The most chunks one stream may hold. */
  maxChunks?: number;
  /** The most bytes of chunk JSON one stream may hold. */
  maxBytes?: number;
}

/** Options of `describeStreamStore`. */
export interface StreamStoreSuiteOptions<S extends StreamStore = StreamStore> extends ConformanceSuiteOptions<S> {
  /**
   * Creates the store under test with the given lifetimes and limits (the `StreamStoreOptions` of
   * ctx's stores). Called once or more per test; stores created in one test must share their data,
   * as two processes on one backend do (the suite uses fresh random ids).
   */
  create: (options: StreamStoreCreateOptions) => MaybePromise<S>;
  /** The longest id the store accepts; longer hostile ids are left out. Default: no limit. */
  maxIdLength?: number;
  /**
   * The lease the lease tests use, in ms: short, so a dead producer is noticed quickly, but long
   * enough for the store's renewal to arrive in time on a loaded machine. Default 600.
   */
  leaseMs?: number;
}

/** Chunks with every kind of JSON value, unicode and nesting, as the AI SDK's UI message chunks look. */
const CHUNKS: JsonValue[] = [
  { type: 'start', messageId: 'm-1' },
  { type: 'text-delta', id: 't', delta: 'Grüße 🦜 "quoted" \\ back\r\nline' },
  { type: 'data-x', data: { nested: [[{}], null, true, 0, -1.5, 1e21], empty: {} } },
  'a bare string',
  42,
  null,
  [1, [2, [3]]],
  { type: 'finish' },
];

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Every item of a read; a read the store refuses at once (it may throw from `read` itself) rejects too. */
async function readAll(store: StreamStore, ref: StreamRef, options?: ReadStreamOptions): Promise<StreamReadItem[]> {
  return collect(store.read(ref, options));
}

/** Every item of an iteration. */
async function collect(items: AsyncIterable<StreamReadItem>): Promise<StreamReadItem[]> {
  const all: StreamReadItem[] = [];
  for await (const item of items) all.push(item);
  return all;
}

/** The items a read of `chunks` (from `from`) ending with `status` gives. */
function expected(chunks: readonly JsonValue[], status: string, from = 0): StreamReadItem[] {
  return [
    ...chunks.slice(from).map((chunk, i) => ({ type: 'chunk' as const, index: from + i, chunk })),
    { type: 'end', status } as StreamReadItem,
  ];
}

/**
 * Defines a vitest suite that checks a `StreamStore` against the contract of `@ctx/core`: replay
 * from the first chunk or an index, following live, readers at once and mid-stream (nothing lost or
 * doubled), one running stream per session (the same turn joins, another is refused), the close
 * and writes after it, chunks kept as exact JSON copies, limits (recorded, the stream kept open and stoppable), stop requests reaching the
 * producer through a second store instance, a producer that stops renewing ending readers as
 * `abandoned` (and a live one that does not), reads ended by their signal, the lifetime after the
 * close, hostile and blank ids. Call it at the top level of a test file.
 */
export function describeStreamStore<S extends StreamStore>(name: string, options: StreamStoreSuiteOptions<S>): void {
  const maxIdLength = options.maxIdLength ?? Number.POSITIVE_INFINITY;
  const leaseMs = options.leaseMs ?? 600;

  describe(`${name} (StreamStore conformance)`, options.timeout === undefined ? {} : { timeout: options.timeout }, () => {
    const { test, finish } = createRegistrar(name, options.expectedFailures);
    afterAll(finish);
    const tag = randomTag();
    let counter = 0;
    const created: S[] = [];
    const newId = (kind: string) => `${kind}-${tag}-${++counter}`;
    const newRef = (): StreamRef => ({ sessionId: newId('session'), turnId: newId('turn') });

    if (options.setup) beforeAll(() => options.setup!());
    if (options.teardown) afterAll(() => options.teardown!());
    afterEach(async () => {
      const list = created.splice(0);
      if (options.cleanup) for (const store of list) await options.cleanup(store);
    });

    const make = async (createOptions: StreamStoreCreateOptions = {}): Promise<S> => {
      const store = await options.create(createOptions);
      created.push(store);
      return store;
    };
    const openWriter = async (store: StreamStore, ref: StreamRef): Promise<StreamWriter> => {
      const opened = await store.open(ref);
      expect(opened.created, `open of ${describeId(ref.turnId)} in ${describeId(ref.sessionId)}`).toBe(true);
      return (opened as { writer: StreamWriter }).writer;
    };

    test('a closed stream replays from its first chunk, in order, then ends with its outcome; fromIndex starts later', async () => {
      const store = await make();
      for (const outcome of ['finished', 'stopped', 'failed'] as const) {
        const ref = newRef();
        const writer = await openWriter(store, ref);
        expect([writer.sessionId, writer.turnId]).toEqual([ref.sessionId, ref.turnId]);
        await writer.append(CHUNKS.slice(0, 3));
        await writer.append([]);
        await writer.append(CHUNKS.slice(3));
        await writer.close(outcome);
        expect(await readAll(store, ref)).toEqual(expected(CHUNKS, outcome));
        expect(await readAll(store, ref, { fromIndex: 5 })).toEqual(expected(CHUNKS, outcome, 5));
        expect(await readAll(store, ref, { fromIndex: CHUNKS.length + 10 })).toEqual([{ type: 'end', status: outcome }]);
      }
    });

    test('a reader started before the first chunk follows the stream live, on another store instance, until the close', async () => {
      const producer = await make();
      const consumer = await make();
      const ref = newRef();
      const writer = await openWriter(producer, ref);
      const reading = readAll(consumer, ref);
      for (const chunk of CHUNKS) {
        await sleep(5);
        await writer.append([chunk]);
      }
      await writer.close('finished');
      expect(await reading).toEqual(expected(CHUNKS, 'finished'));
    });

    test('readers at once, and readers that join mid-stream, each get every chunk once, in order', async () => {
      const store = await make();
      const other = await make();
      const ref = newRef();
      const writer = await openWriter(store, ref);
      const chunks = Array.from({ length: 300 }, (_, i) => ({ i, text: `chunk ${i}` }));
      const readers: Promise<StreamReadItem[]>[] = [readAll(store, ref), readAll(other, ref)];
      for (let i = 0; i < chunks.length; i += 10) {
        await writer.append(chunks.slice(i, i + 10));
        if (i === 100 || i === 200) readers.push(readAll(other, ref), readAll(store, ref, { fromIndex: 50 }));
        if (i % 50 === 0) await sleep(2);
      }
      await writer.close('finished');
      const [first, second, ...late] = await Promise.all(readers);
      expect(first).toEqual(expected(chunks, 'finished'));
      expect(second).toEqual(expected(chunks, 'finished'));
      for (const [i, items] of late.entries()) expect(items).toEqual(expected(chunks, 'finished', i % 2 === 0 ? 0 : 50));
    });

    test('chunks are kept as exact JSON copies: a change to an appended or a read value changes nothing stored', async () => {
      const store = await make();
      const ref = newRef();
      const writer = await openWriter(store, ref);
      const chunk = { type: 'data', list: ['a'], inner: { n: 1 } };
      await writer.append([chunk]);
      chunk.list.push('changed after append');
      chunk.inner.n = 2;
      await writer.close('finished');
      const first = await readAll(store, ref);
      expect(first[0]).toEqual({ type: 'chunk', index: 0, chunk: { type: 'data', list: ['a'], inner: { n: 1 } } });
      (first[0] as unknown as { chunk: { list: string[] } }).chunk.list.push('changed after read');
      expect((await readAll(store, ref))[0]).toEqual({ type: 'chunk', index: 0, chunk: { type: 'data', list: ['a'], inner: { n: 1 } } });
    });

    test('opening the running turn again joins it (created: false); another turn of the session is refused with ConcurrencyError (turnRunning)', async () => {
      const store = await make();
      const other = await make();
      const ref = newRef();
      const writer = await openWriter(store, ref);
      await writer.append(CHUNKS.slice(0, 2));
      const again = await other.open(ref);
      expect(again.created).toBe(false);
      expect(again.info).toMatchObject({ sessionId: ref.sessionId, turnId: ref.turnId, status: 'running', chunkCount: 2 });
      const error = await expectRejection(
        other.open({ sessionId: ref.sessionId, turnId: newId('turn') }),
        ConcurrencyError.isInstance,
        'open of another turn while one runs',
      );
      expect((error as ConcurrencyError).turnRunning).toBe(true);
      expect((error as ConcurrencyError).sessionId).toBe(ref.sessionId);
      // Other sessions are independent.
      await openWriter(other, newRef());
      // The joiner reads what the producer writes.
      const joined = readAll(other, ref);
      await writer.append(CHUNKS.slice(2));
      await writer.close('finished');
      expect(await joined).toEqual(expected(CHUNKS, 'finished'));
    });

    test('find: undefined without a stream; the running stream, then its outcome and close time; after the next turn opens, that one', async () => {
      const store = await make();
      const ref = newRef();
      expect(await store.find(ref.sessionId)).toBeUndefined();
      const before = Date.now();
      const writer = await openWriter(store, ref);
      await writer.append(CHUNKS.slice(0, 3));
      const running = await store.find(ref.sessionId);
      expect(running).toMatchObject({
        sessionId: ref.sessionId,
        turnId: ref.turnId,
        status: 'running',
        chunkCount: 3,
        stopRequested: false,
      });
      expect(running?.closedAt).toBeUndefined();
      expect(new Date(Date.parse(running!.openedAt)).toISOString()).toBe(running!.openedAt);
      expect(Date.parse(running!.openedAt)).toBeGreaterThanOrEqual(before - 60_000); // a remote store's clock may differ a little
      await writer.close('stopped');
      const closed = await store.find(ref.sessionId);
      expect(closed).toMatchObject({ turnId: ref.turnId, status: 'stopped', chunkCount: 3 });
      expect(Date.parse(closed!.closedAt!)).toBeGreaterThanOrEqual(Date.parse(closed!.openedAt));
      const nextTurn = { sessionId: ref.sessionId, turnId: newId('turn') };
      await openWriter(store, nextTurn);
      expect(await store.find(ref.sessionId)).toMatchObject({ turnId: nextTurn.turnId, status: 'running', chunkCount: 0 });
      // The earlier turn's stream can still be replayed.
      expect(await readAll(store, ref)).toEqual(expected(CHUNKS.slice(0, 3), 'stopped'));
    });

    test('a turn whose stream ended can be opened again: a new, empty stream replaces it', async () => {
      const store = await make();
      const ref = newRef();
      const first = await openWriter(store, ref);
      await first.append(['old']);
      await first.close('failed');
      const second = await openWriter(store, ref);
      await second.append(['new']);
      await second.close('finished');
      expect(await readAll(store, ref)).toEqual(expected(['new'], 'finished'));
      await expectRejection(first.append(['late']), ConcurrencyError.isInstance, 'an append by the first writer');
    });

    test('writes after the close are refused with ConcurrencyError and write nothing; a repeated close with the same outcome resolves', async () => {
      const store = await make();
      const ref = newRef();
      const writer = await openWriter(store, ref);
      await writer.append(['a']);
      await writer.close('finished');
      await writer.close('finished');
      await expectRejection(writer.append(['b']), ConcurrencyError.isInstance, 'an append after the close');
      await expectRejection(writer.close('failed'), ConcurrencyError.isInstance, 'a close with another outcome');
      expect(await readAll(store, ref)).toEqual(expected(['a'], 'finished'));
      expect(await store.find(ref.sessionId)).toMatchObject({ status: 'finished', chunkCount: 1 });
    });

    test('appendJson, where a writer has it, keeps the texts with the chunks of append, in order, within the limits, and refuses what is not text', async () => {
      const store = await make({ maxChunks: 6, maxBytes: 400 });
      const ref = newRef();
      const writer = await openWriter(store, ref);
      if (writer.appendJson === undefined) {
        await writer.close('finished');
        return;
      }
      await writer.append(CHUNKS.slice(0, 1));
      await writer.appendJson(CHUNKS.slice(1, 3).map((chunk) => JSON.stringify(chunk)));
      await writer.append(CHUNKS.slice(3, 4));
      const notText = await expectRejection(
        writer.appendJson([{ type: 'x' } as unknown as string]),
        ConfigurationError.isInstance,
        'an appendJson of a chunk that is not text',
      );
      expect((notText as Error).message).toMatch(/appendJson/);
      const tooBig = await expectRejection(
        writer.appendJson([JSON.stringify('x'.repeat(400))]),
        InvalidInputError.isInstance,
        'an appendJson past maxBytes',
      );
      expect((tooBig as InvalidInputError).limit).toBe('maxBytes');
      await writer.close('finished');
      expect(await readAll(store, ref)).toEqual([
        ...expected(CHUNKS.slice(0, 4), 'finished').slice(0, -1),
        { type: 'end', status: 'finished', limitReached: 'maxBytes' },
      ]);
    });

    test('an append past maxChunks or maxBytes throws InvalidInputError naming the limit and appends nothing of its batch', async () => {
      const store = await make({ maxChunks: 5, maxBytes: 200 });
      const ref = newRef();
      const writer = await openWriter(store, ref);
      await writer.append(['a', 'b', 'c']);
      const tooMany = await expectRejection(writer.append(['d', 'e', 'f']), InvalidInputError.isInstance, 'an append past maxChunks');
      expect((tooMany as InvalidInputError).limit).toBe('maxChunks');
      const tooBig = await expectRejection(writer.append(['x'.repeat(200)]), InvalidInputError.isInstance, 'an append past maxBytes');
      expect((tooBig as InvalidInputError).limit).toBe('maxBytes');
      await writer.append(['d', 'e']);
      // The first limit reached is recorded, for readers to say why the chunks stop short.
      expect(await store.find(ref.sessionId)).toMatchObject({ status: 'running', chunkCount: 5, limitReached: 'maxChunks' });
      await writer.close('failed');
      expect(await readAll(store, ref)).toEqual([
        ...expected(['a', 'b', 'c', 'd', 'e'], 'failed').slice(0, -1),
        { type: 'end', status: 'failed', limitReached: 'maxChunks' },
      ]);
    });

    test('a stream past a limit stays open: a stop from another instance still reaches its writer, and readers end with the outcome and the limit', async () => {
      const producer = await make({ leaseMs, maxBytes: 100 });
      const other = await make({ leaseMs, maxBytes: 100 });
      const ref = newRef();
      const writer = await openWriter(producer, ref);
      await writer.append(['kept']);
      const reading = readAll(other, ref);
      const refused = await expectRejection(writer.append(['x'.repeat(100)]), InvalidInputError.isInstance, 'an append past maxBytes');
      expect((refused as InvalidInputError).limit).toBe('maxBytes');
      expect(await other.find(ref.sessionId)).toMatchObject({ status: 'running', chunkCount: 1, limitReached: 'maxBytes' });
      expect(await other.requestStop({ sessionId: ref.sessionId, turnId: ref.turnId })).toBe(true);
      for (let i = 0; i < 100 && !writer.stopSignal.aborted; i++) await sleep(leaseMs / 10);
      expect(writer.stopSignal.aborted).toBe(true);
      await writer.close('stopped');
      const end = { type: 'end', status: 'stopped', limitReached: 'maxBytes' } as StreamReadItem;
      expect(await reading).toEqual([...expected(['kept'], 'stopped').slice(0, -1), end]);
      expect(await readAll(other, ref)).toEqual([...expected(['kept'], 'stopped').slice(0, -1), end]);
      expect(await other.find(ref.sessionId)).toMatchObject({ status: 'stopped', limitReached: 'maxBytes' });
    });

    test('a chunk that is not JSON is refused with InvalidInputError, and nothing of its batch is appended', async () => {
      const store = await make();
      const ref = newRef();
      const writer = await openWriter(store, ref);
      await expectRejection(
        writer.append(['fine', { bad: () => 1 } as unknown as JsonValue]),
        InvalidInputError.isInstance,
        'an append of a function',
      );
      await writer.close('finished');
      expect(await readAll(store, ref)).toEqual([{ type: 'end', status: 'finished' }]);
    });

    test('requestStop from another store instance aborts the producer’s stopSignal; readers then end with stopped', async () => {
      const producer = await make({ leaseMs });
      const other = await make({ leaseMs });
      const ref = newRef();
      const writer = await openWriter(producer, ref);
      const reading = readAll(other, ref);
      await writer.append(['before the stop']);
      expect(writer.stopSignal.aborted).toBe(false);
      expect(await other.requestStop({ sessionId: ref.sessionId, turnId: newId('turn') })).toBe(false);
      expect(await other.requestStop({ sessionId: newId('session') })).toBe(false);
      expect(await other.requestStop({ sessionId: ref.sessionId, turnId: ref.turnId })).toBe(true);
      expect(await other.find(ref.sessionId)).toMatchObject({ stopRequested: true, status: 'running' });
      // The producer learns of it through its renewals (or its next append), without any append here.
      for (let i = 0; i < 100 && !writer.stopSignal.aborted; i++) await sleep(leaseMs / 10);
      expect(writer.stopSignal.aborted).toBe(true);
      await writer.close('stopped');
      expect(await reading).toEqual(expected(['before the stop'], 'stopped'));
      expect(await other.requestStop({ sessionId: ref.sessionId })).toBe(false);
    });

    test('a producer that stops renewing its lease ends readers as abandoned; the turn can then be opened again, and the old writer is refused', async () => {
      const store = await make({ leaseMs });
      const other = await make({ leaseMs });
      const ref = newRef();
      const writer = await openWriter(store, ref);
      await writer.append(['partial']);
      const reading = readAll(other, ref);
      writer.release();
      expect(await reading).toEqual(expected(['partial'], 'abandoned'));
      expect(await other.find(ref.sessionId)).toMatchObject({ turnId: ref.turnId, status: 'abandoned', chunkCount: 1 });
      // Read after the fact: the same end.
      expect(await readAll(other, ref)).toEqual(expected(['partial'], 'abandoned'));
      // The session is free again: another turn opens, and so would the same one.
      const next = await openWriter(other, { sessionId: ref.sessionId, turnId: newId('turn') });
      await expectRejection(writer.append(['late']), ConcurrencyError.isInstance, 'an append by the abandoned writer');
      await next.close('finished');
    });

    test('a live producer keeps its lease while it appends nothing for several lease periods', async () => {
      const store = await make({ leaseMs });
      const other = await make({ leaseMs });
      const ref = newRef();
      const writer = await openWriter(store, ref);
      const reading = readAll(other, ref);
      await sleep(leaseMs * 3);
      expect(await other.find(ref.sessionId)).toMatchObject({ status: 'running' });
      await writer.append(['after a long tool call']);
      await writer.close('finished');
      expect(await reading).toEqual(expected(['after a long tool call'], 'finished'));
    });

    test('a read ends when its signal aborts, quietly and without an end item, while the stream still runs', async () => {
      const store = await make();
      const ref = newRef();
      const writer = await openWriter(store, ref);
      await writer.append(['one']);
      const controller = new AbortController();
      const items: StreamReadItem[] = [];
      const reading = (async () => {
        for await (const item of store.read(ref, { signal: controller.signal })) {
          items.push(item);
          if (items.length === 1) setTimeout(() => controller.abort(), 50);
        }
      })();
      await reading;
      expect(items).toEqual([{ type: 'chunk', index: 0, chunk: 'one' }]);
      // An aborted signal ends a read at once.
      expect(await readAll(store, ref, { signal: AbortSignal.abort() })).toEqual([]);
      await writer.close('finished');
    });

    test('a stream is gone ttlMs after its close: find and read see nothing', async () => {
      const store = await make({ ttlMs: 300 });
      const ref = newRef();
      const writer = await openWriter(store, ref);
      await writer.append(['a']);
      await writer.close('finished');
      expect(await readAll(store, ref)).toEqual(expected(['a'], 'finished'));
      await sleep(700);
      expect(await store.find(ref.sessionId)).toBeUndefined();
      expect(await readAll(store, ref)).toEqual([]);
    });

    test('a read of a stream that was never opened yields nothing', async () => {
      const store = await make();
      expect(await readAll(store, newRef())).toEqual([]);
    });

    test('hostile session and turn ids are kept apart, each stream under its own key', async () => {
      const store = await make();
      const ids = HOSTILE_SESSION_IDS.filter((id) => id.length <= maxIdLength);
      const prefix = newId('p');
      for (const [i, id] of ids.entries()) {
        const writer = await openWriter(store, { sessionId: `${prefix}${id}`, turnId: id });
        await writer.append([{ i, id }]);
        await writer.close('finished');
      }
      for (const [i, id] of ids.entries()) {
        const ref = { sessionId: `${prefix}${id}`, turnId: id };
        expect(await readAll(store, ref), describeId(id)).toEqual(expected([{ i, id }], 'finished'));
        expect(await store.find(ref.sessionId), describeId(id)).toMatchObject({ turnId: id, chunkCount: 1 });
      }
      // Turns of one session are apart too.
      const sessionId = newId('session');
      const turns = ['a', 'A', 'a ', '\u00e9', 'e\u0301', '\uD800', '\uDBFF'];
      for (const turnId of turns) {
        const writer = await openWriter(store, { sessionId, turnId });
        await writer.append([turnId]);
        await writer.close('finished');
      }
      for (const turnId of turns)
        expect(await readAll(store, { sessionId, turnId }), describeId(turnId)).toEqual(expected([turnId], 'finished'));
    });

    test('blank session and turn ids, a bad outcome and a bad fromIndex are refused with ConfigurationError', async () => {
      const store = await make();
      for (const blank of BLANK_SESSION_IDS) {
        await expectRejection(store.open({ sessionId: blank, turnId: 't' }), ConfigurationError.isInstance, `open in ${describeId(blank)}`);
        await expectRejection(store.open({ sessionId: 's', turnId: blank }), ConfigurationError.isInstance, `open of ${describeId(blank)}`);
        await expectRejection(store.find(blank), ConfigurationError.isInstance, `find of ${describeId(blank)}`);
        await expectRejection(
          store.requestStop({ sessionId: blank }),
          ConfigurationError.isInstance,
          `requestStop of ${describeId(blank)}`,
        );
        await expectRejection(readAll(store, { sessionId: blank, turnId: 't' }), ConfigurationError.isInstance, 'read');
      }
      await expectRejection(readAll(store, newRef(), { fromIndex: -1 }), ConfigurationError.isInstance, 'read from -1');
      const ref = newRef();
      const writer = await openWriter(store, ref);
      await expectRejection(writer.close('done' as 'finished'), ConfigurationError.isInstance, "close with 'done'");
      await writer.close('finished');
    });
  });
}
