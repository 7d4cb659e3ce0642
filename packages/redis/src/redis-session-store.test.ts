import { ConcurrencyError, ConfigurationError, SessionStateError, type SessionJson } from '@ctx/core';
import { BLANK_SESSION_IDS, HOSTILE_SESSION_IDS } from '@ctx/provider-tests';
import { Redis, type Cluster } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { nested } from '@ctx/fuzz-kit';
import { allKeys, clusterClient, countCommands, expireNow, nestedJson, singleClient, uniquePrefix } from '../test/helpers.js';
import { RedisSessionStore } from './redis-session-store.js';

const AT = '2026-01-02T03:04:05.678Z';
const session = (sessionId: string, note = 'x'): SessionJson => ({
  type: 'ctx.session',
  version: 2,
  sessionId,
  metadata: { createdAt: AT, updatedAt: AT },
  state: { notes: { note } },
});

describe('RedisSessionStore options', () => {
  it('rejects a ttlSeconds that is not a positive integer with ConfigurationError', () => {
    expect(() => new RedisSessionStore({ client: new Redis({ lazyConnect: true }), ttlSeconds: -1 })).toThrow(ConfigurationError);
  });

  it('empty and whitespace-only session ids are ConfigurationErrors from every method, before any round trip', async () => {
    const client = new Redis({ lazyConnect: true });
    const store = new RedisSessionStore({ client });
    const counted = countCommands(client);
    for (const sessionId of [...BLANK_SESSION_IDS, '\r\n', '\u3000']) {
      const calls: [string, () => Promise<unknown>][] = [
        ['key', async () => store.key(sessionId)],
        ['get', () => store.get(sessionId)],
        ['set', () => store.set(session(sessionId))],
        ['set with ifMatch', () => store.set(session(sessionId), { ifMatch: null })],
        ['delete', () => store.delete(sessionId)],
      ];
      for (const [name, call] of calls) {
        const error = await call().catch((e: unknown) => e);
        expect(ConfigurationError.isInstance(error), `${name}(${JSON.stringify(sessionId)})`).toBe(true);
        expect((error as Error).message).toContain('session id must be a string with at least one non-whitespace character');
      }
    }
    expect(counted.names).toEqual([]);
    expect(client.status).toBe('wait');
  });
});

/** Sessions `get` could not read back, each with the path `set` must name. */
function unreadableSessions(sessionId: string): [name: string, session: SessionJson, path: string][] {
  const cycle: Record<string, unknown> = {};
  cycle.self = cycle;
  const withState = (slot: unknown) => ({ ...session(sessionId), state: { s: slot } }) as unknown as SessionJson;
  const holey: number[] = [];
  holey[0] = 1;
  holey[2] = 3;
  return [
    ['NaN', withState({ n: Number.NaN }), '$.state.s.n'],
    ['a Map', withState({ m: new Map([[1, 2]]) }), '$.state.s.m'],
    ['a Date', withState({ d: new Date(0) }), '$.state.s.d'],
    ['undefined', withState({ u: undefined }), '$.state.s.u'],
    ['an array slot', withState([1, 2]), '$.state.s'],
    ['an array with a hole', withState({ list: holey }), '$.state.s.list[1]'],
    ['a bigint', withState({ n: 1n }), '$.state.s.n'],
    ['a cycle', withState(cycle), '$.state.s.self'],
    ['200 levels of nesting', withState(nested(200)), '$.state.s.a'],
  ];
}

for (const [topology, connect] of [
  ['single node', () => singleClient()],
  ['cluster', () => clusterClient()],
] as const) {
  describe(`RedisSessionStore on ${topology}`, () => {
    const client: Redis | Cluster = connect();
    const prefix = uniquePrefix('store');
    const store = new RedisSessionStore({ client, prefix });
    const id = () => `s-${Math.random().toString(36).slice(2)}`;

    it('keeps a session as one hash with its JSON, a random UUID etag, a revision and its user', async () => {
      const sessionId = id();
      const before = Date.now() * 1000;
      const etag = await store.set(session(sessionId));
      expect(etag).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(store.key(sessionId)).toBe(`${prefix}:session:{${sessionId}}`);
      const { rev, ...hash } = await client.hgetall(store.key(sessionId));
      expect(hash).toEqual({ json: JSON.stringify(session(sessionId)), etag });
      // The server's clock in microseconds, moving on with every write.
      expect(Math.abs(Number(rev) - before)).toBeLessThan(60_000_000);
      const owned = { ...session(sessionId), metadata: { ...session(sessionId).metadata, userId: 'ada' } };
      await store.set(owned);
      const next = await client.hgetall(store.key(sessionId));
      expect(next.user).toBe('ada');
      expect(BigInt(next.rev!) > BigInt(rev!)).toBe(true);
    });

    it('get is one HMGET and set is one EVALSHA (on a cluster, then one per listing at once)', async () => {
      const sessionId = id();
      await store.set(session(sessionId)); // loads the script on this node
      const counted = countCommands(client);
      const etag = await store.set(session(sessionId, 'y'));
      expect((await store.get(sessionId))?.etag).toBe(etag);
      expect(counted.names).toEqual(client instanceof Redis ? ['evalsha', 'hmget'] : ['evalsha', 'evalsha', 'hmget']);
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
      // The 1 s expiry the set gave the key passes at once instead of after a 2 s wait.
      await expireNow(client, [short.key(sessionId)], 1);
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
        expect((error as SessionStateError).sessionId).toBe(sessionId);
        expect((error as Error).message).toContain(`of session ${JSON.stringify(sessionId)} at redis:${key}.version`);
        await client.hset(key, 'json', '{oops');
        expect(((await store.get(sessionId).catch((e: unknown) => e)) as SessionStateError).path).toBe(`redis:${key}`);
      });

      it('session JSON nested 100,000 levels deep fails get with SessionStateError naming the key and the path', async () => {
        const sessionId = id();
        const key = store.key(sessionId);
        const deep = nestedJson(100_000);
        for (const [json, path] of [
          [`{"type":"ctx.session","version":1,"sessionId":${JSON.stringify(sessionId)},"state":{"s":${deep}}}`, '.state.s'],
          [`{"type":${deep},"version":1,"sessionId":${JSON.stringify(sessionId)},"state":{}}`, '.type'],
          [`{"type":"ctx.session","version":${deep},"sessionId":${JSON.stringify(sessionId)},"state":{}}`, '.version'],
          [deep, ''],
        ] as const) {
          await client.hset(key, 'json', json, 'etag', 'e1');
          const error = await store.get(sessionId).catch((e: unknown) => e);
          expect(SessionStateError.isInstance(error), path).toBe(true);
          expect((error as SessionStateError).path.startsWith(`redis:${key}${path}`), (error as SessionStateError).path).toBe(true);
        }
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
        for (const attempt of [() => store.get(sessionId), () => store.set(session(sessionId))]) {
          const error = await attempt().catch((e: unknown) => e);
          expect(SessionStateError.isInstance(error)).toBe(true);
          expect((error as SessionStateError).path).toBe(`redis:${key}`);
        }
      });
    });

    it('refuses a session get could not read back (NaN, Map, Date, undefined, array slot, cycle, too deep), naming the path; nothing is written', async () => {
      const sessionId = id();
      const counted = countCommands(client);
      for (const [name, bad, path] of unreadableSessions(sessionId)) {
        for (const ifMatch of [undefined, null, 'some-etag']) {
          const error = await store.set(bad, { ifMatch }).catch((e: unknown) => e);
          expect(SessionStateError.isInstance(error), name).toBe(true);
          expect((error as SessionStateError).path.startsWith(path), `${name}: ${(error as SessionStateError).path}`).toBe(true);
        }
      }
      expect(counted.names).toEqual([]);
      expect(await client.exists(store.key(sessionId))).toBe(0);
    });

    it('stores a session exactly as get reads it: extra top-level fields are not kept, and JSON text is refused instead of stored as a string', async () => {
      const sessionId = id();
      const json = { ...session(sessionId), serviceSessionId: 'resp_1' };
      const etag = await store.set({ ...json, extra: () => 1, big: 1n } as unknown as SessionJson);
      expect(JSON.parse((await client.hget(store.key(sessionId), 'json'))!)).toEqual(json);
      expect(await store.get(sessionId)).toEqual({ session: json, etag });
      const text = await store.set(JSON.stringify(session(sessionId, 'as text')) as unknown as SessionJson).catch((e: unknown) => e);
      expect(SessionStateError.isInstance(text)).toBe(true);
      expect((text as SessionStateError).path).toBe('$');
      expect(await store.get(sessionId)).toEqual({ session: json, etag });
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
      const lone = /[\uD800-\uDFFF]/u;
      const all = [...HOSTILE_SESSION_IDS, '}{', '\uDFFF', 'x'.repeat(10_000)];
      // Ids with a lone surrogate are refused: the listings keep ids as UTF-8 text, where they would meet.
      for (const sessionId of all.filter((id) => lone.test(id))) {
        await expect(hostile.set(session(sessionId, 'refused'))).rejects.toThrow(
          /lone UTF-16 surrogate at index \d+: Redis keeps the ids of its listings as UTF-8 text/,
        );
        expect(await hostile.get(sessionId)).toBeUndefined();
      }
      const ids = all.filter((id) => !lone.test(id));
      for (const [i, sessionId] of ids.entries()) await hostile.set(session(sessionId, String(i)));
      for (const [i, sessionId] of ids.entries()) expect((await hostile.get(sessionId))?.session).toEqual(session(sessionId, String(i)));
      const mine = (await allKeys(client)).filter((k) => k.startsWith(`${hostilePrefix}:session:`));
      expect(new Set(mine)).toEqual(new Set(ids.map((sessionId) => hostile.key(sessionId))));
      // The listing of every session: one on a single node, the shards holding these ids on a cluster.
      const listings = new Set(
        ids.flatMap((sessionId) => [hostile.indexKeys(undefined, sessionId).meta, hostile.indexKeys(undefined, sessionId).order]),
      );
      expect((await allKeys(client)).filter((k) => k.startsWith(`${hostilePrefix}:`) && !mine.includes(k)).sort()).toEqual(
        [...listings].sort(),
      );
      for (const key of mine) expect(key).toMatch(/^t-hostile-store-[a-z0-9]+:session:\{[A-Za-z0-9._%~-]{1,200}\}$/);
    });
  });
}
