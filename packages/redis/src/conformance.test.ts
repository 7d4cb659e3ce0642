import { describeHistoryProvider, describeHostedConcurrency, describeSessionStore, describeWorkingMemoryStore } from '@ctx/provider-tests';
import { clusterClient, env, singleClient, uniquePrefix } from '../test/helpers.js';
import { RedisHistoryProvider } from './redis-history-provider.js';
import { RedisSessionStore } from './redis-session-store.js';
import { RedisWorkingMemoryStore } from './redis-working-memory-store.js';

// What the backends have, declared so that losing any of it fails the suites instead of skipping tests.
const historyCapabilities = { popMessages: true, clearMessages: true };

// One shared client per topology, injected into every provider and store the suites create.
const single = singleClient();
const cluster = clusterClient();
const prefix = uniquePrefix('conformance');

describeHistoryProvider('RedisHistoryProvider (single node)', {
  create: (options) => new RedisHistoryProvider({ ...options, client: single, prefix }),
  capabilities: historyCapabilities,
});

describeHistoryProvider('RedisHistoryProvider (cluster)', {
  create: (options) => new RedisHistoryProvider({ ...options, client: cluster, prefix }),
  capabilities: historyCapabilities,
});

describeHistoryProvider('RedisHistoryProvider (owned connection from url)', {
  create: (options) => new RedisHistoryProvider({ ...options, url: `redis://127.0.0.1:${env.port}`, prefix }),
  capabilities: historyCapabilities,
  cleanup: (provider) => provider.close(),
});

// Listing (with total) and turn leases; Redis keeps listed session ids as UTF-8 text, so a lone
// surrogate is refused rather than listed as U+FFFD.
const capabilities = { wellFormedIdsOnly: true, list: true, total: true, leases: true };

describeSessionStore('RedisSessionStore (single node)', {
  create: () => new RedisSessionStore({ client: single, prefix }),
  capabilities,
});

describeSessionStore('RedisSessionStore (cluster)', {
  create: () => new RedisSessionStore({ client: cluster, prefix }),
  capabilities,
});

describeSessionStore('RedisSessionStore (owned cluster connection from nodes)', {
  create: () => new RedisSessionStore({ nodes: env.clusterNodes, prefix }),
  cleanup: (store) => store.close(),
  capabilities,
});

describeHostedConcurrency('RedisSessionStore with RedisHistoryProvider (single node)', {
  createStore: () => new RedisSessionStore({ client: single, prefix }),
  createHistory: (options) => new RedisHistoryProvider({ ...options, client: single, prefix }),
  timeout: 60_000,
  capabilities: { leases: true },
});

describeHostedConcurrency('RedisSessionStore with RedisHistoryProvider (cluster)', {
  createStore: () => new RedisSessionStore({ client: cluster, prefix }),
  createHistory: (options) => new RedisHistoryProvider({ ...options, client: cluster, prefix }),
  timeout: 60_000,
  capabilities: { leases: true },
});

describeWorkingMemoryStore('RedisWorkingMemoryStore (single node)', {
  create: () => new RedisWorkingMemoryStore({ client: single, prefix }),
});

describeWorkingMemoryStore('RedisWorkingMemoryStore (cluster)', {
  create: () => new RedisWorkingMemoryStore({ client: cluster, prefix }),
});
