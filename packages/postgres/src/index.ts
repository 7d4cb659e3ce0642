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
