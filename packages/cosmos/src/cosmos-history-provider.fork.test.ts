import { ConfigurationError, InvalidInputError, Message } from '@ctx/core';
import { startFaultProxy, type ProxiedRequest } from '@ctx/cosmos-stand-in';
import { afterAll, describe, expect, it } from 'vitest';
import { allItems, cosmosClient, env, uniqueId } from '../test/helpers.js';
import { CosmosHistoryProvider, type CosmosHistoryProviderOptions } from './cosmos-history-provider.js';

// forkMessages and clearMessages, with every request counted through the logging proxy.
const proxy = await startFaultProxy(env.endpoint, { recordBodies: true });
afterAll(() => proxy.stop());
const client = cosmosClient(proxy.endpoint);
const databaseId = uniqueId('fork');
const make = (options: Partial<CosmosHistoryProviderOptions> = {}) =>
  new CosmosHistoryProvider({ client, databaseId, containerId: uniqueId('c'), createIfNotExists: true, ...options });
const state = {};
const turn = (i: number) => [Message.user(`question ${i}`), Message.assistant(`answer ${i}`)];

/** A request as counted: its kind, and for a batch its size and operation types. */
function shape(r: ProxiedRequest): string {
  if (r.kind !== 'batch') return r.kind;
  const ops = (JSON.parse(r.body ?? '[]') as { operationType: string }[]).map((o) => o.operationType);
  return `batch(${ops.length} ${[...new Set(ops)].join('/')})`;
}
async function requestsOf(run: () => Promise<unknown>): Promise<string[]> {
  proxy.resetLog();
  await run();
  return proxy.requests.filter((r) => r.kind !== 'metadata').map(shape);
}

describe('CosmosHistoryProvider.forkMessages', () => {
  it('copies the whole history at the same positions on the server, in one query and one batch; the source is untouched', async () => {
    const provider = make();
    for (let i = 0; i < 3; i++) await provider.saveMessages('a', turn(i), { state });
    const source = await provider.getMessages('a', { state });
    await provider.getMessages('b', { state }); // the container check is not part of the fork
    const requests = await requestsOf(async () => expect(await provider.forkMessages('a', 'b', { fromState: state, toState: {} })).toBe(6));
    expect(requests).toEqual(['query-plan', 'query', 'batch(7 Create/Upsert)']);
    expect(await provider.getMessages('b', { state })).toEqual(source);
    expect(await provider.getMessages('a', { state })).toEqual(source);
    // The copy continues on its own: a save numbers after the copied positions.
    const next = turn(9);
    await provider.saveMessages('b', next, { state });
    expect(await provider.getMessages('b', { state })).toEqual([...source, ...next]);
    expect(await provider.countMessages('a')).toBe(6);
  });

  it('up to a message: one point read for its position, then the query and the batch', async () => {
    const provider = make();
    for (let i = 0; i < 4; i++) await provider.saveMessages('a', turn(i), { state });
    const source = await provider.getMessages('a', { state });
    await provider.getMessages('c', { state });
    const requests = await requestsOf(() => provider.forkMessages('a', 'c', { fromState: state, toState: {}, atMessageId: source[2]!.id }));
    expect(requests).toEqual(['read', 'query-plan', 'query', 'batch(4 Create/Upsert)']);
    expect(await provider.getMessages('c', { state })).toEqual(source.slice(0, 3));
  });

  it('keeps fractional positions a replace gave, and a compacted order', async () => {
    const provider = make();
    for (let i = 0; i < 3; i++) await provider.saveMessages('a', turn(i), { state });
    const kept = (await provider.getMessages('a', { state })).slice(-2);
    const summary = Message.system('summary');
    await provider.replaceMessages('a', [summary, ...kept], { state });
    await provider.forkMessages('a', 'b', { fromState: state, toState: {} });
    expect(await provider.getMessages('b', { state })).toEqual([summary, ...kept]);
    const next = turn(5);
    await provider.saveMessages('b', next, { state });
    expect(await provider.getMessages('b', { state })).toEqual([summary, ...kept, ...next]);
  });

  it('250 messages take batches of at most 100 operations: 3 batches', async () => {
    const provider = make();
    const messages = Array.from({ length: 250 }, (_, i) => Message.user(`m${i}`));
    await provider.saveMessages('big', messages, { state });
    await provider.getMessages('copy', { state, limit: 1 });
    const requests = await requestsOf(() => provider.forkMessages('big', 'copy', { fromState: state, toState: {} }));
    expect(requests).toEqual(['query-plan', 'query', 'batch(100 Create/Upsert)', 'batch(100 Upsert)', 'batch(51 Upsert)']);
    expect((await provider.getMessages('copy', { state })).map((m) => m.id)).toEqual(messages.map((m) => m.id));
  });

  it("a message that is not in the history is an InvalidInputError (the caller's mistake) before anything is written; an empty id before any request", async () => {
    const provider = make();
    await provider.saveMessages('a', turn(0), { state });
    const other = new CosmosHistoryProvider({ sourceId: 'other', container: provider.container });
    await other.saveMessages('a', [Message.user('under another source id')], { state });
    await provider.saveMessages('b', [Message.user('in another session')], { state });
    const [foreign] = await other.getMessages('a', { state });
    const [elsewhere] = await provider.getMessages('b', { state });
    for (const atMessageId of ['missing', foreign!.id, elsewhere!.id]) {
      proxy.resetLog();
      const error = await provider.forkMessages('a', 'x', { fromState: state, toState: {}, atMessageId }).catch((e: unknown) => e);
      expect(InvalidInputError.isInstance(error), atMessageId).toBe(true);
      expect((error as Error).message).toContain('is not in its history');
      expect(proxy.requests.filter((r) => r.kind === 'batch')).toEqual([]);
    }
    proxy.resetLog();
    const empty = await provider.forkMessages('a', 'x', { fromState: state, toState: {}, atMessageId: '' }).catch((e: unknown) => e);
    expect(InvalidInputError.isInstance(empty)).toBe(true);
    expect((empty as Error).message).toContain('atMessageId must be the id of a stored message, got ""');
    expect(proxy.requests).toEqual([]);
    expect(await provider.countMessages('x')).toBe(0);
  });

  it('a new session that already has history is a ConfigurationError, and neither session changes', async () => {
    const provider = make();
    const [first, second] = [turn(0), turn(1)];
    await provider.saveMessages('a', first, { state });
    await provider.saveMessages('taken', second, { state });
    const error = await provider.forkMessages('a', 'taken', { fromState: state, toState: {} }).catch((e: unknown) => e);
    expect(ConfigurationError.isInstance(error)).toBe(true);
    expect((error as Error).message).toContain('already has history');
    expect(await provider.getMessages('taken', { state })).toEqual(second);
    expect(await provider.getMessages('a', { state })).toEqual(first);
  });

  it('blank or equal session ids, and an atMessageId that is not a string, are ConfigurationErrors before any request', async () => {
    const provider = make();
    proxy.resetLog();
    const calls = [
      () => provider.forkMessages('a', 'a', { fromState: state, toState: {} }),
      () => provider.forkMessages(' ', 'b', { fromState: state, toState: {} }),
      () => provider.forkMessages('a', '', { fromState: state, toState: {} }),
      () => provider.forkMessages('a', 'b', { fromState: state, toState: {}, atMessageId: 7 as unknown as string }),
    ];
    for (const call of calls) expect(ConfigurationError.isInstance(await call().catch((e: unknown) => e))).toBe(true);
    expect(proxy.requests).toEqual([]);
  });

  it('a batch whose answer was lost is retried and recognised by its fork id: every message once', async () => {
    const provider = make();
    for (let i = 0; i < 3; i++) await provider.saveMessages('a', turn(i), { state });
    await provider.getMessages('b', { state });
    proxy.resetLog();
    proxy.inject({ match: (r) => r.kind === 'batch', fault: 'reset-after' });
    expect(await provider.forkMessages('a', 'b', { fromState: state, toState: {} })).toBe(6);
    expect(proxy.requests.filter((r) => r.kind === 'batch').map((r) => r.fault ?? r.status)).toEqual(['reset-after', 200, 200]);
    expect(await provider.getMessages('b', { state })).toEqual(await provider.getMessages('a', { state }));
  });

  it('under hierarchical partitioning the copy goes to the scope the new state resolves to', async () => {
    const provider = make({ scope: ({ state: s }) => ({ tenantId: 'contoso', userId: String(s.userId) }) });
    const messages = turn(0);
    await provider.saveMessages('a', messages, { state: { userId: 'ada' } });
    await provider.forkMessages('a', 'b', { fromState: { userId: 'ada' }, toState: { userId: 'bob' } });
    expect(await provider.getMessages('b', { state: { userId: 'bob' } })).toEqual(messages);
    expect(await provider.getMessages('b', { state: { userId: 'ada' } })).toEqual([]);
  });
});

describe('CosmosHistoryProvider.clearMessages', () => {
  it('leaves no item of the session under its source id; other sessions and source ids are untouched', async () => {
    const provider = make();
    const other = new CosmosHistoryProvider({ sourceId: 'audit', container: provider.container });
    for (let i = 0; i < 60; i++) await provider.saveMessages('gone', turn(i), { state });
    const kept = turn(0);
    await provider.saveMessages('kept', kept, { state });
    await other.saveMessages('gone', turn(0), { state });
    const requests = await requestsOf(() => provider.clearMessages('gone', { state }));
    // The ids, two batches of deletes (120 messages and the head), then a query that finds none left.
    expect(requests).toEqual(['query-plan', 'query', 'batch(100 Delete)', 'batch(21 Delete)', 'query-plan', 'query']);
    const items = await allItems(provider.container);
    expect(items.filter((item) => item.sessionKey === 'gone' && item.sourceId === 'cosmos')).toEqual([]);
    expect(items.filter((item) => item.sessionKey === 'gone' && item.sourceId === 'audit').length).toBe(3);
    expect(await provider.getMessages('kept', { state })).toEqual(kept);
    // Nothing stored: one query, no batch.
    expect(await requestsOf(() => provider.clearMessages('never', { state }))).toEqual(['query-plan', 'query']);
    await expect(provider.clear('gone')).resolves.toBe(false);
  });

  it("is the provider's onSessionDeleted", async () => {
    const provider = make();
    await provider.saveMessages('s', turn(0), { state });
    const session = { sessionId: 's', serviceSessionId: undefined, state: {}, metadata: { createdAt: '', updatedAt: '' } };
    await provider.onSessionDeleted({ session, state } as unknown as Parameters<CosmosHistoryProvider['onSessionDeleted']>[0]);
    expect((await allItems(provider.container)).filter((item) => item.sessionKey === 's')).toEqual([]);
  });
});
