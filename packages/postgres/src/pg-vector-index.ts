import {
  ConfigurationError,
  InvalidInputError,
  SessionStateError,
  type IndexedMessage,
  type Role,
  type VectorDeleteTarget,
  type VectorIndex,
  type VectorIndexCallOptions,
  type VectorMatch,
  type VectorQuery,
  type VectorRange,
  type VectorRecord,
  type VectorScope,
} from '@ctx/core';
import {
  checkOptionNames,
  checkVectorRange,
  checkVectorRecord,
  compareBySessionAndSequence,
  optionNames,
  shortId,
} from '@ctx/core/backend';
import { ensureSchema, idKey, openDatabase, type PostgresOptions, tableNames, type TableNames } from './schema.js';
import type { SqlCallOptions, SqlDatabase } from './sql-client.js';

/** Tuning of the HNSW index of `PgVectorIndex` (pgvector's `hnsw`, `vector_cosine_ops`). */
export interface PgVectorHnswOptions {
  /** Links per node (pgvector's `m`). Default 16. */
  m?: number;
  /** Candidates kept while building (pgvector's `ef_construction`). Default 64. */
  efConstruction?: number;
  /** Candidates kept while searching (`hnsw.ef_search`), raised to `topK` when that is larger (at most 1000). Default 40. */
  efSearch?: number;
  /**
   * Upper bound in ms of building the index on first use (a table that already holds vectors takes
   * a while: 10,000 x 256 dimensions took 15.8 s on PGlite here). Default 600,000.
   */
  buildTimeoutMs?: number;
}

/** Options of `PgVectorIndex`: the database's (`client`, `schema`, `tablePrefix`, `timeoutMs`) and the vectors'. */
export interface PgVectorIndexOptions extends PostgresOptions {
  /**
   * Length of every vector of the index: the `vector(dimensions)` column, from 1 to 16,000 (at most
   * 2,000 with `hnsw`, pgvector's limit). A table made for another length is a `ConfigurationError`.
   */
  dimensions: number;
  /**
   * Build an HNSW index (`vector_cosine_ops`) and search scopes of more than `exactSearchLimit`
   * records with it, with pgvector's iterative scans (`hnsw.iterative_scan = relaxed_order`) so a
   * scope that is a small part of the table still gets `topK` matches, re-ordered exactly by
   * distance. `true` for the defaults. Default: no HNSW index, every search exact.
   */
  hnsw?: boolean | PgVectorHnswOptions;
  /**
   * With `hnsw`: scopes (a user, a session) of up to this many records are searched exactly (no
   * approximation, and faster than the graph at that size). Default 2000.
   */
  exactSearchLimit?: number;
}

const OPTION_NAMES = optionNames<PgVectorIndexOptions>()({
  client: true,
  schema: true,
  tablePrefix: true,
  timeoutMs: true,
  dimensions: true,
  hnsw: true,
  exactSearchLimit: true,
});
const HNSW_OPTION_NAMES = optionNames<PgVectorHnswOptions>()({ m: true, efConstruction: true, efSearch: true, buildTimeoutMs: true });

/** The default of `exactSearchLimit`. */
export const DEFAULT_EXACT_SEARCH_LIMIT = 2000;
/** pgvector's largest vector and HNSW-indexed vector. */
const MAX_DIMENSIONS = 16_000;
const MAX_HNSW_DIMENSIONS = 2000;
/** Records per INSERT statement (14 parameters each, far below PostgreSQL's 65,535). */
const INSERT_ROWS = 200;
/** The largest magnitude a float4 holds. */
const FLOAT4_MAX = 3.4028234663852886e38;
const ROLES: ReadonlySet<string> = new Set<Role>(['system', 'user', 'assistant', 'tool']);

/** The checked HNSW settings. */
interface Hnsw {
  m: number;
  efConstruction: number;
  efSearch: number;
  buildTimeoutMs: number;
}

/** How `query` searched: exactly over the scope, or on the HNSW graph with an iterative scan. */
export type PgVectorSearch = 'exact' | 'hnsw';

/** A stored row as read back, before it is checked. */
interface Row {
  id: unknown;
  text: unknown;
  user_id: unknown;
  session_id: unknown;
  message_id: unknown;
  role: unknown;
  sequence: unknown;
  created_at: unknown;
  kind: unknown;
  score?: unknown;
}

const COLUMNS = 'id, text, user_id, session_id, message_id, role, sequence::text AS sequence, created_at, kind';

/** The schema versions of the vector table, in order (each one statement). `dimensions` is a checked integer. */
function migrations(table: string, names: TableNames, dimensions: number): string[] {
  const scopes = names.table('vector_scopes');
  // The counts in one pass per statement, in key order, whatever the statement did: an update that
  // moves records adds to and takes from the counts in the same pass, and one that moves none (a
  // record stored again in its scopes) writes no count. Two writers lock the rows they share in one order.
  const countFunction = `CREATE OR REPLACE FUNCTION ${names.table('vectors_count')}() RETURNS trigger LANGUAGE plpgsql AS $count$
  BEGIN
    IF TG_OP = 'TRUNCATE' THEN
      DELETE FROM ${scopes};
      RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
      INSERT INTO ${scopes} AS c (scope_key, records)
        SELECT k, count(*) FROM (
          SELECT decode('75', 'hex') || a.user_key AS k FROM added a WHERE a.user_key IS NOT NULL
          UNION ALL SELECT decode('73', 'hex') || a.session_key FROM added a
        ) n GROUP BY k ORDER BY k
        ON CONFLICT (scope_key) DO UPDATE SET records = c.records + EXCLUDED.records;
      RETURN NULL;
    END IF;
    IF TG_OP = 'UPDATE' THEN
      INSERT INTO ${scopes} AS c (scope_key, records)
        SELECT k, sum(n) FROM (
          SELECT decode('75', 'hex') || a.user_key AS k, 1 AS n FROM added a WHERE a.user_key IS NOT NULL
          UNION ALL SELECT decode('73', 'hex') || a.session_key, 1 FROM added a
          UNION ALL SELECT decode('75', 'hex') || r.user_key, -1 FROM removed r WHERE r.user_key IS NOT NULL
          UNION ALL SELECT decode('73', 'hex') || r.session_key, -1 FROM removed r
        ) n GROUP BY k HAVING sum(n) <> 0 ORDER BY k
        ON CONFLICT (scope_key) DO UPDATE SET records = c.records + EXCLUDED.records;
    ELSE
      INSERT INTO ${scopes} AS c (scope_key, records)
        SELECT k, -count(*) FROM (
          SELECT decode('75', 'hex') || r.user_key AS k FROM removed r WHERE r.user_key IS NOT NULL
          UNION ALL SELECT decode('73', 'hex') || r.session_key FROM removed r
        ) n GROUP BY k ORDER BY k
        ON CONFLICT (scope_key) DO UPDATE SET records = c.records + EXCLUDED.records;
    END IF;
    DELETE FROM ${scopes} c WHERE c.records <= 0 AND c.scope_key IN (
      SELECT decode('75', 'hex') || r.user_key FROM removed r WHERE r.user_key IS NOT NULL
      UNION ALL SELECT decode('73', 'hex') || r.session_key FROM removed r
    );
    RETURN NULL;
  END $count$`;
  return [
    'CREATE EXTENSION IF NOT EXISTS vector',
    `CREATE TABLE IF NOT EXISTS ${table} (
      id_key bytea PRIMARY KEY,
      id text NOT NULL,
      user_key bytea,
      user_id text,
      session_key bytea NOT NULL,
      session_id text NOT NULL,
      message_id text NOT NULL,
      role text NOT NULL,
      sequence bigint NOT NULL,
      created_at text,
      kind text,
      text text NOT NULL,
      embedding vector(${dimensions}) NOT NULL
    )`,
    `CREATE INDEX IF NOT EXISTS "${names.bare('vectors_user')}" ON ${table} (user_key)`,
    `CREATE INDEX IF NOT EXISTS "${names.bare('vectors_session')}" ON ${table} (session_key, sequence)`,
    // The records of each user (`u` and the user's key) and session (`s` and the session's key),
    // kept by the triggers below for every writer, so a search picks exact or HNSW without counting.
    `CREATE TABLE IF NOT EXISTS ${scopes} (scope_key bytea PRIMARY KEY, records bigint NOT NULL)`,
    countFunction,
    // CREATE TRIGGER locks out writers until the migration commits, so the count below misses none.
    `CREATE TRIGGER "${names.bare('vectors_added')}" AFTER INSERT ON ${table} REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION ${names.table('vectors_count')}()`,
    `CREATE TRIGGER "${names.bare('vectors_changed')}" AFTER UPDATE ON ${table} REFERENCING OLD TABLE AS removed NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION ${names.table('vectors_count')}()`,
    `CREATE TRIGGER "${names.bare('vectors_removed')}" AFTER DELETE ON ${table} REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION ${names.table('vectors_count')}()`,
    `CREATE TRIGGER "${names.bare('vectors_truncated')}" AFTER TRUNCATE ON ${table} FOR EACH STATEMENT EXECUTE FUNCTION ${names.table('vectors_count')}()`,
    `INSERT INTO ${scopes} (scope_key, records)
      SELECT k, count(*) FROM (
        SELECT decode('75', 'hex') || user_key AS k FROM ${table} WHERE user_key IS NOT NULL
        UNION ALL SELECT decode('73', 'hex') || session_key FROM ${table}
      ) n GROUP BY k
      ON CONFLICT (scope_key) DO UPDATE SET records = EXCLUDED.records`,
    // The search in one call: the scope's size from the counts picks exact or HNSW; the HNSW search
    // runs with pgvector's iterative scan and the given ef_search, settings that end with the call
    // (the function's SET clauses), and falls back to the exact search when it found fewer than
    // top_k. Each row says which search gave it. The conditions are fixed fragments; ids come as parameters.
    `CREATE OR REPLACE FUNCTION ${names.table('vectors_search')}(query vector, top_k integer, scope_user bytea, scope_session bytea, excluded text[], exact_limit bigint, ef integer)
    RETURNS TABLE (id text, text text, user_id text, session_id text, message_id text, role text, sequence text, created_at text, kind text, score double precision, search text)
    LANGUAGE plpgsql
    SET hnsw.iterative_scan = relaxed_order
    SET hnsw.ef_search = 40
    SET enable_seqscan = off
    AS $search$
    DECLARE
      size bigint;
      got bigint;
      exact_where text;
      graph_where text;
    BEGIN
      SELECT least(
        CASE WHEN scope_user IS NULL THEN NULL
          ELSE coalesce((SELECT c.records FROM ${scopes} c WHERE c.scope_key = decode('75', 'hex') || scope_user), 0) END,
        CASE WHEN scope_session IS NULL THEN NULL
          ELSE coalesce((SELECT c.records FROM ${scopes} c WHERE c.scope_key = decode('73', 'hex') || scope_session), 0) END
      ) INTO size;
      IF scope_user IS NOT NULL AND scope_session IS NOT NULL AND size > exact_limit THEN
        SELECT count(*) INTO size FROM (
          SELECT 1 FROM ${table} v WHERE v.user_key = scope_user AND v.session_key = scope_session LIMIT exact_limit + 1
        ) s;
      END IF;
      exact_where := concat_ws(' AND ',
        CASE WHEN scope_user IS NOT NULL THEN 'user_key = $3' END,
        CASE WHEN scope_session IS NOT NULL THEN 'session_key = $4' END,
        CASE WHEN cardinality(excluded) > 0 THEN 'NOT (message_id = ANY($5))' END);
      IF size > exact_limit THEN
        graph_where := concat_ws(' AND ',
          CASE WHEN scope_user IS NOT NULL THEN '(user_key || ''''::bytea) = $3' END,
          CASE WHEN scope_session IS NOT NULL THEN '(session_key || ''''::bytea) = $4' END,
          CASE WHEN cardinality(excluded) > 0 THEN 'NOT (message_id = ANY($5))' END);
        PERFORM set_config('hnsw.ef_search', ef::text, true);
        RETURN QUERY EXECUTE 'SELECT q.*, ''hnsw''::text FROM (' || format(${literal(hnswSql(table, '%s'))}, graph_where) || ') q'
          USING query, top_k, scope_user, scope_session, excluded;
        GET DIAGNOSTICS got = ROW_COUNT;
        -- relaxed_order may stop early (hnsw.max_scan_tuples): a scope that holds top_k gets them exactly.
        IF got >= top_k THEN
          RETURN;
        END IF;
      END IF;
      RETURN QUERY EXECUTE 'SELECT q.*, ''exact''::text FROM (' || format(${literal(exactSql(table, '%s'))}, exact_where) || ') q'
        USING query, top_k, scope_user, scope_session, excluded;
    END $search$`,
    // A database made when the counts took two passes gets the one-pass function.
    countFunction,
  ];
}

/**
 * Locks the count rows of the scopes in `$1` (`u` or `s` and the key, in hex; created at 0 when
 * missing) and of the scopes the records with the id keys in `$2` are stored in now, in key order.
 */
function lockScopesSql(table: string, scopes: string): string {
  return `INSERT INTO ${scopes} AS c (scope_key, records)
    SELECT k, 0 FROM (
      SELECT decode(x, 'hex') AS k FROM unnest($1::text[]) AS x
      UNION SELECT decode('75', 'hex') || v.user_key FROM ${table} v
        WHERE v.id_key IN (SELECT decode(x, 'hex') FROM unnest($2::text[]) AS x) AND v.user_key IS NOT NULL
      UNION SELECT decode('73', 'hex') || v.session_key FROM ${table} v
        WHERE v.id_key IN (SELECT decode(x, 'hex') FROM unnest($2::text[]) AS x)
    ) s ORDER BY k
    ON CONFLICT (scope_key) DO UPDATE SET records = c.records`;
}

/** The parameters of `lockScopesSql` for a batch: the scopes it adds to, and its id keys. */
function scopeLocks(batch: readonly { copy: { userId?: string | undefined; sessionId: string }; key: string }[]): [string[], string[]] {
  const scopes = new Set<string>();
  for (const { copy } of batch) {
    if (copy.userId !== undefined) scopes.add(`75${idKey(copy.userId).toString('hex')}`);
    scopes.add(`73${idKey(copy.sessionId).toString('hex')}`);
  }
  return [[...scopes], batch.map((row) => row.key)];
}

/** A SQL string literal of a fixed text of this module (quotes doubled; the text holds no user input). */
function literal(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/**
 * A `VectorIndex` on PostgreSQL with pgvector (a server through a `pg` Pool, or embedded PGlite with
 * `@electric-sql/pglite-pgvector`): one row per record in `<prefix>vectors`, the vector in a
 * `vector(dimensions)` column stored as its unit vector, searched by cosine distance (`<=>`) within
 * the scope's user or session, filtered in SQL. Search is exact (the scope's rows, then the nearest
 * `topK`); with `hnsw`, scopes of more than `exactSearchLimit` records are searched on an HNSW index
 * with an iterative scan, so they still get `topK` matches. User, session and record ids are kept
 * whole in text columns and indexed by their sha256 digests (`idKey`), so any id fits the index.
 * The table is created (and pgvector's extension enabled) on first use.
 *
 * Failures: a record with a bad field, a value a float4 cannot hold or a zero vector (no direction
 * for cosine) is an `InvalidInputError` naming the record, and nothing of the batch is stored; an
 * unreachable or slow database is a `BackendUnavailableError` within `timeoutMs`; a stored row that
 * is not a record is a `SessionStateError` naming the table and the row's id.
 * @throws ConfigurationError (constructor) for a bad `dimensions`, `hnsw`, `exactSearchLimit`, client,
 *   schema, prefix or `timeoutMs`, or an option it does not know; (first call) when pgvector is not
 *   available, or the table holds vectors of another length.
 */
export class PgVectorIndex implements VectorIndex {
  readonly specificationVersion = 'v1';
  /** Vector length of the index. */
  readonly dimensions: number;
  /** The quoted, schema-qualified table, e.g. `"public"."ctx_vectors"`. */
  readonly table: string;
  /** How `query` searched last (`'exact'` or `'hnsw'`); undefined before the first query. For tests and diagnostics. */
  lastSearch: PgVectorSearch | undefined;
  readonly #db: SqlDatabase;
  readonly #names: TableNames;
  readonly #hnsw: Hnsw | undefined;
  readonly #exactSearchLimit: number;
  /** The statement that locks the count rows of a batch's scopes (see `lockScopesSql`). */
  readonly #lockScopes: string;
  #ready: Promise<void> | undefined;

  constructor(options: PgVectorIndexOptions) {
    checkOptionNames('PgVectorIndex', options, OPTION_NAMES);
    const { dimensions } = options;
    const hnsw = options.hnsw === true ? {} : options.hnsw === false || options.hnsw === undefined ? undefined : options.hnsw;
    const max = hnsw ? MAX_HNSW_DIMENSIONS : MAX_DIMENSIONS;
    if (!(Number.isInteger(dimensions) && dimensions >= 1 && dimensions <= max))
      throw new ConfigurationError(
        `PgVectorIndex: dimensions must be an integer from 1 to ${max}${hnsw ? ' (pgvector indexes vectors of at most 2,000 dimensions with HNSW)' : ''}, got ${String(dimensions)}.`,
      );
    if (hnsw !== undefined) {
      if (typeof hnsw !== 'object' || hnsw === null)
        throw new ConfigurationError(`PgVectorIndex: hnsw must be true, false or an object of HNSW settings, got ${String(hnsw)}.`);
      checkOptionNames('PgVectorIndex hnsw', hnsw, HNSW_OPTION_NAMES);
    }
    const integer = (name: string, value: number | undefined, fallback: number, low: number, high: number) => {
      const v = value ?? fallback;
      if (!(Number.isInteger(v) && v >= low && v <= high))
        throw new ConfigurationError(`PgVectorIndex: ${name} must be an integer from ${low} to ${high}, got ${String(v)}.`);
      return v;
    };
    this.#hnsw = hnsw && {
      m: integer('hnsw.m', hnsw.m, 16, 2, 100),
      efConstruction: integer('hnsw.efConstruction', hnsw.efConstruction, 64, 4, 1000),
      efSearch: integer('hnsw.efSearch', hnsw.efSearch, 40, 1, 1000),
      buildTimeoutMs: integer('hnsw.buildTimeoutMs', hnsw.buildTimeoutMs, 600_000, 1, 2_147_483_647),
    };
    this.#exactSearchLimit = integer('exactSearchLimit', options.exactSearchLimit, DEFAULT_EXACT_SEARCH_LIMIT, 0, Number.MAX_SAFE_INTEGER);
    this.dimensions = dimensions;
    this.#names = tableNames(options);
    this.table = this.#names.table('vectors');
    this.#lockScopes = lockScopesSql(this.table, this.#names.table('vector_scopes'));
    this.#db = openDatabase(options);
  }

  /**
   * Stores the records in one transaction, replacing those with the same id (`INSERT ... ON CONFLICT
   * DO UPDATE`): a retry stores each once.
   * @throws InvalidInputError naming the record for a malformed one, a value beyond float4's range
   *   (about 3.4e38) or a zero vector; nothing of the batch is stored.
   * @throws BackendUnavailableError when the database fails or does not answer within `timeoutMs` (nothing of the batch is stored).
   */
  async upsert(records: readonly VectorRecord[], options?: VectorIndexCallOptions): Promise<void> {
    const signal = options?.signal;
    signal?.throwIfAborted();
    if (!Array.isArray(records)) throw new InvalidInputError('PgVectorIndex.upsert: records must be an array of vector records.');
    const rows = records.map((record, i) => {
      const copy = checkVectorRecord(record, i, { owner: 'PgVectorIndex', dimensions: this.dimensions, indexName: this.table });
      const fail = (problem: string) =>
        new InvalidInputError(`PgVectorIndex.upsert: record ${shortId(copy.id)} ${problem}; nothing of the batch was stored.`);
      if (record.vector.some((x: number) => Math.abs(x) > FLOAT4_MAX))
        throw fail(`has a vector value beyond what a float4 holds (about ±3.4e38); scale the vector down`);
      const unit = unitVector(record.vector);
      if (!unit) throw fail('has a zero vector, which has no direction to compare by cosine; leave the record out or embed its text again');
      return { copy, vector: unit };
    });
    if (!rows.length) return;
    // One row per id, the last given winning (one statement cannot update a row twice), in the
    // order of the id keys, so two upserts lock the records they share in one order.
    const byKey = new Map<string, (typeof rows)[number] & { key: string }>();
    for (const row of rows) {
      const key = idKey(row.copy.id).toString('hex');
      byKey.delete(key);
      byKey.set(key, { ...row, key });
    }
    const batch = [...byKey.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    await this.#schema(signal);
    const operation = `upsert of ${batch.length} record(s) into ${this.table}`;
    await this.#db.transaction(
      async (tx) => {
        // More than one statement: first lock the counts of every scope the batch adds to or moves
        // records from, in key order, as each statement's trigger does: two upserts never hold one
        // count each while waiting for the other's.
        if (batch.length > INSERT_ROWS) await tx.query(this.#lockScopes, scopeLocks(batch));
        for (let at = 0; at < batch.length; at += INSERT_ROWS) {
          const params: unknown[] = [];
          const values = batch.slice(at, at + INSERT_ROWS).map(({ copy, vector, key }) => {
            const n = params.length;
            params.push(
              key,
              copy.id,
              copy.userId === undefined ? null : idKey(copy.userId).toString('hex'),
              copy.userId ?? null,
              idKey(copy.sessionId).toString('hex'),
              copy.sessionId,
              copy.messageId,
              copy.role,
              String(copy.sequence),
              copy.createdAt ?? null,
              copy.kind ?? null,
              copy.text,
              vectorLiteral(vector),
            );
            return `(decode($${n + 1}, 'hex'), $${n + 2}, decode($${n + 3}, 'hex'), $${n + 4}, decode($${n + 5}, 'hex'), $${n + 6}, $${n + 7}, $${n + 8}, $${n + 9}::bigint, $${n + 10}, $${n + 11}, $${n + 12}, $${n + 13}::vector)`;
          });
          await tx.query(
            `INSERT INTO ${this.table} (id_key, id, user_key, user_id, session_key, session_id, message_id, role, sequence, created_at, kind, text, embedding)
             VALUES ${values.join(', ')}
             ON CONFLICT (id_key) DO UPDATE SET id = EXCLUDED.id, user_key = EXCLUDED.user_key, user_id = EXCLUDED.user_id,
               session_key = EXCLUDED.session_key, session_id = EXCLUDED.session_id, message_id = EXCLUDED.message_id,
               role = EXCLUDED.role, sequence = EXCLUDED.sequence, created_at = EXCLUDED.created_at, kind = EXCLUDED.kind,
               text = EXCLUDED.text, embedding = EXCLUDED.embedding`,
            params,
          );
        }
      },
      this.#call(operation, signal),
    );
  }

  /**
   * The `topK` records of the scope closest to `vector` by cosine similarity, best first. A scope of
   * up to `exactSearchLimit` records (or any scope without `hnsw`) is searched exactly; a larger one
   * on the HNSW index with an iterative scan, falling back to an exact search if the scan found
   * fewer than `topK` of a scope that holds them. A zero query vector matches nothing (`[]`).
   * @throws InvalidInputError for an empty scope, a `topK` that is not a positive integer, a vector of
   *   the wrong length or with values that are not finite, or a `minScore` that is not finite.
   * @throws BackendUnavailableError when the database fails or does not answer within `timeoutMs`.
   */
  async query(query: VectorQuery, options?: VectorIndexCallOptions): Promise<VectorMatch[]> {
    const signal = options?.signal;
    signal?.throwIfAborted();
    const { vector, topK, filter, minScore } = query ?? ({} as VectorQuery);
    checkScope('query', filter);
    if (!Number.isSafeInteger(topK) || topK <= 0)
      throw new InvalidInputError(`PgVectorIndex.query: topK must be a positive integer, got ${String(topK)}.`, { limit: 'topK' });
    if (!Array.isArray(vector) || !vector.every(Number.isFinite))
      throw new InvalidInputError('PgVectorIndex.query: vector must be an array of finite numbers.');
    if (vector.length !== this.dimensions)
      throw new InvalidInputError(
        `PgVectorIndex.query: the query vector has ${vector.length} dimensions, ${this.table} ${this.dimensions}; embed queries with the model that embedded the records.`,
      );
    if (minScore !== undefined && !Number.isFinite(minScore))
      throw new InvalidInputError(`PgVectorIndex.query: minScore must be a finite number, got ${String(minScore)}.`);
    const exclude = filter.excludeMessageIds ?? [];
    if (!Array.isArray(exclude) || !exclude.every((id) => typeof id === 'string'))
      throw new InvalidInputError('PgVectorIndex.query: excludeMessageIds must be an array of strings.');
    const unit = unitVector(vector);
    if (!unit) return [];
    await this.#schema(signal);
    const call = this.#call(`query of ${describeScope(filter)} in ${this.table}`, signal);
    let rows: Row[];
    let search: PgVectorSearch = 'exact';
    if (this.#hnsw) {
      // One call: the function reads the scope's size from the counts and searches exactly or on the graph.
      const ef = Math.min(1000, Math.max(this.#hnsw.efSearch, topK));
      const key = (id: string | undefined) => (id === undefined ? null : idKey(id).toString('hex'));
      const found = await this.#db.run<Row & { search: unknown }>(
        `SELECT * FROM ${this.#names.table('vectors_search')}($1::vector, $2::int, decode($3, 'hex'), decode($4, 'hex'), $5::text[], $6::bigint, $7::int)`,
        [vectorLiteral(unit), topK, key(filter.userId), key(filter.sessionId), [...exclude], String(this.#exactSearchLimit), ef],
        call,
      );
      // The graph's rows, or the exact search's when the function fell back to it.
      const exact = found.rows.filter((row) => row.search === 'exact');
      if (exact.length === 0 && found.rows.length > 0) search = 'hnsw';
      rows = search === 'hnsw' ? found.rows : exact;
    } else {
      // $1 the query vector, $2 topK, then the scope's keys, then the excluded message ids.
      const scope = scopeSql(filter, 3);
      const params: unknown[] = [vectorLiteral(unit), topK, ...scope.params];
      if (exclude.length) params.push([...exclude]);
      const where = scope.sql + (exclude.length ? ` AND NOT (message_id = ANY($${params.length}::text[]))` : '');
      rows = (await this.#db.run<Row>(exactSql(this.table, where), params, call)).rows;
    }
    this.lastSearch = search;
    const matches: VectorMatch[] = [];
    for (const row of rows) {
      const score = Math.max(-1, Math.min(1, Number(row.score)));
      if (minScore !== undefined && score < minScore) continue;
      matches.push({ ...this.#decode(row), score });
    }
    return matches;
  }

  /**
   * The records of one session within the sequence range, by sequence.
   * @throws InvalidInputError for a missing session id, a `userId` that is not a non-empty string, or a range that is not two integers.
   * @throws BackendUnavailableError when the database fails or does not answer within `timeoutMs`.
   */
  async getRange(range: VectorRange, options?: VectorIndexCallOptions): Promise<IndexedMessage[]> {
    const signal = options?.signal;
    signal?.throwIfAborted();
    const { sessionId, userId, fromSequence, toSequence } = checkVectorRange('PgVectorIndex', range);
    if (toSequence < fromSequence) return [];
    await this.#schema(signal);
    const scope = scopeSql({ sessionId, userId }, 3);
    const { rows } = await this.#db.run<Row>(
      `SELECT ${COLUMNS} FROM ${this.table} WHERE ${scope.sql} AND sequence BETWEEN $1::bigint AND $2::bigint ORDER BY sequence`,
      [String(fromSequence), String(toSequence), ...scope.params],
      this.#call(`getRange of session ${shortId(sessionId)} in ${this.table}`, signal),
    );
    return rows.map((row) => this.#decode(row));
  }

  /**
   * Every record of the scope, without vectors, by session id and then sequence.
   * @throws InvalidInputError for an empty scope.
   * @throws BackendUnavailableError when the database fails or does not answer within `timeoutMs`.
   */
  async list(scope: VectorScope, options?: VectorIndexCallOptions): Promise<IndexedMessage[]> {
    const signal = options?.signal;
    signal?.throwIfAborted();
    checkScope('list', scope);
    await this.#schema(signal);
    const where = scopeSql(scope, 1);
    const { rows } = await this.#db.run<Row>(
      `SELECT ${COLUMNS} FROM ${this.table} WHERE ${where.sql}`,
      where.params,
      this.#call(`list of ${describeScope(scope)} in ${this.table}`, signal),
    );
    return rows.map((row) => this.#decode(row)).sort(compareBySessionAndSequence);
  }

  /**
   * Removes records by id, or every record of a scope (one statement); ids or scopes that hold nothing are no error.
   * @throws InvalidInputError for an empty scope or ids that are not strings.
   * @throws BackendUnavailableError when the database fails or does not answer within `timeoutMs`.
   */
  async delete(target: VectorDeleteTarget, options?: VectorIndexCallOptions): Promise<void> {
    const signal = options?.signal;
    signal?.throwIfAborted();
    if (target && typeof target === 'object' && 'ids' in target) {
      if (!Array.isArray(target.ids) || !target.ids.every((id) => typeof id === 'string'))
        throw new InvalidInputError('PgVectorIndex.delete: ids must be an array of strings.');
      if (!target.ids.length) return;
      await this.#schema(signal);
      await this.#db.run(
        `DELETE FROM ${this.table} WHERE id_key IN (SELECT decode(k, 'hex') FROM unnest($1::text[]) AS k)`,
        [target.ids.map((id) => idKey(id).toString('hex'))],
        this.#call(`delete of ${target.ids.length} record(s) from ${this.table}`, signal),
      );
      return;
    }
    checkScope('delete', target);
    await this.#schema(signal);
    const where = scopeSql(target, 1);
    await this.#db.run(
      `DELETE FROM ${this.table} WHERE ${where.sql}`,
      where.params,
      this.#call(`delete of ${describeScope(target)} from ${this.table}`, signal),
    );
  }

  /** Creates the table (and the HNSW index when asked) on first use; checks pgvector and the vector length. */
  #schema(signal: AbortSignal | undefined): Promise<void> {
    if (!this.#ready) {
      const ready = this.#prepare(signal);
      this.#ready = ready;
      ready.catch(() => {
        if (this.#ready === ready) this.#ready = undefined;
      });
    }
    return this.#ready;
  }

  async #prepare(signal: AbortSignal | undefined): Promise<void> {
    const available = await this.#db.run<{ installed: boolean | null }>(
      `SELECT (SELECT true FROM pg_extension WHERE extname = 'vector') AS installed, (SELECT true FROM pg_available_extensions WHERE name = 'vector') AS available`,
      [],
      this.#call('check of the pgvector extension', signal),
    );
    const found = available.rows[0] as { installed: boolean | null; available?: boolean | null } | undefined;
    if (!found?.installed && !found?.available)
      throw new ConfigurationError(
        `PgVectorIndex: the database has no pgvector extension ("vector"). On PGlite, create it with extensions: { vector } from @electric-sql/pglite-pgvector; on a server, install pgvector (0.8 or later for iterative HNSW scans) and run CREATE EXTENSION vector as a role allowed to.`,
      );
    await ensureSchema(this.#db, this.#names, 'vectors', migrations(this.table, this.#names, this.dimensions));
    const column = await this.#db.run<{ type: string | null }>(
      `SELECT format_type(atttypid, atttypmod) AS type FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = 'embedding' AND NOT attisdropped`,
      [this.table],
      this.#call(`check of ${this.table}`, signal),
    );
    const type = column.rows[0]?.type;
    if (type !== `vector(${this.dimensions})`)
      throw new ConfigurationError(
        `PgVectorIndex: ${this.table} holds vectors of type ${type ?? 'unknown'}, this index has ${this.dimensions} dimensions. Vectors of another embedding model go in another table: give that index another tablePrefix.`,
      );
    if (this.#hnsw) {
      const { m, efConstruction, buildTimeoutMs } = this.#hnsw;
      const name = this.#names.bare('vectors_hnsw');
      await this.#db.transaction(
        async (tx) => {
          // Two processes starting together build it once: the second waits here, then finds it.
          await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`ctx:hnsw:${this.table}`]);
          await tx.query(
            `CREATE INDEX IF NOT EXISTS "${name}" ON ${this.table} USING hnsw (embedding vector_cosine_ops) WITH (m = ${m}, ef_construction = ${efConstruction})`,
          );
        },
        { ...this.#call(`build of the HNSW index of ${this.table}`, signal), timeoutMs: buildTimeoutMs },
      );
    }
  }

  #call(operation: string, signal: AbortSignal | undefined): SqlCallOptions {
    return { operation: `PgVectorIndex ${operation}`, signal };
  }

  /** A row as a record, checked: a row that is not one is a `SessionStateError` naming the table and the row. */
  #decode(row: Row): IndexedMessage {
    const bad = (field: string, value: unknown) =>
      new SessionStateError(
        `postgres:${this.table}[${typeof row.id === 'string' ? shortId(row.id) : '?'}].${field}`,
        `is ${JSON.stringify(value) ?? String(value)}, not a valid ${field} of a vector record; fix or delete the row`,
      );
    const text = (field: keyof Row, optional: boolean): string | undefined => {
      const value = row[field];
      if (value === null && optional) return undefined;
      if (typeof value !== 'string' || (field !== 'text' && !value)) throw bad(field, value);
      return value;
    };
    const sequence = Number(row.sequence);
    if (typeof row.sequence !== 'string' || !Number.isSafeInteger(sequence) || sequence < 0) throw bad('sequence', row.sequence);
    if (typeof row.role !== 'string' || !ROLES.has(row.role)) throw bad('role', row.role);
    if (row.kind !== null && row.kind !== 'archive') throw bad('kind', row.kind);
    const out: IndexedMessage = {
      id: text('id', false)!,
      text: text('text', false)!,
      sessionId: text('session_id', false)!,
      messageId: text('message_id', false)!,
      role: row.role as Role,
      sequence,
    };
    const userId = text('user_id', true);
    if (userId !== undefined) out.userId = userId;
    const createdAt = text('created_at', true);
    if (createdAt !== undefined) out.createdAt = createdAt;
    if (row.kind === 'archive') out.kind = 'archive';
    return out;
  }
}

/** The exact search: the scope's rows (by their key indexes), ordered by a score no vector index can serve. */
export function exactSql(table: string, where: string): string {
  return `SELECT ${COLUMNS}, 1 - (embedding <=> $1::vector) AS score FROM ${table} WHERE ${where} ORDER BY score DESC LIMIT $2`;
}

/**
 * The HNSW search: the scope's condition written so no btree serves it (`(user_key || ''::bytea) = ...`), so the
 * planner walks the HNSW index and filters as it goes (pgvector 0.8's iterative scan), then the
 * `topK` found are re-ordered exactly (relaxed_order may return them slightly out of order).
 */
export function hnswSql(table: string, where: string): string {
  return `WITH found AS MATERIALIZED (
      SELECT ${COLUMNS}, embedding <=> $1::vector AS distance FROM ${table} WHERE ${where} ORDER BY embedding <=> $1::vector LIMIT $2
    ) SELECT id, text, user_id, session_id, message_id, role, sequence, created_at, kind, 1 - distance AS score FROM found ORDER BY distance`;
}

/** The SQL condition of a scope on the key columns, its parameters numbered from `first`. */
function scopeSql(scope: VectorScope, first: number): { sql: string; params: string[] } {
  const parts: string[] = [];
  const params: string[] = [];
  if (scope.userId !== undefined) {
    params.push(idKey(scope.userId).toString('hex'));
    parts.push(`user_key = decode($${first + params.length - 1}, 'hex')`);
  }
  if (scope.sessionId !== undefined) {
    params.push(idKey(scope.sessionId).toString('hex'));
    parts.push(`session_key = decode($${first + params.length - 1}, 'hex')`);
  }
  return { sql: parts.join(' AND '), params };
}

function describeScope(scope: VectorScope): string {
  return [
    scope.userId === undefined ? '' : `user ${shortId(scope.userId)}`,
    scope.sessionId === undefined ? '' : `session ${shortId(scope.sessionId)}`,
  ]
    .filter(Boolean)
    .join(', ');
}

/** The vector scaled to length 1 (computed in double precision), or undefined for a zero vector. */
function unitVector(vector: readonly number[]): number[] | undefined {
  let max = 0;
  for (const x of vector) max = Math.max(max, Math.abs(x));
  if (max === 0) return undefined;
  // Scaled by the largest component first, so squares neither overflow nor underflow.
  let sum = 0;
  for (const x of vector) sum += (x / max) * (x / max);
  const norm = Math.sqrt(sum);
  return vector.map((x) => x / max / norm);
}

/** pgvector's text form of a vector, `[x,y,...]`. */
function vectorLiteral(vector: readonly number[]): string {
  return `[${vector.join(',')}]`;
}

function checkScope(operation: string, scope: VectorScope | undefined): asserts scope is VectorScope {
  const ok = (v: unknown) => v === undefined || (typeof v === 'string' && v.length > 0);
  if (!scope || typeof scope !== 'object' || !ok(scope.userId) || !ok(scope.sessionId))
    throw new InvalidInputError(`PgVectorIndex.${operation}: the filter's userId and sessionId must be non-empty strings when set.`);
  if (scope.userId === undefined && scope.sessionId === undefined)
    throw new InvalidInputError(
      `PgVectorIndex.${operation}: the filter needs a userId or a sessionId; an index is never searched or cleared across users.`,
    );
}
