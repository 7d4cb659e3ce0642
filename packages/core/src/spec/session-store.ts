import type { SessionJson } from './session.js';

/** A session as a store holds it, with its version tag. */
export interface StoredSession {
  /** The session JSON. */
  session: SessionJson;
  /** Opaque version tag; pass it as `ifMatch` to write only if nobody wrote since. */
  etag: string;
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

/**
 * Keeps whole sessions between requests (the hosted flow: load, run, save). Stores hold JSON and
 * never interpret provider state.
 */
export interface SessionStore {
  /** The contract version this store implements. Absent means `'v1'`. */
  readonly specificationVersion?: 'v1';
  /** The stored session, or undefined. */
  get(sessionId: string, options?: { signal?: AbortSignal }): Promise<StoredSession | undefined>;
  /** Stores a session and returns its new etag. */
  set(session: SessionJson, options?: SetSessionOptions): Promise<string>;
  /** Deletes a session; resolves to whether one was stored. */
  delete(sessionId: string, options?: { signal?: AbortSignal }): Promise<boolean>;
}
