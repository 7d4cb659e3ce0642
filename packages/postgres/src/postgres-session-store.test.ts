import type { PGlite } from '@electric-sql/pglite';
import { describeSessionStore } from '@ctx/provider-tests';
import type pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { openTestPGlite, openTestPool } from '../test/databases.js';
import { PostgresSessionStore } from './postgres-session-store.js';

// The session store conformance suite on both engines: embedded PGlite (one for the file) and the
// shared PostgreSQL test server (a pg Pool), each under its own table prefix.

let pglite: PGlite | undefined;
let pool: pg.Pool | undefined;
beforeAll(async () => {
  pglite = await openTestPGlite();
  pool = openTestPool({ max: 25 });
}, 60_000);
afterAll(async () => {
  await Promise.all([pglite?.close(), pool?.end()]);
});

describeSessionStore('PostgresSessionStore on PGlite', {
  create: () => new PostgresSessionStore({ client: pglite as PGlite, tablePrefix: 'conf_' }),
  capabilities: { list: true, leases: true },
});

describeSessionStore('PostgresSessionStore on a PostgreSQL server', {
  create: () => new PostgresSessionStore({ client: pool as pg.Pool, tablePrefix: 'conf_' }),
  capabilities: { list: true, leases: true },
});
