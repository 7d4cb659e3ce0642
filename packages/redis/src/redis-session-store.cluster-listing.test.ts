import { createAgent, type SessionJson, SessionStateError } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { describe, expect, it } from 'vitest';
import { clusterClient, uniquePrefix } from '../test/helpers.js';
import { RedisHistoryProvider } from './redis-history-provider.js';
import { RedisSessionStore } from './redis-session-store.js';

const session = (sessionId: string, userId: string, title: string): SessionJson => ({
  type: 'ctx.session',
  version: 2,
  sessionId,
  metadata: { createdAt: new Date(0).toISOString(), updatedAt: new Date().toISOString(), userId, title },
  state: {},
});

describe('RedisSessionStore on a cluster: a delete whose listing removal fails', () => {
  const client = clusterClient();

  it('resolves true (the session is deleted), reports the removal to onListingError, and the repair removes the entry', async () => {
    const reported: Error[] = [];
    const store = new RedisSessionStore({ client, prefix: uniquePrefix('del-cut'), onListingError: (e) => reported.push(e) });
    await store.set(session('s', 'u', 'first'));
    const { order, meta } = store.indexKeys('u');
    // The user's listing refuses the removal (a key of the wrong type; as a node that is down would).
    await client.del(order);
    await client.set(order, 'not a sorted set');
    expect(await store.delete('s')).toBe(true);
    expect(await store.get('s')).toBeUndefined();
    expect((await store.list()).sessions).toEqual([]);
    expect(reported).toHaveLength(1);
    expect(SessionStateError.isInstance(reported[0])).toBe(true);
    expect(reported[0]!.message).toContain('session "s" is deleted, but 1 of its 2 listing removals failed');
    expect(await client.hget(meta, 's'), 'the entry is still there').not.toBeNull();
    await client.del(order);
    expect(await store.repairListings()).toEqual({ repaired: 1, pending: 0 });
    expect(await client.hget(meta, 's'), 'the repair removed it').toBeNull();
  });

  it('a session created again under the id after such a delete stays listed: the pending removal does not take its new entry', async () => {
    const store = new RedisSessionStore({ client, prefix: uniquePrefix('del-again'), onListingError: () => {} });
    await store.set(session('s', 'u', 'old'));
    const { order } = store.indexKeys('u');
    await client.del(order);
    await client.set(order, 'not a sorted set');
    expect(await store.delete('s')).toBe(true);
    await client.del(order);
    await store.set(session('s', 'u', 'new'));
    expect(await store.repairListings()).toEqual({ repaired: 0, pending: 0 });
    expect((await store.list({ userId: 'u' })).sessions.map((s) => s.metadata.title)).toEqual(['new']);
  });

  it('agent.deleteSession through such a delete succeeds, and the history is cleared', async () => {
    const prefix = uniquePrefix('del-agent');
    const store = new RedisSessionStore({ client, prefix, onListingError: () => {} });
    const history = new RedisHistoryProvider({ client, prefix });
    const agent = createAgent({ client: new ScriptedChatClient({ replies: ['hi'] }), sessionStore: store, contextProviders: [history] });
    await agent.run('hello', { sessionId: 's', userId: 'u' });
    expect(await history.countMessages('s')).toBe(2);
    const { order } = store.indexKeys('u');
    await client.del(order);
    await client.set(order, 'not a sorted set');
    expect(await agent.deleteSession('s')).toBe(true);
    expect(await history.countMessages('s')).toBe(0);
    expect(await store.get('s')).toBeUndefined();
    await client.del(order);
  });
});
