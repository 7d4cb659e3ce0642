import type { JsonValue } from './json.js';

/**
 * Which working-memory record: a user's (`{ userId }`), or a session's (`{ sessionId }`, with the
 * session's `userId` when it has one, so the record is exported and deleted with that user). A
 * record is identified by both fields together: `{ userId: 'u1', sessionId: 's1' }` and
 * `{ sessionId: 's1' }` are two records.
 */
export interface WorkingMemoryKey {
  /** The user the record belongs to (`metadata.userId` of their sessions). Required without `sessionId`. */
  userId?: string;
  /** The session the record belongs to; absent for a user's record. */
  sessionId?: string;
}

/** A working-memory record as a store holds it, with its version tag. */
export interface StoredWorkingMemory {
  /** The record: a JSON object (schema mode) or markdown text (template mode). */
  record: JsonValue;
  /** Opaque version tag; pass it as `ifMatch` to write only if nobody wrote since. */
  etag: string;
  /** When the record was last written, ISO 8601. */
  updatedAt: string;
}

/** One record of a user, as `WorkingMemoryStore.listUser` returns it. */
export interface WorkingMemoryEntry extends StoredWorkingMemory {
  /** The session of a session's record; absent for the user's own record. */
  sessionId?: string;
}

/** Options of `WorkingMemoryStore.put`. */
export interface PutWorkingMemoryOptions {
  /**
   * Optimistic concurrency: a string writes only if the stored etag equals it; `null` writes only
   * if no record is stored under that key; absent writes unconditionally. A mismatch throws
   * `ConcurrencyError` and writes nothing.
   */
  ifMatch?: string | null;
  /** Aborts the write. */
  signal?: AbortSignal;
}

/** Options of the `WorkingMemoryStore` calls that only read or delete. */
export interface WorkingMemoryCallOptions {
  /** Aborts the call. */
  signal?: AbortSignal;
}

/**
 * Keeps working-memory records (`WorkingMemoryProvider`): one JSON value per user or per session,
 * written with optimistic concurrency, listed and deleted per user. Stores hold JSON and never
 * interpret it. Every method throws `ConfigurationError` for a key with neither id, or a blank one.
 */
export interface WorkingMemoryStore {
  /** The contract version this store implements. Absent means `'v1'`. */
  readonly specificationVersion?: 'v1';
  /** The stored record and its etag, or undefined. */
  get(key: WorkingMemoryKey, options?: WorkingMemoryCallOptions): Promise<StoredWorkingMemory | undefined>;
  /**
   * Stores a record and resolves to its new etag (a new one on every write, never one a deleted
   * record had). @throws ConcurrencyError when `ifMatch` does not hold (nothing is written).
   */
  put(key: WorkingMemoryKey, record: JsonValue, options?: PutWorkingMemoryOptions): Promise<string>;
  /** Deletes a record; resolves to whether one was stored. */
  delete(key: WorkingMemoryKey, options?: WorkingMemoryCallOptions): Promise<boolean>;
  /** Every record of a user: their own and those of their sessions (keys with that `userId`), in no set order. */
  listUser(userId: string, options?: WorkingMemoryCallOptions): Promise<WorkingMemoryEntry[]>;
  /** Deletes every record `listUser` would list; resolves to how many there were. Idempotent. */
  deleteUser(userId: string, options?: WorkingMemoryCallOptions): Promise<number>;
}
