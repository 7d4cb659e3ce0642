import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterNodes, findFreePort, rawCommand, redisInstalled, startRedisCluster, startRedisServer } from './redis-servers.js';

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

let dir: string;
beforeAll(() => {
  if (!redisInstalled()) throw new Error('redis-server / redis-cli not found: apt-get update && apt-get install -y redis-server');
  dir = mkdtempSync(join(tmpdir(), 'ctx-redis-test-server-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('startRedisServer', () => {
  it('starts a server on 127.0.0.1 on a free port that answers commands, and stops it by pid', async () => {
    const server = await startRedisServer({ dir: join(dir, 'single') });
    expect(server.host).toBe('127.0.0.1');
    expect(alive(server.pid)).toBe(true);
    expect(await rawCommand(server.port, 'SET k hello')).toBe('+OK\r\n');
    expect(await rawCommand(server.port, 'GET k')).toBe('$5\r\nhello\r\n');
    await server.stop();
    expect(alive(server.pid)).toBe(false);
    await expect(rawCommand(server.port, 'PING', 300)).rejects.toThrow();
  });

  it('keeps every acknowledged write of a durable server across a SIGKILL', async () => {
    const data = join(dir, 'durable');
    const first = await startRedisServer({ dir: data, durable: true });
    expect(await rawCommand(first.port, 'RPUSH list a b c')).toBe(':3\r\n');
    await first.stop('SIGKILL');
    const second = await startRedisServer({ dir: data, durable: true, port: first.port });
    try {
      expect(await rawCommand(second.port, 'LLEN list')).toBe(':3\r\n');
    } finally {
      await second.stop();
    }
  });

  it('a paused server keeps its connections and answers nothing until it is resumed, and stops while paused', async () => {
    const server = await startRedisServer({ dir: join(dir, 'paused') });
    server.pause();
    await expect(rawCommand(server.port, 'PING', 300)).rejects.toThrow(/no reply to PING/);
    server.resume();
    expect(await rawCommand(server.port, 'PING')).toBe('+PONG\r\n');
    server.pause();
    await server.stop();
    expect(alive(server.pid)).toBe(false);
  });

  it('fails with the exit reason when redis-server cannot start', async () => {
    await expect(startRedisServer({ dir: join(dir, 'bad'), port: await findFreePort(), args: ['--no-such-option', 'x'] })).rejects.toThrow(
      /redis-server on port \d+: redis-server on port \d+ exited/,
    );
  });
});

describe('startRedisCluster', () => {
  it('joins three nodes into a cluster that covers every slot', async () => {
    const cluster = await startRedisCluster({ dir: join(dir, 'cluster') });
    try {
      expect(cluster.nodes).toHaveLength(3);
      expect(cluster.startupNodes).toEqual(cluster.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })));
      const info = await rawCommand(cluster.nodes[0]!.port, 'CLUSTER INFO');
      expect(info).toContain('cluster_state:ok');
      expect(info).toContain('cluster_slots_assigned:16384');
    } finally {
      await cluster.stop();
    }
    for (const node of cluster.nodes) expect(alive(node.pid)).toBe(false);
  });

  it('with replicas: one replica per master, in sync, every slot served by a master', async () => {
    const cluster = await startRedisCluster({ dir: join(dir, 'replicated'), replicas: 1 });
    try {
      expect(cluster.nodes).toHaveLength(6);
      const nodes = await clusterNodes(cluster.nodes[0]!.port);
      const masters = nodes.filter((n) => n.role === 'master');
      expect(masters).toHaveLength(3);
      expect(masters.flatMap((m) => m.slots).reduce((sum, [from, to]) => sum + to - from + 1, 0)).toBe(16384);
      const replicas = nodes.filter((n) => n.role === 'replica');
      expect(new Set(replicas.map((r) => r.masterId))).toEqual(new Set(masters.map((m) => m.id)));
      for (const replica of replicas) expect(await rawCommand(replica.port, 'INFO replication')).toContain('master_link_status:up');
    } finally {
      await cluster.stop();
    }
  });
});
