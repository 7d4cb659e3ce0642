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
}
