import { randomUUID } from 'node:crypto';
import {
  ConcurrencyError,
  type GetSessionOptions,
  type ListSessionsOptions,
  type SessionJson,
  type SessionMetadata,
  type SessionPage,
  SessionStateError,
  type SessionStore,
  type SessionSummary,
  type SetSessionOptions,
  type StoredSession,
  type TurnLease,
} from '@ctx/core';
import {
  checkId,
  checkInteger,
  checkListOptions,
  checkOptionNames,
  checkSessionForWrite,
  checkSessionId,
  checkTurnLease,
  encodeSessionCursor,
  isPlainObject,
  optionNames,
  parseSessionJson,
  sessionOfUser,
  shortId,
} from '@ctx/core/backend';
import { ensureSchema, idKey, openDatabase, type PostgresOptions, type TableNames, tableNames } from './schema.js';
import type { SqlCallOptions, SqlDatabase } from './sql-client.js';

/** Options of `PostgresSessionStore`. */
export interface PostgresSessionStoreOptions extends PostgresOptions {
  /**
   * Sessions expire this many seconds after they were last saved (every `set` resets the clock;
   * `get` does not): an expired session reads, lists and deletes as not stored, and the next write
   * of its id replaces it. `deleteExpired()` removes expired rows. Default: sessions never expire.
   */
  ttlSeconds?: number;
}

const OPTION_NAMES = optionNames<PostgresSessionStoreOptions>()({
  client: true,
  schema: true,
  tablePrefix: true,
  timeoutMs: true,
  ttlSeconds: true,
});

/** The component name of the session tables in the versions table. */
const COMPONENT = 'sessions';

/** The tables of `PostgresSessionStore`, quoted. */
export interface SessionTables {
  /** One row per session. */
  sessions: string;
  /** One row per turn lease (`leaseTurn`). */
  turnLeases: string;
}

/**
 * The migrations of the session tables (one statement each, appended, never edited). Ids are kept
 * as JSON text (which holds NUL and lone surrogates, as PostgreSQL text cannot), found by the
 * sha256 of that text, and sorted by their UTF-8 bytes; no index holds an id itself (a 4 KB id
 * would exceed the btree row limit), so ties of `updated_ms` are sorted after the index scan.
 */
export function sessionMigrations(names: TableNames): string[] {
  const sessions = names.table('sessions');
  const leases = names.table('turn_leases');
  return [
    `CREATE TABLE ${sessions} (
      id_key bytea PRIMARY KEY,
      session_id text NOT NULL,
      id_order bytea NOT NULL,
      user_key bytea,
      updated_ms bigint NOT NULL,
      metadata text NOT NULL,
      session text NOT NULL,
      etag text NOT NULL,
      expires_at timestamptz
    )`,
    `CREATE INDEX "${names.bare('sessions_by_user')}" ON ${sessions} (user_key, updated_ms DESC) WHERE user_key IS NOT NULL`,
    `CREATE INDEX "${names.bare('sessions_by_time')}" ON ${sessions} (updated_ms DESC)`,
    `CREATE TABLE ${leases} (
      session_key bytea NOT NULL,
      turn text NOT NULL,
      holder text NOT NULL,
      expires_at timestamptz NOT NULL,
      PRIMARY KEY (session_key, turn)
    )`,
    // Versions 5 and 6: the deadline of a write sent as one statement (no BEGIN and COMMIT round
    // trips). `bound` runs first in the statement (a CTE its row comes from): it sets `lock_timeout`
    // to the call's time, so a wait on another writer's row lock ends by then, and gives the
    // deadline; `in_time`, in RETURNING after the write, raises (rolling it back) past it.
    `CREATE OR REPLACE FUNCTION ${names.table('sessions_bound')}(p_timeout_ms integer) RETURNS timestamptz LANGUAGE plpgsql AS $bound$
    BEGIN
      PERFORM set_config('lock_timeout', p_timeout_ms::text, true);
      RETURN statement_timestamp() + p_timeout_ms * interval '1 millisecond';
    END
    $bound$`,
    `CREATE OR REPLACE FUNCTION ${names.table('sessions_in_time')}(p_deadline timestamptz) RETURNS boolean LANGUAGE plpgsql AS $in_time$
    BEGIN
      IF clock_timestamp() > p_deadline THEN
        RAISE EXCEPTION 'the write did not finish within its deadline' USING ERRCODE = 'query_canceled';
      END IF;
      RETURN true;
    END
    $in_time$`,
  ];
}

/** The index key of an id (sha256 of its JSON text, so every string, NUL and lone surrogates included, has its own). */
export const keyOf = (id: string): Buffer => idKey(JSON.stringify(id));

interface SessionRow {
  session_id: unknown;
  session: unknown;
  etag: unknown;
}

interface SummaryRow {
  session_id: unknown;
  metadata: unknown;
}

/** A condition that holds for a row that has not expired. */
const LIVE = '(expires_at IS NULL OR expires_at > clock_timestamp())';

/**
 * A `SessionStore` on PostgreSQL (a `pg` Pool) or PGlite: one row per session (its JSON, metadata,
 * etag and owner), written by single conditional statements (`INSERT ... ON CONFLICT`, `UPDATE ...
 * WHERE etag = $n`), so optimistic concurrency holds across processes. Etags are random UUIDs, never
 * reused after a delete. `list` reads an index by owner and time (keyset paging with core's
 * cursors); `leaseTurn` keeps leases in their own table, timed by the database's clock. Tables are
 * created on first use (`ensureSchema`).
 * @throws ConfigurationError for an unknown option, a bad `schema`, `tablePrefix`, `timeoutMs` or
 *   `ttlSeconds`, or a `client` that is neither a pg Pool nor a PGlite database.
 */
export class PostgresSessionStore implements SessionStore {
  readonly specificationVersion = 'v1';
  /** Seconds after the last save at which a session expires, or undefined for never. */
  readonly ttlSeconds: number | undefined;
  /** The quoted names of the tables the store uses. */
  readonly tables: SessionTables;
  readonly #db: SqlDatabase;
  readonly #names: TableNames;
  /** The function a write's first CTE calls: sets `lock_timeout`, gives the deadline. */
  readonly #bound: string;
  /** The function a write's RETURNING calls: raises past the deadline, rolling the write back. */
  readonly #inTime: string;

  constructor(options: PostgresSessionStoreOptions) {
    checkOptionNames('PostgresSessionStore', options, OPTION_NAMES);
    if (options.ttlSeconds !== undefined) checkInteger('PostgresSessionStore', 'ttlSeconds', options.ttlSeconds);
    this.ttlSeconds = options.ttlSeconds;
    this.#names = tableNames(options);
    this.#db = openDatabase(options);
    this.tables = { sessions: this.#names.table('sessions'), turnLeases: this.#names.table('turn_leases') };
    this.#bound = this.#names.table('sessions_bound');
    this.#inTime = this.#names.table('sessions_in_time');
  }

  /** Which engine the store runs on: `'server'` (a pg Pool) or `'embedded'` (PGlite). */
  get engine(): SqlDatabase['engine'] {
    return this.#db.engine;
  }

  /**
   * The stored session and its etag, or undefined; with `userId`, undefined too for a session of
   * another user or of none.
   * @throws SessionStateError naming the row when it does not hold session JSON of that id.
   * @throws ConfigurationError for a blank id or `userId`, before any I/O.
   * @throws BackendUnavailableError when the database cannot be reached within `timeoutMs`.
   */
  async get(sessionId: string, options: GetSessionOptions = {}): Promise<StoredSession | undefined> {
    checkSessionId(sessionId);
    if (options.userId !== undefined) checkId(options.userId, 'userId of a session read');
    const call = this.#call('get', sessionId, options.signal);
    await this.#ready(call);
    const { rows } = await this.#db.run<SessionRow>(
      `SELECT session_id, session, etag FROM ${this.tables.sessions} WHERE id_key = $1 AND ${LIVE}`,
      [keyOf(sessionId)],
      call,
    );
    const row = rows[0];
    if (row === undefined) return undefined;
    return sessionOfUser(this.#readSession(sessionId, row), options.userId);
  }

  /**
   * Stores a session and resolves to its new etag, in one conditional statement.
   * @throws ConcurrencyError when `ifMatch` does not hold (nothing is written).
   * @throws SessionStateError for a session that is not session JSON; ConfigurationError for a blank id, both before any I/O.
   * @throws BackendUnavailableError when the database cannot be reached within `timeoutMs`.
   */
  async set(session: SessionJson, options: SetSessionOptions = {}): Promise<string> {
    const checked = checkSessionForWrite(session);
    const { sessionId, metadata } = checked;
    const call = this.#call('set', sessionId, options.signal);
    await this.#ready(call);
    const etag = randomUUID();
    const userId = metadata.userId;
    const values = [
      keyOf(sessionId),
      JSON.stringify(sessionId),
      Buffer.from(sessionId, 'utf8'),
      userId === undefined ? null : keyOf(userId),
      Date.parse(metadata.updatedAt),
      JSON.stringify(metadata),
      JSON.stringify(checked),
      etag,
      this.ttlSeconds ?? null,
    ];
    const expires = `CASE WHEN $9::integer IS NULL THEN NULL ELSE clock_timestamp() + $9::integer * interval '1 second' END`;
    // $10 the time the statement has (see `#write`).
    const insert = `WITH bound AS MATERIALIZED (SELECT ${this.#bound}($10::integer) AS deadline)
      INSERT INTO ${this.tables.sessions} (id_key, session_id, id_order, user_key, updated_ms, metadata, session, etag, expires_at)
      SELECT $1, $2, $3, $4, $5, $6, $7, $8, ${expires} FROM bound`;
    const inTime = `${this.#inTime}((SELECT deadline FROM bound))`;
    const assign =
      'session_id = EXCLUDED.session_id, id_order = EXCLUDED.id_order, user_key = EXCLUDED.user_key, updated_ms = EXCLUDED.updated_ms, metadata = EXCLUDED.metadata, session = EXCLUDED.session, etag = EXCLUDED.etag, expires_at = EXCLUDED.expires_at';
    const { ifMatch } = options;
    let written: number;
    if (ifMatch === undefined) {
      written = (await this.#write(`${insert} ON CONFLICT (id_key) DO UPDATE SET ${assign} RETURNING ${inTime}`, values, call)).rows.length;
    } else if (ifMatch === null) {
      // Creates only when nothing live is stored: an expired row is taken over.
      const target = this.tables.sessions;
      written = (
        await this.#write(
          `${insert} ON CONFLICT (id_key) DO UPDATE SET ${assign} WHERE ${target}.expires_at IS NOT NULL AND ${target}.expires_at <= clock_timestamp() RETURNING ${inTime}`,
          values,
          call,
        )
      ).rows.length;
    } else {
      written = (
        await this.#write(
          `WITH bound AS MATERIALIZED (SELECT ${this.#bound}($11::integer) AS deadline)
           UPDATE ${this.tables.sessions} SET session_id = $2, id_order = $3, user_key = $4, updated_ms = $5, metadata = $6, session = $7, etag = $8, expires_at = ${expires}
             FROM bound WHERE id_key = $1 AND etag = $10 AND ${LIVE} RETURNING ${this.#inTime}(bound.deadline)`,
          [...values, ifMatch],
          call,
        )
      ).rows.length;
    }
    if (written === 0) {
      throw new ConcurrencyError(
        sessionId,
        ifMatch === null
          ? `Session ${shortId(sessionId)} already exists in the store; load it before saving over it.`
          : `Session ${shortId(sessionId)} was saved or deleted by another writer since it was loaded (etag ${shortId(String(ifMatch))} is not the stored one); load it again and retry.`,
      );
    }
    return etag;
  }

  /**
   * Deletes a session; resolves to whether one was stored (an expired one counts as not stored).
   * Its turn leases are left to expire.
   * @throws ConfigurationError for a blank id; BackendUnavailableError when the database cannot be reached within `timeoutMs`.
   */
  async delete(sessionId: string, options: { signal?: AbortSignal } = {}): Promise<boolean> {
    checkSessionId(sessionId);
    const call = this.#call('delete', sessionId, options.signal);
    await this.#ready(call);
    const { rows } = await this.#write<{ live: boolean }>(
      `WITH bound AS MATERIALIZED (SELECT ${this.#bound}($2::integer) AS deadline)
       DELETE FROM ${this.tables.sessions} USING bound WHERE id_key = $1 RETURNING ${LIVE} AS live, ${this.#inTime}(bound.deadline)`,
      [keyOf(sessionId)],
      call,
    );
    return rows.some((row) => row.live === true);
  }

  /**
   * One page of sessions, newest first (`metadata.updatedAt`, then session id by UTF-8 bytes,
   * descending), with keyset cursors; `total` for a user's listing (counted on an index), never for
   * the listing of every session (a count of the whole table).
   * @throws ConfigurationError for a `limit` out of 1-100 or a blank `userId`.
   * @throws InvalidInputError for a malformed cursor or one of another listing.
   * @throws SessionStateError naming the row when a row's metadata is not readable.
   */
  async list(options: ListSessionsOptions = {}): Promise<SessionPage> {
    const { userId, limit, cursor } = checkListOptions(options);
    const call = this.#call('list', userId === undefined ? '' : `of user ${shortId(userId)}`, options.signal, 'list sessions');
    await this.#ready(call);
    const params: unknown[] = [];
    const where = [LIVE];
    if (userId !== undefined) {
      params.push(keyOf(userId));
      where.push(`user_key = $${params.length}`);
    }
    const filter = where.join(' AND ');
    if (cursor !== undefined) {
      params.push(cursor.updatedAtMs, Buffer.from(cursor.sessionId, 'utf8'), JSON.stringify(cursor.sessionId));
      const [t, o, j] = [params.length - 2, params.length - 1, params.length];
      where.push(
        `(updated_ms < $${t} OR (updated_ms = $${t} AND (id_order < $${o} OR (id_order = $${o} AND session_id COLLATE "C" < $${j}))))`,
      );
    }
    params.push(limit + 1);
    const pageSql = `SELECT session_id, metadata FROM ${this.tables.sessions} WHERE ${where.join(' AND ')}
      ORDER BY updated_ms DESC, id_order DESC, session_id COLLATE "C" DESC LIMIT $${params.length}`;
    const result = await this.#db.transaction(async (tx) => {
      const page = await tx.query<SummaryRow>(pageSql, params);
      if (userId === undefined) return { page, total: undefined };
      const count = await tx.query<{ n: string | number }>(
        `SELECT count(*) AS n FROM ${this.tables.sessions} WHERE ${filter}`,
        params.slice(0, 1),
      );
      return { page, total: Number(count.rows[0]?.n ?? 0) };
    }, call);
    const summaries = result.page.rows.map((row) => this.#readSummary(row, userId));
    const sessions = summaries.slice(0, limit);
    const page: SessionPage = { sessions };
    if (result.total !== undefined) page.total = result.total;
    const last = sessions[sessions.length - 1];
    if (summaries.length > limit && last !== undefined) page.nextCursor = encodeSessionCursor(last, userId);
    return page;
  }

  /**
   * Takes or renews the lease `lease.turn` of a session for `lease.holder`, in one statement timed
   * by the database's clock (so processes on several machines agree); resolves to false, changing
   * nothing, while another holder's lease is live.
   * @throws ConfigurationError for a blank session id or a lease `checkTurnLease` refuses, before any I/O.
   */
  async leaseTurn(sessionId: string, lease: TurnLease): Promise<boolean> {
    checkTurnLease('PostgresSessionStore.leaseTurn', sessionId, lease);
    const call = this.#call('leaseTurn', sessionId, lease.signal);
    await this.#ready(call);
    const leases = this.tables.turnLeases;
    const { rows } = await this.#write(
      `WITH bound AS MATERIALIZED (SELECT ${this.#bound}($5::integer) AS deadline)
       INSERT INTO ${leases} (session_key, turn, holder, expires_at) SELECT $1, $2, $3, clock_timestamp() + $4::integer * interval '1 millisecond' FROM bound
       ON CONFLICT (session_key, turn) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
       WHERE ${leases}.holder = EXCLUDED.holder OR ${leases}.expires_at <= clock_timestamp()
       RETURNING ${this.#inTime}((SELECT deadline FROM bound))`,
      [keyOf(sessionId), lease.turn, lease.holder, lease.ttlMs],
      call,
    );
    return rows.length > 0;
  }

  /**
   * Ends the lease `lease.turn` of a session if `lease.holder` holds it; resolves to whether it
   * ended a live lease of that holder.
   * @throws ConfigurationError for a blank session id or a lease `checkTurnLease` refuses, before any I/O.
   */
  async releaseTurn(sessionId: string, lease: Omit<TurnLease, 'ttlMs'>): Promise<boolean> {
    checkTurnLease('PostgresSessionStore.releaseTurn', sessionId, lease, false);
    const call = this.#call('releaseTurn', sessionId, lease.signal);
    await this.#ready(call);
    const { rows } = await this.#write<{ live: boolean }>(
      `WITH bound AS MATERIALIZED (SELECT ${this.#bound}($4::integer) AS deadline)
       DELETE FROM ${this.tables.turnLeases} USING bound WHERE session_key = $1 AND turn = $2 AND holder = $3
       RETURNING expires_at > clock_timestamp() AS live, ${this.#inTime}(bound.deadline)`,
      [keyOf(sessionId), lease.turn, lease.holder],
      call,
    );
    return rows.some((row) => row.live === true);
  }

  /**
   * Removes expired sessions (with `ttlSeconds`) and expired turn leases; resolves to how many
   * sessions it removed. Run it now and then (a cron job); reads ignore expired rows either way.
   * @throws BackendUnavailableError when the database cannot be reached within `timeoutMs`.
   */
  async deleteExpired(options: { signal?: AbortSignal } = {}): Promise<number> {
    const call = this.#call('deleteExpired', '', options.signal, 'delete expired sessions');
    await this.#ready(call);
    return this.#db.transaction(async (tx) => {
      await tx.query(`DELETE FROM ${this.tables.turnLeases} WHERE expires_at <= clock_timestamp()`);
      const { rows } = await tx.query(
        `DELETE FROM ${this.tables.sessions} WHERE expires_at IS NOT NULL AND expires_at <= clock_timestamp() RETURNING 1`,
      );
      return rows.length;
    }, call);
  }

  /**
   * One write as one statement (`SqlDatabase.runSelfBounded`): its last parameter is the time it
   * has, which its `bound` CTE turns into `lock_timeout` and the deadline its RETURNING checks.
   */
  #write<Row = Record<string, unknown>>(text: string, params: readonly unknown[], call: SqlCallOptions) {
    return this.#db.runSelfBounded<Row>(text, (remainingMs) => [...params, remainingMs], call);
  }

  #ready(call: SqlCallOptions): Promise<void> {
    return ensureSchema(this.#db, this.#names, COMPONENT, sessionMigrations(this.#names)).catch((error: unknown) => {
      if (call.signal?.aborted) throw call.signal.reason;
      throw error;
    });
  }

  #call(method: string, sessionId: string, signal: AbortSignal | undefined, operation?: string): SqlCallOptions {
    return {
      operation: operation ?? `${method} of session ${shortId(sessionId)}`,
      sessionId,
      signal,
    };
  }

  #readSession(sessionId: string, row: SessionRow): StoredSession {
    const where = `postgres:${this.tables.sessions}[${shortId(sessionId)}]`;
    if (row.session_id !== JSON.stringify(sessionId)) {
      throw new SessionStateError(
        `${where}.session_id`,
        `holds ${shortId(String(row.session_id))}, not this session's id; delete the row`,
        {
          sessionId,
        },
      );
    }
    if (typeof row.etag !== 'string' || row.etag === '') {
      throw new SessionStateError(
        `${where}.etag`,
        'is not an etag (the row was edited by hand); delete the row or save the session again',
        {
          sessionId,
        },
      );
    }
    if (typeof row.session !== 'string') {
      throw new SessionStateError(`${where}.session`, 'is not session JSON text; delete the row', { sessionId });
    }
    let session: SessionJson;
    try {
      session = parseSessionJson(row.session, { sessionId });
    } catch (error) {
      if (error instanceof SessionStateError) {
        throw new SessionStateError(`${where}.session`, `is not session JSON (${error.message}); delete the row`, {
          cause: error,
          sessionId,
        });
      }
      throw error;
    }
    if (session.sessionId !== sessionId) {
      throw new SessionStateError(`${where}.session`, `holds session ${shortId(String(session.sessionId))}; delete the row`, { sessionId });
    }
    return { session, etag: row.etag };
  }

  #readSummary(row: SummaryRow, userId: string | undefined): SessionSummary {
    const sessionId = parseJsonString(row.session_id);
    const where = `postgres:${this.tables.sessions}[${sessionId === undefined ? String(row.session_id).slice(0, 80) : shortId(sessionId)}]`;
    if (sessionId === undefined) {
      throw new SessionStateError(`${where}.session_id`, 'is not a JSON string (the row was edited by hand); delete the row');
    }
    let metadata: unknown;
    try {
      metadata = typeof row.metadata === 'string' ? JSON.parse(row.metadata) : undefined;
    } catch {
      metadata = undefined;
    }
    if (!isPlainObject(metadata) || typeof metadata.updatedAt !== 'string' || typeof metadata.createdAt !== 'string') {
      throw new SessionStateError(
        `${where}.metadata`,
        'is not session metadata (the row was edited by hand); save the session again or delete the row',
        {
          sessionId,
        },
      );
    }
    if (userId !== undefined && metadata.userId !== userId) {
      throw new SessionStateError(
        `${where}.metadata.userId`,
        `does not match the row's owner key (the row was edited by hand); save the session again`,
        {
          sessionId,
        },
      );
    }
    return { sessionId, metadata: metadata as unknown as SessionMetadata };
  }
}

/** The string a JSON string literal holds, or undefined for anything else. */
export function parseJsonString(text: unknown): string | undefined {
  if (typeof text !== 'string') return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}
