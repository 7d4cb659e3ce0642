import type { PGlite } from '@electric-sql/pglite';
import { describeHostedConcurrency } from '@ctx/provider-tests';
import type pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { openTestPGlite, openTestPool } from '../test/databases.js';
import { PostgresHistoryProvider } from './postgres-history-provider.js';
import { PostgresSessionStore } from './postgres-session-store.js';

// The hosted cycle under concurrency (provider-tests): several agents ("servers"), each with its
// own PostgresSessionStore, sharing one database with PostgresHistoryProvider, on a PostgreSQL
// server and on PGlite. Each engine's tables get their own prefix.

let pool: pg.Pool | undefined;
let lite: PGlite | undefined;
const need = <T>(value: T | undefined, what: string): T => {
  if (value === undefined) throw new Error(`${what} is not open yet`);
  return value;
};

beforeAll(async () => {
  pool = openTestPool({ max: 20 });
  lite = await openTestPGlite();
}, 60_000);
afterAll(async () => {
  await pool?.end();
  await lite?.close();
});

describeHostedConcurrency('PostgreSQL server, hosted', {
  createStore: () => new PostgresSessionStore({ client: need(pool, 'the pool'), tablePrefix: 'hosted_' }),
  createHistory: (options) => new PostgresHistoryProvider({ ...options, client: need(pool, 'the pool'), tablePrefix: 'hosted_' }),
  timeout: 60_000,
});

describeHostedConcurrency('PGlite, hosted', {
  createStore: () => new PostgresSessionStore({ client: need(lite, 'PGlite'), tablePrefix: 'hosted_' }),
  createHistory: (options) => new PostgresHistoryProvider({ ...options, client: need(lite, 'PGlite'), tablePrefix: 'hosted_' }),
  timeout: 60_000,
});
