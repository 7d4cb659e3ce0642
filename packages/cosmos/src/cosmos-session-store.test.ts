import type { Container } from '@azure/cosmos';
import { AgentSession, BackendUnavailableError, ConcurrencyError, ConfigurationError, SessionStateError } from '@ctx/core';
import { describe, expect, it } from 'vitest';
import { allItems, cosmosClient, uniqueId } from '../test/helpers.js';
import { CosmosSessionStore, type CosmosSessionStoreOptions } from './cosmos-session-store.js';
import { SESSION_STORE_INDEXING_POLICY } from './history-layout.js';

const client = cosmosClient();
const databaseId = uniqueId('sessions');
const make = (options: Partial<CosmosSessionStoreOptions> = {}, containerId = uniqueId('s')) =>
  new CosmosSessionStore({ client, databaseId, containerId, createIfNotExists: true, ...options });
const session = (sessionId = `s-${Math.random().toString(36).slice(2)}`, state = {}) => new AgentSession({ sessionId, state }).toJSON();

describe('CosmosSessionStore options and arguments', () => {
  it('rejects a ttlSeconds that is not a positive integer with ConfigurationError', () => {
    expect(() => new CosmosSessionStore({ client, ttlSeconds: 0 })).toThrow(ConfigurationError);
  });

  it('an empty session id is a SessionStateError', () => {
    expect(() => new CosmosSessionStore({ client }).itemId('')).toThrow(SessionStateError);
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
    await store.container.item('victim', 'victim').replace({ ...resource, sessionId: 'intruder' });
    const wrong = (await store.get('victim').catch((e: unknown) => e)) as SessionStateError;
    expect(wrong.path).toBe(`cosmos:${databaseId}/${store.container.id}["victim"].sessionId`);
    await store.container.item('victim', 'victim').replace({ ...resource, session: { ...json, sessionId: 'intruder' } });
    expect(((await store.get('victim').catch((e: unknown) => e)) as SessionStateError).path).toMatch(/\.session\.sessionId$/);
    await expect(store.set({ type: 'ctx.session', version: 1, sessionId: '', state: {} })).rejects.toSatisfy(SessionStateError.isInstance);
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
