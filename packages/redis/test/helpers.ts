import { Cluster, Redis } from 'ioredis';
import { afterAll, inject } from 'vitest';

/** The servers the global setup started. */
export const env = inject('redis');

const clients: (Redis | Cluster)[] = [];
afterAll(async () => {
  await Promise.all(clients.splice(0).map((c) => c.quit().catch(() => c.disconnect())));
});

/** A fresh ioredis client to the shared single node (db 0 unless given), closed after the file. */
export function singleClient(db = 0): Redis {
  const client = new Redis({ host: '127.0.0.1', port: env.port, db, maxRetriesPerRequest: 1, commandTimeout: 5000 });
  clients.push(client);
  return client;
}

/** A fresh ioredis client to the shared cluster, closed after the file. */
export function clusterClient(): Cluster {
  const client = new Cluster(env.clusterNodes, { redisOptions: { maxRetriesPerRequest: 1, commandTimeout: 5000 } });
  clients.push(client);
  return client;
}

/** A unique key prefix per call, so test files sharing a server never meet. */
export function uniquePrefix(name: string): string {
  return `t-${name}-${Math.random().toString(36).slice(2, 8)}`;
}

/** Counts the commands a client sends (each one is a round trip: the package never pipelines). */
export function countCommands(client: Redis | Cluster): { names: string[]; reset(): void } {
  const names: string[] = [];
  const original = client.sendCommand.bind(client) as (...args: unknown[]) => unknown;
  (client as unknown as { sendCommand: (...args: unknown[]) => unknown }).sendCommand = (...args: unknown[]) => {
    names.push(String((args[0] as { name: string }).name).toLowerCase());
    return original(...args);
  };
  return { names, reset: () => void names.splice(0) };
}

/** Every key on the server(s) the client reaches (SCAN; on a cluster, every master). */
export async function allKeys(client: Redis | Cluster): Promise<string[]> {
  const nodes = client instanceof Cluster ? client.nodes('master') : [client];
  const keys: string[] = [];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(cursor, 'COUNT', 1000);
      keys.push(...batch);
      cursor = next;
    } while (cursor !== '0');
  }
  return keys;
}

/**
 * Lets the expiry of `keys` pass without waiting for it: each key must exist with a TTL of at most
 * `seconds` (what the code under test set; a key it left without one fails here), and is then
 * given an expiry in the past (PEXPIREAT 1), which Redis applies at once: the key is gone, as when
 * its TTL runs out.
 */
export async function expireNow(client: Redis | Cluster, keys: readonly string[], seconds: number): Promise<void> {
  if (keys.length === 0) throw new Error('expireNow: no keys to expire');
  for (const key of keys) {
    const ttl = await client.pttl(key);
    if (ttl <= 0 || ttl > seconds * 1000) throw new Error(`expireNow: ${key} has PTTL ${ttl}, not an expiry within ${seconds} s`);
    if ((await client.pexpireat(key, 1)) !== 1) throw new Error(`expireNow: ${key} was gone before its expiry was moved`);
  }
}

/** `nested(levels)` (from `@ctx/fuzz-kit`) as JSON text, built without recursion (JSON.stringify overflows the stack past a few thousand levels). */
export function nestedJson(levels: number): string {
  return `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
}
