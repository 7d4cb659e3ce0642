import { createHash } from 'node:crypto';
import { ConfigurationError } from '@ctx/core';
import { type PostgresClient, type SqlDatabase, type SqlQueryable, sqlDatabase } from './sql-client.js';

/** Options every @ctx/postgres provider and store takes. */
export interface PostgresOptions {
  /** A pg Pool or a PGlite database. Never closed by the package. */
  client: PostgresClient;
  /** PostgreSQL schema of the tables. Default 'public'. Created if missing. */
  schema?: string;
  /** First part of every table name. Default 'ctx_'. Letters, digits, underscore. */
  tablePrefix?: string;
  /** Upper bound of every call in ms, at most 2^31 - 1 (on a server the statement's own limit too). Default 5000. */
  timeoutMs?: number;
}

/** The validated names of one set of tables (a schema and a prefix), quoted for SQL. */
export interface TableNames {
  /** The schema as given (unquoted), e.g. `public`. */
  readonly schemaName: string;
  /** The table prefix as given, e.g. `ctx_`. */
  readonly prefix: string;
  /** The quoted schema, e.g. `"public"`. */
  readonly schema: string;
  /**
   * The quoted, schema-qualified name of one table: `table('messages')` -> `"public"."ctx_messages"`.
   * @throws ConfigurationError for a name that is not letters, digits and underscores, or too long.
   */
  table(name: string): string;
  /** The unquoted name of a table or index (prefix + name), for `CREATE INDEX "..."` and catalog lookups. */
  bare(name: string): string;
}

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const PREFIX = /^[A-Za-z0-9_]*$/;
const PART = /^[A-Za-z0-9_]+$/;
/** PostgreSQL truncates identifiers longer than 63 bytes; a truncated name would collide silently. */
const MAX_IDENTIFIER = 63;
/** Room left after the prefix for the longest table or index name a component uses. */
const MAX_PREFIX = 30;

const quote = (identifier: string) => `"${identifier}"`;

/**
 * Validated, quoted names: `names.table('messages')` -> `"public"."ctx_messages"`.
 * @throws ConfigurationError on a schema that is not a letter or underscore then letters, digits and
 *   underscores (at most 63), or a `tablePrefix` that is not letters, digits and underscores (at most 30).
 */
export function tableNames(options: Pick<PostgresOptions, 'schema' | 'tablePrefix'>): TableNames {
  const schemaName = options.schema ?? 'public';
  const prefix = options.tablePrefix ?? 'ctx_';
  if (typeof schemaName !== 'string' || !SCHEMA_NAME.test(schemaName) || schemaName.length > MAX_IDENTIFIER) {
    throw new ConfigurationError(
      `@ctx/postgres: schema ${JSON.stringify(schemaName)} is not a plain name; use a letter or underscore, then letters, digits and underscores (at most ${MAX_IDENTIFIER}).`,
    );
  }
  if (typeof prefix !== 'string' || !PREFIX.test(prefix) || prefix.length > MAX_PREFIX) {
    throw new ConfigurationError(
      `@ctx/postgres: tablePrefix ${JSON.stringify(prefix)} is not letters, digits and underscores (at most ${MAX_PREFIX}); pass e.g. 'ctx_'.`,
    );
  }
  const bare = (name: string) => {
    const full = `${prefix}${name}`;
    if (!PART.test(name) || full.length > MAX_IDENTIFIER) {
      throw new ConfigurationError(
        `@ctx/postgres: table name ${JSON.stringify(full)} is not letters, digits and underscores of at most ${MAX_IDENTIFIER}; use a shorter tablePrefix.`,
      );
    }
    return full;
  };
  return {
    schemaName,
    prefix,
    schema: quote(schemaName),
    bare,
    table: (name) => `${quote(schemaName)}.${quote(bare(name))}`,
  };
}

/**
 * The indexed form of an id: its sha256 digest (32 bytes, for a `bytea` column). Ids are kept whole
 * in their own text column and compared on read, so a 4 KB hostile id never exceeds the btree row
 * limit (~2.7 KB).
 */
export function idKey(id: string): Buffer {
  return createHash('sha256').update(id, 'utf8').digest();
}

const clients = new WeakMap<SqlDatabase, PostgresClient>();

/** The longest timer Node runs (2^31 - 1 ms); a longer one fires at once. Also PostgreSQL's largest `statement_timeout`. */
const MAX_TIMEOUT_MS = 2_147_483_647;

/**
 * The `SqlDatabase` of a provider's options (`timeoutMs` default 5000), remembered with its client
 * so that `ensureSchema` migrates once per client, whichever provider asks first.
 * @throws ConfigurationError when `client` is neither a pg Pool nor a PGlite database (a single pg Client included), or for a
 *   `timeoutMs` that is not a positive number of at most 2^31 - 1 ms.
 */
export function openDatabase(options: PostgresOptions): SqlDatabase {
  const timeoutMs = options.timeoutMs ?? 5000;
  if (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs <= 0 || timeoutMs > MAX_TIMEOUT_MS) {
    throw new ConfigurationError(
      `@ctx/postgres: timeoutMs must be a positive number of milliseconds of at most ${MAX_TIMEOUT_MS} (about 24.8 days), not ${String(timeoutMs)}.`,
    );
  }
  const db = sqlDatabase(options.client, timeoutMs);
  clients.set(db, options.client);
  return db;
}

/** Migrations done or under way in this process: per client (or database), per schema, prefix and component. */
const migrated = new WeakMap<object, Map<string, Promise<void>>>();

/** The name of the table that records each component's schema version, next to its tables. */
export const VERSIONS_TABLE = 'schema_versions';

/**
 * Creates or migrates one component's tables on first use, once per (database, names, component) in
 * this process; safe when two processes start together (pg_advisory_xact_lock + a versions table),
 * and when components of two prefixes create one extension together (a lock shared by every prefix).
 * `migrations[i]` is ONE SQL statement (no parameters) that takes the component from version `i` to
 * `i + 1`; append new ones, never edit released ones. A failed migration is rolled back whole and
 * tried again by the next call.
 * @throws ConfigurationError when the database was migrated by a newer package version (a higher
 *   version than `migrations.length`): never a silent downgrade.
 * @throws BackendUnavailableError when the database cannot be reached in time.
 */
export function ensureSchema(db: SqlDatabase, names: TableNames, component: string, migrations: readonly string[]): Promise<void> {
  if (!PART.test(component)) {
    throw new ConfigurationError(`@ctx/postgres: component ${JSON.stringify(component)} is not letters, digits and underscores.`);
  }
  const owner: object = clients.get(db) ?? db;
  let done = migrated.get(owner);
  if (!done) {
    done = new Map();
    migrated.set(owner, done);
  }
  const key = `${names.schemaName}\u0000${names.prefix}\u0000${component}`;
  const existing = done.get(key);
  if (existing) return existing;
  const running = migrate(db, names, component, migrations);
  done.set(key, running);
  running.catch(() => {
    if (done.get(key) === running) done.delete(key);
  });
  return running;
}

/** A 64-bit advisory lock key for one (schema, prefix): every component of those tables migrates under it. */
function lockKey(names: TableNames): string {
  return createHash('sha256').update(`ctx:${names.schemaName}.${names.prefix}`).digest().readBigInt64BE(0).toString();
}

/** A 64-bit advisory lock key for creating one schema, taken (after the prefix's) only when the schema is missing. */
function schemaLockKey(names: TableNames): string {
  return createHash('sha256').update(`ctx-schema:${names.schemaName}`).digest().readBigInt64BE(0).toString();
}

/**
 * The 64-bit advisory lock key every migration that creates an extension takes (after its prefix's):
 * extensions belong to the database, not to a schema or prefix, so two prefixes (or two schemas)
 * creating one at once would fail one of them on pg_extension's unique index (23505).
 */
const EXTENSION_LOCK_KEY = createHash('sha256').update('ctx-extensions').digest().readBigInt64BE(0).toString();

/** A migration that creates an extension (`CREATE EXTENSION [IF NOT EXISTS] ...`). */
const CREATES_EXTENSION = /^\s*CREATE\s+EXTENSION\b/i;

async function migrate(db: SqlDatabase, names: TableNames, component: string, migrations: readonly string[]): Promise<void> {
  const versions = names.table(VERSIONS_TABLE);
  await db.transaction(
    async (tx: SqlQueryable) => {
      await tx.query('SELECT pg_advisory_xact_lock($1::bigint)', [lockKey(names)]);
      // CREATE SCHEMA IF NOT EXISTS still needs CREATE on the database, which an app's role often lacks.
      const schema = await tx.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [names.schemaName]);
      // Other prefixes in the same schema migrate under other locks, and CREATE SCHEMA IF NOT EXISTS
      // run by two at once fails one of them (23505): creating the schema takes the schema's own lock.
      if (schema.rows.length === 0) {
        await tx.query('SELECT pg_advisory_xact_lock($1::bigint)', [schemaLockKey(names)]);
        await tx.query(`CREATE SCHEMA IF NOT EXISTS ${names.schema}`);
      }
      await tx.query(
        `CREATE TABLE IF NOT EXISTS ${versions} (component text PRIMARY KEY, version integer NOT NULL, updated_at timestamptz NOT NULL DEFAULT now())`,
      );
      const found = await tx.query<{ version: number }>(`SELECT version FROM ${versions} WHERE component = $1`, [component]);
      const current = found.rows.length > 0 ? Number(found.rows[0]?.version) : 0;
      if (!Number.isInteger(current) || current < 0) {
        throw new ConfigurationError(
          `@ctx/postgres: ${versions} holds version ${String(found.rows[0]?.version)} for "${component}", which is not a version; repair or drop that row.`,
        );
      }
      if (current > migrations.length) {
        throw new ConfigurationError(
          `@ctx/postgres: the "${component}" tables in schema "${names.schemaName}" (prefix "${names.prefix}") are at version ${current}, newer than this package knows (${migrations.length}); upgrade @ctx/postgres, or use another tablePrefix.`,
        );
      }
      if (current === migrations.length) return;
      if (migrations.slice(current).some((statement) => CREATES_EXTENSION.test(statement))) {
        await tx.query('SELECT pg_advisory_xact_lock($1::bigint)', [EXTENSION_LOCK_KEY]);
      }
      for (let version = current; version < migrations.length; version++) {
        await tx.query(migrations[version] as string);
      }
      await tx.query(
        `INSERT INTO ${versions} (component, version) VALUES ($1, $2) ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version, updated_at = now()`,
        [component, migrations.length],
      );
    },
    { operation: `migrate the "${component}" tables` },
  );
}
