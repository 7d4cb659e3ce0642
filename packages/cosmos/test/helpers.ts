import { CosmosClient, type Container, type CosmosClientOptions } from '@azure/cosmos';
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
