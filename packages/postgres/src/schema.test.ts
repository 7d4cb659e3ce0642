import { ConfigurationError } from '@ctx/core';
import type { PGlite } from '@electric-sql/pglite';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestPGlite, openTestPool } from '../test/databases.js';
import { ensureSchema, idKey, openDatabase, tableNames } from './schema.js';
import { sqlDatabase } from './sql-client.js';

let pglite: PGlite;
beforeAll(async () => {
  pglite = await openTestPGlite();
});
afterAll(async () => {
  await pglite?.close();
});

const counting = (names: ReturnType<typeof tableNames>) => [
  `CREATE TABLE ${names.table('runs')} (n integer NOT NULL)`,
  `INSERT INTO ${names.table('runs')} (n) VALUES (1)`,
];

describe('tableNames', () => {
  it('quotes the schema and prefixes every table', () => {
    const names = tableNames({});
    expect(names.table('messages')).toBe('"public"."ctx_messages"');
    expect(tableNames({ schema: 'App_1', tablePrefix: '' }).table('sessions')).toBe('"App_1"."sessions"');
  });

  it.each([
    ['schema', { schema: 'a"; DROP TABLE x; --' }],
    ['schema', { schema: '' }],
    ['schema', { schema: '1abc' }],
    ['schema', { schema: 'a'.repeat(64) }],
    ['tablePrefix', { tablePrefix: 'ctx-' }],
    ['tablePrefix', { tablePrefix: 'é_' }],
    ['tablePrefix', { tablePrefix: 'p'.repeat(31) }],
  ])('refuses a bad %s as ConfigurationError', (_field, options) => {
    expect(() => tableNames(options)).toThrow(ConfigurationError);
  });

  it('refuses a table name that PostgreSQL would truncate', () => {
    const names = tableNames({ tablePrefix: 'p'.repeat(30) });
    expect(() => names.table('x'.repeat(34))).toThrow(ConfigurationError);
    expect(() => names.table('bad name')).toThrow(ConfigurationError);
  });
});

describe('openDatabase', () => {
  it.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY, 2_147_483_648, 3e9])('refuses timeoutMs %s as ConfigurationError', (timeoutMs) => {
    // Above 2^31 - 1 ms a Node timer fires at once: every call would time out immediately.
    expect(() => openDatabase({ client: pglite, timeoutMs })).toThrow(ConfigurationError);
  });

  it('takes the longest timeoutMs a timer allows', () => {
    expect(openDatabase({ client: pglite, timeoutMs: 2_147_483_647 }).engine).toBe('embedded');
  });
});

describe('idKey', () => {
  it('is 32 bytes for any id and differs between ids', () => {
    expect(idKey('a'.repeat(4096))).toHaveLength(32);
    expect(idKey('s1').equals(idKey('s1'))).toBe(true);
    expect(idKey('s1').equals(idKey('s2'))).toBe(false);
  });
});

describe('ensureSchema on PGlite', () => {
  it('migrates once when two first uses start together, then again only for new migrations', async () => {
    const names = tableNames({ tablePrefix: 'twice_' });
    // Two databases over the same client, as two processes would be: neither knows of the other's migration.
    const a = sqlDatabase(pglite);
    const b = sqlDatabase(pglite);
    await Promise.all([ensureSchema(a, names, 'counter', counting(names)), ensureSchema(b, names, 'counter', counting(names))]);
    const runs = await pglite.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${names.table('runs')}`);
    expect(runs.rows[0]?.n).toBe(1);

    const more = [...counting(names), `INSERT INTO ${names.table('runs')} (n) VALUES (2)`];
    await ensureSchema(sqlDatabase(pglite), names, 'counter', more);
    const after = await pglite.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${names.table('runs')}`);
    expect(after.rows[0]?.n).toBe(2);
    const version = await pglite.query<{ version: number }>(
      `SELECT version FROM ${names.table('schema_versions')} WHERE component = 'counter'`,
    );
    expect(version.rows[0]?.version).toBe(3);
  });

  it('asks the database once per client in this process', async () => {
    const names = tableNames({ tablePrefix: 'once_' });
    const a = openDatabase({ client: pglite });
    const b = openDatabase({ client: pglite });
    const first = ensureSchema(a, names, 'counter', counting(names));
    expect(ensureSchema(b, names, 'counter', counting(names))).toBe(first);
    await first;
  });

  it('refuses tables a newer package version migrated, and changes nothing', async () => {
    const names = tableNames({ tablePrefix: 'newer_' });
    await ensureSchema(sqlDatabase(pglite), names, 'counter', counting(names));
    await pglite.query(`UPDATE ${names.table('schema_versions')} SET version = 7 WHERE component = 'counter'`);
    const error = await ensureSchema(sqlDatabase(pglite), names, 'counter', counting(names)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as Error).message).toMatch(/version 7, newer than this package knows \(2\)/);
    const runs = await pglite.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${names.table('runs')}`);
    expect(runs.rows[0]?.n).toBe(1);
  });

  it('creates a missing schema, and tries a failed migration again on the next call', async () => {
    const names = tableNames({ schema: 'ctx_app', tablePrefix: 'retry_' });
    const db = openDatabase({ client: pglite });
    const broken = [`CREATE TABLE ${names.table('runs')} (n integer NOT NULL)`, 'SELECT no_such_function()'];
    await expect(ensureSchema(db, names, 'counter', broken)).rejects.toThrow();
    // Rolled back whole: the table of the first statement is not there.
    const table = await pglite.query(`SELECT 1 FROM pg_tables WHERE schemaname = 'ctx_app' AND tablename = 'retry_runs'`);
    expect(table.rows).toHaveLength(0);
    await ensureSchema(db, names, 'counter', counting(names));
    const runs = await pglite.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${names.table('runs')}`);
    expect(runs.rows[0]?.n).toBe(1);
  });

  it('refuses a component name that is not plain', () => {
    expect(() => ensureSchema(sqlDatabase(pglite), tableNames({}), 'a b', [])).toThrow(ConfigurationError);
  });
});

describe('ensureSchema on a PostgreSQL server', () => {
  const pools: pg.Pool[] = [];
  afterAll(async () => {
    await Promise.all(pools.map((pool) => pool.end()));
  });

  it('migrates once when four processes start together', async () => {
    const names = tableNames({ schema: `s_${Date.now().toString(36)}`, tablePrefix: 'race_' });
    // Four pools are four processes: each migrates on its own connection, at the same time.
    for (let i = 0; i < 4; i++) pools.push(openTestPool({ max: 2 }));
    await Promise.all(pools.map((pool) => ensureSchema(openDatabase({ client: pool }), names, 'counter', counting(names))));
    const runs = await pools[0]?.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${names.table('runs')}`);
    expect(runs?.rows[0]?.n).toBe(1);
  });

  it('creates an extension once when components of two table prefixes that need it start together', async () => {
    // An extension belongs to the database: without a lock shared by every prefix, the later CREATE
    // EXTENSION IF NOT EXISTS fails on pg_extension's unique index (23505) instead of finding it.
    // Both migrations first wait at a gate this test holds, so both reach CREATE EXTENSION together.
    const pool = openTestPool({ max: 4 });
    pools.push(pool);
    const gate = `"public"."ctx_extension_gate_${Date.now().toString(36)}"`;
    await pool.query(`CREATE TABLE ${gate} (n integer)`);
    try {
      for (let attempt = 0; attempt < 3; attempt++) {
        await pool.query('DROP EXTENSION IF EXISTS isn');
        const holder = await pool.connect();
        try {
          await holder.query('BEGIN');
          await holder.query(`LOCK TABLE ${gate} IN ACCESS EXCLUSIVE MODE`);
          const stamp = `${Date.now().toString(36)}_${attempt}`;
          const setups = ['x_', 'y_'].map((tablePrefix) => {
            const names = tableNames({ tablePrefix: `ext${stamp}_${tablePrefix}` });
            return ensureSchema(openDatabase({ client: pool, timeoutMs: 20_000 }), names, 'isn', [
              `LOCK TABLE ${gate} IN SHARE MODE`,
              'CREATE EXTENSION IF NOT EXISTS isn',
            ]).then(
              () => 'ok',
              (error: unknown) => String((error as Error).message),
            );
          });
          // Both setups wait at the gate (or one at the extension lock) before it opens.
          for (let i = 0; i < 400; i++) {
            const { rows } = await pool.query<{ n: number }>(
              `SELECT count(*)::int AS n FROM pg_stat_activity
                WHERE wait_event_type = 'Lock' AND (query LIKE '%ctx_extension_gate%' OR query LIKE 'SELECT pg_advisory_xact_lock%')`,
            );
            if (rows[0]!.n >= 2) break;
            await new Promise((resolve) => setTimeout(resolve, 25));
          }
          await holder.query('COMMIT');
          expect(await Promise.all(setups)).toEqual(['ok', 'ok']);
        } finally {
          holder.release();
        }
      }
    } finally {
      await pool.query(`DROP TABLE IF EXISTS ${gate}`);
    }
  }, 60_000);

  it('creates a new schema once when stores of two table prefixes in it start together', async () => {
    const schema = `s2_${Date.now().toString(36)}`;
    const pool = openTestPool({ max: 4 });
    pools.push(pool);
    const prefixes = ['a_', 'b_', 'c_', 'd_'];
    // Separate lock keys per prefix: without a lock on the schema, the later CREATE SCHEMA IF NOT
    // EXISTS fails on pg_namespace's unique index (23505) instead of finding the schema.
    await Promise.all(
      prefixes.map((tablePrefix) => {
        const names = tableNames({ schema, tablePrefix });
        return ensureSchema(openDatabase({ client: pool }), names, 'counter', counting(names));
      }),
    );
    for (const tablePrefix of prefixes) {
      const runs = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${tableNames({ schema, tablePrefix }).table('runs')}`);
      expect(runs.rows[0]?.n).toBe(1);
    }
  });
});
