import { randomUUID } from 'node:crypto';
import {
  ConcurrencyError,
  InvalidInputError,
  type JsonValue,
  type PutWorkingMemoryOptions,
  SessionStateError,
  type StoredWorkingMemory,
  type WorkingMemoryCallOptions,
  type WorkingMemoryEntry,
  type WorkingMemoryKey,
  type WorkingMemoryStore,
} from '@ctx/core';
import {
  checkId,
  checkOptionNames,
  checkWorkingMemoryEtag,
  checkWorkingMemoryKey,
  describeWorkingMemoryKey,
  findNonJson,
  optionNames,
  shortId,
} from '@ctx/core/backend';
import { keyOf, parseJsonString } from './postgres-session-store.js';
import { ensureSchema, idKey, openDatabase, type PostgresOptions, type TableNames, tableNames } from './schema.js';
import type { SqlCallOptions, SqlDatabase } from './sql-client.js';

/** Options of `PostgresWorkingMemoryStore`: the shared `PostgresOptions`. */
export type PostgresWorkingMemoryStoreOptions = PostgresOptions;

const OPTION_NAMES = optionNames<PostgresWorkingMemoryStoreOptions>()({ client: true, schema: true, tablePrefix: true, timeoutMs: true });

/** The component name of the working-memory table in the versions table. */
const COMPONENT = 'working_memory';

/**
 * The migrations of the working-memory table (one statement each, appended, never edited). Ids are
 * kept as JSON text (NUL and lone surrogates included); a record is found by the sha256 of its key,
 * a user's records by the sha256 of the user id.
 */
export function workingMemoryMigrations(names: TableNames): string[] {
  const table = names.table('working_memory');
  return [
    `CREATE TABLE ${table} (
      record_key bytea PRIMARY KEY,
      user_id text,
      session_id text,
      user_key bytea,
      record text NOT NULL,
      etag text NOT NULL,
      updated_at text NOT NULL
    )`,
    `CREATE INDEX "${names.bare('working_memory_by_user')}" ON ${table} (user_key) WHERE user_key IS NOT NULL`,
  ];
}

/** The primary key of a record: both ids together, so `{ userId, sessionId }` and `{ sessionId }` are two records. */
const recordKey = (key: WorkingMemoryKey): Buffer => idKey(JSON.stringify([key.userId ?? null, key.sessionId ?? null]));

interface RecordRow {
  user_id: unknown;
  session_id: unknown;
  record: unknown;
  etag: unknown;
  updated_at: unknown;
}

/**
 * A `WorkingMemoryStore` on PostgreSQL (a `pg` Pool) or PGlite: one row per record (its JSON text,
 * etag and time), written by single conditional statements (`INSERT ... ON CONFLICT`, `UPDATE ...
 * WHERE etag = $n`), so optimistic concurrency holds across processes. Etags are random UUIDs, never
 * reused after a delete. `listUser` and `deleteUser` use an index by user. The table is created on
 * first use (`ensureSchema`).
 * @throws ConfigurationError for an unknown option, a bad `schema`, `tablePrefix` or `timeoutMs`, or
 *   a `client` that is neither a pg Pool nor a PGlite database.
 */
export class PostgresWorkingMemoryStore implements WorkingMemoryStore {
  readonly specificationVersion = 'v1';
  /** The quoted name of the table the store uses. */
  readonly table: string;
  readonly #db: SqlDatabase;
  readonly #names: TableNames;

  constructor(options: PostgresWorkingMemoryStoreOptions) {
    checkOptionNames('PostgresWorkingMemoryStore', options, OPTION_NAMES);
    this.#names = tableNames(options);
    this.#db = openDatabase(options);
    this.table = this.#names.table('working_memory');
  }

  /**
   * The stored record and its etag, or undefined.
   * @throws SessionStateError naming the row when it is not a record (a hand edit).
   * @throws ConfigurationError for a bad key, before any I/O; BackendUnavailableError when the database cannot be reached within `timeoutMs`.
   */
  async get(key: WorkingMemoryKey, options: WorkingMemoryCallOptions = {}): Promise<StoredWorkingMemory | undefined> {
    const checked = checkWorkingMemoryKey(key);
    const call = this.#call('get', checked, options.signal);
    await this.#ready(call);
    const { rows } = await this.#db.run<RecordRow>(
      `SELECT user_id, session_id, record, etag, updated_at FROM ${this.table} WHERE record_key = $1`,
      [recordKey(checked)],
      call,
    );
    const row = rows[0];
    if (row === undefined) return undefined;
    const { sessionId: _sessionId, ...stored } = this.#readRow(row, checked);
    return stored;
  }

  /**
   * Stores a record and resolves to its new etag, in one conditional statement.
   * @throws ConcurrencyError when `ifMatch` does not hold (nothing is written).
   * @throws InvalidInputError for a record that is not plain JSON; ConfigurationError for a bad key, both before any I/O.
   * @throws BackendUnavailableError when the database cannot be reached within `timeoutMs`.
   */
  async put(key: WorkingMemoryKey, record: JsonValue, options: PutWorkingMemoryOptions = {}): Promise<string> {
    const checked = checkWorkingMemoryKey(key);
    const problem = findNonJson(record);
    if (problem !== undefined) {
      throw new InvalidInputError(
        `The working memory of ${describeWorkingMemoryKey(checked)} is not plain JSON at ${problem}; nothing was stored.`,
      );
    }
    const call = this.#call('put', checked, options.signal);
    await this.#ready(call);
    const etag = randomUUID();
    const values = [
      recordKey(checked),
      checked.userId === undefined ? null : JSON.stringify(checked.userId),
      checked.sessionId === undefined ? null : JSON.stringify(checked.sessionId),
      checked.userId === undefined ? null : keyOf(checked.userId),
      JSON.stringify(record),
      etag,
      new Date().toISOString(),
    ];
    const insert = `INSERT INTO ${this.table} (record_key, user_id, session_id, user_key, record, etag, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`;
    const { ifMatch } = options;
    let result: { rows: { etag: string | null }[] };
    if (ifMatch === undefined) {
      result = await this.#db.run(
        `${insert} ON CONFLICT (record_key) DO UPDATE SET record = EXCLUDED.record, etag = EXCLUDED.etag, updated_at = EXCLUDED.updated_at RETURNING etag`,
        values,
        call,
      );
    } else if (ifMatch === null) {
      result = await this.#db.run(`${insert} ON CONFLICT (record_key) DO NOTHING RETURNING etag`, values, call);
    } else {
      result = await this.#db.run(
        `UPDATE ${this.table} SET record = $2, etag = $3, updated_at = $4 WHERE record_key = $1 AND etag = $5 RETURNING etag`,
        [values[0], values[4], values[5], values[6], ifMatch],
        call,
      );
    }
    if (result.rows.length === 0) {
      // Not written: read what is stored now, for the error's message (created meanwhile, changed or deleted).
      const now = await this.#db.run<{ etag: string }>(`SELECT etag FROM ${this.table} WHERE record_key = $1`, [values[0]], call);
      checkWorkingMemoryEtag(checked, now.rows[0]?.etag, ifMatch);
      // It holds now, but did not when the statement ran (a create and a delete in between): still not written.
      throw new ConcurrencyError(
        checked.sessionId ?? checked.userId ?? '',
        `The working memory of ${describeWorkingMemoryKey(checked)} changed while it was being written; read it again and retry.`,
      );
    }
    return etag;
  }

  /**
   * Deletes a record; resolves to whether one was stored.
   * @throws ConfigurationError for a bad key; BackendUnavailableError when the database cannot be reached within `timeoutMs`.
   */
  async delete(key: WorkingMemoryKey, options: WorkingMemoryCallOptions = {}): Promise<boolean> {
    const checked = checkWorkingMemoryKey(key);
    const call = this.#call('delete', checked, options.signal);
    await this.#ready(call);
    const { rows } = await this.#db.run(`DELETE FROM ${this.table} WHERE record_key = $1 RETURNING 1`, [recordKey(checked)], call);
    return rows.length > 0;
  }

  /**
   * Every record of the user: their own and those of their sessions.
   * @throws SessionStateError naming the row for a row that is not a record (a hand edit).
   * @throws ConfigurationError for a blank `userId`; BackendUnavailableError when the database cannot be reached within `timeoutMs`.
   */
  async listUser(userId: string, options: WorkingMemoryCallOptions = {}): Promise<WorkingMemoryEntry[]> {
    checkId(userId, 'userId');
    const call = this.#call('listUser', { userId }, options.signal);
    await this.#ready(call);
    const { rows } = await this.#db.run<RecordRow>(
      `SELECT user_id, session_id, record, etag, updated_at FROM ${this.table} WHERE user_key = $1 AND user_id = $2`,
      [keyOf(userId), JSON.stringify(userId)],
      call,
    );
    return rows.map((row) => this.#readRow(row, { userId }));
  }

  /**
   * Deletes every record of the user in one statement; resolves to how many there were. Idempotent.
   * @throws ConfigurationError for a blank `userId`; BackendUnavailableError when the database cannot be reached within `timeoutMs`.
   */
  async deleteUser(userId: string, options: WorkingMemoryCallOptions = {}): Promise<number> {
    checkId(userId, 'userId');
    const call = this.#call('deleteUser', { userId }, options.signal);
    await this.#ready(call);
    const { rows } = await this.#db.run(
      `DELETE FROM ${this.table} WHERE user_key = $1 AND user_id = $2 RETURNING 1`,
      [keyOf(userId), JSON.stringify(userId)],
      call,
    );
    return rows.length;
  }

  #ready(call: SqlCallOptions): Promise<void> {
    return ensureSchema(this.#db, this.#names, COMPONENT, workingMemoryMigrations(this.#names)).catch((error: unknown) => {
      if (call.signal?.aborted) throw call.signal.reason;
      throw error;
    });
  }

  #call(method: string, key: WorkingMemoryKey, signal: AbortSignal | undefined): SqlCallOptions {
    return {
      operation: `${method} of the working memory of ${describeWorkingMemoryKey(key)}`,
      sessionId: key.sessionId ?? key.userId ?? '',
      signal,
    };
  }

  /**
   * A row as a record. `key` is what was asked for: a get's whole key, a listing's user.
   * @throws SessionStateError naming the row when a field is not what the store writes.
   */
  #readRow(row: RecordRow, key: WorkingMemoryKey): WorkingMemoryEntry {
    const where = `postgres:${this.table}[${describeWorkingMemoryKey(key)}]`;
    const bad = (field: string, problem: string) =>
      new SessionStateError(`${where}.${field}`, `${problem} (the row was edited by hand); delete the row`, {
        sessionId: key.sessionId ?? key.userId,
      });
    const userId = row.user_id === null ? undefined : parseJsonString(row.user_id);
    if (userId !== key.userId) throw bad('user_id', `holds ${shortId(String(row.user_id))}, not this record's user`);
    const sessionId = row.session_id === null ? undefined : parseJsonString(row.session_id);
    if (row.session_id !== null && sessionId === undefined) throw bad('session_id', 'is not a JSON string');
    if (key.sessionId !== undefined && sessionId !== key.sessionId) {
      throw bad('session_id', `holds ${shortId(String(row.session_id))}, not this record's session`);
    }
    if (typeof row.etag !== 'string' || row.etag === '') throw bad('etag', 'is not an etag');
    if (typeof row.updated_at !== 'string' || Number.isNaN(Date.parse(row.updated_at))) throw bad('updated_at', 'is not a time');
    let record: JsonValue;
    try {
      if (typeof row.record !== 'string') throw new TypeError('not text');
      record = JSON.parse(row.record) as JsonValue;
    } catch (error) {
      throw bad('record', `is not JSON (${(error as Error).message})`);
    }
    const entry: WorkingMemoryEntry = { record, etag: row.etag, updatedAt: row.updated_at };
    if (sessionId !== undefined) entry.sessionId = sessionId;
    return entry;
  }
}
