import { ConcurrencyError, ConfigurationError, SessionStateError, type SessionJson } from '@ctx/core';
import { HOSTILE_SESSION_IDS } from '@ctx/provider-tests';
import { Redis, type Cluster } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { allKeys, clusterClient, countCommands, singleClient, uniquePrefix } from '../test/helpers.js';
import { RedisSessionStore } from './redis-session-store.js';

const session = (sessionId: string, note = 'x'): SessionJson => ({
  type: 'ctx.session',
  version: 1,
  sessionId,
  state: { notes: { note } },
});

describe('RedisSessionStore options', () => {
  it('rejects a ttlSeconds that is not a positive integer with ConfigurationError', () => {
    expect(() => new RedisSessionStore({ client: new Redis({ lazyConnect: true }), ttlSeconds: -1 })).toThrow(ConfigurationError);
  });
});

for (const [topology, connect] of [
  ['single node', () => singleClient()],
  ['cluster', () => clusterClient()],
] as const) {
  describe(`RedisSessionStore on ${topology}`, () => {
    const client: Redis | Cluster = connect();
    const prefix = uniquePrefix('store');
    const store = new RedisSessionStore({ client, prefix });
    const id = () => `s-${Math.random().toString(36).slice(2)}`;

    it('keeps a session as one hash with its JSON and a random UUID etag', async () => {
      const sessionId = id();
      const etag = await store.set(session(sessionId));
      expect(etag).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(store.key(sessionId)).toBe(`${prefix}:session:{${sessionId}}`);
      expect(await client.hgetall(store.key(sessionId))).toEqual({ json: JSON.stringify(session(sessionId)), etag });
    });

    it('get is one HMGET and set is one EVALSHA', async () => {
      const sessionId = id();
      await store.set(session(sessionId)); // loads the script on this node
      const counted = countCommands(client);
      const etag = await store.set(session(sessionId, 'y'));
      expect((await store.get(sessionId))?.etag).toBe(etag);
      expect(counted.names).toEqual(['evalsha', 'hmget']);
    });

    it('an etag from before a delete never matches the re-created session', async () => {
      const sessionId = id();
      const old = await store.set(session(sessionId));
      expect(await store.delete(sessionId)).toBe(true);
      await store.set(session(sessionId, 'new owner'), { ifMatch: null });
      await expect(store.set(session(sessionId, 'stale writer'), { ifMatch: old })).rejects.toSatisfy(ConcurrencyError.isInstance);
      expect((await store.get(sessionId))?.session.state).toEqual({ notes: { note: 'new owner' } });
    });

    it('ifMatch on a deleted session says it was deleted', async () => {
      const sessionId = id();
      const etag = await store.set(session(sessionId));
      await store.delete(sessionId);
      const error = await store.set(session(sessionId), { ifMatch: etag }).catch((e: unknown) => e);
      expect(ConcurrencyError.isInstance(error)).toBe(true);
      expect((error as Error).message).toContain('was deleted');
      expect(await store.get(sessionId)).toBeUndefined();
    });

    it('ttlSeconds expires a session after its last set; a store without it removes the expiry', async () => {
      const withTtl = new RedisSessionStore({ client, prefix, ttlSeconds: 100 });
      const sessionId = id();
      await withTtl.set(session(sessionId));
      expect(await client.ttl(withTtl.key(sessionId))).toBeGreaterThan(95);
      await client.expire(withTtl.key(sessionId), 3);
      await withTtl.get(sessionId);
      expect(await client.ttl(withTtl.key(sessionId))).toBeLessThanOrEqual(3);
      await withTtl.set(session(sessionId, 'again'));
      expect(await client.ttl(withTtl.key(sessionId))).toBeGreaterThan(95);
      await store.set(session(sessionId, 'forever'));
      expect(await client.ttl(store.key(sessionId))).toBe(-1);
      const short = new RedisSessionStore({ client, prefix, ttlSeconds: 1 });
      await short.set(session(sessionId));
      await new Promise((r) => setTimeout(r, 2100));
      expect(await short.get(sessionId)).toBeUndefined();
    });

    describe('corrupt stored data', () => {
      it('JSON that is not a session names the key and the path inside it', async () => {
        const sessionId = id();
        const key = store.key(sessionId);
        await client.hset(key, 'json', JSON.stringify({ ...session(sessionId), version: 7 }), 'etag', 'e1');
        const error = await store.get(sessionId).catch((e: unknown) => e);
        expect(SessionStateError.isInstance(error)).toBe(true);
        expect((error as SessionStateError).path).toBe(`redis:${key}.version`);
        await client.hset(key, 'json', '{oops');
        expect(((await store.get(sessionId).catch((e: unknown) => e)) as SessionStateError).path).toBe(`redis:${key}`);
      });

      it('a session stored under another id, a hash without its etag, or a key of the wrong type are SessionStateErrors', async () => {
        const sessionId = id();
        const key = store.key(sessionId);
        await client.hset(key, 'json', JSON.stringify(session('someone-else')), 'etag', 'e1');
        expect(((await store.get(sessionId).catch((e: unknown) => e)) as SessionStateError).path).toBe(`redis:${key}.sessionId`);
        await client.hdel(key, 'etag');
        expect(((await store.get(sessionId).catch((e: unknown) => e)) as SessionStateError).problem).toContain('"etag"');
        await client.del(key);
        await client.rpush(key, 'a list');
        for (const attempt of [store.get(sessionId), store.set(session(sessionId))]) {
          const error = await attempt.catch((e: unknown) => e);
          expect(SessionStateError.isInstance(error)).toBe(true);
          expect((error as SessionStateError).path).toBe(`redis:${key}`);
        }
      });
    });

    it('refuses session JSON that is not valid before writing', async () => {
      const sessionId = id();
      const bad = { ...session(sessionId), state: { notes: { fn: () => 1 } } } as unknown as SessionJson;
      await expect(store.set(bad)).rejects.toSatisfy(SessionStateError.isInstance);
      expect(await store.get(sessionId)).toBeUndefined();
    });

    it('hostile ids stay apart and every key stays inside the prefix', async () => {
      const hostilePrefix = uniquePrefix('hostile-store');
      const hostile = new RedisSessionStore({ client, prefix: hostilePrefix });
      const ids = [...HOSTILE_SESSION_IDS, '}{', '\uD800', 'x'.repeat(10_000)];
      for (const [i, sessionId] of ids.entries()) await hostile.set(session(sessionId, String(i)));
      for (const [i, sessionId] of ids.entries()) expect((await hostile.get(sessionId))?.session).toEqual(session(sessionId, String(i)));
      const mine = (await allKeys(client)).filter((k) => k.startsWith(`${hostilePrefix}:`));
      expect(new Set(mine)).toEqual(new Set(ids.map((sessionId) => hostile.key(sessionId))));
      for (const key of mine) expect(key).toMatch(/^t-hostile-store-[a-z0-9]+:session:\{[A-Za-z0-9._%~-]{1,200}\}$/);
    });
  });
}
