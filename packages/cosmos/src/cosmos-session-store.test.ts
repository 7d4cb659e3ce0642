import type { Container } from '@azure/cosmos';
import {
  AgentSession,
  BackendUnavailableError,
  ConcurrencyError,
  ConfigurationError,
  SessionStateError,
  type SessionJson,
} from '@ctx/core';
import { BLANK_SESSION_IDS } from '@ctx/provider-tests';
import { describe, expect, it } from 'vitest';
import { startFaultProxy } from '@ctx/cosmos-stand-in';
import { nested } from '@ctx/fuzz-kit';
import { allItems, cosmosClient, env, uniqueId } from '../test/helpers.js';
import { CosmosSessionStore, type CosmosSessionStoreOptions } from './cosmos-session-store.js';
import { SESSION_STORE_INDEXING_POLICY } from './history-layout.js';

const client = cosmosClient();
const databaseId = uniqueId('sessions');
const make = (options: Partial<CosmosSessionStoreOptions> = {}, containerId = uniqueId('s')) =>
  new CosmosSessionStore({ client, databaseId, containerId, createIfNotExists: true, ...options });
const at = '2026-11-24T09:30:00.000Z';
/** Session JSON with fixed times, so a stored session can be compared with a freshly made one. */
const session = (sessionId = `s-${Math.random().toString(36).slice(2)}`, state = {}) =>
  new AgentSession({ sessionId, state, metadata: { createdAt: at, updatedAt: at } }).toJSON();

describe('CosmosSessionStore options and arguments', () => {
  it('rejects a ttlSeconds that is not a positive integer with ConfigurationError', () => {
    expect(() => new CosmosSessionStore({ client, ttlSeconds: 0 })).toThrow(ConfigurationError);
  });

  it('empty and whitespace-only session ids are ConfigurationErrors from every method, before any request', async () => {
    const proxy = await startFaultProxy(env.endpoint);
    try {
      const store = new CosmosSessionStore({ client: cosmosClient(proxy.endpoint), databaseId, containerId: uniqueId('args') });
      proxy.resetLog();
      for (const sessionId of [...BLANK_SESSION_IDS, '\r\n', '\u3000']) {
        const calls: [string, () => Promise<unknown>][] = [
          ['itemId', async () => store.itemId(sessionId)],
          ['get', () => store.get(sessionId)],
          ['set', () => store.set({ ...session('x'), sessionId })],
          ['set with ifMatch', () => store.set({ ...session('x'), sessionId }, { ifMatch: 'e' })],
          ['delete', () => store.delete(sessionId)],
        ];
        for (const [name, call] of calls) {
          const error = await call().catch((e: unknown) => e);
          expect(ConfigurationError.isInstance(error), `${name}(${JSON.stringify(sessionId)})`).toBe(true);
          expect((error as Error).message).toContain('session id must be a string with at least one non-whitespace character');
        }
      }
      expect(proxy.requests).toEqual([]);
    } finally {
      await proxy.stop();
    }
  });

  it('an ifMatch that is not an etag, null or undefined is a ConfigurationError naming the session, and nothing is written', async () => {
    const store = make();
    const json = session();
    for (const [ifMatch, shown] of [
      ['', '""'],
      [42, 'number'],
    ] as const) {
      const error = await store.set(json, { ifMatch: ifMatch as string }).catch((e: unknown) => e);
      expect(ConfigurationError.isInstance(error)).toBe(true);
      expect((error as Error).message).toBe(
        `CosmosSessionStore.set for session "${json.sessionId}": ifMatch must be the etag get() returned, null (write only if nothing is stored) or undefined (write always); got ${shown}.`,
      );
    }
    expect(await store.get(json.sessionId)).toBeUndefined();
  });

  it('a write answered without an ETag is a BackendUnavailableError that says to read the session again', async () => {
    // A container whose writes come back without _etag or etag header (no real service does this on success).
    const container = {
      id: 'sessions',
      database: { id: 'ctx', client: {} },
      read: async () => ({ resource: { id: 'sessions', partitionKey: { paths: ['/id'] } } }),
      item: () => {
        throw new Error('not used by an upsert');
      },
      items: { upsert: async (body: unknown) => ({ resource: body, headers: {} }) },
    } as unknown as Container;
    const error = await new CosmosSessionStore({ container }).set(session('s-no-etag')).catch((e: unknown) => e);
    expect(BackendUnavailableError.isInstance(error)).toBe(true);
    expect((error as BackendUnavailableError).backend).toBe('cosmos');
    expect((error as Error).message).toBe(
      'Cosmos DB answered CosmosSessionStore.set for session "s-no-etag" on ctx/sessions without an ETag, so the write cannot be confirmed. Read the session again (get) before saving over it.',
    );
  });
});

describe('CosmosSessionStore', () => {
  it('session ids ".", "..", "...", "a/.." and "%2e%2e" round-trip and never reach another session or the container', async () => {
    // Item ids go into the request URL as one path segment: ".." read the container and deleted it.
    const store = make();
    const others = [session('keep-1', { v: { n: 1 } }), session('keep-2', { v: { n: 2 } })];
    for (const json of others) await store.set(json);
    const ids = { '.': '_2E', '..': '_2E_2E', '...': '_2E_2E_2E', 'a/..': 'a_2F..', '%2e%2e': '_252e_252e' };
    for (const [sessionId, itemId] of Object.entries(ids)) {
      expect(store.itemId(sessionId)).toBe(itemId);
      const etag = await store.set(session(sessionId, { v: { id: sessionId } }));
      expect(await store.get(sessionId)).toEqual({ session: session(sessionId, { v: { id: sessionId } }), etag });
      // The conditional paths address the item by its id in the URL too.
      const replaced = await store.set(session(sessionId, { v: { again: true } }), { ifMatch: etag });
      expect((await store.get(sessionId))?.etag).toBe(replaced);
    }
    expect(new Set((await allItems(store.container)).map((i) => i.id))).toEqual(new Set(['keep-1', 'keep-2', ...Object.values(ids)]));
    for (const sessionId of Object.keys(ids)) {
      expect(await store.delete(sessionId)).toBe(true);
      expect(await store.get(sessionId)).toBeUndefined();
      expect(await store.delete(sessionId)).toBe(false);
      for (const json of others) expect((await store.get(json.sessionId))?.session).toEqual(json);
    }
    expect((await allItems(store.container)).map((i) => i.id).sort()).toEqual(['keep-1', 'keep-2']);
    await store.set(session('..'), { ifMatch: null });
    await expect(store.set(session('..'), { ifMatch: null })).rejects.toSatisfy(ConcurrencyError.isInstance);
  });

  it('stores one item per session: encoded id (= partition key), the session id, the session JSON and a write id; the etag is the item ETag', async () => {
    const store = make();
    const json = session('user/42?#', { memory: { messages: [] }, profile: { name: 'Ada' } });
    const etag = await store.set(json);
    const [item] = await allItems(store.container);
    expect(item).toMatchObject({
      id: 'user_2F42_3F_23',
      sessionId: 'user/42?#',
      session: json,
      writeId: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(item!._etag).toBe(etag);
    expect('ttl' in item!).toBe(false);
    expect(store.itemId('user/42?#')).toBe('user_2F42_3F_23');
    expect((await store.get('user/42?#'))!.etag).toBe(etag);
    const { resource } = await store.container.read();
    expect(resource!.partitionKey!.paths).toEqual(['/id']);
    expect(resource!.indexingPolicy!.excludedPaths).toEqual(SESSION_STORE_INDEXING_POLICY.excludedPaths);
    expect(resource!.defaultTtl).toBe(-1);
  });

  it('ttlSeconds writes a ttl on every set (the clock restarts); without it items carry none', async () => {
    const store = make({ ttlSeconds: 600 });
    const json = session();
    await store.set(json);
    const etag = await store.set(json, { ifMatch: (await store.get(json.sessionId))!.etag });
    const [item] = await allItems(store.container);
    expect(item!.ttl).toBe(600);
    expect(item!._etag).toBe(etag);
  });

  it('a stale etag, a create over an existing session and an etag of a deleted session are ConcurrencyErrors that write nothing', async () => {
    const store = make();
    const json = session();
    const first = await store.set(json, { ifMatch: null });
    const second = await store.set({ ...json, state: { v: { n: 2 } } }, { ifMatch: first });
    const stale = await store.set({ ...json, state: { v: { n: 3 } } }, { ifMatch: first }).catch((e: unknown) => e);
    expect(ConcurrencyError.isInstance(stale)).toBe(true);
    expect((stale as ConcurrencyError).sessionId).toBe(json.sessionId);
    const exists = await store.set(json, { ifMatch: null }).catch((e: unknown) => e);
    expect((exists as Error).message).toContain('already exists');
    expect(await store.get(json.sessionId)).toEqual({ session: { ...json, state: { v: { n: 2 } } }, etag: second });
    await store.delete(json.sessionId);
    const deleted = await store.set(json, { ifMatch: second }).catch((e: unknown) => e);
    expect((deleted as Error).message).toContain('was deleted');
    expect(await store.get(json.sessionId)).toBeUndefined();
  });

  it('a stored item of the wrong session, or with malformed session JSON, is a SessionStateError naming the item', async () => {
    const store = make();
    const json = session('victim');
    await store.set(json);
    const { resource } = await store.container.item('victim', 'victim').read();
    await store.container.item('victim', 'victim').replace({ ...resource, session: { ...json, version: 7 } });
    const version = (await store.get('victim').catch((e: unknown) => e)) as SessionStateError;
    expect(SessionStateError.isInstance(version)).toBe(true);
    expect(version.path).toBe(`cosmos:${databaseId}/${store.container.id}["victim"].session.version`);
    expect(version.sessionId).toBe('victim');
    expect(version.message).toContain('of session "victim" at cosmos:');
    await store.container.item('victim', 'victim').replace({ ...resource, sessionId: 'intruder' });
    const wrong = (await store.get('victim').catch((e: unknown) => e)) as SessionStateError;
    expect(wrong.path).toBe(`cosmos:${databaseId}/${store.container.id}["victim"].sessionId`);
    await store.container.item('victim', 'victim').replace({ ...resource, session: { ...json, sessionId: 'intruder' } });
    expect(((await store.get('victim').catch((e: unknown) => e)) as SessionStateError).path).toMatch(/\.session\.sessionId$/);
  });

  it('refuses a session get could not read back (NaN, Map, Date, undefined, array slot, cycle, too deep), naming the path; nothing is written', async () => {
    const proxy = await startFaultProxy(env.endpoint);
    try {
      const store = new CosmosSessionStore({
        client: cosmosClient(proxy.endpoint),
        databaseId,
        containerId: uniqueId('bad'),
        createIfNotExists: true,
      });
      await store.get('warm-up');
      proxy.resetLog();
      const sessionId = 'never-written';
      const cycle: Record<string, unknown> = {};
      cycle.self = cycle;
      const holey: number[] = [];
      holey[0] = 1;
      holey[2] = 3;
      const withState = (slot: unknown) => ({ ...session(sessionId), state: { s: slot } }) as unknown as SessionJson;
      for (const [name, bad, path] of [
        ['NaN', withState({ n: Number.NaN }), '$.state.s.n'],
        ['a Map', withState({ m: new Map([[1, 2]]) }), '$.state.s.m'],
        ['a Date', withState({ d: new Date(0) }), '$.state.s.d'],
        ['undefined', withState({ u: undefined }), '$.state.s.u'],
        ['an array slot', withState([1, 2]), '$.state.s'],
        ['an array with a hole', withState({ list: holey }), '$.state.s.list[1]'],
        ['a bigint', withState({ n: 1n }), '$.state.s.n'],
        ['a cycle', withState(cycle), '$.state.s.self'],
        ['200 levels of nesting', withState(nested(200)), '$.state.s.a'],
      ] as const) {
        for (const ifMatch of [undefined, null, 'some-etag']) {
          const error = await store.set(bad, { ifMatch }).catch((e: unknown) => e);
          expect(SessionStateError.isInstance(error), name).toBe(true);
          expect((error as SessionStateError).path.startsWith(path), `${name}: ${(error as SessionStateError).path}`).toBe(true);
        }
      }
      expect(proxy.requests).toEqual([]);
      expect(await store.get(sessionId)).toBeUndefined();
    } finally {
      await proxy.stop();
    }
  });

  it('stores a session exactly as get reads it: extra top-level fields are not kept, and JSON text is refused instead of stored as a string', async () => {
    const store = make();
    const json = { ...session('as-read'), serviceSessionId: 'resp_1' };
    // A function among the extra fields made structuredClone throw a DataCloneError.
    const etag = await store.set({ ...json, extra: () => 1, big: 1n } as unknown as SessionJson);
    const [item] = await allItems(store.container);
    expect(item!.session).toEqual(json);
    expect(await store.get('as-read')).toEqual({ session: json, etag });
    const text = await store.set(JSON.stringify(session('as-read')) as unknown as SessionJson).catch((e: unknown) => e);
    expect(SessionStateError.isInstance(text)).toBe(true);
    expect((text as SessionStateError).path).toBe('$');
    expect(await store.get('as-read')).toEqual({ session: json, etag });
  });

  it('a stored session nested past 128 levels fails get with SessionStateError naming the item and the path', async () => {
    // Cosmos DB itself refuses documents nested deeper than 128 levels; the stand-in does not.
    const store = make();
    const json = session('deep');
    await store.set(json);
    const { resource } = await store.container.item('deep', 'deep').read();
    const where = `cosmos:${databaseId}/${store.container.id}["deep"]`;
    for (const [mutated, path] of [
      [{ ...json, state: { s: nested(1000) } }, '.session.state.s'],
      [{ ...json, type: nested(1000) }, '.session.type'],
      [nested(1000), '.session'],
    ] as const) {
      await store.container.item('deep', 'deep').replace({ ...resource, session: mutated });
      const error = await store.get('deep').catch((e: unknown) => e);
      expect(SessionStateError.isInstance(error), path).toBe(true);
      expect((error as SessionStateError).path.startsWith(`${where}${path}`), (error as SessionStateError).path).toBe(true);
    }
    await store.container.item('deep', 'deep').replace({ ...resource, sessionId: nested(1000) });
    const wrongId = await store.get('deep').catch((e: unknown) => e);
    expect((wrongId as SessionStateError).path).toBe(`${where}.sessionId`);
  });

  it('a container partitioned by another path, or TTL off with ttlSeconds, is a ConfigurationError', async () => {
    const containerId = uniqueId('wrong');
    const { database } = await client.databases.createIfNotExists({ id: databaseId });
    await database.containers.createIfNotExists({ id: containerId, partitionKey: { paths: ['/sessionKey'] } });
    const error = await new CosmosSessionStore({ client, databaseId, containerId }).get('x').catch((e: unknown) => e);
    expect(ConfigurationError.isInstance(error)).toBe(true);
    expect((error as Error).message).toContain('["/sessionKey"]');
    expect((error as Error).message).toContain('["/id"]');
    const noTtl = uniqueId('no-ttl');
    await database.containers.createIfNotExists({ id: noTtl, partitionKey: { paths: ['/id'] } });
    await expect(new CosmosSessionStore({ client, databaseId, containerId: noTtl, ttlSeconds: 5 }).set(session())).rejects.toSatisfy(
      ConfigurationError.isInstance,
    );
    await new CosmosSessionStore({ client, databaseId, containerId: noTtl }).set(session());
  });
});
