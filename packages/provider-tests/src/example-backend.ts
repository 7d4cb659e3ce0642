// example-backend.ts: a complete history provider and session store, the template of the guide
// "Publish your own backend" in this package's README (which shows this file verbatim).
import {
  checkHistoryBatch,
  checkInteger,
  checkListOptions,
  checkSessionForWrite,
  checkSessionId,
  compareSessions,
  ConcurrencyError,
  encodeSessionCursor,
  findRetriedTurn,
  HistoryProvider,
  type HistoryProviderOptions,
  isAfterCursor,
  type ClearHistoryArgs,
  type GetHistoryArgs,
  type GetSessionOptions,
  type ListSessionsOptions,
  type Message,
  messageIdConflict,
  parseSessionJson,
  type PopHistoryArgs,
  type SaveHistoryArgs,
  type SessionJson,
  type SessionPage,
  type SessionStore,
  type SessionSummary,
  type SetSessionOptions,
  sameMessageContent,
  sessionOfUser,
  shortId,
  type StoredSession,
  withDeadline,
} from '@ctx/core/backend';

/**
 * The service both classes talk to: here a stand-in in process memory. `transaction` runs its body
 * as one atomic unit, as your service would run one transaction, script or conditional write (here
 * the body is synchronous, so nothing interleaves with it). Replace it with your client.
 */
export class ExampleDatabase {
  /** Stored messages per history, under `JSON.stringify([sourceId, sessionId])` (one key per pair, whatever the ids hold). */
  readonly histories: Map<string, Message[]> = new Map();
  /** Stored sessions by id: the JSON text, the etag, and the summary `list` returns. */
  readonly sessions: Map<string, { json: string; etag: string; summary: SessionSummary }> = new Map();
  #version = 0;

  /** A fresh etag: any string that changes on every write. */
  nextEtag(): string {
    return String(++this.#version);
  }

  /** Runs `body` atomically, after a round trip (as a network call would). */
  async transaction<T>(body: () => T): Promise<T> {
    await new Promise((resolve) => setImmediate(resolve));
    return body();
  }
}

/** Options of the example backends: which database, and the deadline of each call. */
export interface ExampleBackendOptions {
  /** The database (your client or pool: accept an injected one). */
  database: ExampleDatabase;
  /** Deadline of each database call, in milliseconds. Default 5000. */
  timeoutMs?: number;
}

/** A history provider on `ExampleDatabase`: every method one atomic transaction. */
export class ExampleHistoryProvider extends HistoryProvider {
  readonly #db: ExampleDatabase;
  readonly #timeoutMs: number;

  constructor(options: HistoryProviderOptions & ExampleBackendOptions) {
    super({ ...options, sourceId: options.sourceId ?? 'example' });
    this.#db = options.database;
    this.#timeoutMs = checkInteger('ExampleHistoryProvider', 'timeoutMs', options.timeoutMs ?? 5000);
  }

  /** One database call with a deadline that honours the caller's signal. */
  #call<T>(operation: string, sessionId: string, signal: AbortSignal | undefined, body: () => T): Promise<T> {
    return withDeadline(() => this.#db.transaction(body), {
      timeoutMs: this.#timeoutMs,
      signal,
      backend: 'example',
      operation: `example ${operation} for session ${shortId(sessionId)}`,
    });
  }

  #key(sessionId: string): string {
    return JSON.stringify([this.sourceId, checkSessionId(sessionId)]);
  }

  async getMessages(sessionId: string, { limit, signal }: GetHistoryArgs): Promise<Message[]> {
    const key = this.#key(sessionId);
    return this.#call('getMessages', sessionId, signal, () => {
      const all = this.#db.histories.get(key) ?? [];
      // Copies: nothing the caller does to them may change what is stored.
      return structuredClone(limit === undefined ? all : all.slice(Math.max(0, all.length - limit)));
    });
  }

  async saveMessages(sessionId: string, messages: readonly Message[], { signal, report, turn }: SaveHistoryArgs): Promise<void> {
    // Everything checked before anything is written.
    const batch = checkHistoryBatch(sessionId, messages, { sourceId: this.sourceId, report }).messages;
    const key = this.#key(sessionId);
    await this.#call('saveMessages', sessionId, signal, () => {
      const stored = this.#db.histories.get(key) ?? [];
      // A batch of a run goes where its turn is stored: the opening batch replaces an earlier attempt.
      const inputs = turn ? batch.filter((m) => turn.inputIds.includes(m.id)) : [];
      const span = turn ? findRetriedTurn(stored, turn.inputIds, inputs) : undefined;
      const replaced = turn?.opens && span ? new Set(stored.slice(span.start, span.end)) : undefined;
      const fresh: Message[] = [];
      for (const [index, m] of batch.entries()) {
        const existing = stored.find((s) => s.id === m.id && !replaced?.has(s));
        if (existing === undefined) fresh.push(structuredClone(m));
        else if (!sameMessageContent(existing, m))
          throw messageIdConflict({ sourceId: this.sourceId, sessionId, messageId: m.id, index, batchSize: messages.length, report });
        // else: the same message saved again (a retry) is skipped.
      }
      const next = [...stored];
      if (replaced && span) next.splice(span.start, span.end - span.start, ...fresh);
      else if (span) next.splice(span.end, 0, ...fresh);
      else next.push(...fresh);
      this.#db.histories.set(key, next); // the whole batch, or (on a throw above) nothing
    });
  }

  override async replaceMessages(sessionId: string, messages: readonly Message[], { signal, report }: SaveHistoryArgs): Promise<void> {
    const batch = checkHistoryBatch(sessionId, messages, { sourceId: this.sourceId, report }).messages;
    const key = this.#key(sessionId);
    await this.#call('replaceMessages', sessionId, signal, () => void this.#db.histories.set(key, structuredClone([...batch])));
  }

  override async popMessages(sessionId: string, { signal, count = 1 }: PopHistoryArgs): Promise<Message[]> {
    checkInteger('ExampleHistoryProvider.popMessages', 'count', count);
    const key = this.#key(sessionId);
    // Read and remove in one transaction: two concurrent pops never return the same message.
    return this.#call('popMessages', sessionId, signal, () => {
      const stored = this.#db.histories.get(key) ?? [];
      const popped = stored.slice(Math.max(0, stored.length - count));
      this.#db.histories.set(key, stored.slice(0, stored.length - popped.length));
      return popped;
    });
  }

  override async clearMessages(sessionId: string, { signal }: ClearHistoryArgs): Promise<void> {
    const key = this.#key(sessionId);
    await this.#call('clearMessages', sessionId, signal, () => void this.#db.histories.delete(key));
  }
  // forkMessages: the default of HistoryProvider (one getMessages, one saveMessages) is correct, and
  // refuses a message not in the history with InvalidInputError; override it only to copy on the server.
}

/** A session store on `ExampleDatabase`: `set` is one conditional write. */
export class ExampleSessionStore implements SessionStore {
  readonly specificationVersion = 'v1';
  readonly #db: ExampleDatabase;
  readonly #timeoutMs: number;

  constructor(options: ExampleBackendOptions) {
    this.#db = options.database;
    this.#timeoutMs = checkInteger('ExampleSessionStore', 'timeoutMs', options.timeoutMs ?? 5000);
  }

  #call<T>(operation: string, signal: AbortSignal | undefined, body: () => T): Promise<T> {
    return withDeadline(() => this.#db.transaction(body), { timeoutMs: this.#timeoutMs, signal, backend: 'example', operation });
  }

  async get(sessionId: string, options: GetSessionOptions = {}): Promise<StoredSession | undefined> {
    checkSessionId(sessionId);
    const row = await this.#call(`example get of session ${shortId(sessionId)}`, options.signal, () => this.#db.sessions.get(sessionId));
    if (row === undefined) return undefined;
    const stored = { session: parseSessionJson(row.json, { sessionId }), etag: row.etag };
    return options.userId === undefined ? stored : sessionOfUser(stored, options.userId);
  }

  async set(session: SessionJson, options: SetSessionOptions = {}): Promise<string> {
    const checked = checkSessionForWrite(session); // nothing a later read would refuse is written
    const { sessionId } = checked;
    const json = JSON.stringify(checked);
    const summary: SessionSummary = structuredClone({ sessionId, metadata: checked.metadata });
    return this.#call(`example set of session ${shortId(sessionId)}`, options.signal, () => {
      // The condition and the write in one step, never a read before the write: in SQL,
      // UPDATE ... WHERE session_id = $1 AND etag = $2 (no row updated: the condition failed),
      // and INSERT ... ON CONFLICT DO NOTHING for `ifMatch: null`.
      const { ifMatch } = options;
      const current = this.#db.sessions.get(sessionId);
      const holds = ifMatch === undefined || (ifMatch === null ? current === undefined : current?.etag === ifMatch);
      if (!holds) throw new ConcurrencyError(sessionId); // nothing was written
      const etag = this.#db.nextEtag();
      this.#db.sessions.set(sessionId, { json, etag, summary });
      return etag;
    });
  }

  async delete(sessionId: string, options: { signal?: AbortSignal } = {}): Promise<boolean> {
    checkSessionId(sessionId);
    return this.#call(`example delete of session ${shortId(sessionId)}`, options.signal, () => this.#db.sessions.delete(sessionId));
  }

  async list(options?: ListSessionsOptions): Promise<SessionPage> {
    const { userId, limit, cursor } = checkListOptions(options);
    // Keyset paging, as a query would do it: WHERE (updated_at, session_id) < cursor
    // ORDER BY updated_at DESC, session_id DESC LIMIT limit + 1.
    const rows = await this.#call('example list', options?.signal, () =>
      [...this.#db.sessions.values()]
        .map((row) => row.summary)
        .filter((s) => (userId === undefined || s.metadata.userId === userId) && (cursor === undefined || isAfterCursor(s, cursor)))
        .sort(compareSessions)
        .slice(0, limit + 1),
    );
    const sessions = structuredClone(rows.slice(0, limit));
    const last = sessions[sessions.length - 1];
    return rows.length > limit && last ? { sessions, nextCursor: encodeSessionCursor(last, userId) } : { sessions };
  }
}
