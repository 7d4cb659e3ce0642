import { ConfigurationError, InvalidInputError, SessionStateError, type SessionJson, type SessionSummary } from '@ctx/core';
import { checkListOptions, pageOfSessions } from '@ctx/core/backend';
import { startFaultProxy } from '@ctx/cosmos-stand-in';
import { describe, expect, it } from 'vitest';
import { cosmosClient, env, uniqueId } from '../test/helpers.js';
import { CosmosSessionStore, type SessionItem } from './cosmos-session-store.js';
import { SESSION_STORE_PARTITION_KEY } from './history-layout.js';
import { missingCompositeIndexes, SESSION_LIST_COMPOSITE_INDEXES } from './indexing.js';

const client = cosmosClient();
const databaseId = uniqueId('list');
const make = (containerId = uniqueId('l')) => new CosmosSessionStore({ client, databaseId, containerId, createIfNotExists: true });

const T0 = Date.parse('2026-11-24T09:00:00.000Z');
/** Session JSON with the given owner and update time (ms after T0), and a state marker that must never be listed. */
function session(sessionId: string, at: number, userId?: string): SessionJson {
  const updatedAt = new Date(T0 + at).toISOString();
  return {
    type: 'ctx.session',
    version: 2,
    sessionId,
    metadata: { createdAt: new Date(T0).toISOString(), updatedAt, ...(userId ? { userId, title: `chat ${sessionId}` } : {}) },
    state: { history: { secret: 'STATE-NEVER-LISTED'.repeat(20) } },
  };
}
const summary = (json: SessionJson): SessionSummary => ({ sessionId: json.sessionId, metadata: json.metadata });

/** Every page of a listing, following nextCursor. */
async function listAll(store: CosmosSessionStore, options: { userId?: string; limit?: number } = {}): Promise<SessionSummary[][]> {
  const pages: SessionSummary[][] = [];
  let cursor: string | undefined;
  do {
    const page = await store.list({ ...options, ...(cursor ? { cursor } : {}) });
    expect(page.total).toBeUndefined();
    pages.push(page.sessions);
    cursor = page.nextCursor;
  } while (cursor !== undefined && pages.length < 50);
  return pages;
}

describe('CosmosSessionStore.list', async () => {
  // 23 sessions of two users and some of nobody's, with ties on the millisecond (broken by session id).
  const sessions = Array.from({ length: 23 }, (_, i) =>
    session(`s-${String(i).padStart(2, '0')}`, Math.floor(i / 3) * 1000, ['ada', 'bob', undefined][i % 3]),
  );
  const store = make();
  for (const json of sessions) await store.set(json);
  const expected = (userId?: string) => pageOfSessions(sessions.map(summary), checkListOptions({ userId, limit: 100 })).sessions;

  it('stores the owner and the update time in milliseconds beside the session, for the query', async () => {
    const { resource } = await store.container.item(store.itemId('s-04'), store.itemId('s-04')).read<SessionItem>();
    expect(resource!.userId).toBe('bob');
    expect(resource!.updatedAtMs).toBe(T0 + 1000);
    const { resource: nobody } = await store.container.item(store.itemId('s-02'), store.itemId('s-02')).read<SessionItem>();
    expect(nobody!.userId).toBeUndefined();
  });

  it('lists every session newest first, ties by session id descending, page by page without repeats or gaps', async () => {
    expect(expected().length).toBe(23);
    for (const limit of [1, 7, 23, 100]) {
      const pages = await listAll(store, { limit });
      expect(pages.flat()).toEqual(expected());
      expect(pages.length).toBe(Math.ceil(23 / limit));
      expect(pages.slice(0, -1).every((page) => page.length === limit)).toBe(true);
    }
    const first = await store.list();
    expect(first.sessions).toEqual(expected().slice(0, 20));
    expect(first.nextCursor).toBeDefined();
  });

  it("lists one user's sessions only, with cursors bound to that user", async () => {
    const pages = await listAll(store, { userId: 'ada', limit: 3 });
    expect(pages.flat()).toEqual(expected('ada'));
    expect(pages.flat().every((s) => s.metadata.userId === 'ada' && s.metadata.title === `chat ${s.sessionId}`)).toBe(true);
    expect((await store.list({ userId: 'nobody' })).sessions).toEqual([]);
    const { nextCursor } = await store.list({ userId: 'ada', limit: 2 });
    await expect(store.list({ userId: 'bob', cursor: nextCursor! })).rejects.toThrow(InvalidInputError);
    await expect(store.list({ cursor: nextCursor! })).rejects.toThrow(/another listing/);
  });

  it('a session saved again moves to the front; a listing under way neither repeats nor skips the others', async () => {
    const own = make();
    const jsons = Array.from({ length: 6 }, (_, i) => session(`m-${i}`, i * 1000));
    for (const json of jsons) await own.set(json);
    const page1 = await own.list({ limit: 2 });
    expect(page1.sessions.map((s) => s.sessionId)).toEqual(['m-5', 'm-4']);
    await own.set(session('m-1', 9000)); // m-1 becomes the newest
    await own.delete('m-2');
    const rest = await own.list({ limit: 10, cursor: page1.nextCursor! });
    expect(rest.sessions.map((s) => s.sessionId)).toEqual(['m-3', 'm-0']);
    expect(rest.nextCursor).toBeUndefined();
    expect((await own.list()).sessions.map((s) => s.sessionId)).toEqual(['m-1', 'm-5', 'm-4', 'm-3', 'm-0']);
  });

  it('bad options (ConfigurationError) and a garbage cursor (InvalidInputError) are refused before any request', async () => {
    const proxy = await startFaultProxy(env.endpoint);
    try {
      const viaProxy = new CosmosSessionStore({ client: cosmosClient(proxy.endpoint), databaseId, containerId: uniqueId('args') });
      const calls: [string, () => Promise<unknown>][] = [
        ['limit 0', () => viaProxy.list({ limit: 0 })],
        ['limit 101', () => viaProxy.list({ limit: 101 })],
        ['limit 1.5', () => viaProxy.list({ limit: 1.5 })],
        ['blank userId', () => viaProxy.list({ userId: ' ' })],
        ['garbage cursor', () => viaProxy.list({ cursor: 'not a cursor' })],
      ];
      for (const [name, call] of calls) {
        const expected = name.includes('cursor') ? InvalidInputError : ConfigurationError;
        expect(expected.isInstance(await call().catch((e: unknown) => e)), name).toBe(true);
      }
      expect(proxy.requests).toEqual([]);
    } finally {
      await proxy.stop();
    }
  });

  it('reads only ids and metadata: one query, never the sessions themselves', async () => {
    const proxy = await startFaultProxy(env.endpoint, { recordBodies: true });
    try {
      const viaProxy = new CosmosSessionStore({ client: cosmosClient(proxy.endpoint), databaseId, containerId: store.container.id });
      await viaProxy.list({ limit: 1 }); // checks the container first
      proxy.resetLog();
      const page = await viaProxy.list({ limit: 20 });
      expect(page.sessions.length).toBe(20);
      expect(proxy.requests.map((r) => r.kind)).toEqual(['query-plan', 'query']);
      const query = proxy.requests.find((r) => r.kind === 'query')!;
      expect(JSON.parse(query.body!).query).toMatch(/^SELECT TOP 21 c\.id, c\.sessionId, c\.session\.metadata FROM c WHERE/);
      // 21 rows of id, session id and metadata: far less than one session's state marker (360 characters) per row.
      expect(query.responseBytes).toBeLessThan(21 * 300);
    } finally {
      await proxy.stop();
    }
  });

  it('across physical partitions (the gateway emulation): the same pages; a query per partition key range', async () => {
    const proxy = await startFaultProxy(env.endpoint, { partitionKeyRanges: 4 });
    try {
      // No retries: a call that a per-range query left unanswered times out after 4 s and fails the test.
      const viaProxy = new CosmosSessionStore({
        client: cosmosClient(proxy.endpoint),
        databaseId,
        containerId: store.container.id,
        timeoutMs: 4000,
      });
      const pages = async (options: { userId?: string; limit: number }) => {
        const all: SessionSummary[] = [];
        let cursor: string | undefined;
        do {
          const page = await viaProxy.list({ ...options, ...(cursor ? { cursor } : {}) });
          all.push(...page.sessions);
          cursor = page.nextCursor;
        } while (cursor !== undefined);
        return all;
      };
      expect(await pages({ limit: 5 })).toEqual(expected());
      expect(await pages({ userId: 'bob', limit: 4 })).toEqual(expected('bob'));
      proxy.resetLog();
      await viaProxy.list({ limit: 5 });
      // The plan, the query the gateway refuses (it needs the SDK's pipeline), then one query per range.
      const kinds = proxy.requests.map((r) => r.kind).filter((k) => k !== 'metadata');
      expect(kinds).toEqual(['query-plan', 'query', 'query', 'query', 'query', 'query']);
      expect(new Set(proxy.requests.map((r) => r.partitionKeyRangeId).filter(Boolean)).size).toBe(4);
    } finally {
      await proxy.stop();
    }
  }, 60_000);

  it('items written before listing existed (no updatedAtMs) are not listed until saved again', async () => {
    const own = make();
    await own.set(session('new', 1000));
    const legacy = { ...(await own.container.item('new', 'new').read()).resource, id: 'old', sessionId: 'old' } as Record<string, unknown>;
    delete legacy.updatedAtMs;
    legacy.session = { ...(legacy.session as object), sessionId: 'old' };
    await own.container.items.upsert(legacy);
    expect((await own.list()).sessions.map((s) => s.sessionId)).toEqual(['new']);
    expect((await own.get('old'))?.session.sessionId).toBe('old');
    await own.set((await own.get('old'))!.session);
    // The same update time: the larger session id comes first.
    expect((await own.list()).sessions.map((s) => s.sessionId)).toEqual(['old', 'new']);
  });

  it('an item whose metadata is not session metadata is a SessionStateError naming the item', async () => {
    const own = make();
    await own.set(session('good', 1000));
    await own.container.items.upsert({
      id: 'bad',
      sessionId: 'bad',
      updatedAtMs: T0 + 5000,
      session: { metadata: { createdAt: 'yesterday' } },
    });
    const error = await own.list().catch((e: unknown) => e);
    expect(SessionStateError.isInstance(error)).toBe(true);
    expect((error as SessionStateError).path).toMatch(/\["bad"\]\.session\.metadata\.createdAt$/);
  });
});

describe('CosmosSessionStore.list on a container without its composite indexes', () => {
  it('refuses to list with a ConfigurationError naming the index, before any query; get, set and delete still work', async () => {
    const containerId = uniqueId('old-policy');
    const { database } = await client.databases.createIfNotExists({ id: databaseId });
    // The policy earlier versions created: nothing indexed.
    await database.containers.create({
      id: containerId,
      partitionKey: SESSION_STORE_PARTITION_KEY,
      indexingPolicy: { indexingMode: 'consistent', automatic: true, includedPaths: [], excludedPaths: [{ path: '/*' }] },
    });
    const proxy = await startFaultProxy(env.endpoint);
    try {
      const store = new CosmosSessionStore({ client: cosmosClient(proxy.endpoint), databaseId, containerId });
      await store.set(session('a', 0, 'ada'));
      proxy.resetLog();
      const error = await store.list().catch((e: unknown) => e);
      expect(ConfigurationError.isInstance(error)).toBe(true);
      expect((error as Error).message).toContain('"/updatedAtMs"');
      expect((error as Error).message).toContain('SESSION_STORE_INDEXING_POLICY');
      await expect(store.list({ userId: 'ada' })).rejects.toThrow(/list\(\{ userId \}\)/);
      expect(proxy.requests.filter((r) => r.kind === 'query')).toEqual([]);
      expect((await store.get('a'))?.session.metadata.userId).toBe('ada');
      expect(await store.delete('a')).toBe(true);
    } finally {
      await proxy.stop();
    }
  });
});

describe('missingCompositeIndexes', () => {
  const [all, byUser] = SESSION_LIST_COMPOSITE_INDEXES;
  it.each([
    ['no policy', undefined, [all, byUser]],
    ['both, as ctx creates them', { compositeIndexes: [all!.paths, byUser!.paths] }, []],
    [
      'all orders reversed serves the query too',
      {
        compositeIndexes: [
          [
            { path: '/updatedAtMs', order: 'ascending' },
            { path: '/sessionId', order: 'ascending' },
          ],
        ],
      },
      [byUser],
    ],
    ['an absent order is ascending', { compositeIndexes: [[{ path: '/updatedAtMs' }, { path: '/sessionId' }]] }, [byUser]],
    [
      'mixed orders do not',
      {
        compositeIndexes: [
          [
            { path: '/updatedAtMs', order: 'descending' },
            { path: '/sessionId', order: 'ascending' },
          ],
        ],
      },
      [all, byUser],
    ],
    ['paths in another sequence do not', { compositeIndexes: [[...all!.paths].reverse()] }, [all, byUser]],
    ['indexing off', { indexingMode: 'none', compositeIndexes: [all!.paths, byUser!.paths] }, [all, byUser]],
  ] as const)('%s', (_, policy, missing) => {
    // biome-ignore lint/suspicious/noExplicitAny: policies written as the service returns them, absent orders included
    expect(missingCompositeIndexes(policy as any, SESSION_LIST_COMPOSITE_INDEXES)).toEqual(missing);
  });
});
