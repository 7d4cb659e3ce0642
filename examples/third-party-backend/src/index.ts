export { idKey, type SqliteBackendOptions, type SqliteDatabase, SqliteHistoryProvider, SqliteSessionStore } from './sqlite-backend.js';
