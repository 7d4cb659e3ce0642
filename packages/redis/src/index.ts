export { CLUSTER_DEFAULTS, DEFAULT_MAX_VALUE_BYTES, DEFAULT_PREFIX, DEFAULT_TIMEOUT_MS } from './connection.js';
export type { RedisClient, RedisConnectionOptions } from './connection.js';
export { encodeKeyPart, MAX_ENCODED_ID_LENGTH } from './keys.js';
export type { HistoryKeys, IndexKeys, StreamKeys } from './keys.js';
export { RedisHistoryProvider } from './redis-history-provider.js';
export type {
  ExportMessagesOptions,
  ListMessagesOptions,
  MessagePage,
  RedisCallOptions,
  RedisHistoryProviderOptions,
} from './redis-history-provider.js';
export { RedisSessionStore } from './redis-session-store.js';
export type { RedisSessionStoreOptions, ReindexResult } from './redis-session-store.js';
export { RedisStreamStore } from './redis-stream-store.js';
export type { RedisStreamStoreOptions } from './redis-stream-store.js';
export { RedisWorkingMemoryStore } from './redis-working-memory-store.js';
export type { RedisWorkingMemoryStoreOptions, WorkingMemoryKeys } from './redis-working-memory-store.js';
