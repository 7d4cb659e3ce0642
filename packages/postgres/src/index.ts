export { isConnectionError, sqlDatabase, sqlState, toCtxError } from './sql-client.js';
export type {
  PGliteLike,
  PgPoolClientLike,
  PgPoolLike,
  PostgresClient,
  PostgresEngine,
  SqlCallOptions,
  SqlDatabase,
  SqlQueryable,
  SqlResult,
} from './sql-client.js';
export { ensureSchema, idKey, openDatabase, tableNames, VERSIONS_TABLE } from './schema.js';
export type { PostgresOptions, TableNames } from './schema.js';
export { PostgresHistoryProvider } from './postgres-history-provider.js';
export type {
  ExportMessagesOptions,
  HistoryTables,
  ListMessagesOptions,
  MessagePage,
  PostgresHistoryCallOptions,
  PostgresHistoryProviderOptions,
} from './postgres-history-provider.js';
export { PostgresSessionStore } from './postgres-session-store.js';
export type { PostgresSessionStoreOptions, SessionTables } from './postgres-session-store.js';
export { DEFAULT_EXACT_SEARCH_LIMIT, PgVectorIndex } from './pg-vector-index.js';
export type { PgVectorHnswOptions, PgVectorIndexOptions, PgVectorSearch } from './pg-vector-index.js';
export { PostgresWorkingMemoryStore } from './postgres-working-memory-store.js';
export type { PostgresWorkingMemoryStoreOptions } from './postgres-working-memory-store.js';
