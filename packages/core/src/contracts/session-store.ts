import type { SessionJson, SessionMetadata } from './session.js';

/** A session as a store holds it, with its version tag. */
export interface StoredSession {
  /** The session JSON. */
  session: SessionJson;
  /** Opaque version tag; pass it as `ifMatch` to write only if nobody wrote since. */
  etag: string;
}

/** Options of `SessionStore.get` (and `agent.getSession`). */
export interface GetSessionOptions {
  /**
   * Only a session of this user (`metadata.userId`): a session of another user, or of none, reads as
   * not stored, so a caller cannot learn that it exists. Pass the signed-in user whenever the
   * session id comes from a client.
   */
  userId?: string;
  /** Aborts the read. */
  signal?: AbortSignal;
}

/** Options of `SessionStore.set`. */
export interface SetSessionOptions {
  /**
   * Optimistic concurrency: a string writes only if the stored etag equals it; `null` writes only
   * if no session is stored under that id; absent writes unconditionally.
   * A mismatch throws `ConcurrencyError` and writes nothing.
   */
  ifMatch?: string | null;
  /** Aborts the write. */
  signal?: AbortSignal;
}

/** One entry of a session list: the id and the metadata, never the state. */
export interface SessionSummary {
  /** The session's id. */
  sessionId: string;
  /** Its metadata as last saved. */
  metadata: SessionMetadata;
}

/** Options of `SessionStore.list`. */
export interface ListSessionsOptions {
  /** Only the sessions of this user (`metadata.userId`); absent lists every session. */
  userId?: string;
  /** Page size, 1 to 100. Default 20. */
  limit?: number;
  /** Where to go on: the `nextCursor` of the previous page of the same listing. */
  cursor?: string;
  /** Aborts the read. */
  signal?: AbortSignal;
}

/**
 * One page of a session list, newest first: by `metadata.updatedAt` descending, then by
 * `sessionId` descending in the store's own string order (UTF-16 code units in process, bytes in
 * Redis; the same for ASCII ids), used alike for sorting and for the cursor. The cursor is the last entry's place in that order (keyset paging), so
 * paging stays exact while sessions change: a session saved again meanwhile moves to the front (it
 * is listed again by a new listing, never twice by this one), and no other session is skipped or
 * repeated.
 */
export interface SessionPage {
  /** The sessions of this page, newest first. */
  sessions: SessionSummary[];
  /** Pass it as `cursor` for the next page; absent on the last page. */
  nextCursor?: string;
  /** How many sessions the listing holds in all, where the store can tell cheaply. */
  total?: number;
}

/**
 * A lease on one turn running on a session (`SessionStore.leaseTurn`), which a hosted run holds
 * while it runs the turn, so that a hosted run of the same turn in another process waits for it
 * instead of running it again.
 */
export interface TurnLease {
  /**
   * The turn: a key the agent derives from the turn's input message ids, 1 to 64 characters of
   * `A-Z`, `a-z`, `0-9`, `_` and `-` (`checkTurnLease` in `@ctx/core/backend` checks it).
   */
  turn: string;
  /** Who holds the lease: a random id of one run, 1 to 64 characters of the same set. */
  holder: string;
  /** How long the lease lasts from now unless renewed, in milliseconds (an integer, 1 to 3,600,000). */
  ttlMs: number;
  /** Aborts the call. */
  signal?: AbortSignal;
}

/**
 * Keeps whole sessions between requests (the hosted flow: load, run, save). Stores hold JSON and
 * never interpret provider state.
 */
export interface SessionStore {
  /** The contract version this store implements. Absent means `'v1'`. */
  readonly specificationVersion?: 'v1';
  /**
   * The stored session, or undefined. With `userId`, also undefined when the session belongs to
   * another user or to none (`metadata.userId` is not `userId`), exactly as if it were not stored.
   * A store written before `userId` existed ignores it; `agent.getSession` checks the owner again.
   * @throws ConfigurationError for a blank `userId`.
   */
  get(sessionId: string, options?: GetSessionOptions): Promise<StoredSession | undefined>;
  /** Stores a session and returns its new etag. */
  set(session: SessionJson, options?: SetSessionOptions): Promise<string>;
  /** Deletes a session; resolves to whether one was stored. */
  delete(sessionId: string, options?: { signal?: AbortSignal }): Promise<boolean>;
  /**
   * Optional capability: lists sessions, newest first, a page at a time (see `SessionPage`).
   * `encodeSessionCursor` / `decodeSessionCursor` in `@ctx/core/backend` make and check cursors.
   * @throws ConfigurationError for a `limit` out of range.
   * @throws InvalidInputError for a cursor that is malformed or belongs to another listing (another
   *   `userId`): cursors come from clients. (A store written before may throw `ConfigurationError`.)
   */
  list?(options?: ListSessionsOptions): Promise<SessionPage>;
  /**
   * Optional capability (with `releaseTurn`): a short lease on one turn running on a session, so
   * that hosted runs in several processes run a turn once. Atomically: when nobody holds the lease
   * `lease.turn` of session `sessionId`, its holder's lease has expired, or `lease.holder` holds it
   * already (a renewal), `holder` holds it for `ttlMs` from now and it resolves to `true`; while
   * another holder's lease is live it resolves to `false` and changes nothing. A lease is kept
   * beside the session, not in it: the session need not be stored, and `get`, `set` and `list`
   * never show it. It must expire by itself (a holder that crashed never releases it). A store
   * without it keeps the behaviour of before: the same turn sent to two processes at once runs in
   * both (it is still stored once). Stores that check time on several machines need their clocks
   * to agree within a fraction of `ttlMs`.
   * @throws ConfigurationError for a blank session id or a lease `checkTurnLease` refuses.
   */
  leaseTurn?(sessionId: string, lease: TurnLease): Promise<boolean>;
  /**
   * Optional capability (with `leaseTurn`): ends the lease `lease.turn` of session `sessionId` if
   * `lease.holder` holds it (another holder's lease is left alone); resolves to whether it ended a
   * live lease of `holder` (false when it had expired or was another holder's).
   * @throws ConfigurationError for a blank session id or a lease `checkTurnLease` refuses.
   */
  releaseTurn?(sessionId: string, lease: Omit<TurnLease, 'ttlMs'>): Promise<boolean>;
}
