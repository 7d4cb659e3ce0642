import type { Container } from '@azure/cosmos';
import { ConfigurationError, createAgent, Message, ProviderError, SessionStateError } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { startFaultProxy, type FaultProxy } from '@ctx/cosmos-stand-in';
import { BLANK_SESSION_IDS, HOSTILE_SESSION_IDS } from '@ctx/provider-tests';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nested, nonJsonMessages } from '@ctx/fuzz-kit';
import { allItems, cosmosClient, env, uniqueId } from '../test/helpers.js';
import { CosmosHistoryProvider, type CosmosHistoryProviderOptions } from './cosmos-history-provider.js';
import { CosmosSessionStore } from './cosmos-session-store.js';
import { HISTORY_INDEXING_POLICY } from './history-layout.js';
import { sessionPartitionValue } from './ids.js';

const state = {};
const turn = (i: number) => [Message.user(`q${i}`), Message.assistant(`a${i}`)];
const texts = (messages: readonly Message[]) => messages.map((m) => Message.text(m));
const sid = () => `s-${Math.random().toString(36).slice(2)}`;
/** Ids that hold nothing but whitespace (JavaScript's `trim` removes all of them). */
const BLANK_IDS = [...BLANK_SESSION_IDS, '\r\n', '\u3000'];

const client = cosmosClient();
const databaseId = uniqueId('history');
let proxy: FaultProxy;
let counted: ReturnType<typeof cosmosClient>;

beforeAll(async () => {
  // The same stand-in behind a logging proxy: every request a provider sends is counted by kind.
  proxy = await startFaultProxy(env.endpoint, { recordBodies: true });
  counted = cosmosClient(proxy.endpoint);
});
afterAll(() => proxy.stop());

/** A provider on its own new container (created on first use). */
function make(options: Partial<CosmosHistoryProviderOptions> = {}, containerId = uniqueId('c')): CosmosHistoryProvider {
  return new CosmosHistoryProvider({ client, databaseId, containerId, createIfNotExists: true, ...options });
}

/** The raw items of a session in a container, ordered by id. */
async function itemsOf(container: Container, sessionId: string): Promise<Record<string, unknown>[]> {
  return (await allItems(container))
    .filter((i) => i.sessionKey === sessionPartitionValue(sessionId))
    .sort((a, b) => String(a.id).localeCompare(String(b.id)));
}

/** Seeds `count` messages in saves of 100. */
async function seed(provider: CosmosHistoryProvider, sessionId: string, count: number): Promise<void> {
  for (let i = 0; i < count; i += 100) {
    await provider.append(
      sessionId,
      Array.from({ length: Math.min(100, count - i) }, (_, j) => Message.user(`m${i + j}`)),
    );
  }
}

describe('options and arguments', () => {
  it.each([
    ['ttlSeconds 1.5', { ttlSeconds: 1.5 }],
    ['a scope with an empty tenant', { scope: { tenantId: '', userId: 'u' } }],
    ['a scope with a 101-byte user', { scope: { tenantId: 't', userId: 'u'.repeat(101) } }],
  ])('rejects %s with ConfigurationError', (_, options) => {
    expect(() => new CosmosHistoryProvider({ client, ...options })).toThrow(ConfigurationError);
  });

  it('the session store refuses an option it does not know, naming it', () => {
    expect(() => new CosmosSessionStore({ client, ttlsecond: 60 } as never)).toThrow('CosmosSessionStore: unknown option "ttlsecond"');
  });

  it('an option it does not know is a ConfigurationError naming it; core history options pass', () => {
    const misspelled = () => new CosmosHistoryProvider({ client, ttlseconds: 60 } as never);
    expect(misspelled).toThrow(ConfigurationError);
    expect(misspelled).toThrow('CosmosHistoryProvider: unknown option "ttlseconds" (did you mean "ttlSeconds"?).');
    expect(() => new CosmosHistoryProvider({ client, partitionKey: '/sessionKey' } as never)).toThrow(
      'CosmosHistoryProvider: unknown option "partitionKey"',
    );
    const provider = new CosmosHistoryProvider({
      client,
      sourceId: 'h',
      loadMessages: 'auto',
      storeInputs: true,
      storeOutputs: true,
      storeContextMessages: false,
      storeContextFrom: ['rag'],
      maxMessages: 10,
      onError: 'skip',
      databaseId,
      containerId: 'c',
      createIfNotExists: false,
      timeoutMs: 1000,
      retries: 1,
      ttlSeconds: 60,
    });
    expect([provider.sourceId, provider.ttlSeconds]).toEqual(['h', 60]);
  });

  it('passes the history options of @ctx/core on, with sourceId "cosmos" and no TTL', () => {
    const provider = new CosmosHistoryProvider({ client, maxMessages: 7, storeInputs: false, loadMessages: false });
    expect([
      provider.sourceId,
      provider.maxMessages,
      provider.storeInputs,
      provider.loadMessages,
      provider.ttlSeconds,
      provider.hierarchical,
    ]).toEqual(['cosmos', 7, false, false, undefined, false]);
  });

  it('empty and whitespace-only session ids are ConfigurationErrors from every method, before any request', async () => {
    const provider = new CosmosHistoryProvider({ client: counted, databaseId, containerId: uniqueId('args') });
    const scoped = new CosmosHistoryProvider({
      client: counted,
      databaseId,
      containerId: uniqueId('args'),
      scope: () => ({ tenantId: 't', userId: 'u' }),
    });
    const bad = { id: 'b', role: 'user', contents: [{ type: 'text' }] } as unknown as Message;
    proxy.resetLog();
    for (const p of [provider, scoped]) {
      for (const sessionId of BLANK_IDS) {
        const calls: [string, () => Promise<unknown>][] = [
          ['getMessages', () => p.getMessages(sessionId, { state })],
          ['getMessages with a limit', () => p.getMessages(sessionId, { state, limit: 5 })],
          ['saveMessages', () => p.saveMessages(sessionId, turn(1), { state })],
          ['saveMessages of nothing', () => p.saveMessages(sessionId, [], { state })],
          ['saveMessages of a malformed message', () => p.saveMessages(sessionId, [bad], { state })],
          ['append', () => p.append(sessionId, turn(1))],
          ['replaceMessages', () => p.replaceMessages(sessionId, turn(1), { state })],
          ['listMessages', () => p.listMessages(sessionId)],
          ['exportMessages', () => p.exportMessages(sessionId).next()],
          ['countMessages', () => p.countMessages(sessionId)],
          ['clear', () => p.clear(sessionId)],
          ['itemIds', () => p.itemIds(sessionId, 'm1')],
          ['partitionValue', async () => p.partitionValue(sessionId)],
        ];
        for (const [name, call] of calls) {
          const error = await call().catch((e: unknown) => e);
          expect(ConfigurationError.isInstance(error), `${name}(${JSON.stringify(sessionId)})`).toBe(true);
          expect((error as Error).message).toContain('session id must be a string with at least one non-whitespace character');
        }
      }
    }
    expect(proxy.requests).toEqual([]);
  });

  it('an empty or whitespace-only sourceId, tenant or user is a ConfigurationError before any request', async () => {
    for (const blank of BLANK_IDS) {
      expect(() => new CosmosHistoryProvider({ client: counted, sourceId: blank })).toThrow(ConfigurationError);
      expect(() => new CosmosHistoryProvider({ client: counted, scope: { tenantId: blank, userId: 'u' } })).toThrow(ConfigurationError);
      expect(() => new CosmosHistoryProvider({ client: counted, scope: { tenantId: 't', userId: blank } })).toThrow(ConfigurationError);
    }
    proxy.resetLog();
    const resolver = new CosmosHistoryProvider({
      client: counted,
      databaseId,
      containerId: uniqueId('args'),
      scope: ({ sessionId }) => ({ tenantId: sessionId === 'blank-tenant' ? ' \t' : 't', userId: sessionId === 'blank-user' ? '\n' : 'u' }),
    });
    for (const sessionId of ['blank-tenant', 'blank-user']) {
      for (const call of [
        () => resolver.getMessages(sessionId, { state }),
        () => resolver.saveMessages(sessionId, turn(1), { state }),
        () => resolver.countMessages(sessionId),
      ]) {
        const error = await call().catch((e: unknown) => e);
        expect(ConfigurationError.isInstance(error)).toBe(true);
        expect((error as Error).message).toMatch(/^(tenantId|userId) must be a string with at least one non-whitespace character/);
      }
    }
    await expect(resolver.listSessions({ tenantId: ' ' })).rejects.toSatisfy(ConfigurationError.isInstance);
    await expect(resolver.listSessions({ tenantId: 't', userId: '\u3000' })).rejects.toSatisfy(ConfigurationError.isInstance);
    expect(proxy.requests).toEqual([]);
  });

  it('a bad limit or cursor is a ConfigurationError naming the method, the session and the value, before any request', async () => {
    const provider = new CosmosHistoryProvider({ client: counted, databaseId, containerId: uniqueId('args') });
    proxy.resetLog();
    await expect(provider.getMessages('s1', { state, limit: 0 })).rejects.toThrow(ConfigurationError);
    await expect(provider.getMessages('s1', { state, limit: 2.5 })).rejects.toThrow(
      'CosmosHistoryProvider.getMessages for session "s1": limit must be a positive integer, got 2.5.',
    );
    await expect(provider.listMessages('s1', { limit: -1 })).rejects.toThrow(
      'CosmosHistoryProvider.listMessages for session "s1": limit must be a positive integer, got -1.',
    );
    await expect(provider.listSessions({ limit: 0 })).rejects.toThrow(
      'CosmosHistoryProvider.listSessions: limit must be a positive integer, got 0.',
    );
    for (const [cursor, shown] of [
      ['', '""'],
      [42, 'number'],
    ] as const) {
      const error = await provider.listMessages('s1', { cursor: cursor as string }).catch((e: unknown) => e);
      expect(ConfigurationError.isInstance(error)).toBe(true);
      expect((error as Error).message).toBe(
        `CosmosHistoryProvider.listMessages for session "s1": cursor must be the nextCursor of a previous page, got ${shown}. Omit it to start from the oldest stored message.`,
      );
    }
    expect(proxy.requests).toEqual([]);
  });
});

describe('item layout', () => {
  it('stores one item per message (id, sessionKey, sourceId, seq, message) and one head per session and source', async () => {
    const provider = make();
    const sessionId = sid();
    const [q, a] = turn(1);
    await provider.saveMessages(sessionId, [q!, a!], { state });
    const items = await itemsOf(provider.container, sessionId);
    const messages = items.filter((i) => i.kind === 'message');
    expect(
      messages.map(({ id, kind, sessionKey, sourceId, seq, message, ttl }) => ({ id, kind, sessionKey, sourceId, seq, message, ttl })),
    ).toEqual(
      [
        {
          id: `${sessionId}:cosmos:${q!.id}`,
          kind: 'message',
          sessionKey: sessionId,
          sourceId: 'cosmos',
          seq: 1,
          message: q,
          ttl: undefined,
        },
        {
          id: `${sessionId}:cosmos:${a!.id}`,
          kind: 'message',
          sessionKey: sessionId,
          sourceId: 'cosmos',
          seq: 2,
          message: a,
          ttl: undefined,
        },
      ].sort((x, y) => x.id.localeCompare(y.id)),
    );
    const head = items.find((i) => i.kind === 'head')!;
    expect(head).toMatchObject({ id: `${sessionId}:cosmos`, sessionKey: sessionId, sessionId, sourceId: 'cosmos', lastSeq: 2 });
    expect(Date.parse(String(head.updatedAt))).toBeGreaterThan(Date.now() - 60_000);
    expect(items).toHaveLength(3);
    expect(await provider.itemIds(sessionId, q!.id)).toEqual({ head: `${sessionId}:cosmos`, message: `${sessionId}:cosmos:${q!.id}` });
  });

  it('ttlSeconds writes a ttl on every message and refreshes it on the head; without it no item has one', async () => {
    const provider = make({ ttlSeconds: 3600 });
    const sessionId = sid();
    await provider.saveMessages(sessionId, turn(1), { state });
    await provider.saveMessages(sessionId, turn(2), { state });
    const items = await itemsOf(provider.container, sessionId);
    expect(items).toHaveLength(5);
    for (const item of items) expect(item.ttl, String(item.id)).toBe(3600);
    // The head is patched on every save: an older head without ttl gets it back.
    await provider.container.item(`${sessionId}:cosmos`, sessionId).patch([{ op: 'remove', path: '/ttl' }]);
    await provider.saveMessages(sessionId, turn(3), { state });
    const head = (await itemsOf(provider.container, sessionId)).find((i) => i.kind === 'head')!;
    expect(head.ttl).toBe(3600);
    const plain = make({}, provider.container.id);
    const other = sid();
    await plain.saveMessages(other, turn(1), { state });
    for (const item of await itemsOf(provider.container, other)) expect('ttl' in item).toBe(false);
  });

  it('createIfNotExists creates the container with the session partition key, TTL on and the narrow indexing policy', async () => {
    const provider = make();
    await provider.getMessages(sid(), { state });
    const { resource } = await provider.container.read();
    expect(resource!.partitionKey!.paths).toEqual(['/sessionKey']);
    expect(resource!.defaultTtl).toBe(-1);
    expect(resource!.indexingPolicy!.includedPaths).toEqual(HISTORY_INDEXING_POLICY.includedPaths);
    expect(resource!.indexingPolicy!.excludedPaths).toEqual([{ path: '/*' }]);
    const hierarchical = make({ scope: { tenantId: 't', userId: 'u' } });
    await hierarchical.getMessages(sid(), { state });
    const { resource: h } = await hierarchical.container.read();
    expect(h!.partitionKey).toMatchObject({ paths: ['/tenantId', '/userId', '/sessionKey'], kind: 'MultiHash' });
  });

  it('session ids over 100 UTF-8 bytes, lone surrogates and ids starting with ~ get a hashed partition value; others stay readable', () => {
    expect(sessionPartitionValue('user-42')).toBe('user-42');
    expect(sessionPartitionValue('é'.repeat(50))).toBe('é'.repeat(50));
    for (const id of ['x'.repeat(101), 'é'.repeat(51), '\uD800', '~abc']) expect(sessionPartitionValue(id)).toMatch(/^~[A-Za-z0-9_-]{43}$/);
    expect(sessionPartitionValue('x'.repeat(4096))).not.toBe(sessionPartitionValue('x'.repeat(4095)));
  });
});

describe('requests per operation', () => {
  it('a turn is one head patch and one transactional batch, and a window load one query, at 10 and at 2,000 stored messages', async () => {
    const provider = new CosmosHistoryProvider({ client: counted, databaseId, containerId: uniqueId('rt'), createIfNotExists: true });
    const small = sid();
    const large = sid();
    await seed(provider, small, 10);
    await seed(provider, large, 2000);
    for (const [sessionId, stored] of [
      [small, 10],
      [large, 2000],
    ] as const) {
      proxy.resetLog();
      const window = await provider.getMessages(sessionId, { state, limit: 20 });
      await provider.saveMessages(sessionId, turn(1), { state });
      expect(window).toHaveLength(Math.min(20, stored));
      // @azure/cosmos 4.9 asks the gateway for a query plan before every query.
      expect(proxy.requests.map((r) => r.kind)).toEqual(['query-plan', 'query', 'patch', 'batch']);
      const query = JSON.parse(proxy.requests[1]!.body!) as { query: string };
      expect(query.query).toMatch(/^SELECT TOP @limit .* ORDER BY c\.seq DESC$/);
      // The batch carries exactly the two new items, whatever the history size.
      const batch = JSON.parse(proxy.requests[3]!.body!) as { operationType: string; resourceBody: { seq: number } }[];
      expect(batch.map((op) => [op.operationType, op.resourceBody.seq])).toEqual([
        ['Create', stored + 1],
        ['Create', stored + 2],
      ]);
      expect(proxy.requests[1]!.path).toContain('/docs');
    }
    const last = await provider.getMessages(large, { state, limit: 3 });
    expect(texts(last)).toEqual(['m1999', 'q1', 'a1']);
  });

  it('a retried save stores nothing twice: the batch conflicts, the provider finds which ids exist and writes only the rest', async () => {
    const provider = new CosmosHistoryProvider({ client: counted, databaseId, containerId: uniqueId('retry'), createIfNotExists: true });
    const sessionId = sid();
    const [a, b, c] = [Message.user('a'), Message.assistant('b'), Message.user('c')];
    expect(await provider.append(sessionId, [a!, b!])).toBe(2);
    proxy.resetLog();
    expect(await provider.append(sessionId, [a!, b!])).toBe(0);
    expect(proxy.requests.map((r) => r.kind)).toEqual(['patch', 'batch', 'query-plan', 'query']);
    expect(await provider.append(sessionId, [b!, c!, c!])).toBe(1);
    expect(await provider.getMessages(sessionId, { state })).toEqual([a, b, c]);
    const seqs = (await itemsOf(provider.container, sessionId)).filter((i) => i.kind === 'message').map((i) => i.seq);
    expect(new Set(seqs).size).toBe(3);
  });

  it('exportMessages pages through every message in order with continuation tokens, one query per page', async () => {
    const provider = new CosmosHistoryProvider({ client: counted, databaseId, containerId: uniqueId('export'), createIfNotExists: true });
    const sessionId = sid();
    await seed(provider, sessionId, 1234);
    await provider.saveMessages(sid(), turn(1), { state }); // another session in the container, never exported
    proxy.resetLog();
    const exported: Message[] = [];
    for await (const m of provider.exportMessages(sessionId, { pageSize: 100 })) exported.push(m);
    expect(texts(exported)).toEqual(Array.from({ length: 1234 }, (_, i) => `m${i}`));
    expect(proxy.requests.filter((r) => r.kind === 'query')).toHaveLength(13);
    expect(proxy.requests.every((r) => r.kind === 'query' || r.kind === 'query-plan')).toBe(true);
    // Every page is the same query: the continuation token (a request header) carries the position.
    expect(new Set(proxy.requests.filter((r) => r.kind === 'query').map((r) => r.body)).size).toBe(1);
    expect(await provider.countMessages(sessionId)).toBe(1234);
  });
});

describe('paging, counting, clearing', () => {
  it('listMessages cursors continue after new messages were appended between pages', async () => {
    const provider = make();
    const sessionId = sid();
    await seed(provider, sessionId, 25);
    const first = await provider.listMessages(sessionId, { limit: 10 });
    expect(texts(first.messages)).toEqual(Array.from({ length: 10 }, (_, i) => `m${i}`));
    expect(first.nextCursor).toEqual(expect.any(String));
    await provider.append(sessionId, [Message.user('late')]);
    const rest: string[] = [];
    let cursor = first.nextCursor;
    while (cursor !== undefined) {
      const page = await provider.listMessages(sessionId, { limit: 10, cursor });
      rest.push(...texts(page.messages));
      cursor = page.nextCursor;
    }
    expect(rest).toEqual([...Array.from({ length: 15 }, (_, i) => `m${i + 10}`), 'late']);
    expect(await provider.listMessages(sid())).toEqual({ messages: [], nextCursor: undefined });
  });

  it("clear deletes one source id's messages and head of a session, leaves other sources and sessions alone, and numbering restarts cleanly", async () => {
    const mine = make({ sourceId: 'mine' });
    const theirs = make({ sourceId: 'theirs' }, mine.container.id);
    const sessionId = sid();
    const other = sid();
    await mine.saveMessages(sessionId, turn(1), { state });
    await mine.saveMessages(other, turn(9), { state });
    await theirs.saveMessages(sessionId, turn(2), { state });
    expect(await mine.clear(sessionId)).toBe(true);
    expect(await mine.clear(sessionId)).toBe(false);
    const left = await itemsOf(mine.container, sessionId);
    expect(left.every((i) => i.sourceId === 'theirs')).toBe(true);
    expect(left).toHaveLength(3);
    expect(await mine.getMessages(sessionId, { state })).toEqual([]);
    expect(texts(await theirs.getMessages(sessionId, { state }))).toEqual(['q2', 'a2']);
    expect(texts(await mine.getMessages(other, { state }))).toEqual(['q9', 'a9']);
    await mine.saveMessages(sessionId, turn(3), { state });
    expect(texts(await mine.getMessages(sessionId, { state }))).toEqual(['q3', 'a3']);
    expect(await mine.countMessages(sessionId)).toBe(2);
  });

  it('a lost head (expired or deleted by hand) is recreated after the newest stored message: no position is reused', async () => {
    const provider = make();
    const sessionId = sid();
    await provider.saveMessages(sessionId, turn(1), { state });
    await provider.saveMessages(sessionId, turn(2), { state });
    await provider.container.item(`${sessionId}:cosmos`, sessionId).delete();
    await provider.saveMessages(sessionId, turn(3), { state });
    const items = (await itemsOf(provider.container, sessionId)).filter((i) => i.kind === 'message');
    expect(items.map((i) => i.seq).sort()).toEqual([1, 2, 3, 4, 5, 6]);
    expect(texts(await provider.getMessages(sessionId, { state }))).toEqual(['q1', 'a1', 'q2', 'a2', 'q3', 'a3']);
  });

  it('replaceMessages rewrites the history: kept ids are stored once, dropped ones are deleted, later turns append after it', async () => {
    const provider = make();
    const sessionId = sid();
    const turns = [turn(1), turn(2), turn(3)];
    for (const t of turns) await provider.saveMessages(sessionId, t, { state });
    const summary = Message.system('summary of turns 1-2');
    await provider.replaceMessages!(sessionId, [summary, ...turns[2]!], { state });
    expect(await provider.getMessages(sessionId, { state })).toEqual([summary, ...turns[2]!]);
    const items = (await itemsOf(provider.container, sessionId)).filter((i) => i.kind === 'message');
    expect(items).toHaveLength(3);
    await provider.saveMessages(sessionId, turn(4), { state });
    expect(texts(await provider.getMessages(sessionId, { state }))).toEqual(['summary of turns 1-2', 'q3', 'a3', 'q4', 'a4']);
    await provider.replaceMessages!(sessionId, [], { state });
    expect(await provider.countMessages(sessionId)).toBe(0);
  });
});

describe('concurrency', () => {
  it('concurrent saves through two clients on one session: every position is unique, each batch contiguous, the head counts them all', async () => {
    const containerId = uniqueId('race');
    const a = make({}, containerId);
    const b = new CosmosHistoryProvider({ client: cosmosClient(), databaseId, containerId, createIfNotExists: true });
    const sessionId = sid();
    // Every save is the first of the session: the head is created by exactly one of them.
    const batches = Array.from({ length: 40 }, (_, i) => [0, 1, 2].map((j) => Message.user(`b${i}.${j}`)));
    await Promise.all(batches.map((batch, i) => (i % 2 ? a : b).saveMessages(sessionId, batch, { state })));
    const items = (await itemsOf(a.container, sessionId)).filter((i) => i.kind === 'message').sort((x, y) => Number(x.seq) - Number(y.seq));
    expect(items).toHaveLength(120);
    expect(items.map((i) => i.seq)).toEqual(Array.from({ length: 120 }, (_, i) => i + 1));
    const order = items.map((i) => Message.text(i.message as Message));
    for (const batch of batches) {
      const at = order.indexOf(Message.text(batch[0]!));
      expect(order.slice(at, at + 3)).toEqual(texts(batch));
    }
    // What a reader gets is exactly the seq order.
    expect(texts(await b.getMessages(sessionId, { state }))).toEqual(order);
    const head = (await itemsOf(a.container, sessionId)).find((i) => i.kind === 'head')!;
    expect(head.lastSeq).toBe(120);
  });

  it('interleaved concurrent turns and window reads never see a position twice or a message out of order', async () => {
    const provider = make();
    const sessionId = sid();
    const seen: string[][] = [];
    await Promise.all([
      ...Array.from({ length: 30 }, (_, i) => provider.saveMessages(sessionId, turn(i), { state })),
      ...Array.from({ length: 10 }, async () => seen.push(texts(await provider.getMessages(sessionId, { state, limit: 8 })))),
    ]);
    const all = texts(await provider.getMessages(sessionId, { state }));
    expect(all).toHaveLength(60);
    expect(new Set(all).size).toBe(60);
    for (let i = 0; i < 30; i++) expect(all[all.indexOf(`q${i}`) + 1]).toBe(`a${i}`);
    // Every window a reader saw is in the final order (a subsequence of it).
    for (const window of seen) {
      const positions = window.map((t) => all.indexOf(t));
      expect(positions.every((p, i) => p >= 0 && (i === 0 || p > positions[i - 1]!))).toBe(true);
    }
  });
});

describe('sessions and scopes', () => {
  it("listSessions lists this source id's sessions, most recently updated first, page by page", async () => {
    const containerId = uniqueId('list');
    const provider = make({}, containerId);
    const other = make({ sourceId: 'other' }, containerId);
    const ids = [sid(), sid(), sid()];
    for (const id of ids) {
      await provider.saveMessages(id, turn(1), { state });
      await new Promise((r) => setTimeout(r, 5));
    }
    await other.saveMessages(sid(), turn(1), { state });
    await provider.saveMessages(ids[0]!, turn(2), { state }); // now the most recent
    const first = await provider.listSessions({ limit: 2 });
    expect(first.sessions.map((s) => s.sessionId)).toEqual([ids[0], ids[2]]);
    expect(first.sessions[0]).toMatchObject({ lastSeq: 4, createdAt: expect.any(String), updatedAt: expect.any(String) });
    const second = await provider.listSessions({ limit: 2, cursor: first.nextCursor! });
    expect(second.sessions.map((s) => s.sessionId)).toEqual([ids[1]]);
    expect(second.nextCursor).toBeUndefined();
    await expect(provider.listSessions({ tenantId: 't' })).rejects.toThrow(ConfigurationError);
  });

  it('hierarchical: the same session id under two users stays apart, and listSessions filters by tenant and by user', async () => {
    const containerId = uniqueId('tenants');
    const scoped = (tenantId: string, userId: string) => make({ scope: { tenantId, userId } }, containerId);
    const shared = 'same-session-id';
    await scoped('t1', 'u1').saveMessages(shared, [Message.user('t1/u1')], { state });
    await scoped('t1', 'u2').saveMessages(shared, [Message.user('t1/u2')], { state });
    await scoped('t2', 'u1').saveMessages(shared, [Message.user('t2/u1')], { state });
    await scoped('t1', 'u1').saveMessages('second', [Message.user('t1/u1 #2')], { state });
    expect(texts(await scoped('t1', 'u2').getMessages(shared, { state }))).toEqual(['t1/u2']);
    expect(texts(await scoped('t2', 'u1').getMessages(shared, { state }))).toEqual(['t2/u1']);
    const items = await allItems(scoped('t1', 'u1').container);
    const t1u1 = items.filter((i) => i.kind === 'message' && i.tenantId === 't1' && i.userId === 'u1');
    expect(t1u1.map((i) => i.id).sort()).toEqual(expect.arrayContaining([expect.stringMatching(/^t1:u1:same-session-id:cosmos:/)]));
    // A resolver per session: one provider instance for every tenant.
    const resolver = make(
      { scope: ({ sessionId, state: s }) => ({ tenantId: String(s.tenant ?? 't1'), userId: sessionId === shared ? 'u2' : 'u1' }) },
      containerId,
    );
    expect(texts(await resolver.getMessages(shared, { state: { tenant: 't1' } }))).toEqual(['t1/u2']);
    expect(texts(await resolver.getMessages(shared, { state: {} }))).toEqual(['t1/u2']);
    expect(texts(await resolver.getMessages('second', { state: {}, limit: 5 }))).toEqual(['t1/u1 #2']);
    const byTenant = await resolver.listSessions({ tenantId: 't1' });
    expect(byTenant.sessions.map((s) => `${s.userId}/${s.sessionId}`).sort()).toEqual([
      'u1/same-session-id',
      'u1/second',
      'u2/same-session-id',
    ]);
    const byUser = await resolver.listSessions({ tenantId: 't1', userId: 'u1' });
    expect(byUser.sessions.map((s) => s.sessionId).sort()).toEqual(['same-session-id', 'second']);
    expect(byUser.sessions.every((s) => s.tenantId === 't1' && s.userId === 'u1')).toBe(true);
    await expect(resolver.listSessions({ userId: 'u1' })).rejects.toThrow(ConfigurationError);
    await expect(resolver.clear(shared, { scope: { tenantId: 't1', userId: 'u1' } })).resolves.toBe(true);
    expect(texts(await resolver.getMessages(shared, { state: {} }))).toEqual(['t1/u2']);
  });
});

describe('containers that do not fit', () => {
  it('a container partitioned by another path is a ConfigurationError naming both keys, before anything is written', async () => {
    const containerId = uniqueId('wrong');
    const { database } = await client.databases.createIfNotExists({ id: databaseId });
    await database.containers.createIfNotExists({ id: containerId, partitionKey: { paths: ['/userId'] } });
    const provider = new CosmosHistoryProvider({ client, databaseId, containerId });
    const error = await provider.saveMessages(sid(), turn(1), { state }).catch((e: unknown) => e);
    expect(ConfigurationError.isInstance(error)).toBe(true);
    expect((error as Error).message).toContain('["/userId"]');
    expect((error as Error).message).toContain('["/sessionKey"]');
    expect(await allItems(database.container(containerId))).toEqual([]);
    // createIfNotExists does not paper over it either.
    const again = await make({}, containerId)
      .getMessages(sid(), { state })
      .catch((e: unknown) => e);
    expect(ConfigurationError.isInstance(again)).toBe(true);
  });

  it('a hierarchical provider on a session-partitioned container (and the reverse) is a ConfigurationError', async () => {
    const single = make();
    await single.getMessages(sid(), { state });
    const error = await make({ scope: { tenantId: 't', userId: 'u' } }, single.container.id)
      .getMessages(sid(), { state })
      .catch((e: unknown) => e);
    expect(ConfigurationError.isInstance(error)).toBe(true);
    expect((error as Error).message).toContain('MultiHash');
    const hierarchical = make({ scope: { tenantId: 't', userId: 'u' } });
    await hierarchical.getMessages(sid(), { state });
    const reverse = await make({}, hierarchical.container.id)
      .getMessages(sid(), { state })
      .catch((e: unknown) => e);
    expect(ConfigurationError.isInstance(reverse)).toBe(true);
  });

  it('a missing container without createIfNotExists, and ttlSeconds on a container with TTL off, are ConfigurationErrors', async () => {
    const missing = await new CosmosHistoryProvider({ client, databaseId, containerId: uniqueId('missing') })
      .getMessages(sid(), { state })
      .catch((e: unknown) => e);
    expect(ConfigurationError.isInstance(missing)).toBe(true);
    expect((missing as Error).message).toContain('does not exist');
    const containerId = uniqueId('no-ttl');
    const { database } = await client.databases.createIfNotExists({ id: databaseId });
    await database.containers.createIfNotExists({ id: containerId, partitionKey: { paths: ['/sessionKey'] } });
    const error = await new CosmosHistoryProvider({ client, databaseId, containerId, ttlSeconds: 60 })
      .saveMessages(sid(), turn(1), { state })
      .catch((e: unknown) => e);
    expect(ConfigurationError.isInstance(error)).toBe(true);
    expect((error as Error).message).toContain('defaultTtl: -1');
    // Without ttlSeconds the same container is fine.
    await new CosmosHistoryProvider({ client, databaseId, containerId }).saveMessages(sid(), turn(1), { state });
  });
});

describe('malformed stored items', () => {
  const corrupt = async (mutate: (item: Record<string, unknown>) => void) => {
    const provider = make();
    const sessionId = sid();
    const messages = [...turn(1), ...turn(2)];
    await provider.saveMessages(sessionId, messages, { state });
    const { message: id } = await provider.itemIds(sessionId, messages[1]!.id);
    const { resource } = await provider.container.item(id, sessionId).read<Record<string, unknown>>();
    mutate(resource!);
    await provider.container.item(id, sessionId).replace(resource!);
    return { provider, sessionId, id };
  };

  it('a message of the wrong shape fails the read with SessionStateError naming the item and the field', async () => {
    const { provider, sessionId, id } = await corrupt((item) => ((item.message as Record<string, unknown>).role = 'robot'));
    const error = await provider.getMessages(sessionId, { state }).catch((e: unknown) => e);
    expect(SessionStateError.isInstance(error)).toBe(true);
    expect((error as SessionStateError).path).toBe(`cosmos:${databaseId}/${provider.container.id}[${JSON.stringify(id)}].message.role`);
    // A window that does not reach the bad item still loads.
    expect(texts(await provider.getMessages(sessionId, { state, limit: 2 }))).toEqual(['q2', 'a2']);
    const page = await provider.listMessages(sessionId).catch((e: unknown) => e);
    expect((page as SessionStateError).path).toContain(`[${JSON.stringify(id)}]`);
  });

  it('a missing message, a non-numeric seq and a message whose id does not match its item are each named', async () => {
    const missing = await corrupt((item) => delete item.message);
    expect(((await missing.provider.getMessages(missing.sessionId, { state }).catch((e: unknown) => e)) as SessionStateError).path).toMatch(
      /\]\.message$/,
    );
    const seq = await corrupt((item) => (item.seq = 'two'));
    const seqError = (await seq.provider.getMessages(seq.sessionId, { state, limit: 10 }).catch((e: unknown) => e)) as SessionStateError;
    expect(seqError.path).toBe(`cosmos:${databaseId}/${seq.provider.container.id}[${JSON.stringify(seq.id)}].seq`);
    const swapped = await corrupt((item) => ((item.message as Record<string, unknown>).id = 'someone-else'));
    const swappedError = (await swapped.provider.getMessages(swapped.sessionId, { state }).catch((e: unknown) => e)) as SessionStateError;
    expect(swappedError.path).toMatch(/\]\.message\.id$/);
    expect(swappedError.problem).toContain('does not match the item id');
  });

  it('a corrupt head fails the save with SessionStateError and writes no message', async () => {
    const provider = make();
    const sessionId = sid();
    await provider.saveMessages(sessionId, turn(1), { state });
    await provider.container
      .item(`${sessionId}:cosmos`, sessionId)
      .patch([{ op: 'set', path: '/lastSeq', value: 'x' }])
      .catch(async () => {
        const { resource } = await provider.container.item(`${sessionId}:cosmos`, sessionId).read();
        await provider.container.item(`${sessionId}:cosmos`, sessionId).replace({ ...resource, lastSeq: 'x' });
      });
    const error = await provider.saveMessages(sessionId, turn(2), { state }).catch((e: unknown) => e);
    expect(SessionStateError.isInstance(error)).toBe(true);
    expect((error as SessionStateError).path).toMatch(/\]\.lastSeq$/);
    expect(await provider.countMessages(sessionId)).toBe(2);
  });

  it('an item nested past 128 levels fails the read with SessionStateError naming the item and the field', async () => {
    // Cosmos DB itself refuses documents nested deeper than 128 levels; the stand-in does not.
    for (const [field, mutate] of [
      ['.message.metadata', (item: Record<string, unknown>) => ((item.message as Record<string, unknown>).metadata = nested(1000))],
      [
        '.message.contents[0].result',
        (item: Record<string, unknown>) =>
          ((item.message as Record<string, unknown>).contents = [{ type: 'function-result', callId: 'c', result: nested(1000) }]),
      ],
      ['.message.role', (item: Record<string, unknown>) => ((item.message as Record<string, unknown>).role = nested(1000))],
      ['.seq', (item: Record<string, unknown>) => (item.seq = nested(1000))],
      ['.message.extra', (item: Record<string, unknown>) => ((item.message as Record<string, unknown>).extra = nested(1000))],
    ] as const) {
      const { provider, sessionId, id } = await corrupt(mutate);
      const where = `cosmos:${databaseId}/${provider.container.id}[${JSON.stringify(id)}]${field}`;
      for (const read of [
        () => provider.getMessages(sessionId, { state }),
        () => provider.getMessages(sessionId, { state, limit: 3 }),
        () => provider.listMessages(sessionId),
      ]) {
        const error = await read().catch((e: unknown) => e);
        expect(SessionStateError.isInstance(error), field).toBe(true);
        expect((error as SessionStateError).path.startsWith(where), (error as SessionStateError).path).toBe(true);
      }
    }
  });

  it('a run over corrupt history fails with a ProviderError whose cause is the SessionStateError', async () => {
    const { provider, sessionId } = await corrupt((item) => (item.message = 'garbage'));
    const agent = createAgent({ client: new ScriptedChatClient({ replies: ['never'] }), contextProviders: [provider] });
    const error = await agent.run('hi', { session: agent.getSessionById(sessionId) }).catch((e: unknown) => e);
    expect(ProviderError.isInstance(error)).toBe(true);
    expect(SessionStateError.isInstance((error as ProviderError).cause)).toBe(true);
  });
});

describe('input checks', () => {
  it('rejects malformed and oversized messages before sending anything', async () => {
    const provider = new CosmosHistoryProvider({ client: counted, databaseId, containerId: uniqueId('input'), createIfNotExists: true });
    const sessionId = sid();
    await provider.getMessages(sessionId, { state });
    proxy.resetLog();
    const bad = { id: 'b', role: 'user', contents: [{ type: 'text' }] } as unknown as Message;
    const error = await provider.saveMessages(sessionId, [Message.user('ok'), bad], { state }).catch((e: unknown) => e);
    expect((error as SessionStateError).path).toBe('$.messages[1].contents[0].text');
    const huge = Message.user('x'.repeat(2 * 1024 * 1024));
    const tooBig = await provider.saveMessages(sessionId, [huge], { state }).catch((e: unknown) => e);
    expect((tooBig as SessionStateError).path).toBe('$.messages[0]');
    expect((tooBig as SessionStateError).problem).toContain('2 MB');
    const empty = await provider.saveMessages(sessionId, [Message.user('x', { id: '' })], { state }).catch((e: unknown) => e);
    expect((empty as SessionStateError).path).toBe('$.messages[0].id');
    expect(proxy.requests).toEqual([]);
    expect(await provider.countMessages(sessionId)).toBe(0);
  });

  it('refuses a message that is not plain JSON anywhere in it, naming the path, before any request (saveMessages and replaceMessages)', async () => {
    const provider = new CosmosHistoryProvider({ client: counted, databaseId, containerId: uniqueId('input'), createIfNotExists: true });
    const sessionId = sid();
    await provider.saveMessages(sessionId, turn(1), { state });
    proxy.resetLog();
    for (const [name, message, path] of nonJsonMessages()) {
      for (const write of [provider.saveMessages, provider.replaceMessages]) {
        const error = await write.call(provider, sessionId, [Message.user('fine'), message], { state }).catch((e: unknown) => e);
        expect(SessionStateError.isInstance(error), name).toBe(true);
        expect((error as SessionStateError).path.startsWith(`$.messages[1]${path}`), `${name}: ${(error as SessionStateError).path}`).toBe(
          true,
        );
      }
    }
    expect(proxy.requests).toEqual([]);
    expect(texts(await provider.getMessages(sessionId, { state }))).toEqual(['q1', 'a1']);
  });

  it('an aborted signal rejects with its reason and writes nothing', async () => {
    const provider = make();
    const sessionId = sid();
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    await expect(provider.saveMessages(sessionId, turn(1), { state, signal: controller.signal })).rejects.toThrow('stop');
    await expect(provider.getMessages(sessionId, { state, signal: controller.signal })).rejects.toThrow('stop');
    expect(await provider.countMessages(sessionId)).toBe(0);
  });
});

describe('hostile ids', () => {
  it('hostile session, source and message ids stay apart; every item id is short and free of characters Cosmos DB forbids', async () => {
    const containerId = uniqueId('hostile');
    const sessions = [
      ...HOSTILE_SESSION_IDS,
      '.',
      '..',
      '...',
      'a/..',
      '%2e%2e',
      '~',
      '~abc',
      '\uD800',
      '\uDC00',
      '\uFFFD',
      'a\u0000b',
      'a#b',
      'a?b',
      'a\\b',
      'a_2Fb',
      'a/b'.replace('/', '_2F'),
    ];
    const unique = [...new Set(sessions)];
    const sources = ['cosmos', 'a:b', 'a/b#?', '_', '..'];
    const messageIds = ['m/1', 'm#1', 'm?1', 'm\\1', 'm%1', 'm:1', 'm 1', 'M/1', '.', '..'];
    const providers = sources.map((sourceId) => make({ sourceId }, containerId));
    for (const [p, provider] of providers.entries()) {
      for (const [i, sessionId] of unique.entries()) {
        await provider.saveMessages(
          sessionId,
          messageIds.map((id) => Message.user(`${p}/${i}/${id}`, { id })),
          { state },
        );
      }
    }
    for (const [p, provider] of providers.entries()) {
      for (const [i, sessionId] of unique.entries()) {
        const got = await provider.getMessages(sessionId, { state });
        expect(texts(got), `source ${p}, session ${i}`).toEqual(messageIds.map((id) => `${p}/${i}/${id}`));
        expect(got.map((m) => m.id)).toEqual(messageIds);
      }
    }
    const items = await allItems(providers[0]!.container);
    expect(items).toHaveLength(sources.length * unique.length * (messageIds.length + 1));
    expect(new Set(items.map((i) => i.id)).size).toBe(items.length);
    for (const item of items) {
      expect(String(item.id)).toMatch(/^[A-Za-z0-9._~:-]+$/);
      expect(String(item.id).length).toBeLessThanOrEqual(255);
    }
    // Clearing a dot-only session (deletes by item id, in the URL) removes exactly its own items.
    expect(await providers[4]!.clear('..')).toBe(true);
    expect(await allItems(providers[0]!.container)).toHaveLength(items.length - (messageIds.length + 1));
    expect(await providers[4]!.getMessages('..', { state })).toEqual([]);
    expect(texts(await providers[4]!.getMessages('.', { state }))).toHaveLength(messageIds.length);
    // 850 saves, one by one: 26 s on a loaded 2-core machine.
  }, 120_000);
});
