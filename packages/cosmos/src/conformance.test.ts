import { describeHistoryProvider, describeHostedConcurrency, describeSessionStore } from '@ctx/provider-tests';
import { cosmosClient, env, standInClientOptions, uniqueId } from '../test/helpers.js';
import { CosmosHistoryProvider } from './cosmos-history-provider.js';
import { CosmosSessionStore } from './cosmos-session-store.js';

// What the backends have, declared so that losing any of it fails the suites instead of skipping
// tests. The store's listing gives no total (counting is another query per page).
const historyCapabilities = { popMessages: true, clearMessages: true };
const storeCapabilities = { list: true, total: false, leases: true };

// One shared client, injected into every provider and store the suites create; each suite gets
// its own containers (created on first use), so suites never see each other's items.
const client = cosmosClient();
const databaseId = uniqueId('conformance');

describeHistoryProvider('CosmosHistoryProvider (injected client, session partition key)', {
  create: (options) => new CosmosHistoryProvider({ ...options, client, databaseId, containerId: 'history', createIfNotExists: true }),
  capabilities: historyCapabilities,
});

describeHistoryProvider('CosmosHistoryProvider (hierarchical tenant/user/session key, scope from state)', {
  create: (options) =>
    new CosmosHistoryProvider({
      ...options,
      client,
      databaseId,
      containerId: 'history-hierarchical',
      createIfNotExists: true,
      scope: ({ sessionId }) => ({ tenantId: 'tenant-a', userId: `user-${sessionId.length % 3}` }),
    }),
  capabilities: historyCapabilities,
});

describeHistoryProvider('CosmosHistoryProvider (owned client from endpoint + key)', {
  create: (options) =>
    new CosmosHistoryProvider({
      ...options,
      endpoint: env.endpoint,
      key: env.key,
      clientOptions: standInClientOptions,
      databaseId,
      containerId: 'history-owned',
      createIfNotExists: true,
    }),
  cleanup: (provider) => provider.close(),
  capabilities: historyCapabilities,
});

describeSessionStore('CosmosSessionStore (injected client)', {
  create: () => new CosmosSessionStore({ client, databaseId, containerId: 'sessions', createIfNotExists: true }),
  capabilities: storeCapabilities,
});

describeSessionStore('CosmosSessionStore (injected container)', {
  create: () => new CosmosSessionStore({ container: client.database(databaseId).container('sessions-container'), createIfNotExists: true }),
  capabilities: storeCapabilities,
});

describeSessionStore('CosmosSessionStore (owned client from endpoint + key)', {
  create: () =>
    new CosmosSessionStore({
      endpoint: env.endpoint,
      key: env.key,
      clientOptions: standInClientOptions,
      databaseId,
      containerId: 'sessions-owned',
      createIfNotExists: true,
    }),
  cleanup: (store) => store.close(),
  capabilities: storeCapabilities,
});

describeHostedConcurrency('CosmosSessionStore with CosmosHistoryProvider', {
  createStore: () => new CosmosSessionStore({ client, databaseId, containerId: 'hosted-sessions', createIfNotExists: true }),
  createHistory: (options) =>
    new CosmosHistoryProvider({ ...options, client, databaseId, containerId: 'hosted-history', createIfNotExists: true }),
  timeout: 120_000,
  capabilities: { leases: true },
});
