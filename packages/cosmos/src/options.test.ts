import { CosmosClient, type Container } from '@azure/cosmos';
import { ConfigurationError, SessionStateError } from '@ctx/core';
import { HOSTILE_SESSION_IDS } from '@ctx/provider-tests';
import { afterAll, describe, expect, it } from 'vitest';
import { isTransient, statusOf } from './connection.js';
import { CosmosHistoryProvider } from './cosmos-history-provider.js';
import { CosmosSessionStore } from './cosmos-session-store.js';
import { encodeIdPart, MAX_ID_PART_LENGTH, sessionPartitionValue } from './ids.js';

// No backend: these clients are never used to send a request.
const client = new CosmosClient({ endpoint: 'http://127.0.0.1:9', key: 'a2V5', connectionPolicy: { enableEndpointDiscovery: false } });
afterAll(() => client.dispose());

describe('options', () => {
  it.each([
    ['no connection at all', {}],
    ['client and endpoint', { client, endpoint: 'https://a.documents.azure.com', key: 'k' }],
    ['container and client', { client, container: client.database('d').container('c') }],
    ['a client that is not a CosmosClient', { client: {} as CosmosClient }],
    ['a container that is not a Container', { container: { id: 'c' } as unknown as Container }],
    ['an endpoint that is not a URL', { endpoint: 'account.documents.azure.com', key: 'k' }],
    ['an endpoint without key or credential', { endpoint: 'https://a.documents.azure.com' }],
    ['an endpoint with both key and credential', { endpoint: 'https://a.documents.azure.com', key: 'k', credential: { getToken: async () => null } }],
    ['a container id with a slash', { client, containerId: 'a/b' }],
    ['an empty database id', { client, databaseId: '' }],
    ['ttlSeconds 1.5', { client, ttlSeconds: 1.5 }],
    ['timeoutMs 0', { client, timeoutMs: 0 }],
    ['retries -1', { client, retries: -1 }],
    ['a scope with an empty tenant', { client, scope: { tenantId: '', userId: 'u' } }],
    ['a scope with a 101-byte user', { client, scope: { tenantId: 't', userId: 'u'.repeat(101) } }],
  ])('rejects %s with ConfigurationError', (_, options) => {
    expect(() => new CosmosHistoryProvider(options)).toThrow(ConfigurationError);
  });

  it('the session store checks its options the same way', () => {
    expect(() => new CosmosSessionStore({})).toThrow(ConfigurationError);
    expect(() => new CosmosSessionStore({ client, ttlSeconds: 0 })).toThrow(ConfigurationError);
    expect(() => new CosmosSessionStore({ client, databaseId: 'a#b' })).toThrow(ConfigurationError);
  });

  it('passes the history options of @ctx/core on, with sourceId "cosmos", default containers and no TTL', async () => {
    const provider = new CosmosHistoryProvider({ client, maxMessages: 7, storeInputs: false, loadMessages: false });
    expect([provider.sourceId, provider.maxMessages, provider.storeInputs, provider.loadMessages, provider.ttlSeconds, provider.hierarchical]).toEqual(['cosmos', 7, false, false, undefined, false]);
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

  it('an empty session id is a SessionStateError before any request', async () => {
    const provider = new CosmosHistoryProvider({ client });
    await expect(provider.getMessages('', { state: {} })).rejects.toSatisfy(SessionStateError.isInstance);
    await expect(provider.saveMessages('', [], { state: {} })).rejects.toSatisfy(SessionStateError.isInstance);
    expect(() => new CosmosSessionStore({ client }).itemId('')).toThrow(SessionStateError);
  });
});

describe('encodeIdPart', () => {
  const ids = [...HOSTILE_SESSION_IDS, '_', '_5F', '~', 'a/b', 'a\\b', 'a?b', 'a#b', 'a%b', 'a:b', '\uD800', '\uDC00', '\uFFFD', '\uD83E\uDD9C', 'a\u0000b', '', 'x'.repeat(MAX_ID_PART_LENGTH), 'x'.repeat(MAX_ID_PART_LENGTH + 1)];

  it('maps distinct ids to distinct parts made only of [A-Za-z0-9._~-] and no separator', () => {
    const encoded = ids.map(encodeIdPart);
    expect(new Set(encoded).size).toBe(new Set(ids).size);
    for (const part of encoded) expect(part).toMatch(/^[A-Za-z0-9._~-]*$/);
  });

  it('keeps short ids readable and hashes long ones to a fixed size', () => {
    expect(encodeIdPart('user-42.chat')).toBe('user-42.chat');
    expect(encodeIdPart('a/b?c#d_e')).toBe('a_2Fb_3Fc_23d_5Fe');
    expect(encodeIdPart('é')).toBe('_C3_A9');
    expect(encodeIdPart('\uD800x')).toBe('_uD800x');
    expect(encodeIdPart('x'.repeat(MAX_ID_PART_LENGTH))).toHaveLength(MAX_ID_PART_LENGTH);
    for (const long of ['x'.repeat(4096), 'x'.repeat(4095), '🦜'.repeat(30)]) expect(encodeIdPart(long)).toMatch(/^~[A-Za-z0-9_-]{43}$/);
  });

  it('partition values are injective over the hostile ids and never longer than 100 bytes', () => {
    const values = HOSTILE_SESSION_IDS.map(sessionPartitionValue);
    expect(new Set(values).size).toBe(HOSTILE_SESSION_IDS.length);
    for (const v of values) expect(Buffer.byteLength(v)).toBeLessThanOrEqual(100);
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
