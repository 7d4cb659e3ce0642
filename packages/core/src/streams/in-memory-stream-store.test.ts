import { describe, expect, it } from 'vitest';
import { ConcurrencyError, ConfigurationError, InvalidInputError } from '../errors.js';
import type { StreamReadItem, StreamStore, StreamWriter } from '../contracts/stream-store.js';
import { InMemoryStreamStore } from './in-memory-stream-store.js';

async function openWriter(store: StreamStore, sessionId: string, turnId: string): Promise<StreamWriter> {
  const opened = await store.open({ sessionId, turnId });
  if (!opened.created) throw new Error('expected a new stream');
  return opened.writer;
}

async function collect(items: AsyncIterable<StreamReadItem>): Promise<StreamReadItem[]> {
  const all: StreamReadItem[] = [];
  for await (const item of items) all.push(item);
  return all;
}

describe('InMemoryStreamStore', () => {
  it('replays a closed stream from the first chunk or a given index, then ends with its outcome', async () => {
    const store = new InMemoryStreamStore();
    const writer = await openWriter(store, 's', 't');
    await writer.append([{ type: 'start' }, { type: 'text-delta', delta: 'a' }]);
    await writer.append([{ type: 'finish' }]);
    await writer.close('finished');
    expect(await collect(store.read({ sessionId: 's', turnId: 't' }))).toEqual([
      { type: 'chunk', index: 0, chunk: { type: 'start' } },
      { type: 'chunk', index: 1, chunk: { type: 'text-delta', delta: 'a' } },
      { type: 'chunk', index: 2, chunk: { type: 'finish' } },
      { type: 'end', status: 'finished' },
    ]);
    expect(await collect(store.read({ sessionId: 's', turnId: 't' }, { fromIndex: 2 }))).toEqual([
      { type: 'chunk', index: 2, chunk: { type: 'finish' } },
      { type: 'end', status: 'finished' },
    ]);
    expect(await store.find('s')).toMatchObject({ turnId: 't', status: 'finished', chunkCount: 3, stopRequested: false });
  });

  it('appendJson keeps the producer’s texts in order with the chunks of append, counts their bytes against maxBytes, and refuses what is not text', async () => {
    const store = new InMemoryStreamStore({ maxBytes: 60 });
    const writer = await openWriter(store, 's', 't');
    await writer.appendJson!(['{"type":"start"}']);
    await writer.append([{ type: 'text-delta', delta: 'é' }]);
    const refused = await writer.appendJson!(['{"type":"finish","x":"0123456789"}']).catch((error: unknown) => error);
    expect(InvalidInputError.isInstance(refused) && refused.limit).toBe('maxBytes');
    const notText = await writer.appendJson!([{ type: 'finish' } as unknown as string]).catch((error: unknown) => error);
    expect(ConfigurationError.isInstance(notText) && notText.message).toMatch(/Chunk 0 of an appendJson .* is a object, not JSON text/);
    await writer.close('finished');
    expect(await collect(store.read({ sessionId: 's', turnId: 't' }))).toEqual([
      { type: 'chunk', index: 0, chunk: { type: 'start' } },
      { type: 'chunk', index: 1, chunk: { type: 'text-delta', delta: 'é' } },
      { type: 'end', status: 'finished', limitReached: 'maxBytes' },
    ]);
  });

  it('a reader started before the chunks follows them live until the close', async () => {
    const store = new InMemoryStreamStore();
    const writer = await openWriter(store, 's', 't');
    const reading = collect(store.read({ sessionId: 's', turnId: 't' }));
    await writer.append(['one']);
    await writer.append(['two']);
    await writer.close('stopped');
    expect(await reading).toEqual([
      { type: 'chunk', index: 0, chunk: 'one' },
      { type: 'chunk', index: 1, chunk: 'two' },
      { type: 'end', status: 'stopped' },
    ]);
  });

  it('one running stream per session: the same turn joins, another turn is refused with ConcurrencyError', async () => {
    const store = new InMemoryStreamStore();
    const writer = await openWriter(store, 's', 't1');
    const again = await store.open({ sessionId: 's', turnId: 't1' });
    expect(again).toMatchObject({ created: false, info: { turnId: 't1', status: 'running' } });
    const refused = await store.open({ sessionId: 's', turnId: 't2' }).catch((error: unknown) => error);
    expect(ConcurrencyError.isInstance(refused) && refused.turnRunning).toBe(true);
    await writer.close('finished');
    expect((await store.open({ sessionId: 's', turnId: 't2' })).created).toBe(true);
  });

  it('refuses appends after the close, and past maxChunks or maxBytes, appending nothing', async () => {
    const store = new InMemoryStreamStore({ maxChunks: 3, maxBytes: 20 });
    const writer = await openWriter(store, 's', 't');
    await writer.append(['a', 'b']);
    const tooMany = await writer.append(['c', 'd']).catch((error: unknown) => error);
    expect(InvalidInputError.isInstance(tooMany) && tooMany.limit).toBe('maxChunks');
    const tooBig = await writer.append(['x'.repeat(20)]).catch((error: unknown) => error);
    expect(InvalidInputError.isInstance(tooBig) && tooBig.limit).toBe('maxBytes');
    await writer.close('failed');
    await writer.close('failed');
    await expect(writer.append(['e'])).rejects.toSatisfy(ConcurrencyError.isInstance);
    await expect(writer.close('finished')).rejects.toSatisfy(ConcurrencyError.isInstance);
    expect(await store.find('s')).toMatchObject({ status: 'failed', chunkCount: 2 });
  });

  it('a released writer (a producer that died) ends readers as abandoned, and a new open of the turn replaces it', async () => {
    const store = new InMemoryStreamStore({ leaseMs: 30 });
    const writer = await openWriter(store, 's', 't');
    await writer.append(['partial']);
    const reading = collect(store.read({ sessionId: 's', turnId: 't' }));
    writer.release();
    expect(await reading).toEqual([
      { type: 'chunk', index: 0, chunk: 'partial' },
      { type: 'end', status: 'abandoned' },
    ]);
    expect(await store.find('s')).toMatchObject({ status: 'abandoned' });
    await expect(writer.append(['late'])).rejects.toSatisfy(ConcurrencyError.isInstance);
    const reopened = await store.open({ sessionId: 's', turnId: 't' });
    expect(reopened).toMatchObject({ created: true, info: { status: 'running', chunkCount: 0 } });
  });

  it('a live writer keeps its lease while it produces nothing', async () => {
    const store = new InMemoryStreamStore({ leaseMs: 30 });
    const writer = await openWriter(store, 's', 't');
    const reader = store.read({ sessionId: 's', turnId: 't' })[Symbol.asyncIterator]();
    const first = reader.next();
    // Several leases pass with no chunk: the renewal keeps the stream running.
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect((await store.find('s'))?.status).toBe('running');
    await writer.append(['late but alive']);
    expect((await first).value).toEqual({ type: 'chunk', index: 0, chunk: 'late but alive' });
    await writer.close('finished');
    expect((await reader.next()).value).toEqual({ type: 'end', status: 'finished' });
  });

  it('requestStop aborts the writer’s stopSignal and shows in find', async () => {
    const store = new InMemoryStreamStore();
    const writer = await openWriter(store, 's', 't');
    expect(await store.requestStop({ sessionId: 's', turnId: 'other' })).toBe(false);
    expect(writer.stopSignal.aborted).toBe(false);
    expect(await store.requestStop({ sessionId: 's' })).toBe(true);
    expect(writer.stopSignal.aborted).toBe(true);
    expect(await store.find('s')).toMatchObject({ stopRequested: true, status: 'running' });
    await writer.close('stopped');
    expect(await store.requestStop({ sessionId: 's' })).toBe(false);
  });

  it('a read ends quietly when its signal aborts, and a stream past its ttl is gone', async () => {
    const store = new InMemoryStreamStore({ ttlMs: 20 });
    const writer = await openWriter(store, 's', 't');
    const controller = new AbortController();
    const reading = collect(store.read({ sessionId: 's', turnId: 't' }, { signal: controller.signal }));
    await writer.append(['a']);
    controller.abort();
    expect(await reading).toEqual([{ type: 'chunk', index: 0, chunk: 'a' }]);
    await writer.close('finished');
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(await store.find('s')).toBeUndefined();
    expect(await collect(store.read({ sessionId: 's', turnId: 't' }))).toEqual([]);
  });

  it('refuses blank ids, bad outcomes and unknown options with ConfigurationError', async () => {
    const store = new InMemoryStreamStore();
    await expect(store.open({ sessionId: ' ', turnId: 't' })).rejects.toSatisfy(ConfigurationError.isInstance);
    await expect(store.open({ sessionId: 's', turnId: '' })).rejects.toSatisfy(ConfigurationError.isInstance);
    expect(() => store.read({ sessionId: 's', turnId: 't' }, { fromIndex: -1 })).toThrow(ConfigurationError);
    const writer = await openWriter(store, 's', 't');
    await expect(writer.close('done' as 'finished')).rejects.toSatisfy(ConfigurationError.isInstance);
    expect(() => new InMemoryStreamStore({ ttl: 5 } as object)).toThrow(/unknown option "ttl"/);
    expect(() => new InMemoryStreamStore({ leaseMs: 0 })).toThrow(ConfigurationError);
  });
});
