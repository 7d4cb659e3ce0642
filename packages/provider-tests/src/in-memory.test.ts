import { InMemoryHistoryProvider, InMemorySessionStore } from '@ctx/core';
import { describeHistoryProvider, describeSessionStore } from './index.js';

describeHistoryProvider('InMemoryHistoryProvider', {
  create: (options) => new InMemoryHistoryProvider(options),
  // History lives in session.state[sourceId].messages, not in a backend keyed by session id.
  capabilities: { keepsHistoryInSession: true },
});

describeSessionStore('InMemorySessionStore', {
  create: () => new InMemorySessionStore(),
});
