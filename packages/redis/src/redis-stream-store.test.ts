import type { StreamReadItem } from '@ctx/core';
import type { Cluster, Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { allKeys, clusterClient, countCommands, singleClient, uniquePrefix } from '../test/helpers.js';
import { clusterSlot } from './keys.js';
import { RedisStreamStore } from './redis-stream-store.js';

async function collect(items: AsyncIterable<StreamReadItem>): Promise<StreamReadItem[]> {
  const all: StreamReadItem[] = [];
  for await (const item of items) all.push(item);
  return all;
}

describe('RedisStreamStore', () => {
  it('keeps a session’s stream keys in the documented layout, all in the slot of the session’s hash tag', async () => {
    const client = clusterClient();
    const prefix = uniquePrefix('stream-layout');
    const store = new RedisStreamStore({ client, prefix });
    const ref = { sessionId: 'a{b}c:*', turnId: 'turn 1' };
    const opened = await store.open(ref);
    if (!opened.created) throw new Error('expected a new stream');
    await opened.writer.append(['x']);
    await opened.writer.close('finished');
    const keys = (await allKeys(client)).filter((key) => key.startsWith(`${prefix}:`)).sort();
    expect(keys.map((key) => key.replace(/:chunks:[0-9a-f-]{36}$/, ':chunks:<openId>'))).toEqual([
      `${prefix}:stream:{a%7Bb%7Dc%3A%2A}`,
      `${prefix}:stream:{a%7Bb%7Dc%3A%2A}:chunks:<openId>`,
      `${prefix}:stream:{a%7Bb%7Dc%3A%2A}:turn:turn%201`,
    ]);
    expect(new Set(keys.map(clusterSlot)).size).toBe(1);
    expect(await client.type(keys[1]!)).toBe('stream');
    // Every key expires: ttlMs (10 minutes) after the close.
    for (const key of keys) expect(await client.pttl(key)).toBeGreaterThan(9 * 60_000);
  });

  it('an append, a close and a replay of an ended stream are one round trip each (a replay: two)', async () => {
    const client = singleClient();
    const store = new RedisStreamStore({ client, prefix: uniquePrefix('stream-trips') });
    // A first stream loads the scripts (EVAL once per script and server).
    const warm = await store.open({ sessionId: 'warm', turnId: 't' });
    if (!warm.created) throw new Error('expected a new stream');
    await warm.writer.append(['w']);
    await warm.writer.close('finished');
    await collect(store.read({ sessionId: 'warm', turnId: 't' }));
    const ref = { sessionId: 's', turnId: 't' };
    const opened = await store.open(ref);
    if (!opened.created) throw new Error('expected a new stream');
    const commands = countCommands(client);
    await opened.writer.append(['a', 'b', 'c']);
    expect(commands.names).toEqual(['evalsha']);
    commands.reset();
    await opened.writer.close('finished');
    expect(commands.names).toEqual(['evalsha']);
    commands.reset();
    expect(await collect(store.read(ref))).toHaveLength(4);
    expect(commands.names).toEqual(['get', 'evalsha']);
  });

  it('close() stops the lease renewals of its writers: readers on another instance then end as abandoned', async () => {
    const client = singleClient();
    const prefix = uniquePrefix('stream-close');
    const producer = new RedisStreamStore({ client, prefix, leaseMs: 300 });
    const consumer = new RedisStreamStore({ client, prefix, leaseMs: 300, blockMs: 100 });
    const ref = { sessionId: 's', turnId: 't' };
    const opened = await producer.open(ref);
    if (!opened.created) throw new Error('expected a new stream');
    await opened.writer.append(['a']);
    const reading = collect(consumer.read(ref));
    await producer.close();
    expect(await reading).toEqual([
      { type: 'chunk', index: 0, chunk: 'a' },
      { type: 'end', status: 'abandoned' },
    ]);
  });

  it.each([
    ['single node', singleClient],
    ['cluster', clusterClient],
  ] as [string, () => Redis | Cluster][])(
    'a stop asked on another instance reaches the writer at once (%s), not at its next renewal',
    async (_topology, connect) => {
      const client = connect();
      const prefix = uniquePrefix('stream-stop');
      const producer = new RedisStreamStore({ client, prefix });
      const other = new RedisStreamStore({ client: connect(), prefix });
      const ref = { sessionId: 's', turnId: 't' };
      const opened = await producer.open(ref);
      if (!opened.created) throw new Error('expected a new stream');
      // From here the producer's scripts never answer, so its renewals cannot bring the stop.
      const original = client.sendCommand.bind(client) as (...args: unknown[]) => unknown;
      (client as unknown as { sendCommand: (...args: unknown[]) => unknown }).sendCommand = (...args: unknown[]) =>
        String((args[0] as { name: string }).name).toLowerCase() === 'evalsha' ? new Promise(() => {}) : original(...args);
      const stopped = new Promise((resolve) => opened.writer.stopSignal.addEventListener('abort', resolve, { once: true }));
      try {
        expect(await other.requestStop(ref)).toBe(true);
        await stopped;
        expect(opened.writer.stopSignal.aborted).toBe(true);
      } finally {
        (client as unknown as { sendCommand: unknown }).sendCommand = original;
        await Promise.all([producer.close(), other.close()]);
      }
    },
  );
});
