import {
  InMemoryHistoryProvider,
  InMemorySessionStore,
  InMemoryStreamStore,
  InMemoryVectorIndex,
  InMemoryWorkingMemoryStore,
} from '@ctx/core';
import {
  describeHistoryProvider,
  describeHostedConcurrency,
  describeSessionStore,
  describeStreamStore,
  describeVectorIndex,
  describeWorkingMemoryStore,
} from './index.js';

describeHistoryProvider('InMemoryHistoryProvider', {
  create: (options) => new InMemoryHistoryProvider(options),
  // History lives in session.state[sourceId].messages, not in a backend keyed by session id.
  capabilities: { keepsHistoryInSession: true, popMessages: true, clearMessages: true },
});

describeSessionStore('InMemorySessionStore', {
  create: () => new InMemorySessionStore(),
  capabilities: { list: true, total: true, leases: true },
});

// One store shared by every agent of a test, as one process's store would be.
const sharedStore = new InMemorySessionStore();
describeHostedConcurrency('InMemorySessionStore with the default in-memory history', {
  createStore: () => sharedStore,
  capabilities: { leases: true },
});

describeWorkingMemoryStore('InMemoryWorkingMemoryStore', {
  create: () => new InMemoryWorkingMemoryStore(),
});

describeVectorIndex('InMemoryVectorIndex', {
  create: ({ dimensions }) => new InMemoryVectorIndex({ dimensions }),
  capabilities: { list: true },
});

// One store per set of options, shared by every call, as the processes of one backend share its data.
const streamStores = new Map<string, InMemoryStreamStore>();
describeStreamStore('InMemoryStreamStore', {
  create: (options) => {
    const key = JSON.stringify(options);
    let store = streamStores.get(key);
    if (!store) streamStores.set(key, (store = new InMemoryStreamStore(options)));
    return store;
  },
});
