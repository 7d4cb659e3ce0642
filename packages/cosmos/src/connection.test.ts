import { createServer, type Server, type Socket } from 'node:net';
import { CosmosClient, type Container } from '@azure/cosmos';
import { BackendUnavailableError, ConfigurationError } from '@ctx/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isTransient, statusOf } from './connection.js';
import { CosmosHistoryProvider } from './cosmos-history-provider.js';
import { CosmosSessionStore } from './cosmos-session-store.js';

// No backend: these clients are never used to send a request.
const client = new CosmosClient({ endpoint: 'http://127.0.0.1:9', key: 'a2V5', connectionPolicy: { enableEndpointDiscovery: false } });
afterAll(() => client.dispose());

describe('connection options', () => {
  it.each([
    ['no connection at all', {}],
    ['client and endpoint', { client, endpoint: 'https://a.documents.azure.com', key: 'k' }],
    ['container and client', { client, container: client.database('d').container('c') }],
    ['a client that is not a CosmosClient', { client: {} as CosmosClient }],
    ['a container that is not a Container', { container: { id: 'c' } as unknown as Container }],
    ['an endpoint that is not a URL', { endpoint: 'account.documents.azure.com', key: 'k' }],
    ['an endpoint without key or credential', { endpoint: 'https://a.documents.azure.com' }],
    [
      'an endpoint with both key and credential',
      { endpoint: 'https://a.documents.azure.com', key: 'k', credential: { getToken: async () => null } },
    ],
    ['a container id with a slash', { client, containerId: 'a/b' }],
    ['an empty database id', { client, databaseId: '' }],
    ['timeoutMs 0', { client, timeoutMs: 0 }],
    ['retries -1', { client, retries: -1 }],
  ])('rejects %s with ConfigurationError', (_, options) => {
    expect(() => new CosmosHistoryProvider(options)).toThrow(ConfigurationError);
  });

  it('the session store checks its connection options the same way', () => {
    expect(() => new CosmosSessionStore({})).toThrow(ConfigurationError);
    expect(() => new CosmosSessionStore({ client, databaseId: 'a#b' })).toThrow(ConfigurationError);
  });

  it('a bad timeoutMs or retries names the owner, the option and the value', () => {
    expect(() => new CosmosSessionStore({ client, timeoutMs: -5 })).toThrow(
      'CosmosSessionStore: timeoutMs must be a positive number, got -5.',
    );
    expect(() => new CosmosHistoryProvider({ client, retries: 1.5 })).toThrow(
      'CosmosHistoryProvider: retries must be a non-negative integer, got 1.5.',
    );
  });

  it('takes the database and container from an injected container or a client; an owned client is disposed by close(), and later calls say so', async () => {
    const provider = new CosmosHistoryProvider({ client });
    expect([provider.container.database.id, provider.container.id]).toEqual(['ctx', 'history']);
    const store = new CosmosSessionStore({ client });
    expect([store.container.database.id, store.container.id]).toEqual(['ctx', 'sessions']);
    const injected = client.database('app').container('chat');
    expect(new CosmosHistoryProvider({ container: injected, scope: { tenantId: 't', userId: 'u' } }).container).toBe(injected);
    const owned = new CosmosHistoryProvider({ endpoint: 'https://a.documents.azure.com:443/', key: 'a2V5' });
    expect(owned.container.id).toBe('history');
    await owned.close();
    await expect(owned.getMessages('s', { state: {} })).rejects.toThrow(/after close\(\)/);
  });
});

describe('the deadline and abort of every call', () => {
  // A server that accepts connections and never answers: only the package's deadline ends a call.
  let server: Server;
  let silent: CosmosClient;
  const sockets = new Set<Socket>();
  /** Called with each chunk of a request the server receives (and never answers). */
  let onRequest: (() => void) | undefined;
  beforeAll(async () => {
    server = createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('data', () => onRequest?.());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    silent = new CosmosClient({ endpoint: `http://127.0.0.1:${port}`, key: 'a2V5', connectionPolicy: { enableEndpointDiscovery: false } });
  });
  afterAll(async () => {
    silent.dispose();
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  it('a call the service never answers fails with BackendUnavailableError at timeoutMs, naming the call, the session and the container', async () => {
    const provider = new CosmosHistoryProvider({ client: silent, timeoutMs: 300 });
    const error = await provider.getMessages('s-1', { state: {} }).catch((e: unknown) => e);
    expect(BackendUnavailableError.isInstance(error)).toBe(true);
    expect((error as BackendUnavailableError).backend).toBe('cosmos');
    expect((error as Error).message).toMatch(
      /^Cosmos DB CosmosHistoryProvider\.getMessages for session "s-1" on ctx\/history \(127\.0\.0\.1:\d+\) did not answer within 300 ms\. /,
    );
  });

  it('an abort while a call waits rejects at once with the abort reason', async () => {
    const store = new CosmosSessionStore({ client: silent, timeoutMs: 10_000 });
    const controller = new AbortController();
    // The abort comes once the request reached the server (which never answers), long before timeoutMs.
    onRequest = () => controller.abort(new Error('user left'));
    try {
      await expect(store.get('s-2', { signal: controller.signal })).rejects.toThrow('user left');
    } finally {
      onRequest = undefined;
    }
  });
});

describe('error classification', () => {
  it('reads the status of a failed batch from its diagnostics, and treats transient statuses and cut connections as retryable', () => {
    const batchError = Object.assign(new Error('Batch request error: Request rate is large'), {
      diagnostics: { clientSideRequestStatistics: { gatewayStatistics: [{ statusCode: 429 }, { statusCode: 429 }] } },
    });
    expect(statusOf(batchError)).toBe(429);
    expect(isTransient(batchError)).toBe(false);
    expect(isTransient(Object.assign(new Error('x'), { code: 503 }))).toBe(true);
    expect(isTransient(Object.assign(new Error('x'), { code: 409 }))).toBe(false);
    expect(isTransient(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }))).toBe(true);
    expect(isTransient(new Error('Batch request error: socket hang up'))).toBe(true);
    expect(isTransient(new Error('something else'))).toBe(false);
  });
});
