import type { JsonValue } from './json.js';

/**
 * How a stream ended, as its producer says when it closes it: the reply is complete (`finished`),
 * a stop request cut it short (`stopped`), or the run failed (`failed`).
 */
export type StreamOutcome = 'finished' | 'stopped' | 'failed';

/**
 * Where a stream is: `running` while its producer appends and renews its lease, one of the
 * `StreamOutcome`s once closed, or `abandoned` when the producer stopped renewing its lease without
 * closing (the process died or lost the store): no chunk will follow.
 */
export type StreamStatus = 'running' | StreamOutcome | 'abandoned';

/** Which stream: the one of a turn (`turnId`, the turn's input message id) in a session. */
export interface StreamRef {
  /** The session (conversation) the turn belongs to. */
  sessionId: string;
  /** The turn: the id of its input message, so a double submit of the same message names the same stream. */
  turnId: string;
}

/** What `StreamStore.find` and `open` say about a stream. */
export interface StreamInfo extends StreamRef {
  /** Where the stream is now; `abandoned` when its lease ran out while it was running. */
  status: StreamStatus;
  /** How many chunks it holds (the index the next append gets). */
  chunkCount: number;
  /** When it was opened, ISO 8601. */
  openedAt: string;
  /** When it was closed, ISO 8601; absent while running or abandoned. */
  closedAt?: string;
  /** Whether a stop was requested for it (`requestStop`) while it ran. */
  stopRequested: boolean;
  /**
   * The limit an append was refused for (`maxChunks` or `maxBytes`), once one was: the stream holds
   * only the chunks before it, and stays open (its producer can still be stopped and closes it).
   * Absent while every append was taken, and from stores that do not report it.
   */
  limitReached?: StreamLimit;
}

/** A stream store's limit an append can reach: its option's name. */
export type StreamLimit = 'maxChunks' | 'maxBytes';

/** Options of `StreamStore.open`. */
export interface OpenStreamOptions {
  /** Aborts the call (the stream may or may not have been opened; opening the same turn again tells which). */
  signal?: AbortSignal;
}

/** Options of the `StreamStore` calls that take only a signal. */
export interface StreamCallOptions {
  /** Aborts the call. */
  signal?: AbortSignal;
}

/** Options of `StreamStore.read`. */
export interface ReadStreamOptions {
  /** The index of the first chunk to yield (0, the default, replays from the first chunk). */
  fromIndex?: number;
  /**
   * Ends the read: the iteration then finishes at once, quietly (no `end` item, no error), and
   * whatever the store held for it (a connection, a listener) is released.
   */
  signal?: AbortSignal;
}

/** One item of a read: a chunk with its index, or the end of the stream with its final status. */
export type StreamReadItem =
  | {
      /** A chunk, in the order it was appended. */
      type: 'chunk';
      /** Its position in the stream, from 0. */
      index: number;
      /** The chunk as appended. */
      chunk: JsonValue;
    }
  | {
      /** The stream ended; always the last item of a read that was not aborted. */
      type: 'end';
      /** How it ended: a `StreamOutcome`, or `abandoned` when the producer's lease ran out. */
      status: Exclude<StreamStatus, 'running'>;
      /**
       * The limit an append was refused for, when one was (`StreamInfo.limitReached`): the chunks
       * read stop short of the reply. Absent otherwise, and from stores that do not report it.
       */
      limitReached?: StreamLimit;
    };

/**
 * The producer's handle on a stream it opened. Only this handle appends and closes: a stream
 * opened again by another producer (after this one was abandoned) refuses this handle's writes.
 */
export interface StreamWriter extends StreamRef {
  /**
   * Aborts when a stop was requested for this stream (`StreamStore.requestStop`, from any process
   * sharing the store); the producer then stops generating and closes with `'stopped'`. A store
   * learns of a stop on the writer's appends and lease renewals, so it reaches the producer within
   * about one renewal period.
   */
  readonly stopSignal: AbortSignal;
  /**
   * Appends chunks, in order, after those appended before (one batch is atomic: all or none), and
   * renews the lease. Call it with one batch at a time (await it before the next).
   * @throws ConcurrencyError when the stream is closed, or is no longer this writer's (released,
   * abandoned, opened again by another producer, or expired): nothing is appended; stop producing.
   * @throws InvalidInputError (`limit` is `maxChunks` or `maxBytes`) when the batch would take the
   * stream past the store's limits: nothing is appended, and the stream records the limit
   * (`limitReached`) and stays open, so a stop still reaches this writer; append no more, and close
   * it with the turn's outcome when the turn ends.
   * @throws InvalidInputError for a chunk that is not plain JSON (nothing is appended).
   * @throws BackendUnavailableError when the store cannot be reached.
   */
  append(chunks: readonly JsonValue[], options?: StreamCallOptions): Promise<void>;
  /**
   * Optional: `append` for chunks the producer already serialized, each the `JSON.stringify` of a
   * plain JSON value (as it sends them on its own response), so a chunk is serialized once. The
   * store keeps the texts as given (it does not parse them; a reader gets `JSON.parse` of each);
   * otherwise as `append`, with the same throws. A producer calls `append` on a store without it.
   * @throws ConfigurationError when `json` is not an array of strings (nothing is appended).
   */
  appendJson?(json: readonly string[], options?: StreamCallOptions): Promise<void>;
  /**
   * Closes the stream with its outcome: readers get the rest of the chunks, then `end` with this
   * status, and the stream is kept for the store's `ttlMs`, then gone. Closing a stream already
   * closed by this writer with the same outcome resolves (a retried close).
   * @throws ConcurrencyError when the stream is closed with another outcome, or no longer this writer's.
   * @throws BackendUnavailableError when the store cannot be reached.
   */
  close(outcome: StreamOutcome, options?: StreamCallOptions): Promise<void>;
  /**
   * Stops renewing the lease without closing, as a producer that died would: readers end with
   * `abandoned` once the lease runs out. For a process that gives a stream up on purpose without
   * a store call (close is better when possible); idempotent.
   */
  release(): void;
}

/** What `StreamStore.open` resolves to: a new stream to write, or the running one of the same turn to join. */
export type OpenStreamResult =
  | {
      /** A new stream was opened (nothing ran for this turn, or its last stream ended or was abandoned). */
      created: true;
      /** The producer's handle; it renews the lease until closed or released. */
      writer: StreamWriter;
      /** The stream as opened (`running`, no chunks). */
      info: StreamInfo;
    }
  | {
      /**
       * The same turn already has a running stream (a double submit): join it with `read` instead
       * of producing the reply again.
       */
      created: false;
      /** The running stream. */
      info: StreamInfo;
    };

/**
 * Keeps the chunks of each streamed turn (the AI SDK's UI message chunks, or any JSON values) so
 * any process sharing the store can replay a turn from its first chunk and follow it live: a reload
 * or a second tab resumes the reply. One running stream per session; a stream is kept for a bounded
 * time after it ends. Stores hold the chunks as JSON and never interpret them. Every method throws
 * `ConfigurationError` for a blank session or turn id.
 */
export interface StreamStore {
  /** The contract version this store implements. */
  readonly specificationVersion: 'v1';
  /**
   * Opens the stream of a turn, the producer's first call. Resolves with `created: false` when the
   * same turn's stream is running (join it); a stream of the turn that ended or was abandoned is
   * replaced by a new, empty one.
   * @throws ConcurrencyError (`turnRunning: true`) when the session has a running stream of another
   * turn, whose producer still renews its lease: wait for it, or stop it.
   * @throws BackendUnavailableError when the store cannot be reached.
   */
  open(ref: StreamRef, options?: OpenStreamOptions): Promise<OpenStreamResult>;
  /**
   * The session's running stream, or else its most recent one while the store keeps it (`ttlMs`
   * after it ended); undefined when there is none. A running stream whose lease ran out is
   * reported `abandoned`.
   */
  find(sessionId: string, options?: StreamCallOptions): Promise<StreamInfo | undefined>;
  /**
   * Reads a stream: its chunks from `fromIndex`, then, while it runs, each chunk as it is appended,
   * then an `end` item with how it ended (`abandoned` when the producer's lease runs out, so a read
   * never waits on a dead producer). A stream that does not exist (never opened, expired, or
   * replaced by a newer stream of the turn before the read started) yields nothing. Any number of
   * reads of one stream may run at once, each getting every chunk.
   * @throws BackendUnavailableError (from the iteration) when the store is lost mid-read.
   */
  read(ref: StreamRef, options?: ReadStreamOptions): AsyncIterable<StreamReadItem>;
  /**
   * Asks the producer of the session's running stream (of `turnId`, when given) to stop, wherever
   * it runs: its writer's `stopSignal` aborts. Resolves to whether a running stream was found.
   */
  requestStop(ref: { sessionId: string; turnId?: string }, options?: StreamCallOptions): Promise<boolean>;
}
