import { BackendUnavailableError, Message, SessionStateError, type JsonValue } from '@ctx/core';
import { shortId } from '@ctx/core/backend';
import { startFaultProxy } from '@ctx/cosmos-stand-in';
import { afterAll, describe, expect, it } from 'vitest';
import { cosmosClient, env, uniqueId } from '../test/helpers.js';
import { CosmosHistoryProvider } from './cosmos-history-provider.js';
import { CosmosSessionStore } from './cosmos-session-store.js';
import { MAX_ITEM_BYTES, MAX_ITEM_DEPTH, nestingDepth } from './limits.js';

/** A message whose whole JSON nests exactly `depth` levels (the message object is level 1). */
function messageOfDepth(depth: number): Message {
  let value: JsonValue = 'leaf';
  // message (1) > metadata (2) > `deep` chain: depth - 2 more objects.
  for (let i = 0; i < depth - 2; i++) value = { d: value };
  const message = Message.user('deep');
  return { ...message, metadata: { deep: value } };
}

describe('nestingDepth', () => {
  it.each([
    ['a scalar', 'x', 0],
    ['an empty object', {}, 1],
    ['an object holding an array', { a: [] }, 2],
    ['arrays in arrays', [[[1]]], 3],
  ])('%s', (_, value, depth) => {
    expect(nestingDepth(value)).toBe(depth);
  });

  it('counts a message as stored', () => {
    expect(nestingDepth(messageOfDepth(127))).toBe(127);
    expect(nestingDepth(messageOfDepth(128))).toBe(128);
  });
});

describe('messages nested as deep as Cosmos DB allows', async () => {
  const proxy = await startFaultProxy(env.endpoint);
  afterAll(() => proxy.stop());
  const provider = new CosmosHistoryProvider({
    client: cosmosClient(proxy.endpoint),
    databaseId: uniqueId('limits'),
    containerId: 'c',
    createIfNotExists: true,
  });

  it(`a message of ${MAX_ITEM_DEPTH} levels (${MAX_ITEM_DEPTH + 1} in its item) is refused before any request, naming the message`, async () => {
    await provider.saveMessages('warm-up', [Message.user('hi')], { state: {} });
    const deep = messageOfDepth(MAX_ITEM_DEPTH);
    proxy.resetLog();
    const error = await provider.saveMessages('s1', [Message.user('first'), deep], { state: {} }).catch((e: unknown) => e);
    expect(SessionStateError.isInstance(error)).toBe(true);
    expect((error as SessionStateError).path).toBe('$.messages[1]');
    expect((error as Error).message).toContain(`(message ${shortId(deep.id)})`);
    expect((error as Error).message).toContain(
      `${MAX_ITEM_DEPTH + 1} in its Cosmos DB item, past Cosmos DB's limit of ${MAX_ITEM_DEPTH} levels`,
    );
    await expect(provider.replaceMessages('s1', [deep], { state: {} })).rejects.toSatisfy(SessionStateError.isInstance);
    expect(proxy.requests).toEqual([]);
    expect(await provider.getMessages('s1', { state: {} })).toEqual([]);
  });

  it(`a message of ${MAX_ITEM_DEPTH - 1} levels is stored and read back as it was`, async () => {
    const deep = messageOfDepth(MAX_ITEM_DEPTH - 1);
    await provider.saveMessages('s2', [deep], { state: {} });
    expect(await provider.getMessages('s2', { state: {} })).toEqual([deep]);
  });
});

describe("items over Cosmos DB's 2 MB", async () => {
  const proxy = await startFaultProxy(env.endpoint);
  afterAll(() => proxy.stop());
  const client = cosmosClient(proxy.endpoint);
  const databaseId = uniqueId('size');
  const history = new CosmosHistoryProvider({ client, databaseId, containerId: 'h', createIfNotExists: true });
  const store = new CosmosSessionStore({ client, databaseId, containerId: 's', createIfNotExists: true });
  const session = (sessionId: string, text: string) => ({
    type: 'ctx.session' as const,
    version: 2 as const,
    sessionId,
    metadata: { createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z', userId: 'u-size' },
    state: { notes: { text } },
  });

  it('a message over the item limit is refused before any request, naming the message and the limit', async () => {
    await history.saveMessages('warm-up', [Message.user('hi')], { state: {} });
    const big = Message.user('x'.repeat(MAX_ITEM_BYTES), { id: 'm-big' });
    proxy.resetLog();
    const error = await history.saveMessages('s-big', [Message.user('first'), big], { state: {} }).catch((e: unknown) => e);
    expect(SessionStateError.isInstance(error)).toBe(true);
    expect((error as SessionStateError).path).toBe('$.messages[1]');
    expect((error as Error).message).toMatch(
      /^Invalid session data at \$\.messages\[1\]: message "m-big" is 20972\d\d bytes of JSON, over Cosmos DB's item size limit \(2 MB: 2097152 bytes, of which 2048 are kept for the item's own and system properties\); nothing was written/,
    );
    expect(proxy.requests).toEqual([]);
    expect(await history.getMessages('s-big', { state: {} })).toEqual([]);
  });

  it('a session whose item would pass 2 MB is refused before any request; one just under is stored and read back', async () => {
    await store.get('warm-up');
    proxy.resetLog();
    const error = await store.set(session('s-big', 'y'.repeat(MAX_ITEM_BYTES))).catch((e: unknown) => e);
    expect(SessionStateError.isInstance(error)).toBe(true);
    expect((error as SessionStateError).path).toBe('$');
    expect((error as Error).message).toMatch(/the item of session "s-big" is \d+ bytes of JSON, over Cosmos DB's item size limit \(2 MB/);
    expect(proxy.requests).toEqual([]);
    expect(await store.get('s-big')).toBeUndefined();

    const fits = session('s-fits', 'z'.repeat(MAX_ITEM_BYTES - 4096));
    await store.set(fits);
    expect((await store.get('s-fits'))?.session.state).toEqual(fits.state);
  });

  it('a failed listing names the user whose sessions it read', async () => {
    proxy.inject({ match: (r) => r.kind === 'query', times: Infinity, fault: { status: 503 } });
    try {
      const error = await store.list({ userId: 'u-size' }).catch((e: unknown) => e);
      expect(BackendUnavailableError.isInstance(error)).toBe(true);
      expect((error as Error).message).toContain('CosmosSessionStore.list for user "u-size" on');
    } finally {
      proxy.clearFaults();
    }
  });
});
