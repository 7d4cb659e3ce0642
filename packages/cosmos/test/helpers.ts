import { CosmosClient, type Container, type CosmosClientOptions } from '@azure/cosmos';
import { Message } from '@ctx/core';
import { afterAll, inject } from 'vitest';

/** The stand-in the global setup started. */
export const env = inject('cosmos');

const clients: CosmosClient[] = [];
afterAll(() => {
  for (const client of clients.splice(0)) client.dispose();
});

/**
 * A `CosmosClient` for the shared stand-in (or `endpoint`, e.g. a fault proxy), disposed after the
 * file. Plain http needs `enableEndpointDiscovery: false`, or the SDK switches to https.
 */
export function cosmosClient(endpoint = env.endpoint, options: Partial<CosmosClientOptions> = {}): CosmosClient {
  const client = new CosmosClient({
    endpoint,
    key: env.key,
    ...options,
    connectionPolicy: { enableEndpointDiscovery: false, ...options.connectionPolicy },
  });
  clients.push(client);
  return client;
}

/** The connection policy a provider needs to own its client against the stand-in. */
export const standInClientOptions = { connectionPolicy: { enableEndpointDiscovery: false } } as const;

/** A unique id per call, so test files and suites sharing the stand-in never meet. */
export function uniqueId(name: string): string {
  return `t-${name}-${Math.random().toString(36).slice(2, 8)}`;
}

/** Every item of a container (a cross-partition read of the raw items, system properties included). */
export async function allItems(container: Container): Promise<Record<string, unknown>[]> {
  const { resources } = await container.items.query<Record<string, unknown>>('SELECT * FROM c').fetchAll();
  return resources;
}

/** `levels` objects nested in one another, `{ a: { a: ... { a: 1 } } }` (levels 0: just 1). */
export function nested(levels: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < levels; i++) value = { a: value };
  return value;
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
