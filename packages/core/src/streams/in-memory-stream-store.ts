import { checkId, shortId } from '../backend/checks.js';
import { checkOptionNames, optionNames } from '../backend/checks.js';
import { ConcurrencyError } from '../errors.js';
import type { JsonValue } from '../contracts/json.js';
import type {
  OpenStreamOptions,
  OpenStreamResult,
  ReadStreamOptions,
  StreamCallOptions,
  StreamInfo,
  StreamLimit,
  StreamOutcome,
  StreamReadItem,
  StreamRef,
  StreamStore,
  StreamWriter,
} from '../contracts/stream-store.js';
import { startRenewal } from './lease-renewal.js';
import {
  type CheckedStreamStoreOptions,
  checkFromIndex,
  checkOutcome,
  checkStreamRef,
  checkStreamStoreOptions,
  describeStream,
  encodeChunks,
  measureJsonChunks,
  streamClosedError,
  streamLimitError,
  type StreamStoreOptions,
} from './stream-store-options.js';

/** Options of `InMemoryStreamStore`: the lifetimes and limits every ctx stream store takes. */
export type InMemoryStreamStoreOptions = StreamStoreOptions;

const OPTION_NAMES = optionNames<InMemoryStreamStoreOptions>()({ ttlMs: true, leaseMs: true, maxChunks: true, maxBytes: true });

interface Entry {
  readonly ref: StreamRef;
  /** Which open made it: a writer writes only to the entry it opened. */
  readonly token: number;
  readonly chunks: string[];
  bytes: number;
  status: 'running' | StreamOutcome;
  readonly openedAt: string;
  /** When it closed, in ms since the epoch: what the lifetime is counted from (`StreamInfo.closedAt` is its ISO form). */
  closedAtMs?: number;
  leaseUntil: number;
  /** Set when the writer released it: a running stream that is no longer renewed. */
  released: boolean;
  stopRequested: boolean;
  /** The limit an append was refused for, once one was. */
  limitReached?: StreamLimit;
  readonly stop: AbortController;
  /** Readers waiting for the next change. */
  readonly waiters: Set<() => void>;
}

interface SessionStreams {
  /** The turn opened last: the session's running or most recent stream. */
  current: string;
  readonly turns: Map<string, Entry>;
}

/**
 * A `StreamStore` in process memory, for tests and single-process apps: every reader must run in
 * the process that produces. Chunks are kept as JSON text, so a reader never sees later changes to
 * an appended value. Streams are dropped `ttlMs` after they end; see `StreamStoreOptions` for the
 * lease and limits. @throws ConfigurationError from the constructor for an unknown or invalid option.
 */
export class InMemoryStreamStore implements StreamStore {
  readonly specificationVersion = 'v1';
  readonly #options: CheckedStreamStoreOptions;
  readonly #sessions = new Map<string, SessionStreams>();
  #tokens = 0;
  #lastSweep = 0;

  constructor(options: InMemoryStreamStoreOptions = {}) {
    checkOptionNames('InMemoryStreamStore', options, OPTION_NAMES);
    this.#options = checkStreamStoreOptions('InMemoryStreamStore', options);
  }

  /** Opens a turn's stream, or tells that the same turn's stream runs (join it). @throws ConcurrencyError when another turn of the session runs. */
  async open(ref: StreamRef, options: OpenStreamOptions = {}): Promise<OpenStreamResult> {
    options.signal?.throwIfAborted();
    const checked = checkStreamRef(ref);
    const now = Date.now();
    this.#sweep(now);
    let session = this.#live(checked.sessionId, now);
    const current = session?.turns.get(session.current);
    if (current && isRunning(current, now)) {
      if (current.ref.turnId === checked.turnId) return { created: false, info: infoOf(current, now) };
      throw new ConcurrencyError(
        checked.sessionId,
        `Session ${shortId(checked.sessionId)} already streams turn ${shortId(current.ref.turnId)}; ${describeStream(checked)} was not opened. Wait for that turn to end, or stop it (requestStop).`,
        { turnRunning: true },
      );
    }
    if (!session) {
      session = { current: checked.turnId, turns: new Map() };
      this.#sessions.set(checked.sessionId, session);
    }
    const replaced = session.turns.get(checked.turnId);
    const entry: Entry = {
      ref: checked,
      token: ++this.#tokens,
      chunks: [],
      bytes: 0,
      status: 'running',
      openedAt: new Date(now).toISOString(),
      leaseUntil: now + this.#options.leaseMs,
      released: false,
      stopRequested: false,
      stop: new AbortController(),
      waiters: new Set(),
    };
    session.turns.set(checked.turnId, entry);
    session.current = checked.turnId;
    if (replaced) wake(replaced);
    return { created: true, writer: this.#writer(entry), info: infoOf(entry, now) };
  }

  /** The session's running stream, else its most recent one kept; undefined when none. */
  async find(sessionId: string, options: StreamCallOptions = {}): Promise<StreamInfo | undefined> {
    options.signal?.throwIfAborted();
    const now = Date.now();
    const session = this.#live(checkId(sessionId, 'session id'), now);
    const current = session?.turns.get(session.current);
    return current && infoOf(current, now);
  }

  /** Replays a stream from `fromIndex`, then follows it until it ends or the signal aborts. */
  read(ref: StreamRef, options: ReadStreamOptions = {}): AsyncIterable<StreamReadItem> {
    const checked = checkStreamRef(ref);
    const fromIndex = checkFromIndex(options.fromIndex);
    const entry = this.#live(checked.sessionId, Date.now())?.turns.get(checked.turnId);
    return follow(entry, fromIndex, options.signal);
  }

  /** Asks the producer of the session's running stream to stop; resolves to whether one runs. */
  async requestStop(ref: { sessionId: string; turnId?: string }, options: StreamCallOptions = {}): Promise<boolean> {
    options.signal?.throwIfAborted();
    const sessionId = checkId(ref?.sessionId, 'session id');
    const turnId = ref.turnId === undefined ? undefined : checkId(ref.turnId, 'turn id');
    const now = Date.now();
    const session = this.#live(sessionId, now);
    const current = session?.turns.get(session.current);
    if (!current || !isRunning(current, now) || (turnId !== undefined && current.ref.turnId !== turnId)) return false;
    current.stopRequested = true;
    current.stop.abort();
    wake(current);
    return true;
  }

  #writer(entry: Entry): StreamWriter {
    const { leaseMs, maxChunks, maxBytes } = this.#options;
    // The writer's entry, if it may still write to it.
    const own = (now: number): Entry => {
      const session = this.#sessions.get(entry.ref.sessionId);
      const stored = session?.turns.get(entry.ref.turnId);
      if (stored !== entry) throw streamClosedError(entry.ref, stored ? 'replaced' : undefined);
      if (entry.released) throw streamClosedError(entry.ref, 'released');
      if (entry.status !== 'running') throw streamClosedError(entry.ref, entry.status);
      if (now > entry.leaseUntil) throw streamClosedError(entry.ref, 'abandoned');
      return entry;
    };
    const stopRenewal = startRenewal(Math.max(1, Math.floor(leaseMs / 3)), async () => {
      const now = Date.now();
      if (entry.status === 'running' && !entry.released && now <= entry.leaseUntil) entry.leaseUntil = now + leaseMs;
    });
    /** Takes an append's texts, or records the limit they would pass. */
    const add = (encoded: { json: readonly string[]; bytes: number }): void => {
      const now = Date.now();
      own(now);
      const limit: StreamLimit | undefined =
        entry.chunks.length + encoded.json.length > maxChunks
          ? 'maxChunks'
          : entry.bytes + encoded.bytes > maxBytes
            ? 'maxBytes'
            : undefined;
      if (limit) {
        // Recorded, and the stream stays open: a stop still reaches the producer, and its close ends the readers.
        entry.limitReached ??= limit;
        entry.leaseUntil = now + leaseMs;
        throw streamLimitError(entry.ref, limit, limit === 'maxChunks' ? maxChunks : maxBytes);
      }
      for (const text of encoded.json) entry.chunks.push(text);
      entry.bytes += encoded.bytes;
      entry.leaseUntil = now + leaseMs;
      wake(entry);
    };
    return {
      sessionId: entry.ref.sessionId,
      turnId: entry.ref.turnId,
      stopSignal: entry.stop.signal,
      append: async (chunks: readonly JsonValue[], options: StreamCallOptions = {}) => {
        options.signal?.throwIfAborted();
        add(encodeChunks(entry.ref, chunks));
      },
      // The producer's own texts are kept as they are: a chunk is serialized once, and a later change to its object reaches no reader.
      appendJson: async (json: readonly string[], options: StreamCallOptions = {}) => {
        options.signal?.throwIfAborted();
        add(measureJsonChunks(entry.ref, json));
      },
      close: async (outcome: StreamOutcome, options: StreamCallOptions = {}) => {
        options.signal?.throwIfAborted();
        const checked = checkOutcome(entry.ref, outcome);
        const session = this.#sessions.get(entry.ref.sessionId);
        if (entry.status === checked && session?.turns.get(entry.ref.turnId) === entry) return;
        const now = Date.now();
        own(now);
        entry.status = checked;
        entry.closedAtMs = now;
        stopRenewal();
        wake(entry);
      },
      release: () => {
        if (entry.released) return;
        entry.released = true;
        stopRenewal();
      },
    };
  }

  /** The session's streams with those past their lifetime dropped; undefined when none is left. */
  #live(sessionId: string, now: number): SessionStreams | undefined {
    const session = this.#sessions.get(sessionId);
    if (!session) return undefined;
    for (const [turnId, entry] of session.turns) {
      if (now > expiresAt(entry, this.#options.ttlMs)) {
        session.turns.delete(turnId);
        wake(entry);
      }
    }
    if (session.turns.size > 0) return session;
    this.#sessions.delete(sessionId);
    return undefined;
  }

  /** Drops expired streams of every session, at most once a second (on open), so idle sessions do not pile up. */
  #sweep(now: number): void {
    if (now - this.#lastSweep < 1000) return;
    this.#lastSweep = now;
    for (const sessionId of [...this.#sessions.keys()]) this.#live(sessionId, now);
  }
}

function isRunning(entry: Entry, now: number): boolean {
  return entry.status === 'running' && now <= entry.leaseUntil;
}

/** When the store drops a stream: `ttlMs` after it closed, or after its lease ran out. */
function expiresAt(entry: Entry, ttlMs: number): number {
  return (entry.closedAtMs ?? entry.leaseUntil) + ttlMs;
}

function infoOf(entry: Entry, now: number): StreamInfo {
  const info: StreamInfo = {
    sessionId: entry.ref.sessionId,
    turnId: entry.ref.turnId,
    status: entry.status === 'running' && now > entry.leaseUntil ? 'abandoned' : entry.status,
    chunkCount: entry.chunks.length,
    openedAt: entry.openedAt,
    stopRequested: entry.stopRequested,
  };
  if (entry.closedAtMs !== undefined) info.closedAt = new Date(entry.closedAtMs).toISOString();
  if (entry.limitReached) info.limitReached = entry.limitReached;
  return info;
}

function wake(entry: Entry): void {
  if (entry.waiters.size === 0) return; // the common case of an append nobody waits for: no copy
  const waiters = [...entry.waiters];
  entry.waiters.clear();
  for (const waiter of waiters) waiter();
}

/** Yields the entry's chunks from `index`, then waits for more until it ends, its lease runs out or `signal` aborts. */
async function* follow(entry: Entry | undefined, index: number, signal: AbortSignal | undefined): AsyncGenerator<StreamReadItem> {
  if (!entry) return;
  let next = index;
  for (;;) {
    if (signal?.aborted) return;
    while (next < entry.chunks.length) {
      yield { type: 'chunk', index: next, chunk: JSON.parse(entry.chunks[next]!) as JsonValue };
      next++;
      if (signal?.aborted) return;
    }
    if (entry.status !== 'running') {
      yield entry.limitReached
        ? { type: 'end', status: entry.status, limitReached: entry.limitReached }
        : { type: 'end', status: entry.status };
      return;
    }
    const now = Date.now();
    if (now > entry.leaseUntil) {
      yield entry.limitReached
        ? { type: 'end', status: 'abandoned', limitReached: entry.limitReached }
        : { type: 'end', status: 'abandoned' };
      return;
    }
    await changeOf(entry, entry.leaseUntil - now + 1, signal);
  }
}

/** Resolves at the entry's next change, after `ms` (its lease may have run out by then), or when `signal` aborts. */
function changeOf(entry: Entry, ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      entry.waiters.delete(done);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    entry.waiters.add(done);
    signal?.addEventListener('abort', done, { once: true });
  });
}
