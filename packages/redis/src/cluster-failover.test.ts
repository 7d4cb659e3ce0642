import { join } from 'node:path';
import { BackendUnavailableError, Message, type SessionJson } from '@ctx/core';
import { clusterNodes, rawCommand, startRedisCluster, type ClusterNodeInfo, type RedisCluster } from '@ctx/redis-test-server';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { env, uniquePrefix } from '../test/helpers.js';
import { clusterSlot, historyKeys, indexKeys, sessionKey } from './keys.js';
import { RedisHistoryProvider } from './redis-history-provider.js';
import { RedisSessionStore } from './redis-session-store.js';

const state = {};
const session = (sessionId: string, userId: string, title: string): SessionJson => ({
  type: 'ctx.session',
  version: 2,
  sessionId,
  metadata: { createdAt: new Date(0).toISOString(), updatedAt: new Date().toISOString(), userId, title },
  state: {},
});

/** The master serving `key`'s slot, as the node on `port` sees the cluster. */
async function masterOf(port: number, key: string): Promise<ClusterNodeInfo> {
  const slot = clusterSlot(key);
  const master = (await clusterNodes(port)).find(
    (n) => n.role === 'master' && !n.failing && n.slots.some(([from, to]) => slot >= from && slot <= to),
  );
  if (!master) throw new Error(`no master serves slot ${slot}`);
  return master;
}

/**
 * Waits until the replicas of the master on `port` hold every write it acknowledged so far:
 * replication is asynchronous, so a failover loses what a replica has not received yet. A write
 * of its own on the master, then `WAIT` for it (the replication stream keeps its order).
 */
async function replicated(seed: number, port: number): Promise<void> {
  const key = await idOn(seed, port, 'sync', (id) => id);
  const node = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await node.connect();
    await node.set(key, '1');
    expect(Number(await node.call('WAIT', '1', '5000'))).toBeGreaterThanOrEqual(1);
  } finally {
    node.disconnect();
  }
}

/** The first of `name-0`, `name-1`, ... whose key (`keyOf`) lies on the master `port` (or, with `not`, on another). */
async function idOn(seed: number, port: number, name: string, keyOf: (id: string) => string, not = false): Promise<string> {
  for (let i = 0; i < 10_000; i++) {
    const id = `${name}-${i}`;
    if (((await masterOf(seed, keyOf(id))).port === port) !== not) return id;
  }
  throw new Error(`no id found for ${name}`);
}

describe('the cluster hash slot of a key', () => {
  it('is what CLUSTER KEYSLOT says, hash tags and hostile ids included', async () => {
    const port = env.clusterNodes[0]!.port;
    for (const key of ['foo', 'a{b}c', 'a{}b', '{}{x}', 'x{y', 'é{ü}', 'ctx:session:{s%7B1%7D}', `p:${'z'.repeat(300)}`]) {
      expect(`${key} ${clusterSlot(key)}`).toBe(`${key} ${(await rawCommand(port, `CLUSTER KEYSLOT ${key}`)).slice(1).trim()}`);
    }
  });
});

describe('a script on a node that lost it, reported after too many redirections', () => {
  it('NOSCRIPT inside "Too many Cluster redirections" loads the script and the call succeeds', async () => {
    // With maxRedirections 0, ioredis reports the first error of any command as too many redirections,
    // as it does for a NOSCRIPT that arrives as the last of its redirections after a promotion.
    const client = new Cluster(env.clusterNodes, { maxRedirections: 0, redisOptions: { maxRetriesPerRequest: 1 } });
    try {
      const prefix = uniquePrefix('noscript');
      const store = new RedisSessionStore({ client, prefix });
      const history = new RedisHistoryProvider({ client, prefix });
      for (const node of client.nodes('master')) await node.script('FLUSH');
      await expect(store.set(session('s', 'u', 'first'))).resolves.toMatch(/^[0-9a-f-]{36}$/);
      for (const node of client.nodes('master')) await node.script('FLUSH');
      await expect(history.append('s', [Message.user('hello', { id: 'm1' })])).resolves.toBe(1);
      expect((await store.list({ userId: 'u' })).sessions.map((s) => s.metadata.title)).toEqual(['first']);
    } finally {
      client.disconnect();
    }
  });
});

// A cluster of 3 masters with a replica each, for these tests alone: they pause and kill its nodes.
describe('a cluster master stalls (SIGSTOP) or dies (SIGKILL), and its replica takes over', () => {
  let cluster: RedisCluster;
  let seed: number;
  beforeAll(async () => {
    cluster = await startRedisCluster({ dir: join(env.tmpDir, `failover-${Math.random().toString(36).slice(2, 8)}`), replicas: 1 });
    seed = cluster.nodes[0]!.port;
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });
  const server = (port: number) => cluster.nodes.find((n) => n.port === port)!;
  /** Nodes a test paused or promoted: the next test fails over a master of its own. */
  const changed: number[] = [];

  it('with the package-owned connection, sessions on the stalled master are served again by the promoted replica while it is still stalled; saves whose listing is there still succeed and are listed after the repair', async () => {
    const prefix = uniquePrefix('stall');
    const reported: Error[] = [];
    const options = { nodes: cluster.startupNodes, prefix, timeoutMs: 1000 };
    const store = new RedisSessionStore({ ...options, onListingError: (e) => reported.push(e) });
    const history = new RedisHistoryProvider(options);
    // A master other than node 0 (which stays up to be asked), a session on it, one elsewhere, and a
    // user whose listing is on it.
    const stalled = (await clusterNodes(seed)).find((n) => n.role === 'master' && n.port !== seed)!.port;
    const onStalled = await idOn(seed, stalled, 'on', (id) => sessionKey(prefix, id));
    // Its own key and its entry in the listing of every session (a shard) both elsewhere.
    let healthy = '';
    for (let i = 0; !healthy; i++) {
      const [own, shard] = [
        await masterOf(seed, sessionKey(prefix, `ok-${i}`)),
        await masterOf(seed, store.indexKeys(undefined, `ok-${i}`).order),
      ];
      if (own.port !== stalled && shard.port !== stalled) healthy = `ok-${i}`;
    }
    const user = await idOn(seed, stalled, 'user', (id) => indexKeys(prefix, id).order);
    try {
      await store.set(session(onStalled, user, 'before'));
      await store.set(session(healthy, user, 'before'));
      await history.append(onStalled, [Message.user('before', { id: 'm0' })]);
      await replicated(seed, stalled);

      server(stalled).pause();
      // The healthy session's save lands; its entry in the user's listing (on the stalled master) does not.
      await expect(store.set(session(healthy, user, 'during'))).resolves.toMatch(/^[0-9a-f-]{36}$/);
      expect(reported.length).toBeGreaterThan(0);
      expect(BackendUnavailableError.isInstance(reported[0])).toBe(true);
      expect(reported[0]!.message).toContain(`session "${healthy}" is saved, but 1 of its 2 listing writes failed`);
      expect(reported[0]!.message).toContain(`Redis Cluster node 127.0.0.1:${stalled}`);
      expect(reported[0]!.message.match(/BackendUnavailableError/g) ?? []).toHaveLength(0);

      // A call on the stalled master fails naming that node, then succeeds once the replica is
      // promoted, before the master resumes.
      const first = await store.get(onStalled).catch((e: unknown) => e);
      expect(BackendUnavailableError.isInstance(first)).toBe(true);
      expect((first as Error).message).toContain(
        `Redis Cluster node 127.0.0.1:${stalled} (slot ${clusterSlot(sessionKey(prefix, onStalled))})`,
      );
      let served = false;
      for (let i = 0; i < 40 && !served; i++) {
        try {
          await store.set(session(onStalled, user, 'during'));
          await history.append(onStalled, [Message.user('during', { id: 'm1' })]);
          served = true;
        } catch (error) {
          expect(BackendUnavailableError.isInstance(error), String(error)).toBe(true);
          await new Promise((r) => setTimeout(r, 250));
        }
      }
      expect(served).toBe(true);
      const promoted = await masterOf(seed, sessionKey(prefix, onStalled));
      expect(promoted.port).not.toBe(stalled);
      changed.push(stalled, promoted.port);
      expect((await history.getMessages(onStalled, { state })).map((m) => m.id)).toEqual(['m0', 'm1']);

      // The listing write that failed is repaired by the background pass's work, done now.
      await store.repairListings();
      expect((await store.list({ userId: user })).sessions.map((s) => [s.sessionId, s.metadata.title]).sort()).toEqual(
        [
          [healthy, 'during'],
          [onStalled, 'during'],
        ].sort(),
      );
      expect((await store.repairListings()).pending).toBe(0);
    } finally {
      server(stalled).resume();
      await store.close();
      await history.close();
    }
  }, 60_000);

  it('after a master is killed, its promoted replica runs the scripts it never loaded', async () => {
    const prefix = uniquePrefix('kill');
    const history = new RedisHistoryProvider({ nodes: cluster.startupNodes.filter((n) => n.port !== seed), prefix, timeoutMs: 1000 });
    try {
      const victimPort = (await clusterNodes(seed)).find((n) => n.role === 'master' && n.port !== seed && !changed.includes(n.port))!.port;
      const sid = await idOn(seed, victimPort, 'killed', (id) => historyKeys(prefix, 'redis', id).messages);
      await history.append(sid, [Message.user('one', { id: 'k1' })]);
      await replicated(seed, victimPort);
      await server(victimPort).stop('SIGKILL');
      let stored = false;
      for (let i = 0; i < 40 && !stored; i++) {
        try {
          await history.append(sid, [Message.user('two', { id: 'k2' })]);
          stored = true;
        } catch (error) {
          expect(BackendUnavailableError.isInstance(error), String(error)).toBe(true);
          await new Promise((r) => setTimeout(r, 250));
        }
      }
      expect(stored).toBe(true);
      expect((await history.getMessages(sid, { state })).map((m) => m.id)).toEqual(['k1', 'k2']);
    } finally {
      await history.close();
    }
  }, 60_000);
});
