import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BackendUnavailableError, ConcurrencyError, type StreamReadItem, type StreamRef, type StreamWriter } from '@ctx/core';
import { startRedisServer, type RedisServer } from '@ctx/redis-test-server';
import { afterAll, describe, expect, it } from 'vitest';
import { env, uniquePrefix } from '../test/helpers.js';
import { RedisStreamStore } from './redis-stream-store.js';

const packageRoot = fileURLToPath(new URL('..', import.meta.url));

/** A read running in the background: the items so far, and how it ended (its items, and what it threw if it did). */
function follow(items: AsyncIterable<StreamReadItem>) {
  const seen: StreamReadItem[] = [];
  const done = (async () => {
    try {
      for await (const item of items) seen.push(item);
      return { items: seen, error: undefined as unknown };
    } catch (error) {
      return { items: seen, error };
    }
  })();
  return { seen, done };
}

/** Waits, a bounded number of times, until `check` holds. */
async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`gave up waiting until ${what}`);
}

async function collect(items: AsyncIterable<StreamReadItem>): Promise<StreamReadItem[]> {
  const all: StreamReadItem[] = [];
  for await (const item of items) all.push(item);
  return all;
}

async function openWriter(store: RedisStreamStore, ref: StreamRef): Promise<StreamWriter> {
  const opened = await store.open(ref);
  if (!opened.created) throw new Error('expected a new stream');
  return opened.writer;
}

const chunk = (delta: string) => ({ type: 'text-delta', id: 't', delta });
const items = (...deltas: string[]): StreamReadItem[] => deltas.map((delta, index) => ({ type: 'chunk', index, chunk: chunk(delta) }));

// Dedicated servers that these tests kill, pause and restart by pid; the shared servers of the
// other test files are never touched.
describe('RedisStreamStore when Redis or the producer goes away mid-stream', () => {
  const stores: RedisStreamStore[] = [];
  const servers: RedisServer[] = [];
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()));
    await Promise.all(servers.map((server) => server.stop()));
  });
  /** Two store instances on one server and prefix, as two processes of one app. */
  const twoStores = (port: number) => {
    const prefix = uniquePrefix('stream-faults');
    const url = `redis://127.0.0.1:${port}`;
    const made = [0, 1].map(() => new RedisStreamStore({ url, prefix, timeoutMs: 1000, blockMs: 200 }));
    stores.push(...made);
    return made as [RedisStreamStore, RedisStreamStore];
  };
  const start = async (name: string, durable: boolean, port?: number) => {
    const server = await startRedisServer({ dir: join(env.tmpDir, `stream-${name}`), durable, ...(port === undefined ? {} : { port }) });
    servers.push(server);
    return server;
  };
  const answers = (store: RedisStreamStore, sessionId: string) => () =>
    store.find(sessionId).then(
      () => true,
      () => false,
    );

  it('a restart ends both readers with BackendUnavailableError and fails appends in the outage; on durable Redis the stream then goes on and replays whole', async () => {
    let server = await start('durable', true);
    const [producer, other] = twoStores(server.port);
    const ref = { sessionId: 'restart', turnId: 'turn-1' };
    const writer = await openWriter(producer, ref);
    await writer.append([chunk('a'), chunk('b')]);
    const readers = [follow(producer.read(ref)), follow(other.read(ref))];
    await until(() => readers.every((r) => r.seen.length === 2), 'both readers have both chunks');

    await server.stop('SIGKILL');
    for (const reader of readers) {
      const ended = await reader.done;
      expect(ended.items).toEqual(items('a', 'b'));
      expect(BackendUnavailableError.isInstance(ended.error), String(ended.error)).toBe(true);
    }
    await expect(writer.append([chunk('lost')])).rejects.toSatisfy(BackendUnavailableError.isInstance);

    server = await start('durable', true, server.port);
    await until(answers(producer, ref.sessionId), 'Redis answers again');
    // appendfsync always: the stream and its lease survived the restart, so the producer goes on.
    await writer.append([chunk('c')]);
    await writer.close('finished');
    expect(await collect(other.read(ref))).toEqual([...items('a', 'b', 'c'), { type: 'end', status: 'finished' }]);
  });

  it('a restart that loses the data (no persistence): the producer’s next append fails with ConcurrencyError, and nothing is left to resume', async () => {
    let server = await start('memory', false);
    const [producer, other] = twoStores(server.port);
    const ref = { sessionId: 'lost', turnId: 'turn-1' };
    const writer = await openWriter(producer, ref);
    await writer.append([chunk('a')]);
    const reader = follow(other.read(ref));
    await until(() => reader.seen.length === 1, 'the reader has the chunk');
    await server.stop('SIGKILL');
    const ended = await reader.done;
    expect(BackendUnavailableError.isInstance(ended.error), String(ended.error)).toBe(true);

    server = await start('memory', false, server.port);
    await until(answers(producer, ref.sessionId), 'Redis answers again');
    const error = await writer.append([chunk('b')]).catch((e: unknown) => e);
    expect(ConcurrencyError.isInstance(error), String(error)).toBe(true);
    expect((error as Error).message).toMatch(/no longer exists/);
    expect(await other.find(ref.sessionId)).toBeUndefined();
    expect(await collect(other.read(ref))).toEqual([]);
    // The session is free for the next turn.
    await (await openWriter(other, { sessionId: ref.sessionId, turnId: 'turn-2' })).close('finished');
  });

  it('a paused Redis: a following read ends at once when its signal aborts, and one without a signal fails with BackendUnavailableError within its deadline', async () => {
    const server = await start('paused', false);
    const [producer, other] = twoStores(server.port);
    const ref = { sessionId: 'paused', turnId: 'turn-1' };
    const writer = await openWriter(producer, ref);
    await writer.append([chunk('a')]);
    const controller = new AbortController();
    const aborted = follow(other.read(ref, { signal: controller.signal }));
    const unbounded = follow(other.read(ref));
    await until(() => aborted.seen.length === 1 && unbounded.seen.length === 1, 'both readers have the chunk');
    server.pause();
    try {
      controller.abort();
      expect(await aborted.done).toEqual({ items: items('a'), error: undefined });
      const ended = await unbounded.done;
      expect(ended.items).toEqual(items('a'));
      expect(BackendUnavailableError.isInstance(ended.error), String(ended.error)).toBe(true);
    } finally {
      server.resume();
    }
    writer.release();
  });

  it('a producer process killed mid-stream: readers on another process get what it appended, then end as abandoned; the turn can run again', async () => {
    if (!existsSync(join(packageRoot, 'dist', 'index.js'))) throw new Error('Build @ctx/redis first: the child process runs dist/.');
    const server = await start('killed', false);
    const ref = { sessionId: 'killed', turnId: 'turn-1' };
    const leaseMs = 600;
    const keyPrefix = uniquePrefix('stream-killed');
    const readerStore = new RedisStreamStore({
      url: `redis://127.0.0.1:${server.port}`,
      prefix: keyPrefix,
      timeoutMs: 1000,
      blockMs: 200,
      leaseMs,
    });
    stores.push(readerStore);
    const proc = spawn(
      process.execPath,
      [
        join(packageRoot, 'test', 'stream-producer-child.mjs'),
        `redis://127.0.0.1:${server.port}`,
        keyPrefix,
        ref.sessionId,
        ref.turnId,
        String(leaseMs),
      ],
      { cwd: packageRoot, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const exited = new Promise<NodeJS.Signals | null>((resolve) => proc.once('exit', (_code, signal) => resolve(signal)));
    let out = '';
    proc.stderr.on('data', (d: Buffer) => (out += d));
    proc.stdout.on('data', (d: Buffer) => (out += d));
    await until(() => out.includes('appended\n') || proc.exitCode !== null, 'the child has appended');
    expect(out).toContain('appended\n');
    // Alive, it keeps its lease past several lease periods.
    const readers = [follow(readerStore.read(ref)), follow(readerStore.read(ref))];
    await new Promise((resolve) => setTimeout(resolve, leaseMs * 2));
    expect(await readerStore.find(ref.sessionId)).toMatchObject({ status: 'running', chunkCount: 2 });
    process.kill(proc.pid!, 'SIGKILL');
    expect(await exited).toBe('SIGKILL');
    const expected = [
      { type: 'chunk', index: 0, chunk: { type: 'text-delta', delta: 'x' } },
      { type: 'chunk', index: 1, chunk: { type: 'text-delta', delta: 'y' } },
      { type: 'end', status: 'abandoned' },
    ];
    for (const reader of readers) expect(await reader.done).toEqual({ items: expected, error: undefined });
    expect(await readerStore.find(ref.sessionId)).toMatchObject({ status: 'abandoned', chunkCount: 2 });
    const again = await openWriter(readerStore, ref);
    await again.append([chunk('retry')]);
    await again.close('finished');
    expect(await collect(readerStore.read(ref))).toEqual([...items('retry'), { type: 'end', status: 'finished' }]);
  });
});
