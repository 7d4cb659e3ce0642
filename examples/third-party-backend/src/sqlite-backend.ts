// A history provider and session store on SQLite through better-sqlite3, written from the guide
// "Publish your own backend" of @ctx/provider-tests (its template, example-backend.ts, with
// ExampleDatabase replaced by SQL).
import {
  BackendUnavailableError,
  type ClearHistoryArgs,
  ConcurrencyError,
  ConfigurationError,
  checkHistoryBatch,
  checkInteger,
  checkListOptions,
  checkSessionForWrite,
  checkSessionId,
  encodeSessionCursor,
  findRetriedTurn,
  type GetHistoryArgs,
  type GetSessionOptions,
  HistoryProvider,
  type HistoryProviderOptions,
  type ListSessionsOptions,
  Message,
  messageIdConflict,
  type PopHistoryArgs,
  parseSessionJson,
  type SaveHistoryArgs,
  type SessionJson,
  type SessionPage,
  type SessionStore,
  type SessionSummary,
  type SetSessionOptions,
  type StoredSession,
  sameMessageContent,
  SessionStateError,
  sessionOfUser,
  shortId,
  withDeadline,
} from '@ctx/core/backend';
import Database from 'better-sqlite3';

/** A better-sqlite3 connection. */
export type SqliteDatabase = Database.Database;

/** Options of both SQLite backends: which database, and how long a call may wait for a lock. */
export interface SqliteBackendOptions {
  /**
   * The database: a better-sqlite3 connection you opened (yours to close), or a file name (opened
   * here, closed by `close()`). Every connection to one file is one backend.
   */
  database: SqliteDatabase | string;
  /**
   * How long a call may wait, in milliseconds: for the write lock another connection holds
   * (SQLite's `busy_timeout`, set on connections opened here) and for the caller (`withDeadline`).
   * Default 5000.
   */
  timeoutMs?: number;
}

/**
 * An id as a BLOB key: its UTF-16 code units, big-endian. Exact (a lone surrogate stays itself,
 * where binding the string as TEXT converts it to UTF-8 and every lone surrogate to U+FFFD), and
 * SQLite compares BLOBs bytewise, which for big-endian code units is JavaScript's string order.
 */
export function idKey(id: string): Buffer {
  return Buffer.from(id, 'utf16le').swap16();
}

const schemaReady = new WeakSet<SqliteDatabase>();

/** Creates the two tables (once per connection; `IF NOT EXISTS` makes it safe on every start). */
function ensureSchema(db: SqliteDatabase): void {
  if (schemaReady.has(db)) return;
  db.exec(`
    CREATE TABLE IF NOT EXISTS ctx_messages (
      source BLOB NOT NULL,
      session BLOB NOT NULL,
      seq INTEGER NOT NULL,
      message_id BLOB NOT NULL,
      json TEXT NOT NULL,
      PRIMARY KEY (source, session, seq)
    );
    CREATE UNIQUE INDEX IF NOT EXISTS ctx_messages_by_id ON ctx_messages (source, session, message_id);
    CREATE TABLE IF NOT EXISTS ctx_sessions (
      session_key BLOB PRIMARY KEY,
      user_key BLOB,
      updated_at_ms INTEGER NOT NULL,
      etag TEXT NOT NULL,
      json TEXT NOT NULL,
      summary TEXT NOT NULL
    );
    CREATE INDEX IF NOT EXISTS ctx_sessions_by_time ON ctx_sessions (updated_at_ms DESC, session_key DESC);
    CREATE INDEX IF NOT EXISTS ctx_sessions_by_user ON ctx_sessions (user_key, updated_at_ms DESC, session_key DESC);
  `);
  schemaReady.add(db);
}

/** SQLite result codes of a failure that may pass: another connection's lock, or the disk. */
const TRANSIENT = /^SQLITE_(BUSY|LOCKED|IOERR|FULL|NOMEM|INTERRUPT)/;

/**
 * What opening or preparing `database` threw, as a CtxError: `BackendUnavailableError` for a lock
 * held past `busy_timeout` or an I/O failure (retry later), `ConfigurationError` for anything else
 * (a path that cannot be opened, a file that is not a database, a read-only one, bad options).
 */
function connectError(owner: string, database: string, error: unknown): Error {
  const code = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : '';
  const reason = error instanceof Error ? error.message : String(error);
  const what = `${owner}: could not open the SQLite database ${JSON.stringify(database)}`;
  if (TRANSIENT.test(code)) return new BackendUnavailableError('sqlite', `${what} (${code}: ${reason}); retry later.`, { cause: error });
  return new ConfigurationError(
    `${what} (${code === '' ? reason : `${code}: ${reason}`}). Pass a writable file name (its directory must exist) or an open better-sqlite3 Database.`,
    { cause: error },
  );
}

/** The connection of `options` (opened when given a file name) and whether it is ours to close. */
function connect(owner: string, options: SqliteBackendOptions): { db: SqliteDatabase; owned: boolean; timeoutMs: number } {
  const timeoutMs = checkInteger(owner, 'timeoutMs', options.timeoutMs ?? 5000);
  const { database } = options;
  if (typeof database === 'string') {
    if (database.trim() === '')
      throw new ConfigurationError(`${owner}: database must be a file name or a better-sqlite3 Database, got "".`);
    let db: SqliteDatabase | undefined;
    try {
      db = new Database(database, { timeout: timeoutMs });
      db.pragma('journal_mode = WAL');
      ensureSchema(db);
      return { db, owned: true, timeoutMs };
    } catch (error) {
      db?.close(); // opened here, so closed here: a failed constructor leaves no connection behind
      throw connectError(owner, database, error);
    }
  }
  if (typeof database !== 'object' || database === null || typeof database.prepare !== 'function') {
    throw new ConfigurationError(`${owner}: database must be a file name or a better-sqlite3 Database.`);
  }
  try {
    ensureSchema(database);
  } catch (error) {
    throw connectError(owner, database.name, error);
  }
  return { db: database, owned: false, timeoutMs };
}

/**
 * A stored message read back: corrupt text or a value that is not a message (a row written by
 * something else) is a `SessionStateError` naming the session and the row's place in the history.
 */
function parseMessageRow(json: string, sessionId: string, seq: number): Message {
  const path = `$.history[${seq}]`;
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    throw new SessionStateError(path, `is not valid JSON (${error instanceof Error ? error.message : String(error)})`, {
      cause: error,
      sessionId,
    });
  }
  return Message.parse(value, path, { sessionId });
}

/** A stored listing entry read back, checked as `parseMessageRow` checks a message. */
function parseSummaryRow(json: string, key: Buffer): SessionSummary {
  // The row's key names the session even when its text does not.
  const sessionId = Buffer.from(key).swap16().toString('utf16le');
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    throw new SessionStateError('$', `is not valid JSON (${error instanceof Error ? error.message : String(error)})`, {
      cause: error,
      sessionId,
    });
  }
  const summary = value as Partial<SessionSummary> | null;
  if (typeof summary !== 'object' || summary === null || summary.sessionId !== sessionId)
    throw new SessionStateError('$.sessionId', 'must be the id the summary is stored under', { sessionId });
  if (typeof summary.metadata !== 'object' || summary.metadata === null || typeof summary.metadata.updatedAt !== 'string')
    throw new SessionStateError('$.metadata', 'must be an object with updatedAt', { sessionId });
  return summary as SessionSummary;
}

/**
 * Runs `body` as one SQLite transaction under `withDeadline`. better-sqlite3 is synchronous: the
 * transaction runs to its end (or its rollback) before this returns, so what the deadline and the
 * caller's signal decide is only whether it starts (an aborted signal: nothing is written).
 *
 * `write`: an IMMEDIATE transaction, which takes the write lock before its first read, so a
 * read-then-write (dedupe, retried turns, pop) cannot interleave with another connection's. `read`:
 * a DEFERRED one, which takes no write lock: under WAL it reads a consistent snapshot beside a
 * writer instead of queueing behind it.
 */
function inTransaction<T>(
  db: SqliteDatabase,
  mode: 'read' | 'write',
  body: () => T,
  timeoutMs: number,
  signal: AbortSignal | undefined,
  operation: string,
): Promise<T> {
  return withDeadline(async () => (mode === 'write' ? db.transaction(body).immediate() : db.transaction(body).deferred()), {
    timeoutMs,
    signal,
    backend: 'sqlite',
    operation,
  });
}

interface MessageRow {
  seq: number;
  json: string;
}

/** A history provider on SQLite: one row per message, every method one transaction. */
export class SqliteHistoryProvider extends HistoryProvider {
  readonly #db: SqliteDatabase;
  readonly #owned: boolean;
  readonly #timeoutMs: number;
  readonly #source: Buffer;
  readonly #sql;

  constructor(options: HistoryProviderOptions & SqliteBackendOptions) {
    super({ ...options, sourceId: options.sourceId ?? 'sqlite' });
    const { db, owned, timeoutMs } = connect('SqliteHistoryProvider', options);
    this.#db = db;
    this.#owned = owned;
    this.#timeoutMs = timeoutMs;
    this.#source = idKey(this.sourceId);
    this.#sql = {
      // The newest `limit` rows (-1: all of them), oldest first.
      window: db.prepare<[Buffer, Buffer, number], MessageRow>(
        'SELECT seq, json FROM (SELECT seq, json FROM ctx_messages WHERE source = ? AND session = ? ORDER BY seq DESC LIMIT ?) ORDER BY seq',
      ),
      byId: db.prepare<[Buffer, Buffer, Buffer], MessageRow>(
        'SELECT seq, json FROM ctx_messages WHERE source = ? AND session = ? AND message_id = ?',
      ),
      end: db.prepare<[Buffer, Buffer], { next: number }>(
        'SELECT COALESCE(MAX(seq) + 1, 0) AS next FROM ctx_messages WHERE source = ? AND session = ?',
      ),
      insert: db.prepare<[Buffer, Buffer, number, Buffer, string]>(
        'INSERT INTO ctx_messages (source, session, seq, message_id, json) VALUES (?, ?, ?, ?, ?)',
      ),
      deleteFrom: db.prepare<[Buffer, Buffer, number]>('DELETE FROM ctx_messages WHERE source = ? AND session = ? AND seq >= ?'),
      clear: db.prepare<[Buffer, Buffer]>('DELETE FROM ctx_messages WHERE source = ? AND session = ?'),
    };
  }

  /** One transaction (`read`: no write lock) with a deadline that honours the caller's signal. */
  #call<T>(mode: 'read' | 'write', operation: string, sessionId: string, signal: AbortSignal | undefined, body: () => T): Promise<T> {
    return inTransaction(this.#db, mode, body, this.#timeoutMs, signal, `sqlite ${operation} for session ${shortId(sessionId)}`);
  }

  #session(sessionId: string): Buffer {
    return idKey(checkSessionId(sessionId));
  }

  /** Writes `messages` at positions `from`, `from + 1`, ... */
  #insert(session: Buffer, from: number, messages: readonly Message[]): void {
    for (const [i, m] of messages.entries()) this.#sql.insert.run(this.#source, session, from + i, idKey(m.id), JSON.stringify(m));
  }

  async getMessages(sessionId: string, { limit, signal }: GetHistoryArgs): Promise<Message[]> {
    const session = this.#session(sessionId);
    const rows = await this.#call('read', 'getMessages', sessionId, signal, () => this.#sql.window.all(this.#source, session, limit ?? -1));
    // Parsed from the stored text: fresh objects every time.
    return rows.map((row) => parseMessageRow(row.json, sessionId, row.seq));
  }

  async saveMessages(sessionId: string, messages: readonly Message[], { signal, report, turn }: SaveHistoryArgs): Promise<void> {
    // Everything checked before anything is written.
    const batch = checkHistoryBatch(sessionId, messages, { sourceId: this.sourceId, report }).messages;
    const session = this.#session(sessionId);
    await this.#call('write', 'saveMessages', sessionId, signal, () => {
      // A batch of a run goes where its turn is stored (only a retry finds one: then the whole
      // history is read, as findRetriedTurn needs it).
      const retried = turn?.inputIds.some((id) => this.#sql.byId.get(this.#source, session, idKey(id)) !== undefined);
      const stored = retried
        ? this.#sql.window.all(this.#source, session, -1).map((row) => parseMessageRow(row.json, sessionId, row.seq))
        : [];
      const inputs = turn ? batch.filter((m) => turn.inputIds.includes(m.id)) : [];
      const span = turn && retried ? findRetriedTurn(stored, turn.inputIds, inputs) : undefined;
      const replaces = turn?.opens === true && span !== undefined;
      const fresh: Message[] = [];
      for (const [index, m] of batch.entries()) {
        const row = this.#sql.byId.get(this.#source, session, idKey(m.id));
        // Rows of the earlier attempt the opening batch replaces do not count as stored.
        if (row === undefined || (replaces && row.seq >= span.start && row.seq < span.end)) fresh.push(m);
        else if (!sameMessageContent(parseMessageRow(row.json, sessionId, row.seq), m))
          throw messageIdConflict({ sourceId: this.sourceId, sessionId, messageId: m.id, index, batchSize: messages.length, report });
        // else: the same message saved again (a retry) is skipped.
      }
      if (span === undefined) {
        this.#insert(session, this.#sql.end.get(this.#source, session)?.next ?? 0, fresh);
        return;
      }
      // The turn stays in one piece: rewrite the history from the turn on.
      const tail = stored.slice(span.end);
      const from = replaces ? span.start : span.end;
      this.#sql.deleteFrom.run(this.#source, session, from);
      this.#insert(session, from, [...fresh, ...tail]);
    }); // a throw above rolls the transaction back: the whole batch, or nothing
  }

  override async replaceMessages(sessionId: string, messages: readonly Message[], { signal, report }: SaveHistoryArgs): Promise<void> {
    const batch = checkHistoryBatch(sessionId, messages, { sourceId: this.sourceId, report }).messages;
    const session = this.#session(sessionId);
    await this.#call('write', 'replaceMessages', sessionId, signal, () => {
      this.#sql.clear.run(this.#source, session);
      this.#insert(session, 0, batch);
    });
  }

  override async popMessages(sessionId: string, { signal, count = 1 }: PopHistoryArgs): Promise<Message[]> {
    checkInteger('SqliteHistoryProvider.popMessages', 'count', count);
    const session = this.#session(sessionId);
    // Read and remove in one transaction: two concurrent pops never return the same message. The
    // rows are parsed before the delete: a corrupt one throws, and the rollback keeps them all.
    return this.#call('write', 'popMessages', sessionId, signal, () => {
      const popped = this.#sql.window.all(this.#source, session, count);
      const messages = popped.map((row) => parseMessageRow(row.json, sessionId, row.seq));
      const first = popped[0];
      if (first !== undefined) this.#sql.deleteFrom.run(this.#source, session, first.seq);
      return messages;
    });
  }

  override async clearMessages(sessionId: string, { signal }: ClearHistoryArgs): Promise<void> {
    const session = this.#session(sessionId);
    await this.#call('write', 'clearMessages', sessionId, signal, () => void this.#sql.clear.run(this.#source, session));
  }
  // forkMessages: the default of HistoryProvider (one getMessages, one saveMessages) is correct, and
  // refuses a message not in the history with InvalidInputError.

  /** Closes the connection when this provider opened it (from a file name); a connection you passed stays open. */
  close(): void {
    if (this.#owned) this.#db.close();
  }
}

interface SessionRow {
  json: string;
  etag: string;
}

/** A session store on SQLite: one row per session, `set` one conditional statement. */
export class SqliteSessionStore implements SessionStore {
  readonly specificationVersion = 'v1';
  readonly #db: SqliteDatabase;
  readonly #owned: boolean;
  readonly #timeoutMs: number;
  readonly #sql;
  readonly #lists = new Map<string, Database.Statement<unknown[]>>();

  constructor(options: SqliteBackendOptions) {
    const { db, owned, timeoutMs } = connect('SqliteSessionStore', options);
    this.#db = db;
    this.#owned = owned;
    this.#timeoutMs = timeoutMs;
    const columns = '(session_key, user_key, updated_at_ms, etag, json, summary) VALUES (?, ?, ?, ?, ?, ?)';
    this.#sql = {
      get: db.prepare<[Buffer], SessionRow>('SELECT json, etag FROM ctx_sessions WHERE session_key = ?'),
      // ifMatch absent: write whatever is there.
      upsert: db.prepare<Row>(
        `INSERT INTO ctx_sessions ${columns} ON CONFLICT (session_key) DO UPDATE SET user_key = excluded.user_key, updated_at_ms = excluded.updated_at_ms, etag = excluded.etag, json = excluded.json, summary = excluded.summary`,
      ),
      // ifMatch null: create only.
      create: db.prepare<Row>(`INSERT INTO ctx_sessions ${columns} ON CONFLICT (session_key) DO NOTHING`),
      // ifMatch an etag: the condition and the write in one statement.
      update: db.prepare<[Buffer | null, number, string, string, string, Buffer, string]>(
        'UPDATE ctx_sessions SET user_key = ?, updated_at_ms = ?, etag = ?, json = ?, summary = ? WHERE session_key = ? AND etag = ?',
      ),
      delete: db.prepare<[Buffer]>('DELETE FROM ctx_sessions WHERE session_key = ?'),
    };
  }

  /** One transaction (`read`: no write lock) with a deadline that honours the caller's signal. */
  #call<T>(mode: 'read' | 'write', operation: string, signal: AbortSignal | undefined, body: () => T): Promise<T> {
    return inTransaction(this.#db, mode, body, this.#timeoutMs, signal, operation);
  }

  async get(sessionId: string, options: GetSessionOptions = {}): Promise<StoredSession | undefined> {
    const key = idKey(checkSessionId(sessionId));
    const row = await this.#call('read', `sqlite get of session ${shortId(sessionId)}`, options.signal, () => this.#sql.get.get(key));
    if (row === undefined) return undefined;
    const stored = { session: parseSessionJson(row.json, { sessionId }), etag: row.etag };
    return options.userId === undefined ? stored : sessionOfUser(stored, options.userId);
  }

  async set(session: SessionJson, options: SetSessionOptions = {}): Promise<string> {
    const checked = checkSessionForWrite(session); // nothing a later read would refuse is written
    const { sessionId, metadata } = checked;
    const key = idKey(sessionId);
    const userKey = metadata.userId === undefined ? null : idKey(metadata.userId);
    const updatedAtMs = Date.parse(metadata.updatedAt);
    const json = JSON.stringify(checked);
    const summary = JSON.stringify({ sessionId, metadata } satisfies SessionSummary);
    const etag = crypto.randomUUID(); // new on every write, never one a deleted session had
    const { ifMatch } = options;
    return this.#call('write', `sqlite set of session ${shortId(sessionId)}`, options.signal, () => {
      const row: Row = [key, userKey, updatedAtMs, etag, json, summary];
      const { changes } =
        ifMatch === undefined
          ? this.#sql.upsert.run(...row)
          : ifMatch === null
            ? this.#sql.create.run(...row)
            : this.#sql.update.run(userKey, updatedAtMs, etag, json, summary, key, ifMatch);
      if (changes === 0) throw new ConcurrencyError(sessionId); // the condition failed: nothing was written
      return etag;
    });
  }

  async delete(sessionId: string, options: { signal?: AbortSignal } = {}): Promise<boolean> {
    const key = idKey(checkSessionId(sessionId));
    return this.#call(
      'write',
      `sqlite delete of session ${shortId(sessionId)}`,
      options.signal,
      () => this.#sql.delete.run(key).changes > 0,
    );
  }

  async list(options?: ListSessionsOptions): Promise<SessionPage> {
    const { userId, limit, cursor } = checkListOptions(options);
    // Keyset paging: newest first, ties by session id descending (the BLOB key's order is
    // JavaScript's string order), and the next page is everything after the cursor's entry.
    const where: string[] = [];
    const params: unknown[] = [];
    if (userId !== undefined) {
      where.push('user_key = ?');
      params.push(idKey(userId));
    }
    if (cursor !== undefined) {
      where.push('(updated_at_ms, session_key) < (?, ?)');
      params.push(cursor.updatedAtMs, idKey(cursor.sessionId));
    }
    const page = this.#statement(
      `SELECT session_key, summary FROM ctx_sessions ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY updated_at_ms DESC, session_key DESC LIMIT ?`,
    );
    // The whole listing's count, from the same index (the user's, or every session).
    const count = this.#statement(`SELECT COUNT(*) AS total FROM ctx_sessions ${userId === undefined ? '' : 'WHERE user_key = ?'}`);
    // One read transaction: the page and the count see the same snapshot.
    const { rows, total } = await this.#call('read', 'sqlite list', options?.signal, () => ({
      rows: page.all(...params, limit + 1) as { session_key: Buffer; summary: string }[],
      total: (count.get(...params.slice(0, userId === undefined ? 0 : 1)) as { total: number }).total,
    }));
    const sessions = rows.slice(0, limit).map((row) => parseSummaryRow(row.summary, row.session_key));
    const last = sessions[sessions.length - 1];
    return rows.length > limit && last ? { sessions, nextCursor: encodeSessionCursor(last, userId), total } : { sessions, total };
  }

  /** A prepared statement of `list`, prepared once per connection. */
  #statement(sql: string): Database.Statement<unknown[]> {
    let statement = this.#lists.get(sql);
    if (statement === undefined) {
      statement = this.#db.prepare<unknown[]>(sql);
      this.#lists.set(sql, statement);
    }
    return statement;
  }

  /** Closes the connection when this store opened it (from a file name); a connection you passed stays open. */
  close(): void {
    if (this.#owned) this.#db.close();
  }
}

/** A row of `ctx_sessions` as the insert statements take it. */
type Row = [Buffer, Buffer | null, number, string, string, string];
