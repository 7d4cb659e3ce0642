import { createHash } from 'node:crypto';
import { BackendUnavailableError, ConcurrencyError, ConfigurationError, CtxError, InvalidInputError } from '@ctx/core';
import { withDeadline } from '@ctx/core/backend';

/** The result of one statement: its rows and how many rows it changed. */
export interface SqlResult<Row> {
  rows: Row[];
  /** Rows inserted, updated or deleted (0 for a `SELECT` on PGlite, which reports only changes). */
  rowCount: number;
}

/** Runs one parameterised statement (`$1`, `$2`, ...). The part of a connection every query uses. */
export interface SqlQueryable {
  query<Row = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<SqlResult<Row>>;
}

/** The part of a `pg` pool client ctx uses (`pool.connect()` gives one). */
export interface PgPoolClientLike {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }>;
  /** Returns the client to its pool; an `Error` (or `true`) destroys the connection instead. */
  release(destroy?: Error | boolean): void;
  /** `pg` emits `'error'` on a checked-out client whose connection drops; ctx listens while it holds the client. */
  on?(event: 'error', listener: (error: Error) => void): unknown;
  /** Removes the `'error'` listener when ctx hands the client back. */
  removeListener?(event: 'error', listener: (error: Error) => void): unknown;
}

/** The part of a `pg` `Pool` ctx uses. A `Pool`, not a single `Client`: turns run in parallel. */
export interface PgPoolLike {
  connect(): Promise<PgPoolClientLike>;
}

/** The part of a PGlite database (`@electric-sql/pglite`) ctx uses. */
export interface PGliteLike {
  query(text: string, params?: unknown[]): Promise<{ rows: unknown[]; affectedRows?: number }>;
  transaction<T>(
    fn: (tx: { query(text: string, params?: unknown[]): Promise<{ rows: unknown[]; affectedRows?: number }> }) => Promise<T>,
  ): Promise<T>;
}

/**
 * The database a `@ctx/postgres` provider or store uses: a `pg` `Pool` (a PostgreSQL server) or a
 * PGlite database (embedded, in a directory or in memory). Both run the same SQL.
 */
export type PostgresClient = PgPoolLike | PGliteLike;

/** Which kind of database a client is. */
export type PostgresEngine = 'server' | 'embedded';

/** A connection with transactions and deadlines, the one thing the providers and stores talk to. */
export interface SqlDatabase extends SqlQueryable {
  readonly engine: PostgresEngine;
  /**
   * Runs `fn` in one transaction (`BEGIN` ... `COMMIT`; `ROLLBACK` when it throws). On PGlite, an
   * abandoned transaction fails at its next statement and is rolled back, never committed. On a server,
   * each statement in it carries the call's remaining time as `statement_timeout`, so the server
   * cancels a statement (a lock wait included) by the deadline, and a transaction abandoned at the
   * deadline or by `signal` destroys its connection: `COMMIT` is never sent, so nothing in it is
   * applied, and the server rolls it back.
   */
  transaction<T>(fn: (tx: SqlQueryable) => Promise<T>, call: SqlCallOptions): Promise<T>;
  /**
   * One statement, bounded like `transaction`. A statement other than a plain `SELECT` runs in its
   * own transaction, so one abandoned at its deadline (on a server while it waits on a row lock, on
   * PGlite while it waits for its turn on the one connection) is never applied later.
   */
  run<Row = Record<string, unknown>>(text: string, params: readonly unknown[], call: SqlCallOptions): Promise<SqlResult<Row>>;
  /**
   * One statement that keeps the deadline itself, sent alone: on a server no `BEGIN` and `COMMIT`
   * round trips, the statement runs in its own implicit transaction, which commits when it ends.
   * `params` gets the time the statement has in ms (at least 1): nine tenths of what is left of the
   * call when it is sent, so the server gives up before the caller does. The statement must give up
   * within it (a server function that sets `lock_timeout` to it and raises, rolling back, when it
   * ends past it). The caller's `signal` is checked until the statement is sent; once sent, it
   * runs to its own end (bounded as above), since closing the connection would not stop it. On
   * PGlite it runs as `run` runs a write (rolled back when abandoned).
   */
  runSelfBounded<Row = Record<string, unknown>>(
    text: string,
    params: (remainingMs: number) => readonly unknown[],
    call: SqlCallOptions,
  ): Promise<SqlResult<Row>>;
}

/** What one database call is and how long it may take. */
export interface SqlCallOptions {
  /** What the call does, for messages: e.g. `saveMessages for session "s1"`. No message text. */
  operation: string;
  signal?: AbortSignal | undefined;
  /** Default: the database's `timeoutMs`. */
  timeoutMs?: number;
  /** The session the call is for, named by a `ConcurrencyError` it fails with. */
  sessionId?: string;
  /**
   * The statement's text is one of a fixed few (only its parameters vary): on a server, each
   * connection parses and plans it once, as a named prepared statement, and then only binds and runs
   * it. Default false. PGlite, and a pool whose clients are not `pg` clients, run it as text.
   */
  prepare?: boolean;
}

const BACKEND = 'postgres';

const isPool = (client: PostgresClient): client is PgPoolLike =>
  typeof (client as PgPoolLike).connect === 'function' && typeof (client as PGliteLike).transaction !== 'function';
const isPGlite = (client: PostgresClient): client is PGliteLike =>
  typeof (client as PGliteLike).transaction === 'function' && typeof (client as PGliteLike).query === 'function';

/** A `pg` `Client`, or a client checked out of a pool: one connection, which has connection parameters (a `Pool` has none). */
const isSingleConnection = (client: object): boolean =>
  'connectionParameters' in client || typeof (client as { release?: unknown }).release === 'function';

/**
 * Wraps a `pg` `Pool` or a PGlite database. `timeoutMs` bounds every call (default 5000).
 * @throws ConfigurationError for anything else (a single `pg` `Client` included: give a `Pool`).
 */
export function sqlDatabase(client: PostgresClient, timeoutMs = 5000): SqlDatabase {
  if (client === null || typeof client !== 'object')
    throw new ConfigurationError('@ctx/postgres needs `client`: a pg Pool or a PGlite database.');
  if (isPGlite(client)) return pgliteDatabase(client, timeoutMs);
  if (isSingleConnection(client))
    throw new ConfigurationError(
      '@ctx/postgres: `client` is a single pg Client (one connection), which cannot run turns in parallel nor be closed on its own when a call is abandoned: pass a pg Pool (`new pg.Pool({ connectionString })`).',
    );
  if (isPool(client)) return poolDatabase(client, timeoutMs);
  throw new ConfigurationError(
    '@ctx/postgres: `client` is neither a pg Pool (it has no connect()) nor a PGlite database (it has no transaction()). A single pg Client cannot run turns in parallel: pass a Pool.',
  );
}

function bounded<T>(call: SqlCallOptions, timeoutMs: number, run: (signal: AbortSignal) => Promise<T>): Promise<T> {
  return withDeadline(run, {
    timeoutMs: call.timeoutMs ?? timeoutMs,
    signal: call.signal,
    backend: BACKEND,
    operation: `PostgreSQL ${call.operation}`,
    mapError: (error) => toCtxError(error, call.operation, call.sessionId),
  });
}

/** The time left until `deadlineAt` in whole ms, at least 1 (a statement is always given some time; the caller's deadline ends it). */
const remaining = (deadlineAt: number): number => Math.max(1, Math.ceil(deadlineAt - Date.now()));

/**
 * The time a statement that bounds itself gets on the server: nine tenths of what is left, so it
 * ends (applied or rolled back) before the caller's deadline and the caller hears which.
 */
const serverShare = (deadlineAt: number): number => {
  const left = remaining(deadlineAt);
  return Math.max(1, left - Math.ceil(left / 10));
};

/** The prepared statement name of each text prepared so far (a digest of the text, so one text has one name on every connection). */
const statementNames = new Map<string, string>();

/** The name a text is prepared under: `ctx_` and 24 hex digits of its SHA-1 (PostgreSQL names hold 63 bytes). */
function statementName(text: string): string {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `ctx_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`;
    statementNames.set(text, name);
  }
  return name;
}

/** Whether a pool client is a `pg` client (it has connection parameters), which takes a query config with a statement `name`. */
const takesNamedStatements = (client: PgPoolClientLike): boolean =>
  typeof (client as { connectionParameters?: unknown }).connectionParameters === 'object';

/** A `pg` client's query taking a config: `name` makes it a prepared statement of the connection. */
type NamedQuery = (config: { name: string; text: string; values: unknown[] }) => Promise<{ rows: unknown[]; rowCount: number | null }>;

const rowsOf = <Row>(result: { rows: unknown[]; rowCount?: number | null; affectedRows?: number }): SqlResult<Row> => ({
  rows: result.rows as Row[],
  rowCount: result.rowCount ?? result.affectedRows ?? 0,
});

function poolDatabase(pool: PgPoolLike, timeoutMs: number): SqlDatabase {
  // Every call takes its own pool client, so a call abandoned at its deadline can destroy the
  // connection it holds instead of handing a busy connection back to the pool. The server notices a
  // closed connection only when it next reads or writes it: what keeps an abandoned write from
  // landing is the transaction it runs in (its COMMIT is never sent), and what ends its lock wait is
  // the statement_timeout set at BEGIN.
  const withClient = <T>(call: SqlCallOptions, fn: (client: PgPoolClientLike, deadlineAt: number, signal: AbortSignal) => Promise<T>) => {
    const deadlineAt = Date.now() + (call.timeoutMs ?? timeoutMs);
    return bounded(call, timeoutMs, async (signal) => {
      const client = await pool.connect();
      if (signal.aborted) {
        client.release();
        throw signal.reason;
      }
      let released = false;
      const release = (destroy?: Error | boolean) => {
        if (released) return;
        released = true;
        client.release(destroy);
      };
      // Abandoned (deadline or caller's signal): close the connection now, not when the statement
      // under way ends, so nothing more (a COMMIT above all) is sent on it.
      const onAbort = () => release(new Error(`abandoned: ${call.operation}`));
      signal.addEventListener('abort', onAbort, { once: true });
      // A connection that drops while the client is checked out emits 'error' on it (the pool only
      // listens on idle clients): unheard, that event would crash the process. The query under way
      // fails with it anyway, and the client is destroyed on release. The listener stays on a
      // destroyed client, which may still report its closing.
      let broken: Error | undefined;
      const onError = (error: Error) => {
        broken = error;
      };
      client.on?.('error', onError);
      try {
        return await fn(client, deadlineAt, signal);
      } catch (error) {
        if (isConnectionError(error)) broken = error as Error;
        throw error;
      } finally {
        signal.removeEventListener('abort', onAbort);
        if (!released && !broken) client.removeListener?.('error', onError);
        release(broken ?? (signal.aborted ? true : undefined));
      }
    });
  };
  // BEGIN with the call's remaining time as the server's own limit on each statement (`SET LOCAL`
  // ends with the transaction): a statement waiting on a lock is cancelled by the server instead of
  // waiting past the deadline. One round trip, like a bare BEGIN.
  const begin = (client: PgPoolClientLike, deadlineAt: number) =>
    client.query(`BEGIN; SET LOCAL statement_timeout = ${remaining(deadlineAt)}`);
  const inTransaction = async <T>(client: PgPoolClientLike, deadlineAt: number, signal: AbortSignal, fn: () => Promise<T>): Promise<T> => {
    await begin(client, deadlineAt);
    try {
      const result = await fn();
      if (signal.aborted) throw signal.reason;
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    }
  };
  const queryable = (client: PgPoolClientLike): SqlQueryable => ({
    query: async <Row>(text: string, params?: readonly unknown[]) => rowsOf<Row>(await client.query(text, params as unknown[])),
  });
  // A fixed statement by name: the connection parses and plans it on its first use only.
  const prepared = (client: PgPoolClientLike, prepare: boolean | undefined): SqlQueryable =>
    prepare && takesNamedStatements(client)
      ? {
          query: async <Row>(text: string, params?: readonly unknown[]) =>
            rowsOf<Row>(
              await (client.query as unknown as NamedQuery).call(client, {
                name: statementName(text),
                text,
                values: (params ?? []) as unknown[],
              }),
            ),
        }
      : queryable(client);
  const database: SqlDatabase = {
    engine: 'server',
    query: (text, params) => database.run(text, params ?? [], { operation: 'query' }),
    // A single statement outside a transaction commits when the server runs it: one abandoned while
    // it waits on a row lock would be applied when the lock frees, after the caller was told it
    // failed (the server does not notice the closed connection until it answers). In a transaction,
    // an abandoned statement is never committed. A plain SELECT changes nothing, so it runs alone.
    run: (text, params, call) =>
      withClient(call, (client, deadlineAt, signal) =>
        isPlainSelect(text)
          ? prepared(client, call.prepare).query(text, params)
          : inTransaction(client, deadlineAt, signal, () => prepared(client, call.prepare).query(text, params)),
      ),
    transaction: (fn, call) =>
      withClient(call, (client, deadlineAt, signal) => inTransaction(client, deadlineAt, signal, () => fn(queryable(client)))),
    runSelfBounded: (text, params, { signal, ...call }) => {
      if (signal?.aborted) return Promise.reject(signal.reason);
      return withClient(call, (client, deadlineAt) => {
        if (signal?.aborted) throw signal.reason;
        return prepared(client, call.prepare).query(text, params(serverShare(deadlineAt)));
      });
    },
  };
  return database;
}

function pgliteDatabase(db: PGliteLike, timeoutMs: number): SqlDatabase {
  const queryable = (q: PGliteLike | Parameters<Parameters<PGliteLike['transaction']>[0]>[0]): SqlQueryable => ({
    query: async <Row>(text: string, params?: readonly unknown[]) => rowsOf<Row>(await q.query(text, params as unknown[])),
  });
  const direct = queryable(db);
  // PGlite is one connection: its transactions run one at a time, in the order they were asked for,
  // and a call abandoned at its deadline still waits in that queue or runs on. An abandoned
  // transaction throws at its next statement and before it would commit, so PGlite rolls it back.
  const inTransaction = <T>(signal: AbortSignal, fn: (tx: SqlQueryable) => Promise<T>) =>
    db.transaction(async (tx) => {
      const inner = queryable(tx);
      const checked: SqlQueryable = {
        query: (text, params) => {
          if (signal.aborted) return Promise.reject(signal.reason);
          return inner.query(text, params);
        },
      };
      const result = await fn(checked);
      if (signal.aborted) throw signal.reason;
      return result;
    });
  const database: SqlDatabase = {
    engine: 'embedded',
    query: (text, params) => database.run(text, params ?? [], { operation: 'query' }),
    // A write runs as a transaction of its own, so one abandoned while it waited for its turn is not applied.
    run: (text, params, call) =>
      bounded(call, timeoutMs, (signal) =>
        isPlainSelect(text) ? direct.query(text, params) : inTransaction(signal, (tx) => tx.query(text, params)),
      ),
    transaction: (fn, call) => bounded(call, timeoutMs, (signal) => inTransaction(signal, fn)),
    runSelfBounded: (text, params, call) => {
      const deadlineAt = Date.now() + (call.timeoutMs ?? timeoutMs);
      return bounded(call, timeoutMs, (signal) => inTransaction(signal, (tx) => tx.query(text, params(remaining(deadlineAt)))));
    },
  };
  return database;
}

/** Whether `text` is a `SELECT` that neither locks rows nor writes (so running it alone is safe to abandon). */
const isPlainSelect = (text: string): boolean =>
  /^\s*SELECT\b/i.test(text) && !/\bFOR\s+(UPDATE|NO\s+KEY\s+UPDATE|SHARE|KEY\s+SHARE)\b|\b(nextval|setval|pg_advisory)/i.test(text);

const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'EAI_AGAIN']);

/** Whether an error means the connection is gone (the server stopped, the network dropped). */
export function isConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (CONNECTION_CODES.has(code)) return true;
    // 08: connection exception; 57P01-57P03: admin shutdown, crash shutdown, cannot connect now.
    if (code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03') return true;
  }
  return /Connection terminated|connection is closed|Client has encountered a connection error|timeout exceeded when trying to connect/i.test(
    error.message,
  );
}

/** The SQLSTATE of a PostgreSQL error, if it has one. */
export function sqlState(error: unknown): string | undefined {
  const code = error instanceof Error ? (error as { code?: unknown }).code : undefined;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/**
 * Turns a driver error into a ctx error: a lost connection, a full server or a statement cancelled
 * by the server is `BackendUnavailableError`; a serialization failure or deadlock is
 * `ConcurrencyError` (try again); a value PostgreSQL refuses is `InvalidInputError`; ctx errors and
 * aborts pass through. The message names the operation, never the values.
 */
export function toCtxError(error: unknown, operation: string, sessionId = ''): Error {
  if (error instanceof CtxError || CtxError.isInstance(error)) return error as Error;
  const state = sqlState(error);
  const detail = error instanceof Error ? error.message : String(error);
  if (state === '40001' || state === '40P01') {
    return new ConcurrencyError(sessionId, `PostgreSQL ${operation} met a concurrent write (${state}: ${detail}); try again.`, {
      cause: error,
    });
  }
  if (state === '57014') {
    return new BackendUnavailableError(
      BACKEND,
      `PostgreSQL ${operation} did not finish within its deadline: the server cancelled it (${detail}); nothing of it was applied. Raise timeoutMs if the database is just slow or busy.`,
      { cause: error },
    );
  }
  if (state === '55P03') {
    return new BackendUnavailableError(
      BACKEND,
      `PostgreSQL ${operation} did not finish within its deadline: it waited on a lock held by another transaction until the server gave up (${detail}); nothing of it was applied. Raise timeoutMs if the database is just busy.`,
      { cause: error },
    );
  }
  if (state?.startsWith('22') || state === '54000') {
    return new InvalidInputError(`PostgreSQL ${operation} refused a value (${state}: ${detail}).`, { cause: error });
  }
  if (state === '42501' || state === '28000' || state === '28P01' || state === '3D000') {
    return new ConfigurationError(`PostgreSQL ${operation} was refused (${state}: ${detail}): check the database, role and privileges.`, {
      cause: error,
    });
  }
  const reason = isConnectionError(error) ? 'the connection failed' : state ? `the server answered ${state}` : 'the driver failed';
  return new BackendUnavailableError(BACKEND, `PostgreSQL ${operation} failed: ${reason} (${detail}).`, { cause: error });
}
