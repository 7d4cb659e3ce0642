import { BackendUnavailableError, createAgent, SessionStateError, WorkingMemoryProvider, type JsonObject } from '@ctx/core';
import { ScriptedChatClient, type ScriptedReply } from '@ctx/core/testing';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { allKeys, clusterClient, countCommands, singleClient, uniquePrefix } from '../test/helpers.js';
import { RedisWorkingMemoryStore } from './redis-working-memory-store.js';

const single = singleClient();
const cluster = clusterClient();

describe('RedisWorkingMemoryStore', () => {
  it('lays a user’s records out under one hash tag, and a put or delete is one round trip', async () => {
    const prefix = uniquePrefix('wm-layout');
    const store = new RedisWorkingMemoryStore({ client: single, prefix });
    await single.ping(); // connected: the connection's own setup commands are not counted
    const counted = countCommands(single);
    await store.put({ userId: 'u:1' }, { name: 'Ada' });
    await store.put({ userId: 'u:1', sessionId: 's{1}' }, '# notes');
    await store.put({ sessionId: 's 2' }, 'anonymous');
    expect(counted.names.filter((n) => n !== 'eval')).toEqual(['evalsha', 'evalsha', 'evalsha']);
    const keys = (await allKeys(single)).filter((k) => k.startsWith(`${prefix}:`)).sort();
    expect(keys).toEqual(
      [
        `${prefix}:wm:{s:s%202}:session`,
        `${prefix}:wm:{u:u%3A1}:index`,
        `${prefix}:wm:{u:u%3A1}:session:s%7B1%7D`,
        `${prefix}:wm:{u:u%3A1}:user`,
      ].sort(),
    );
    expect(await single.hgetall(`${prefix}:wm:{u:u%3A1}:session:s%7B1%7D`)).toMatchObject({ record: '"# notes"', sessionId: '"s{1}"' });
    expect((await single.smembers(`${prefix}:wm:{u:u%3A1}:index`)).sort()).toEqual(
      [`${prefix}:wm:{u:u%3A1}:session:s%7B1%7D`, `${prefix}:wm:{u:u%3A1}:user`].sort(),
    );
    counted.reset();
    expect(await store.deleteUser('u:1')).toBe(2);
    expect(counted.names.filter((n) => n !== 'eval')).toEqual(['evalsha']);
    expect((await allKeys(single)).filter((k) => k.startsWith(`${prefix}:`))).toEqual([`${prefix}:wm:{s:s%202}:session`]);
  });

  it('a hand-edited record is a SessionStateError naming the key; a stale index entry is dropped by listUser', async () => {
    const prefix = uniquePrefix('wm-garbage');
    const store = new RedisWorkingMemoryStore({ client: single, prefix });
    const key = store.keys({ userId: 'u1' });
    await single.hset(key.record, 'record', '{oops', 'etag', 'e1');
    const error = await store.get({ userId: 'u1' }).catch((e: unknown) => e);
    expect(SessionStateError.isInstance(error)).toBe(true);
    expect((error as SessionStateError).path).toBe(`redis:${key.record}.record`);
    await single.hdel(key.record, 'etag');
    expect(((await store.get({ userId: 'u1' }).catch((e: unknown) => e)) as Error).message).toContain('without its "etag" field');
    await single.sadd(key.index!, `${prefix}:wm:{u:u1}:session:gone`);
    await store.put({ userId: 'u1' }, { ok: true });
    expect((await store.listUser('u1')).map((e) => e.record)).toEqual([{ ok: true }]);
    expect(await single.smembers(key.index!)).toEqual([key.record]);
  });

  it('refuses a record over maxValueBytes before any round trip, and non-JSON records', async () => {
    const store = new RedisWorkingMemoryStore({ client: single, prefix: uniquePrefix('wm-size'), maxValueBytes: 100 });
    const counted = countCommands(single);
    const error = await store.put({ userId: 'u1' }, { text: 'x'.repeat(200) }).catch((e: unknown) => e);
    expect(SessionStateError.isInstance(error)).toBe(true);
    expect((error as Error).message).toContain('maxValueBytes (100 bytes');
    await expect(store.put({ userId: 'u1' }, { n: Number.NaN })).rejects.toThrow(/not plain JSON at \$\.n/);
    expect(counted.names).toEqual([]);
  });

  it('fails fast with BackendUnavailableError when Redis is not there', async () => {
    const store = new RedisWorkingMemoryStore({ url: 'redis://127.0.0.1:1', timeoutMs: 500, redisOptions: { retryStrategy: () => null } });
    try {
      const error = await store.get({ userId: 'u1' }).catch((e: unknown) => e);
      expect(BackendUnavailableError.isInstance(error), String(error)).toBe(true);
    } finally {
      await store.close();
    }
  });

  for (const [name, client] of [
    ['single node', single],
    ['cluster', cluster],
  ] as const) {
    it(`${name}: eight agent runs updating one user at once through WorkingMemoryProvider lose nothing`, async () => {
      const store = new RedisWorkingMemoryStore({ client, prefix: uniquePrefix('wm-race') });
      // A Standard Schema: every field a number.
      const schema = {
        '~standard': {
          version: 1 as const,
          vendor: 'test',
          validate: (value: unknown) =>
            Object.values(value as object).every((v) => typeof v === 'number') ? { value } : { issues: [{ message: 'numbers only' }] },
        },
      };
      const memory = new WorkingMemoryProvider({ schema, store });
      const runs = Array.from({ length: 8 }, (_, i) => {
        const reply: ScriptedReply = { toolCalls: [{ name: 'update_working_memory', arguments: { update: { [`field${i}`]: i } } }] };
        const agent = createAgent({ client: new ScriptedChatClient({ replies: [reply, 'Done.'] }), contextProviders: [memory] });
        return agent.run(`Remember ${i}.`, { session: agent.createSession({ userId: 'racer' }) });
      });
      const responses = await Promise.all(runs);
      for (const r of responses) {
        const result = r.messages.flatMap((m) => m.contents).find((c) => c.type === 'function-result');
        expect(result && 'isError' in result ? result.isError : undefined).toBeFalsy();
      }
      const record = (await store.get({ userId: 'racer' }))!.record as JsonObject;
      expect(record).toEqual(Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`field${i}`, i])));
    });
  }

  it('an injected client is not closed by close(); blank keys never reach Redis', async () => {
    const client = new Redis({ lazyConnect: true });
    const store = new RedisWorkingMemoryStore({ client });
    await expect(store.get({ userId: ' ' })).rejects.toThrow(/userId of a working-memory key/);
    await store.close();
    expect(client.status).toBe('wait');
    client.disconnect();
  });
});
