import { ConfigurationError } from '@ctx/core';
import type { PGlite } from '@electric-sql/pglite';
import { describeWorkingMemoryStore } from '@ctx/provider-tests';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestPGlite, openTestPool } from '../test/databases.js';
import { PostgresWorkingMemoryStore } from './postgres-working-memory-store.js';

// The working-memory conformance suite on both engines: embedded PGlite (one for the file) and the
// shared PostgreSQL test server (a pg Pool).

let pglite: PGlite | undefined;
let pool: pg.Pool | undefined;
beforeAll(async () => {
  pglite = await openTestPGlite();
  pool = openTestPool({ max: 25 });
}, 60_000);
afterAll(async () => {
  await Promise.all([pglite?.close(), pool?.end()]);
});

describeWorkingMemoryStore('PostgresWorkingMemoryStore on PGlite', {
  create: () => new PostgresWorkingMemoryStore({ client: pglite as PGlite, tablePrefix: 'conf_' }),
});

describeWorkingMemoryStore('PostgresWorkingMemoryStore on a PostgreSQL server', {
  create: () => new PostgresWorkingMemoryStore({ client: pool as pg.Pool, tablePrefix: 'conf_' }),
});

describe('PostgresWorkingMemoryStore options', () => {
  it('refuses an unknown option, a bad tablePrefix and a client that is not one with ConfigurationError', () => {
    const client = pglite as PGlite;
    expect(() => new PostgresWorkingMemoryStore({ client, ttlSeconds: 5 } as never)).toThrow(/unknown option "ttlSeconds"/);
    expect(() => new PostgresWorkingMemoryStore({ client, schema: 'x y' })).toThrow(ConfigurationError);
    expect(() => new PostgresWorkingMemoryStore({ client: {} as PGlite })).toThrow(ConfigurationError);
    expect(new PostgresWorkingMemoryStore({ client, schema: 'mem' }).table).toBe('"mem"."ctx_working_memory"');
  });
});
