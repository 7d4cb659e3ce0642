import {
  ConfigurationError,
  HistoryProvider,
  InvalidInputError,
  Message,
  SessionStateError,
  type ClearHistoryArgs,
  type ForkHistoryArgs,
  type GetHistoryArgs,
  type HistoryProviderOptions,
  type PopHistoryArgs,
  type SaveHistoryArgs,
} from '@ctx/core';
import {
  checkHistoryBatch,
  checkId,
  checkInteger,
  checkOptionNames,
  checkSessionId,
  findRetriedTurn,
  HISTORY_PROVIDER_OPTIONS,
  messageIdConflict,
  optionNames,
  sameMessageContent,
  shortId,
} from '@ctx/core/backend';
import { ensureSchema, idKey, openDatabase, type PostgresOptions, tableNames, type TableNames } from './schema.js';
import { type SqlDatabase, type SqlQueryable, sqlState } from './sql-client.js';

/** Options of `PostgresHistoryProvider`: the history options of `@ctx/core` and the database's. */
export interface PostgresHistoryProviderOptions extends HistoryProviderOptions, PostgresOptions {}

/** Every option name of `PostgresHistoryProvider`. */
const OPTION_NAMES = optionNames<PostgresHistoryProviderOptions>()({
  ...HISTORY_PROVIDER_OPTIONS,
  client: true,
  schema: true,
  tablePrefix: true,
  timeoutMs: true,
});

/** Options of `PostgresHistoryProvider.listMessages`. */
export interface ListMessagesOptions {
  /** Where to continue: the `nextCursor` of the previous page. Default: from the oldest stored message. */
  cursor?: string;
  /** Messages per page. Default 100. */
  limit?: number;
  /** Aborts the call. */
  signal?: AbortSignal;
}

/** One page of a conversation, oldest first. */
export interface MessagePage {
  /** The page's messages, oldest first. */
  messages: Message[];
  /** Pass it as `cursor` to get the next page; undefined when the page reached the newest stored message. */
  nextCursor: string | undefined;
}

/** Options of `PostgresHistoryProvider.exportMessages`. */
export interface ExportMessagesOptions {
  /** Messages fetched per query. Default 500. */
  pageSize?: number;
  /** Aborts the export between or during pages. */
  signal?: AbortSignal;
}

/** Options of the provider's maintenance methods. */
export interface PostgresHistoryCallOptions {
  /** Aborts the call (a statement under way is cancelled: on a server its connection is closed and the transaction rolled back). */
  signal?: AbortSignal;
}

/** The tables of the history component, as `tableNames` gives them. */
export interface HistoryTables {
  /** One row per (sourceId, session id): the ids whole, the last sequence number handed out; its row lock serialises a session's writes. */
  sessions: string;
  /** One row per stored message: the conversation key, its sequence number, its id key, its JSON. */
  messages: string;
}

/** The SQLSTATE the save function raises when a batch needs the full save (a stored id, a row to check): nothing was written. */
const FULL_SAVE = 'CTX01';
/** The SQLSTATE of a unique index violated: from the save function, a batch id already stored (nothing was written). */
const UNIQUE_VIOLATION = '23505';

/**
 * The schema versions of the history tables, in order (each one statement). Version 3 is the save
 * of a batch that holds no stored message id, as one statement (`saveFresh`): it locks the session
 * row (creating it) and hands out the batch's sequence numbers in one upsert, looks up the ids in
 * `p_lookup` (the provider passes the turn's input ids that are not in the batch), and inserts the
 * batch; a looked-up id stored, a session row of other ids or a negative `last_seq` raises
 * `FULL_SAVE`, and a batch id stored fails the insert (`UNIQUE_VIOLATION`), rolling it all back. It bounds itself by the
 * call's remaining time: `lock_timeout` for the waits, and a check of the clock before it ends.
 */
function migrations(tables: HistoryTables, saveFresh: string): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${tables.sessions} (
      conv bytea PRIMARY KEY,
      source_id text NOT NULL,
      session_id text NOT NULL,
      last_seq bigint NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`,
    `CREATE TABLE IF NOT EXISTS ${tables.messages} (
      conv bytea NOT NULL,
      seq bigint NOT NULL,
      message_key bytea NOT NULL,
      message text NOT NULL,
      PRIMARY KEY (conv, seq),
      UNIQUE (conv, message_key)
    )`,
    `CREATE OR REPLACE FUNCTION ${saveFresh}(
      p_conv text, p_source_id text, p_session_id text, p_keys text[], p_texts text[], p_lookup text[], p_timeout_ms integer
    ) RETURNS integer LANGUAGE plpgsql AS $save$
    DECLARE
      v_conv bytea := decode(p_conv, 'hex');
      v_count integer := cardinality(p_keys);
      v_deadline timestamptz := statement_timestamp() + p_timeout_ms * interval '1 millisecond';
      v_source text;
      v_session text;
      v_last bigint;
      v_created boolean;
    BEGIN
      PERFORM set_config('lock_timeout', p_timeout_ms::text, true);
      INSERT INTO ${tables.sessions} AS s (conv, source_id, session_id, last_seq)
        VALUES (v_conv, p_source_id, p_session_id, v_count)
        ON CONFLICT (conv) DO UPDATE SET last_seq = s.last_seq + v_count, updated_at = now()
        RETURNING s.source_id, s.session_id, s.last_seq, s.xmax = 0 INTO v_source, v_session, v_last, v_created;
      IF v_source <> p_source_id OR v_session <> p_session_id OR v_last - v_count < 0 THEN
        RAISE EXCEPTION 'the session row needs the full save' USING ERRCODE = '${FULL_SAVE}';
      END IF;
      IF NOT v_created AND EXISTS (
        SELECT 1 FROM ${tables.messages}
         WHERE conv = v_conv AND message_key IN (SELECT decode(k, 'hex') FROM unnest(p_lookup) AS k)
      ) THEN
        RAISE EXCEPTION 'the batch holds a stored message id' USING ERRCODE = '${FULL_SAVE}';
      END IF;
      INSERT INTO ${tables.messages} (conv, seq, message_key, message)
        SELECT v_conv, v_last - v_count + u.ord, decode(u.k, 'hex'), u.m
          FROM unnest(p_keys, p_texts) WITH ORDINALITY AS u(k, m, ord);
      IF clock_timestamp() > v_deadline THEN
        RAISE EXCEPTION 'the save did not finish within its deadline of % ms', p_timeout_ms USING ERRCODE = 'query_canceled';
      END IF;
      RETURN v_count;
    END
    $save$`,
  ];
}

/** A stored message row as read back, before it is checked. */
interface Row {
  seq: string;
  message: string;
  key?: string;
}

/** One message row while a save works out where a batch goes: its sequence number and its parsed JSON (undefined when it does not parse). */
interface Entry {
  seq: number;
  value: unknown;
}

/** Rows read per query while a save finds the stored turn it continues or replaces. */
const TURN_PAGE = 256;
/** Context rows read per query before a stored turn. */
const CONTEXT_PAGE = 32;

/**
 * Conversation history in PostgreSQL (a server through a `pg` Pool, or embedded PGlite): one row
 * per message (its JSON as text, a per-session sequence number), loaded as a window of the newest
 * `maxMessages` in one query on the primary key, and stored in one transaction per turn, so a
 * concurrent reader never sees half a turn. Writes to one session are serialised by the row lock of
 * its `history_sessions` row; a message id already stored with the same content is skipped (a retried
 * save stores nothing twice), and a retried turn replaces its earlier attempt in place (core's
 * `findRetriedTurn`). Session, source and message ids are kept whole (JSON text) and indexed by
 * `idKey` digests, so any id fits the index. Default `sourceId` is `postgres`. The tables are
 * created (or migrated) on first use.
 *
 * Failures: an unreachable or timed-out database gives `BackendUnavailableError` within `timeoutMs`
 * (the transaction is rolled back: a turn is stored whole or not at all); a stored row that is not a
 * valid message gives `SessionStateError` naming the table, session and sequence number. The
 * history methods need no state slot.
 * @throws ConfigurationError for bad options (no client, a bad schema or prefix, a bad `timeoutMs`
 *   or `maxMessages`, a blank sourceId) or an option it does not know.
 */
export class PostgresHistoryProvider extends HistoryProvider {
  /** The quoted, schema-qualified tables this provider uses. */
  readonly tables: HistoryTables;
  /** The quoted, schema-qualified function that stores a batch holding no stored id in one statement. */
  readonly #saveFresh: string;
  readonly #db: SqlDatabase;
  readonly #names: TableNames;
  readonly #migrations: readonly string[];

  constructor(options: PostgresHistoryProviderOptions) {
    checkOptionNames('PostgresHistoryProvider', options, OPTION_NAMES);
    super({ ...options, sourceId: options.sourceId ?? 'postgres' });
    checkId(this.sourceId, 'sourceId of PostgresHistoryProvider');
    this.#names = tableNames(options);
    this.tables = { sessions: this.#names.table('history_sessions'), messages: this.#names.table('history_messages') };
    this.#saveFresh = this.#names.table('history_save');
    this.#migrations = migrations(this.tables, this.#saveFresh);
    this.#db = openDatabase(options);
  }

  /** Creates or migrates the tables on first use (once per client and names in this process; again after a failed attempt). */
  #schema(): Promise<void> {
    return ensureSchema(this.#db, this.#names, 'history', this.#migrations);
  }

  /** The key of a conversation (hex of `idKey` over its source and session ids). */
  #conv(sessionId: string): string {
    return idKey(JSON.stringify([this.sourceId, sessionId])).toString('hex');
  }

  /**
   * The newest `limit` messages (all without a limit), oldest first: one query on the primary key,
   * reading only the window. Each row comes back as one value, `[seq,message]` built by the server,
   * parsed once; the session row's ids are checked in the same statement, which returns them (one
   * row, no message) only when they are not this session's.
   * @throws SessionStateError when a stored row is not a valid message (path `postgres:<table>[session, seq]`),
   *   or the session row holds other ids than its key says.
   * @throws ConfigurationError for a blank session id or a bad `limit`, before any query.
   * @throws BackendUnavailableError when the database does not answer within `timeoutMs`.
   */
  async getMessages(sessionId: string, { limit, signal }: GetHistoryArgs = { state: {} }): Promise<Message[]> {
    checkSessionId(sessionId);
    if (limit !== undefined) checkInteger(`PostgresHistoryProvider.getMessages for session ${shortId(sessionId)}`, 'limit', limit);
    await this.#schema();
    const { rows } = await this.#db.run<{ m: string }>(
      `SELECT json_build_array('owner', s.source_id, s.session_id)::text AS m FROM ${this.tables.sessions} s
        WHERE s.conv = decode($1, 'hex') AND (s.source_id <> $3 OR s.session_id <> $4)
       UNION ALL (
         SELECT '[' || seq || ',' || message || ']' FROM ${this.tables.messages}
          WHERE conv = decode($1, 'hex')
            AND EXISTS (SELECT 1 FROM ${this.tables.sessions} WHERE conv = decode($1, 'hex') AND source_id = $3 AND session_id = $4)
          ORDER BY seq DESC LIMIT $2
       )`,
      [this.#conv(sessionId), limit ?? null, JSON.stringify(this.sourceId), JSON.stringify(sessionId)],
      { operation: `getMessages for session ${shortId(sessionId)}`, signal, sessionId, prepare: true },
    );
    const messages: Message[] = new Array(rows.length);
    for (let i = rows.length - 1, j = 0; i >= 0; i--, j++) messages[j] = this.#decodePair(rows[i]!.m, sessionId);
    return messages;
  }

  /**
   * Saves messages in one transaction: ids already stored with the same content are skipped, and a
   * batch of a run goes where its turn is stored (`SaveHistoryArgs.turn`, core's `findRetriedTurn`):
   * the opening batch replaces a stored earlier attempt of the turn in place, wherever it sits, and
   * a later batch goes right after the turn; the messages after it are renumbered.
   * @throws SessionStateError when a message is malformed or not plain JSON, naming the path; or
   *   when a message id is already stored with other content (with a `message-id-conflict`
   *   diagnostic). Nothing is stored either way.
   * @throws ConfigurationError for a blank session id, before any query.
   * @throws BackendUnavailableError when the database fails or does not answer within `timeoutMs`:
   *   the transaction is rolled back, and retrying the same messages (or the run) is safe.
   */
  async saveMessages(
    sessionId: string,
    messages: readonly Message[],
    { signal, turn, report }: SaveHistoryArgs = { state: {} },
  ): Promise<void> {
    await this.#write('append', sessionId, messages, signal, turn, report);
  }

  /**
   * `saveMessages`, resolving to how many messages were new (the rest were already stored).
   * @throws like `saveMessages`.
   */
  async append(sessionId: string, messages: readonly Message[], options: PostgresHistoryCallOptions = {}): Promise<number> {
    return this.#write('append', sessionId, messages, options.signal);
  }

  /**
   * Replaces the whole stored conversation with `messages` in one transaction (the capability
   * compaction rewrites history through). Sequence numbers continue after every one used before.
   * @throws like `saveMessages`.
   */
  override async replaceMessages(
    sessionId: string,
    messages: readonly Message[],
    { signal }: SaveHistoryArgs = { state: {} },
  ): Promise<void> {
    await this.#write('replace', sessionId, messages, signal);
  }

  /** Validates a batch and stores it in one transaction; resolves to how many messages were written. */
  async #write(
    mode: 'append' | 'replace',
    sessionId: string,
    messages: readonly Message[],
    signal: AbortSignal | undefined,
    turn?: SaveHistoryArgs['turn'],
    report?: SaveHistoryArgs['report'],
  ): Promise<number> {
    const { messages: batch, indexes } = checkHistoryBatch(sessionId, messages, { sourceId: this.sourceId, report });
    if (mode === 'append' && batch.length === 0) return 0;
    const conv = this.#conv(sessionId);
    const keys = batch.map((m) => messageKey(m.id));
    const texts = batch.map((m) => JSON.stringify(m));
    const operation = `${mode === 'append' ? 'saveMessages' : 'replaceMessages'} for session ${shortId(sessionId)}`;
    const inputIds = turn === undefined ? [] : [...new Set(turn.inputIds)];
    const inputKeys = inputIds.map(messageKey);
    const lookupKeys = [...new Set([...keys, ...inputKeys])];
    await this.#schema();
    // A new batch (no turn, or a turn's opening one) most often holds no stored id: one statement
    // stores it. Otherwise (a retry, a replaced turn, a session row to check) nothing was written,
    // and the transaction below works it out. The statement looks up only the turn's input ids that
    // are not in the batch: a batch id already stored fails the insert on the (session, message key)
    // index (23505), which rolls the statement back as `FULL_SAVE` does, without a lookup per save.
    if (mode === 'append' && turn?.opens !== false) {
      const inBatch = new Set(keys);
      const outside = inputKeys.filter((key) => !inBatch.has(key));
      try {
        await this.#db.runSelfBounded(
          `SELECT ${this.#saveFresh}($1, $2, $3, $4::text[], $5::text[], $6::text[], $7::integer)`,
          (remainingMs) => [conv, JSON.stringify(this.sourceId), JSON.stringify(sessionId), keys, texts, outside, remainingMs],
          { operation, signal, sessionId, prepare: true },
        );
        return batch.length;
      } catch (error) {
        const state = sqlState((error as { cause?: unknown }).cause);
        if (state !== FULL_SAVE && state !== UNIQUE_VIOLATION) throw error;
      }
    }
    return this.#db.transaction(
      async (tx) => {
        const head = await this.#lock(tx, conv, sessionId);
        if (mode === 'replace') {
          await tx.query(`DELETE FROM ${this.tables.messages} WHERE conv = decode($1, 'hex')`, [conv]);
          return this.#insert(tx, conv, head.lastSeq + 1, keys, texts);
        }
        if (head.created) return this.#insert(tx, conv, head.lastSeq + 1, keys, texts);
        const found = await tx.query<Row>(
          `SELECT seq::text AS seq, message, encode(message_key, 'hex') AS key FROM ${this.tables.messages}
            WHERE conv = decode($1, 'hex') AND message_key IN (SELECT decode(k, 'hex') FROM unnest($2::text[]) AS k)`,
          [conv, lookupKeys],
        );
        if (found.rows.length === 0) return this.#insert(tx, conv, head.lastSeq + 1, keys, texts);
        const stored = new Map<string, Entry & { row: Row }>();
        for (const row of found.rows) stored.set(row.key!, { seq: Number(row.seq), value: parseLoosely(row.message), row });
        // Where this batch's turn is stored, if it is.
        const inputs = new Set(inputIds);
        let lowest: number | undefined;
        for (const id of inputIds) {
          const entry = stored.get(messageKey(id));
          if (entry !== undefined && idOfValue(entry.value) === id && (lowest === undefined || entry.seq < lowest)) lowest = entry.seq;
        }
        const span =
          lowest === undefined
            ? undefined
            : await this.#storedTurn(
                tx,
                conv,
                lowest,
                inputIds,
                batch.filter((m) => inputs.has(m.id)),
              );
        const replacing = turn?.opens === true && span !== undefined;
        const fresh: number[] = [];
        batch.forEach((m, j) => {
          const entry = stored.get(keys[j]!);
          if (entry === undefined || (replacing && entry.seq >= span.first && entry.seq <= span.last)) {
            fresh.push(j);
            return;
          }
          if (!isMessageLike(entry.value)) this.#decode(entry.row, sessionId);
          if (idOfValue(entry.value) !== m.id) {
            throw new SessionStateError(
              rowPath(this.tables.messages, sessionId, entry.seq),
              `holds message ${shortId(String(idOfValue(entry.value)))} under the key of message ${shortId(m.id)}; nothing of the batch was stored. Fix or delete the row`,
              { sessionId },
            );
          }
          if (!sameMessageContent(entry.value, m)) {
            throw messageIdConflict({
              sourceId: this.sourceId,
              sessionId,
              messageId: m.id,
              index: indexes[j]!,
              batchSize: messages.length,
              report,
            });
          }
        });
        if (fresh.length === 0 && !replacing) return 0;
        const freshKeys = fresh.map((j) => keys[j]!);
        const freshTexts = fresh.map((j) => texts[j]!);
        if (span === undefined) return this.#insert(tx, conv, head.lastSeq + 1, freshKeys, freshTexts);
        // In place: the earlier attempt's rows (replacing) or nothing (continuing) make room for the batch.
        const at = replacing ? span.first : span.last + 1;
        const removed = replacing ? span.last - span.first + 1 : 0;
        if (replacing) {
          await tx.query(`DELETE FROM ${this.tables.messages} WHERE conv = decode($1, 'hex') AND seq BETWEEN $2 AND $3`, [
            conv,
            span.first,
            span.last,
          ]);
        }
        const shift = fresh.length - removed;
        if (shift !== 0) {
          // Two steps, so no row takes a number another still holds (the primary key is checked per row).
          await tx.query(`UPDATE ${this.tables.messages} SET seq = -(seq + $3) WHERE conv = decode($1, 'hex') AND seq > $2`, [
            conv,
            span.last,
            shift,
          ]);
          await tx.query(`UPDATE ${this.tables.messages} SET seq = -seq WHERE conv = decode($1, 'hex') AND seq < 0`, [conv]);
        }
        if (fresh.length > 0) {
          await tx.query(
            `INSERT INTO ${this.tables.messages} (conv, seq, message_key, message)
             SELECT decode($1, 'hex'), $2::bigint + u.ord - 1, decode(u.k, 'hex'), u.m
               FROM unnest($3::text[], $4::text[]) WITH ORDINALITY AS u(k, m, ord)`,
            [conv, at, freshKeys, freshTexts],
          );
        }
        await tx.query(
          `UPDATE ${this.tables.sessions}
              SET last_seq = GREATEST(last_seq, COALESCE((SELECT max(seq) FROM ${this.tables.messages} WHERE conv = decode($1, 'hex')), 0))
            WHERE conv = decode($1, 'hex')`,
          [conv],
        );
        return fresh.length;
      },
      { operation, signal, sessionId },
    );
  }

  /**
   * Locks a conversation's session row for the transaction (creating it when missing): every write
   * to the session waits here for the one before it. Resolves to the last sequence number handed
   * out and whether the row is new.
   */
  async #lock(tx: SqlQueryable, conv: string, sessionId: string): Promise<{ lastSeq: number; created: boolean }> {
    const { rows } = await tx.query<{ source_id: string; session_id: string; last_seq: string; created: boolean }>(
      `INSERT INTO ${this.tables.sessions} (conv, source_id, session_id) VALUES (decode($1, 'hex'), $2, $3)
       ON CONFLICT (conv) DO UPDATE SET updated_at = now()
       RETURNING source_id, session_id, last_seq::text AS last_seq, (xmax = 0) AS created`,
      [conv, JSON.stringify(this.sourceId), JSON.stringify(sessionId)],
    );
    const row = rows[0]!;
    this.#checkOwner(row, sessionId);
    const lastSeq = Number(row.last_seq);
    if (!Number.isSafeInteger(lastSeq) || lastSeq < 0) {
      throw new SessionStateError(
        `postgres:${this.tables.sessions}[session ${shortId(sessionId)}].last_seq`,
        `must be a non-negative integer, got ${shortId(String(row.last_seq))}; nothing was changed. Set it to the highest seq of the session's messages`,
        { sessionId },
      );
    }
    return { lastSeq, created: row.created === true };
  }

  /**
   * The sequence numbers of the stored turn whose oldest stored input is at `lowest` (core's
   * `findRetriedTurn` over the rows around it: the context rows stored just before it, the turn and
   * the row after it), or undefined when those rows are not this turn.
   */
  async #storedTurn(
    tx: SqlQueryable,
    conv: string,
    lowest: number,
    inputIds: readonly string[],
    inputs: readonly Message[],
  ): Promise<{ first: number; last: number } | undefined> {
    const ids = new Set(inputIds);
    const forward: Entry[] = [];
    for (let from = lowest; ; ) {
      const { rows } = await tx.query<Row>(
        `SELECT m.seq::text AS seq, m.message FROM ${this.tables.messages} m WHERE m.conv = decode($1, 'hex') AND m.seq >= $2 ORDER BY m.seq LIMIT $3`,
        [conv, from, TURN_PAGE],
      );
      for (const row of rows) forward.push({ seq: Number(row.seq), value: parseLoosely(row.message) });
      // The turn runs on over its inputs and responses: read on only while the page ends inside it.
      const last = forward.at(-1)?.value;
      const inside =
        last !== undefined && (ids.has(idOfValue(last) ?? '') || sourceTypeOf(last) === 'response' || sourceTypeOf(last) === 'input');
      if (rows.length < TURN_PAGE || !inside) break;
      from = forward.at(-1)!.seq + 1;
    }
    const before: Entry[] = [];
    for (let to = lowest; ; ) {
      const { rows } = await tx.query<Row>(
        `SELECT m.seq::text AS seq, m.message FROM ${this.tables.messages} m WHERE m.conv = decode($1, 'hex') AND m.seq < $2 ORDER BY m.seq DESC LIMIT $3`,
        [conv, to, CONTEXT_PAGE],
      );
      let stop = rows.length < CONTEXT_PAGE;
      for (const row of rows) {
        const value = parseLoosely(row.message);
        before.push({ seq: Number(row.seq), value });
        if (!storedWithTurn(value)) {
          stop = true;
          break;
        }
      }
      if (stop) break;
      to = before.at(-1)!.seq;
    }
    before.reverse();
    const entries = [...before, ...forward];
    const span = findRetriedTurn(
      entries.map((e) => e.value),
      inputIds,
      inputs,
    );
    if (span === undefined || span.end <= span.start) return undefined;
    return { first: entries[span.start]!.seq, last: entries[span.end - 1]!.seq };
  }

  /** Inserts messages at `from`, `from + 1`, ... and moves the session's last sequence number past them; resolves to how many. */
  async #insert(tx: SqlQueryable, conv: string, from: number, keys: readonly string[], texts: readonly string[]): Promise<number> {
    if (keys.length === 0) return 0;
    await tx.query(
      `WITH inserted AS (
         INSERT INTO ${this.tables.messages} (conv, seq, message_key, message)
         SELECT decode($1, 'hex'), $2::bigint + u.ord - 1, decode(u.k, 'hex'), u.m
           FROM unnest($3::text[], $4::text[]) WITH ORDINALITY AS u(k, m, ord)
       )
       UPDATE ${this.tables.sessions} SET last_seq = GREATEST(last_seq, $2::bigint + $5 - 1) WHERE conv = decode($1, 'hex')`,
      [conv, from, keys, texts, keys.length],
    );
    return keys.length;
  }

  /**
   * Removes the newest `count` (default 1) messages of a session and resolves to them, oldest
   * first, in one transaction. A popped message id can be saved again. Sequence numbers are not
   * handed out again (a `listMessages` cursor stays valid).
   * @throws SessionStateError when a row to pop is not a message (naming it); nothing is removed.
   * @throws ConfigurationError for a `count` that is not a positive integer or a blank session id, before any query.
   * @throws BackendUnavailableError when the database does not answer within `timeoutMs`.
   */
  override async popMessages(sessionId: string, { count = 1, signal }: PopHistoryArgs = { state: {} }): Promise<Message[]> {
    checkSessionId(sessionId);
    checkInteger(`PostgresHistoryProvider.popMessages for session ${shortId(sessionId)}`, 'count', count);
    const conv = this.#conv(sessionId);
    await this.#schema();
    return this.#db.transaction(
      async (tx) => {
        const head = await tx.query<{ source_id: string; session_id: string }>(
          `SELECT source_id, session_id FROM ${this.tables.sessions} WHERE conv = decode($1, 'hex') FOR UPDATE`,
          [conv],
        );
        if (head.rows.length === 0) return [];
        this.#checkOwner(head.rows[0]!, sessionId);
        const { rows } = await tx.query<Row>(
          `DELETE FROM ${this.tables.messages} WHERE conv = decode($1, 'hex') AND seq IN (
             SELECT seq FROM ${this.tables.messages} WHERE conv = decode($1, 'hex') ORDER BY seq DESC LIMIT $2
           ) RETURNING seq::text AS seq, message`,
          [conv, count],
        );
        rows.sort((a, b) => Number(a.seq) - Number(b.seq));
        return rows.map((row) => this.#decode(row, sessionId));
      },
      { operation: `popMessages for session ${shortId(sessionId)}`, signal, sessionId },
    );
  }

  /**
   * One page of a session's stored messages, oldest first, for export or inspection (one query).
   * The cursor is a sequence number, so pages stay consistent while new turns are appended and
   * after pops; a retried turn replaced in place renumbers the messages after it, so an export under
   * way then may skip or repeat some of them (start it again).
   * @throws SessionStateError for a corrupt row; ConfigurationError for a bad cursor or limit;
   *   BackendUnavailableError when the database does not answer within `timeoutMs`.
   */
  async listMessages(sessionId: string, options: ListMessagesOptions = {}): Promise<MessagePage> {
    checkSessionId(sessionId);
    const owner = `PostgresHistoryProvider.listMessages for session ${shortId(sessionId)}`;
    const limit = checkInteger(owner, 'limit', options.limit ?? 100);
    const after = options.cursor === undefined ? 0 : Number(options.cursor);
    if (
      typeof options.cursor !== 'undefined' &&
      (typeof options.cursor !== 'string' || !/^\d+$/.test(options.cursor) || !Number.isSafeInteger(after))
    ) {
      throw new ConfigurationError(
        `${owner}: cursor must be the nextCursor of a previous page, got ${shortId(String(options.cursor))}. Omit it to start from the oldest stored message.`,
      );
    }
    await this.#schema();
    const { rows } = await this.#db.run<{ source_id: string; session_id: string; seq: string | null; message: string | null }>(
      `SELECT s.source_id, s.session_id, m.seq::text AS seq, m.message
         FROM ${this.tables.sessions} s
         LEFT JOIN LATERAL (
           SELECT seq, message FROM ${this.tables.messages} WHERE conv = s.conv AND seq > $2 ORDER BY seq LIMIT $3
         ) m ON true
        WHERE s.conv = decode($1, 'hex')
        ORDER BY m.seq`,
      [this.#conv(sessionId), after, limit + 1],
      { operation: `listMessages for session ${shortId(sessionId)}`, signal: options.signal, sessionId, prepare: true },
    );
    if (rows.length === 0) return { messages: [], nextCursor: undefined };
    this.#checkOwner(rows[0]!, sessionId);
    const page = rows.filter((row) => row.seq !== null) as Row[];
    const more = page.length > limit;
    const kept = more ? page.slice(0, limit) : page;
    return { messages: kept.map((row) => this.#decode(row, sessionId)), nextCursor: more ? kept.at(-1)!.seq : undefined };
  }

  /**
   * Every stored message of a session, oldest first, fetched `pageSize` at a time.
   * @throws like `listMessages`.
   */
  async *exportMessages(sessionId: string, options: ExportMessagesOptions = {}): AsyncGenerator<Message, void, undefined> {
    let cursor: string | undefined;
    do {
      const page = await this.listMessages(sessionId, {
        limit: options.pageSize ?? 500,
        ...(cursor === undefined ? {} : { cursor }),
        ...(options.signal ? { signal: options.signal } : {}),
      });
      yield* page.messages;
      cursor = page.nextCursor;
    } while (cursor !== undefined);
  }

  /** How many messages are stored for a session. */
  async countMessages(sessionId: string, options: PostgresHistoryCallOptions = {}): Promise<number> {
    checkSessionId(sessionId);
    await this.#schema();
    const { rows } = await this.#db.run<{ n: string }>(
      `SELECT count(*)::text AS n FROM ${this.tables.messages} WHERE conv = decode($1, 'hex')`,
      [this.#conv(sessionId)],
      { operation: `countMessages for session ${shortId(sessionId)}`, signal: options.signal, sessionId },
    );
    return Number(rows[0]?.n ?? 0);
  }

  /**
   * Removes everything this provider keeps for a session (its messages and its session row) in one
   * transaction; what `agent.deleteSession` calls through `onSessionDeleted`. Resolves also when
   * nothing was stored.
   * @throws BackendUnavailableError when the database does not answer within `timeoutMs`.
   */
  override async clearMessages(sessionId: string, { signal }: ClearHistoryArgs = { state: {} }): Promise<void> {
    await this.clear(sessionId, signal ? { signal } : {});
  }

  /** Deletes a session's history for this provider's `sourceId`; resolves to whether there was any. */
  async clear(sessionId: string, options: PostgresHistoryCallOptions = {}): Promise<boolean> {
    checkSessionId(sessionId);
    const conv = this.#conv(sessionId);
    await this.#schema();
    return this.#db.transaction(
      async (tx) => {
        // The session row first: its lock makes a save under way finish before, or start after, the delete.
        const head = await tx.query(`DELETE FROM ${this.tables.sessions} WHERE conv = decode($1, 'hex')`, [conv]);
        const messages = await tx.query(`DELETE FROM ${this.tables.messages} WHERE conv = decode($1, 'hex')`, [conv]);
        return head.rowCount + messages.rowCount > 0;
      },
      { operation: `clear for session ${shortId(sessionId)}`, signal: options.signal, sessionId },
    );
  }

  /**
   * Copies a session's history up to and including `atMessageId` (or all of it) to `toSessionId`
   * on the database (one transaction, no message leaves it); resolves to how many messages were
   * copied. When the new session already holds messages it reads the history and saves the copy
   * (appending those not stored yet), as core's default does.
   * @throws InvalidInputError when `atMessageId` is not in the history; nothing is written.
   *   ConfigurationError for a blank session id or an `atMessageId` that is not a string.
   * @throws BackendUnavailableError when the database does not answer within `timeoutMs`.
   */
  override async forkMessages(
    fromSessionId: string,
    toSessionId: string,
    args: ForkHistoryArgs = { fromState: {}, toState: {} },
  ): Promise<number> {
    checkSessionId(fromSessionId);
    checkSessionId(toSessionId);
    const { atMessageId, signal } = args;
    if (atMessageId !== undefined && typeof atMessageId !== 'string') {
      throw new ConfigurationError(`PostgresHistoryProvider.forkMessages: atMessageId must be a string, got ${typeof atMessageId}.`);
    }
    const from = this.#conv(fromSessionId);
    const to = this.#conv(toSessionId);
    if (from === to) return super.forkMessages(fromSessionId, toSessionId, args);
    await this.#schema();
    const copied = await this.#db.transaction(
      async (tx): Promise<number | undefined> => {
        // Both session rows locked, in key order, so two forks between the same sessions never deadlock.
        const heads = new Map<string, { lastSeq: number; created: boolean }>();
        for (const [conv, id] of [
          [from, fromSessionId],
          [to, toSessionId],
        ].sort((a, b) => (a[0]! < b[0]! ? -1 : 1)) as [string, string][]) {
          heads.set(conv, await this.#lock(tx, conv, id));
        }
        const target = await tx.query<{ n: string }>(
          `SELECT count(*)::text AS n FROM (SELECT 1 FROM ${this.tables.messages} WHERE conv = decode($1, 'hex') LIMIT 1) x`,
          [to],
        );
        if (Number(target.rows[0]?.n ?? 0) > 0) return undefined;
        let upTo: number | null = null;
        if (atMessageId !== undefined) {
          const { rows } = await tx.query<Row>(
            `SELECT seq::text AS seq, message FROM ${this.tables.messages} WHERE conv = decode($1, 'hex') AND message_key = decode($2, 'hex')`,
            [from, messageKey(atMessageId)],
          );
          const row = rows[0];
          if (row === undefined || idOfValue(parseLoosely(row.message)) !== atMessageId) {
            throw new InvalidInputError(
              `History provider "${this.sourceId}": message ${shortId(atMessageId)} is not in the history of the session forked; nothing was copied.`,
            );
          }
          upTo = Number(row.seq);
        }
        const { rows } = await tx.query<{ n: string; top: string | null }>(
          `WITH copied AS (
             INSERT INTO ${this.tables.messages} (conv, seq, message_key, message)
             SELECT decode($2, 'hex'), seq, message_key, message FROM ${this.tables.messages}
              WHERE conv = decode($1, 'hex') AND ($3::bigint IS NULL OR seq <= $3::bigint)
             RETURNING seq
           )
           SELECT count(*)::text AS n, max(seq)::text AS top FROM copied`,
          [from, to, upTo],
        );
        const n = Number(rows[0]?.n ?? 0);
        if (n > 0) {
          await tx.query(`UPDATE ${this.tables.sessions} SET last_seq = GREATEST(last_seq, $2::bigint) WHERE conv = decode($1, 'hex')`, [
            to,
            Number(rows[0]!.top),
          ]);
        } else if (heads.get(to)!.created) {
          await tx.query(`DELETE FROM ${this.tables.sessions} WHERE conv = decode($1, 'hex')`, [to]);
        }
        if (n === 0 && heads.get(from)!.created)
          await tx.query(`DELETE FROM ${this.tables.sessions} WHERE conv = decode($1, 'hex')`, [from]);
        return n;
      },
      { operation: `forkMessages from session ${shortId(fromSessionId)}`, signal, sessionId: fromSessionId },
    );
    return copied ?? super.forkMessages(fromSessionId, toSessionId, args);
  }

  /**
   * Throws when a session row holds other ids than the ones its key was made of (a row written by
   * hand, or copied between tables).
   */
  #checkOwner(row: { source_id: string; session_id: string }, sessionId: string): void {
    if (row.session_id === JSON.stringify(sessionId) && row.source_id === JSON.stringify(this.sourceId)) return;
    throw new SessionStateError(
      `postgres:${this.tables.sessions}[session ${shortId(sessionId)}]`,
      `holds session ${shortId(String(row.session_id))} of source ${shortId(String(row.source_id))} under the key of session ${shortId(JSON.stringify(sessionId))} of source ${shortId(JSON.stringify(this.sourceId))}; nothing was read or changed. Delete the row and its messages, or clear the session`,
      { sessionId },
    );
  }

  /**
   * A loaded row, `[seq,message]`, as a message: one `JSON.parse`. A row that does not parse as
   * that pair (its message is not one JSON value), or whose message is not a valid message, is
   * decoded on its own to name it; a row of the session's ids (`["owner", source, session]`) is
   * checked as the session row.
   * @throws SessionStateError like `#decode`, or `#checkOwner`'s.
   */
  #decodePair(text: string, sessionId: string): Message {
    let pair: unknown;
    try {
      pair = JSON.parse(text);
    } catch {
      pair = undefined;
    }
    if (Array.isArray(pair) && pair.length === 2 && typeof pair[0] === 'number' && Message.isMessage(pair[1])) return pair[1];
    if (Array.isArray(pair) && pair[0] === 'owner') {
      this.#checkOwner({ source_id: String(pair[1]), session_id: String(pair[2]) }, sessionId);
    }
    const head = /^\[(-?\d+),/.exec(text);
    if (head === null) {
      throw new SessionStateError(
        `postgres:${this.tables.messages}[session ${shortId(sessionId)}]`,
        `returned a row that is not a stored message (${shortId(text)}); nothing was read`,
        { sessionId },
      );
    }
    return this.#decode({ seq: head[1]!, message: text.slice(head[0].length, -1) }, sessionId);
  }

  /**
   * A stored row as a message.
   * @throws SessionStateError naming the table, session and sequence number when it is not JSON or not a valid message.
   */
  #decode(row: Row, sessionId: string): Message {
    let value: unknown;
    try {
      value = JSON.parse(row.message);
    } catch (error) {
      const path = rowPath(this.tables.messages, sessionId, Number(row.seq));
      throw new SessionStateError(path, `is not JSON (${(error as Error).message}); fix or delete the row, or clear the session`, {
        cause: error,
        sessionId,
      });
    }
    try {
      return Message.parse(value, '$', { sessionId });
    } catch {
      // The row's path is made only for a row that fails (at 10,000 rows it costs as much as the check).
      return Message.parse(value, `${rowPath(this.tables.messages, sessionId, Number(row.seq))}.message`, { sessionId });
    }
  }
}

/** Where a message row is, for error messages. */
function rowPath(table: string, sessionId: string, seq: number): string {
  return `postgres:${table}[session ${shortId(sessionId)}, seq ${seq}]`;
}

/** The hex of a message id's index key (`idKey` over the id as JSON, so no two ids share one). */
function messageKey(id: string): string {
  return idKey(JSON.stringify(id)).toString('hex');
}

/** A stored message's JSON, parsed; undefined when it does not parse (such a row is never part of a turn). */
function parseLoosely(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Whether a parsed row has the shape `Message.parse` checks closely enough to compare contents (an object with a string id). */
function isMessageLike(value: unknown): boolean {
  return typeof value === 'object' && value !== null && typeof (value as { id?: unknown }).id === 'string';
}

/** The string id of a parsed row, read defensively. */
function idOfValue(value: unknown): string | undefined {
  const id = (value as { id?: unknown } | null | undefined)?.id;
  return typeof id === 'string' ? id : undefined;
}

/** `metadata.ctx` of a parsed row, read defensively. */
function ctxOf(value: unknown): { sourceType?: unknown; summary?: unknown } | undefined {
  const metadata = (value as { metadata?: unknown } | null | undefined)?.metadata;
  const ctx = typeof metadata === 'object' && metadata !== null ? (metadata as { ctx?: unknown }).ctx : undefined;
  return typeof ctx === 'object' && ctx !== null ? ctx : undefined;
}

/** `metadata.ctx.sourceType` of a parsed row. */
function sourceTypeOf(value: unknown): unknown {
  return ctxOf(value)?.sourceType;
}

/** Context stored with a turn (not a compaction summary), as core's `findRetriedTurn` extends a turn over. */
function storedWithTurn(value: unknown): boolean {
  const ctx = ctxOf(value);
  return ctx?.sourceType === 'context' && ctx.summary === undefined;
}
