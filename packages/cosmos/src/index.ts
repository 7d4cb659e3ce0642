export { DEFAULT_DATABASE_ID, DEFAULT_RETRIES, DEFAULT_TIMEOUT_MS } from './connection.js';
export type { CosmosConnectionOptions, CosmosTokenCredential } from './connection.js';
export { CosmosHistoryProvider } from './cosmos-history-provider.js';
export type {
  CosmosCallOptions,
  CosmosHistoryProviderOptions,
  CosmosSessionSummary,
  ExportMessagesOptions,
  ListMessagesOptions,
  ListSessionsOptions,
  MessagePage,
  SessionPage,
} from './cosmos-history-provider.js';
export { CosmosSessionStore } from './cosmos-session-store.js';
export type { CosmosSessionStoreOptions, SessionItem } from './cosmos-session-store.js';
export {
  HIERARCHICAL_PARTITION_KEY,
  HISTORY_INDEXING_POLICY,
  SESSION_PARTITION_KEY,
  SESSION_STORE_INDEXING_POLICY,
  SESSION_STORE_PARTITION_KEY,
} from './history-layout.js';
export type { CosmosScope, CosmosScopeResolver, HeadItem, MessageItem } from './history-layout.js';
export { encodeIdPart, encodeItemId, MAX_ID_PART_LENGTH, MAX_PARTITION_VALUE_BYTES, sessionPartitionValue } from './ids.js';
