import { ConcurrencyError, ConfigurationError, InvalidInputError, SessionStateError, type SessionJson, type SessionPage } from '@ctx/core';
import { HOSTILE_SESSION_IDS } from '@ctx/provider-tests';
import type { Cluster, Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { allKeys, clusterClient, countCommands, singleClient, uniquePrefix } from '../test/helpers.js';
import { clusterSlot } from './keys.js';
import { RedisSessionStore } from './redis-session-store.js';

const time = (ms: number) => new Date(Date.UTC(2026, 0, 1) + ms).toISOString();

function session(sessionId: string, at: number, userId?: string, title?: string): SessionJson {
  return {
    type: 'ctx.session',
    version: 2,
    sessionId,
    metadata: { createdAt: time(0), updatedAt: time(at), ...(userId === undefined ? {} : { userId }), ...(title ? { title } : {}) },
    state: {},
  };
}

/** Every page of a listing, following the cursors. */
async function listAll(store: RedisSessionStore, options: { userId?: string; limit?: number } = {}): Promise<SessionPage[]> {
  const pages: SessionPage[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 1000; i++) {
    const page = await store.list({ ...options, ...(cursor ? { cursor } : {}) });
    pages.push(page);
    cursor = page.nextCursor;
    if (cursor === undefined) return pages;
  }
  throw new Error('listing did not end');
}

const ids = (pages: SessionPage[]) => pages.flatMap((p) => p.sessions.map((s) => s.sessionId));

/** Byte order of UTF-8, as Redis compares members. */
const byBytesDesc = (a: string, b: string) => Buffer.compare(Buffer.from(b), Buffer.from(a));

describe('RedisSessionStore.list options', () => {
  it('a bad limit or a blank userId (ConfigurationError) or a cursor from another listing (InvalidInputError) is refused before any round trip', async () => {
    const client = singleClient();
    const store = new RedisSessionStore({ client, prefix: uniquePrefix('list-opts') });
    await store.set(session('a', 1, 'u1'));
    await store.set(session('b', 2, 'u1'));
    const { nextCursor } = await store.list({ userId: 'u1', limit: 1 });
    expect(nextCursor).toBeDefined();
    const counted = countCommands(client);
    for (const options of [
      { limit: 0 },
      { limit: 101 },
      { limit: 1.5 },
      { userId: ' ' },
      { cursor: nextCursor! },
      { userId: 'u2', cursor: nextCursor! },
      { cursor: 'nope' },
    ]) {
      const error = await store.list(options).catch((e: unknown) => e);
      const expected = 'cursor' in options ? InvalidInputError : ConfigurationError;
      expect(expected.isInstance(error), JSON.stringify(options)).toBe(true);
    }
    expect(counted.names).toEqual([]);
  });
});

for (const [topology, connect] of [
  ['single node', () => singleClient()],
  ['cluster', () => clusterClient()],
] as const) {
  describe(`RedisSessionStore.list on ${topology}`, () => {
    const client: Redis | Cluster = connect();
    const fresh = (name: string, options: { ttlSeconds?: number } = {}) =>
      new RedisSessionStore({ client, prefix: uniquePrefix(name), ...options });

    it('lists newest first, ties by session id descending in byte order, every session once across pages of any size', async () => {
      const store = fresh('order');
      // Several sessions share a time; the ids cross the places where UTF-16 and byte order differ.
      const sids = ['a', 'b', 'B', 'é', '\uffff', '😀', 'a\u0000', 'ab', 'x y', '}{', ...HOSTILE_SESSION_IDS.slice(0, 6)];
      const unique = [...new Set(sids)];
      const at = (i: number) => (i % 3) * 1000;
      for (const [i, sid] of unique.entries()) await store.set(session(sid, at(i), i % 2 ? 'u1' : 'u2'));
      const expected = unique
        .map((sid, i) => ({ sid, at: at(i) }))
        .sort((x, y) => y.at - x.at || byBytesDesc(x.sid, y.sid))
        .map((e) => e.sid);
      for (const limit of [1, 2, 3, 7, 100]) {
        const pages = await listAll(store, { limit });
        expect(ids(pages), `limit ${limit}`).toEqual(expected);
        expect(pages.every((p) => p.total === unique.length)).toBe(true);
        expect(pages.at(-1)!.sessions.length).toBeGreaterThan(0);
      }
      const u1 = await listAll(store, { userId: 'u1', limit: 2 });
      expect(ids(u1)).toEqual(expected.filter((sid) => unique.indexOf(sid) % 2 === 1));
      expect(u1[0]!.total).toBe(Math.floor(unique.length / 2));
      const first = (await store.list({ limit: 1 })).sessions[0]!;
      expect(first.metadata).toEqual(
        session(first.sessionId, at(unique.indexOf(first.sessionId)), unique.indexOf(first.sessionId) % 2 ? 'u1' : 'u2').metadata,
      );
    });

    it('a session saved again moves to the front; paging that was under way neither repeats nor skips the others', async () => {
      const store = fresh('move');
      for (let i = 0; i < 6; i++) await store.set(session(`s${i}`, i * 10));
      const page1 = await store.list({ limit: 2 });
      expect(page1.sessions.map((s) => s.sessionId)).toEqual(['s5', 's4']);
      await store.set(session('s1', 100));
      const rest = [];
      let cursor = page1.nextCursor;
      while (cursor) {
        const page = await store.list({ limit: 2, cursor });
        rest.push(...page.sessions.map((s) => s.sessionId));
        cursor = page.nextCursor;
      }
      expect(rest).toEqual(['s3', 's2', 's0']);
      expect(ids(await listAll(store))).toEqual(['s1', 's5', 's4', 's3', 's2', 's0']);
    });

    it('a session whose user changes moves between the user listings; delete leaves no listing entry', async () => {
      const store = fresh('users');
      await store.set(session('s', 1, 'alice'));
      await store.set(session('t', 2, 'alice'));
      expect(ids(await listAll(store, { userId: 'alice' }))).toEqual(['t', 's']);
      // Another store instance (no remembered user) changes the owner.
      const other = new RedisSessionStore({ client, prefix: store.indexKeys().order.split(':sessions:')[0]! });
      await other.set(session('s', 3, 'bob'));
      expect(ids(await listAll(store, { userId: 'alice' }))).toEqual(['t']);
      expect(ids(await listAll(store, { userId: 'bob' }))).toEqual(['s']);
      await other.set(session('s', 4));
      expect(ids(await listAll(store, { userId: 'bob' }))).toEqual([]);
      expect(ids(await listAll(store))).toEqual(['s', 't']);
      expect(await other.delete('t')).toBe(true);
      expect(await store.delete('s')).toBe(true);
      expect(await store.delete('s')).toBe(false);
      expect((await store.list()).sessions).toEqual([]);
      const prefix = store.indexKeys().order.split(':sessions:')[0]!;
      expect((await allKeys(client)).filter((k) => k.startsWith(`${prefix}:`))).toEqual([]);
    });

    it('a failed ifMatch changes no listing', async () => {
      const store = fresh('cas');
      const etag = await store.set(session('s', 1, 'alice', 'first'));
      await store.set(session('s', 2, 'alice', 'second'), { ifMatch: etag });
      await expect(store.set(session('s', 3, 'bob', 'stale'), { ifMatch: etag })).rejects.toSatisfy(ConcurrencyError.isInstance);
      await expect(store.set(session('s', 3, 'bob', 'stale'), { ifMatch: null })).rejects.toSatisfy(ConcurrencyError.isInstance);
      expect((await store.list({ userId: 'alice' })).sessions.map((s) => s.metadata.title)).toEqual(['second']);
      expect((await store.list({ userId: 'bob' })).sessions).toEqual([]);
    });

    it('sessions that expire leave the listing', async () => {
      const store = fresh('ttl', { ttlSeconds: 1 });
      await store.set(session('gone', 1, 'u'));
      const keep = new RedisSessionStore({ client, prefix: store.indexKeys().order.split(':sessions:')[0]! });
      await keep.set(session('kept', 2, 'u'));
      expect(ids(await listAll(store, { userId: 'u' }))).toEqual(['kept', 'gone']);
      await new Promise((r) => setTimeout(r, 1300));
      expect(await store.get('gone')).toBeUndefined();
      const page = await store.list({ userId: 'u' });
      expect(page.sessions.map((s) => s.sessionId)).toEqual(['kept']);
      expect(page.total).toBe(1);
      expect(ids(await listAll(store))).toEqual(['kept']);
    });

    it('hostile user ids get listings of their own, inside the prefix', async () => {
      const store = fresh('hostile-users');
      const lone = /[\uD800-\uDFFF]/u;
      for (const userId of HOSTILE_SESSION_IDS.filter((u) => lone.test(u))) {
        await expect(store.set(session('s-lone', 0, userId))).rejects.toThrow(/userId .* holds a lone UTF-16 surrogate/);
      }
      const users = [
        ...new Set([...HOSTILE_SESSION_IDS.filter((u) => u.length <= 512 && !lone.test(u)), 'all', 'user:x', '*', 'x'.repeat(512)]),
      ];
      for (const [i, userId] of users.entries()) await store.set(session(`s${i}`, i, userId));
      for (const [i, userId] of users.entries()) {
        const page = await store.list({ userId });
        expect(page.sessions.map((s) => [s.sessionId, s.metadata.userId])).toEqual([[`s${i}`, userId]]);
      }
      const prefix = store.indexKeys().order.split(':sessions:')[0]!;
      const keys = (await allKeys(client)).filter((k) => k.includes(prefix));
      expect(keys.every((k) => k.startsWith(`${prefix}:`))).toBe(true);
      // Each listing: order and meta, plus the session keys; every index key has one hash tag. The
      // listing of every session is one on a single node, and the shards holding these ids on a cluster.
      const everySession = new Set(users.map((_, i) => store.indexKeys(undefined, `s${i}`).order));
      expect(keys.filter((k) => k.includes(':sessions:')).length).toBe(2 * (users.length + everySession.size));
    });

    it('reindex lists sessions written without listing entries (an earlier version) and reports unreadable keys', async () => {
      const store = fresh('reindex');
      const prefix = store.indexKeys().order.split(':sessions:')[0]!;
      await client.hset(store.key('old1'), 'json', JSON.stringify(session('old1', 5, 'u')), 'etag', 'e1');
      await client.hset(
        store.key('old2'),
        'json',
        JSON.stringify({ ...session('old2', 0), version: 1, metadata: undefined }),
        'etag',
        'e2',
      );
      await client.hset(store.key('bad'), 'json', '{', 'etag', 'e3');
      await store.set(session('new', 1, 'u'));
      expect(ids(await listAll(store))).toEqual(['new']);
      const result = await store.reindex();
      expect(result).toEqual({ indexed: 3, unreadable: [`${prefix}:session:{bad}`] });
      expect(ids(await listAll(store, { userId: 'u' }))).toEqual(['old1', 'new']);
      expect(ids(await listAll(store))).toContain('old2');
      expect((await store.get('old1'))?.etag).toBe('e1');
    });

    it('a listing entry that is not metadata is a SessionStateError naming it', async () => {
      const store = fresh('corrupt');
      await store.set(session('s', 1));
      // On a cluster, the shard of the listing of every session that holds the entry of 's'.
      await client.hset(store.indexKeys(undefined, 's').meta, 's', '12 {"createdAt":1}');
      const error = await store.list().catch((e: unknown) => e);
      expect(SessionStateError.isInstance(error)).toBe(true);
      expect((error as SessionStateError).path).toBe(`redis:${store.indexKeys(undefined, 's').meta}["s"].createdAt`);
    });

    it('round trips: set is one script call; get then delete is one; a page is one (cluster: plus the sessions checked at once)', async () => {
      const store = fresh('trips');
      for (let i = 0; i < 5; i++) await store.set(session(`s${i}`, i, 'u'));
      await store.list();
      await store.delete('s0');
      // Scripts loaded on the nodes of the listings the counted calls touch (on a cluster each
      // listing shard may be on a node that has not run them yet).
      await store.delete('s2');
      await store.set(session('s2', 2, 'u'));
      const counted = countCommands(client);
      await store.set(session('s1', 10, 'u'));
      const setNames = [...counted.names];
      counted.reset();
      await store.get('s2');
      counted.reset();
      await store.delete('s2');
      const deleteNames = [...counted.names];
      counted.reset();
      const page = await store.list({ userId: 'u', limit: 2 });
      expect(page.sessions).toHaveLength(2);
      if (topology === 'single node') {
        expect(setNames).toEqual(['evalsha']);
        expect(deleteNames).toEqual(['evalsha']);
        expect(counted.names).toEqual(['evalsha']);
      } else {
        // The session, then the all-sessions and the user listing at once.
        expect(setNames).toEqual(['evalsha', 'evalsha', 'evalsha']);
        expect(deleteNames).toEqual(['evalsha', 'evalsha', 'evalsha']);
        expect(counted.names).toEqual(['evalsha', 'hmget', 'hmget', 'hmget']);
      }
    });
  });
}

describe('RedisSessionStore.list on a cluster, after writes cut between a session and its listings', () => {
  const client = clusterClient();

  it('the listing of every session is 16 shards spread over every master: no one slot takes every save, and pages merge them in order', async () => {
    const store = new RedisSessionStore({ client, prefix: uniquePrefix('shards') });
    for (let i = 0; i < 64; i++) await store.set(session(`s${i}`, i % 5));
    const prefix = store.indexKeys('u').order.split(':sessions:')[0]!;
    const listingKeys = (await allKeys(client)).filter((k) => k.startsWith(`${prefix}:sessions:`));
    expect(listingKeys.filter((k) => k.includes('{all}'))).toEqual([]);
    const orders = listingKeys.filter((k) => k.endsWith(':order'));
    expect(orders.length).toBeGreaterThanOrEqual(12);
    expect(new Set(orders.map((k) => clusterSlot(k))).size).toBe(orders.length);
    const masters = new Set(orders.map((k) => client.slots[clusterSlot(k)]![0]));
    expect(masters.size).toBe(client.nodes('master').length);
    let entries = 0;
    for (const key of orders) entries += await client.zcard(key);
    expect(entries).toBe(64);
    const expected = Array.from({ length: 64 }, (_, i) => ({ sid: `s${i}`, at: i % 5 }))
      .sort((x, y) => y.at - x.at || byBytesDesc(x.sid, y.sid))
      .map((e) => e.sid);
    for (const limit of [1, 7, 100]) {
      const pages = await listAll(store, { limit });
      expect(ids(pages), `limit ${limit}`).toEqual(expected);
      expect(pages.every((p) => p.total === 64)).toBe(true);
    }
  });

  it('drops entries whose session is gone or has another user, and fills the page from the next ones', async () => {
    const store = new RedisSessionStore({ client, prefix: uniquePrefix('stale') });
    for (let i = 0; i < 30; i++) await store.set(session(`s${String(i).padStart(2, '0')}`, i, 'u'));
    // As if a delete and a user change had stopped after the session write.
    for (let i = 29; i >= 10; i -= 2) await client.del(store.key(`s${i}`));
    await client.hset(store.key('s28'), 'user', 'someone else');
    const page = await store.list({ userId: 'u', limit: 5 });
    expect(page.sessions.map((s) => s.sessionId)).toEqual(['s26', 's24', 's22', 's20', 's18']);
    const rest = ids(await listAll(store, { userId: 'u', limit: 5 }));
    expect(rest).toEqual([
      's26',
      's24',
      's22',
      's20',
      's18',
      's16',
      's14',
      's12',
      's10',
      ...Array.from({ length: 10 }, (_, i) => `s0${9 - i}`),
    ]);
    // The dropped entries are gone from the index too.
    expect(await client.zcard(store.indexKeys('u').order)).toBe(19);
    expect(ids(await listAll(store))).toHaveLength(20);
  });

  it('a listing write that fails after the session was saved does not fail set: it is reported, repaired later, and the next save catches the listing up', async () => {
    const reported: Error[] = [];
    const store = new RedisSessionStore({ client, prefix: uniquePrefix('cut'), onListingError: (e) => reported.push(e) });
    await client.set(store.indexKeys('u').order, 'not a sorted set');
    expect(await store.set(session('s', 1, 'u', 'first'))).toMatch(/^[0-9a-f-]{36}$/);
    expect((await store.get('s'))?.session.metadata.userId).toBe('u');
    expect(reported).toHaveLength(1);
    expect(SessionStateError.isInstance(reported[0])).toBe(true);
    expect(reported[0]!.message).toContain('session "s" is saved, but 1 of its 2 listing writes failed');
    expect(reported[0]!.message.match(/SessionStateError/g) ?? []).toHaveLength(0);
    expect(ids(await listAll(store))).toEqual(['s']);
    // The repair keeps failing while the key is wrong, and says so again; then it lands.
    expect(await store.repairListings()).toEqual({ repaired: 0, pending: 1 });
    expect(reported).toHaveLength(2);
    await client.del(store.indexKeys('u').order);
    expect(await store.repairListings()).toEqual({ repaired: 1, pending: 0 });
    expect((await store.list({ userId: 'u' })).sessions.map((s) => s.metadata.title)).toEqual(['first']);
    // The next save catches up as well, and drops a pending repair of the session.
    await client.set(store.indexKeys('u').order, 'not a sorted set');
    await store.set(session('s', 2, 'u', 'second'));
    await client.del(store.indexKeys('u').order);
    await store.set(session('s', 3, 'u', 'third'));
    expect((await store.list({ userId: 'u' })).sessions.map((s) => s.metadata.title)).toEqual(['third']);
    expect(await store.repairListings()).toEqual({ repaired: 0, pending: 0 });
    await store.close();
  });

  it('a failed listing write that moved a session to another user is still removed from the old listing by the next save', async () => {
    const store = new RedisSessionStore({ client, prefix: uniquePrefix('cut-move'), onListingError: () => {} });
    await store.set(session('s', 1, 'alice'));
    // Both listings of the move refuse: bob's (the new entry) and alice's (the removal).
    const keep = await client.zrange(store.indexKeys('alice').order, 0, -1, 'WITHSCORES');
    await client.del(store.indexKeys('alice').order);
    await client.set(store.indexKeys('alice').order, 'not a sorted set');
    await client.set(store.indexKeys('bob').order, 'not a sorted set');
    await store.set(session('s', 2, 'bob'));
    await client.del(store.indexKeys('alice').order);
    await client.del(store.indexKeys('bob').order);
    await client.zadd(store.indexKeys('alice').order, keep[1]!, keep[0]!);
    // (A page would drop the entry as it reads it: its session belongs to bob now. Look at the index itself.)
    expect(await client.zscore(store.indexKeys('alice').order, 's')).not.toBeNull();
    await store.set(session('s', 3, 'bob'));
    expect(await client.zscore(store.indexKeys('alice').order, 's')).toBeNull();
    expect(await client.hget(store.indexKeys('alice').meta, 's')).toBeNull();
    expect(ids(await listAll(store, { userId: 'bob' }))).toEqual(['s']);
  });

  it('concurrent saves of one session by different users leave it listed once, under the user stored last', async () => {
    const store = new RedisSessionStore({ client, prefix: uniquePrefix('race') });
    const users = ['u1', 'u2', 'u3'];
    for (let round = 0; round < 5; round++) {
      await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          new RedisSessionStore({ client, prefix: store.indexKeys().order.split(':sessions:')[0]! }).set(
            session('s', round * 100 + i, users[i % 3]),
          ),
        ),
      );
      const stored = (await store.get('s'))!.session.metadata.userId!;
      for (const user of users) expect(ids(await listAll(store, { userId: user })), user).toEqual(user === stored ? ['s'] : []);
      expect(ids(await listAll(store))).toEqual(['s']);
    }
  });
});
