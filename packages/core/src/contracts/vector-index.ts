import type { Role } from './message.js';

/**
 * A message as a `VectorIndex` keeps it, without its vector: what a query or a range read returns.
 * Plain JSON. The index keeps every indexed message of a session, so the neighbours of a match are
 * read back from the index itself (`getRange`), by session and `sequence`.
 */
export interface IndexedMessage {
  /** The record's id, unique in the index; `upsert` with the same id replaces the record. Any non-empty string. */
  id: string;
  /** The text that was embedded, already redacted: the index stores it as it is and never sees the raw message. */
  text: string;
  /** The user the message belongs to; absent when the session has none. */
  userId?: string;
  /** The session the message was said in. */
  sessionId: string;
  /** The message's own id (`Message.id`). */
  messageId: string;
  /** Who wrote the message. */
  role: Role;
  /**
   * The message's position in its session: a non-negative integer, increasing in the order the
   * messages were said. Neighbours are the records of the same session with the nearest sequences.
   */
  sequence: number;
  /** When the message was said, ISO 8601; absent when unknown. */
  createdAt?: string;
  /**
   * `'archive'` for a message that compaction replaced in the stored history (only the index still
   * holds it); absent for a message indexed as it was stored.
   */
  kind?: 'archive';
}

/** What `VectorIndex.upsert` stores: an `IndexedMessage` and its vector. */
export interface VectorRecord extends IndexedMessage {
  /** The embedding of `text`; every vector of one index has the same length, each value finite. */
  vector: number[];
}

/** One hit of `VectorIndex.query`: the record (without its vector) and how close it is. */
export interface VectorMatch extends IndexedMessage {
  /** Cosine similarity of the record's vector to the query vector, from -1 to 1, higher is closer. */
  score: number;
}

/**
 * Which records an operation touches: those of `userId`, of `sessionId`, or (both set) of that
 * session of that user. At least one must be set: an index never reads or deletes across users by
 * accident, and an empty scope is an `InvalidInputError`.
 */
export interface VectorScope {
  /** Only records of this user. */
  userId?: string;
  /** Only records of this session. */
  sessionId?: string;
}

/** What `VectorIndex.query` receives. */
export interface VectorQuery {
  /** The query's embedding, the same length as the indexed vectors. */
  vector: readonly number[];
  /** Return at most this many matches, best first. A positive integer. */
  topK: number;
  /** Which records to search (at least `userId` or `sessionId`). */
  filter: VectorScope & {
    /** Leave out the records of these message ids (e.g. the messages already in the window). */
    excludeMessageIds?: readonly string[];
  };
  /** Leave out matches whose score is below this. */
  minScore?: number;
}

/** What `VectorIndex.getRange` receives: a stretch of one session, for the neighbours of a match. */
export interface VectorRange {
  /** The session to read. */
  sessionId: string;
  /** Only when the session belongs to this user (a guard, as in `VectorScope`). */
  userId?: string;
  /** The first sequence to return, inclusive. */
  fromSequence: number;
  /** The last sequence to return, inclusive. */
  toSequence: number;
}

/** What `VectorIndex.delete` removes: the records with these ids, or every record in a scope. */
export type VectorDeleteTarget = { ids: readonly string[] } | VectorScope;

/** Options every `VectorIndex` call takes. */
export interface VectorIndexCallOptions {
  /** Aborts the call; an implementation rejects with the signal's reason and leaves nothing half done that a retry cannot repair. */
  signal?: AbortSignal;
}

/**
 * A store of embedded messages searched by cosine k-NN within a user or a session:
 * `InMemoryVectorIndex` in `@ctx/core`, a vector database in a backend package, your own.
 * `SemanticRecallProvider` (and compaction with `archive: true`) write to it and search it.
 *
 * An implementation needs: a key (`id`), filterable `userId`, `sessionId`, `messageId` and
 * `sequence` (equality, `not in` for `excludeMessageIds`, a range on `sequence`), and a vector
 * field with cosine similarity. Records with a bad id, vector or sequence are an
 * `InvalidInputError` naming the record, and nothing of the batch is stored.
 */
export interface VectorIndex {
  /** The contract version this index implements. Absent means `'v1'`. */
  readonly specificationVersion?: 'v1';
  /** Vector length, when the index is fixed to one. */
  readonly dimensions?: number | undefined;
  /** Store the records, replacing those with the same `id`. Idempotent: a retry stores each once. */
  upsert(records: readonly VectorRecord[], options?: VectorIndexCallOptions): Promise<void>;
  /** The `topK` records of the filter's scope closest to `vector`, best first (ties in any order), each with its score. */
  query(query: VectorQuery, options?: VectorIndexCallOptions): Promise<VectorMatch[]>;
  /** The records of one session with `fromSequence <= sequence <= toSequence`, by sequence. */
  getRange(range: VectorRange, options?: VectorIndexCallOptions): Promise<IndexedMessage[]>;
  /**
   * Every record of the scope, without vectors, by session id and then sequence: what the index
   * keeps about a user (`SemanticRecallProvider.exportUserData` reads it). Optional: an index
   * without it leaves its records out of a user-data export, and the export says so.
   */
  list?(scope: VectorScope, options?: VectorIndexCallOptions): Promise<IndexedMessage[]>;
  /** Remove records by id or by scope; ids or scopes that hold nothing are no error. */
  delete(target: VectorDeleteTarget, options?: VectorIndexCallOptions): Promise<void>;
}
