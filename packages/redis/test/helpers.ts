import { Message } from '@ctx/core';
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

/** `levels` objects nested in one another, `{ a: { a: ... { a: 1 } } }` (levels 0: just 1). */
export function nested(levels: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < levels; i++) value = { a: value };
  return value;
}

/** `nested(levels)` as JSON text, built without recursion (JSON.stringify overflows the stack past a few thousand levels). */
export function nestedJson(levels: number): string {
  return `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
}

/**
 * Messages that `Message.parse` may let through but that are not plain JSON, so `JSON.stringify`
 * would store something else (NaN becomes null, a Map {}, undefined disappears): a name, the
 * message, and the path below the message where the refusal must point.
 */
export function nonJsonMessages(): [name: string, message: Message, path: string][] {
  const cycle: Record<string, unknown> = {};
  cycle.self = cycle;
  const base = (id: string) => Message.user('hi', { id });
  return [
    ['NaN in an extra field', { ...base('nan'), extra: Number.NaN } as Message, '.extra'],
    ['Infinity in metadata', { ...base('inf'), metadata: { score: Number.POSITIVE_INFINITY } }, '.metadata.score'],
    [
      'a Map in a content part',
      { ...base('map'), contents: [{ type: 'text', text: 'x', style: new Map() } as never] },
      '.contents[0].style',
    ],
    ['a Date in metadata', { ...base('date'), metadata: { at: new Date(0) } as never }, '.metadata.at'],
    ['undefined in an array', { ...base('undef'), metadata: { list: [1, undefined] } as never }, '.metadata.list[1]'],
    ['a bigint', { ...base('bigint'), metadata: { n: 1n } as never }, '.metadata.n'],
    ['a cycle', { ...base('cycle'), metadata: { c: cycle } as never }, '.metadata.c.self'],
    ['200 levels of nesting', { ...base('deep'), metadata: nested(200) as never }, '.metadata'],
  ];
}
