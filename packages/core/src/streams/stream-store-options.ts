import { checkId, checkInteger, checkPositiveNumber, shortId } from '../backend/checks.js';
import { ConcurrencyError, ConfigurationError, InvalidInputError } from '../errors.js';
import { formatBytes } from '../messages/json-bytes.js';
import { findNonJson } from '../messages/json.js';
import type { JsonValue } from '../contracts/json.js';
import type { StreamOutcome, StreamRef, StreamStatus } from '../contracts/stream-store.js';

/** How long a stream is kept after it ends, by default: 10 minutes. */
export const DEFAULT_STREAM_TTL_MS = 10 * 60_000;
/** How long a producer's lease lasts without a renewal, by default: 30 seconds. */
export const DEFAULT_STREAM_LEASE_MS = 30_000;
/** How many chunks one stream may hold, by default. */
export const DEFAULT_MAX_STREAM_CHUNKS = 100_000;
/** How many bytes of chunk JSON one stream may hold, by default: 16 MiB. */
export const DEFAULT_MAX_STREAM_BYTES = 16 * 1024 * 1024;

/** The options every `StreamStore` of ctx takes: lifetimes and limits. */
export interface StreamStoreOptions {
  /** How long a stream is kept after it is closed (or after its lease ran out), in ms. Default 10 minutes. */
  ttlMs?: number;
  /**
   * How long a producer's lease lasts, in ms: its writer renews it every third of that while the
   * stream is open, and a stream not renewed for this long is `abandoned` (readers end). Default 30 s.
   */
  leaseMs?: number;
  /** The most chunks one stream may hold; an append past it throws `InvalidInputError`. Default 100,000. */
  maxChunks?: number;
  /** The most bytes of chunk JSON (UTF-8) one stream may hold; an append past it throws `InvalidInputError`. Default 16 MiB. */
  maxBytes?: number;
}

/** `StreamStoreOptions` with every default applied. */
export type CheckedStreamStoreOptions = Required<StreamStoreOptions>;

/**
 * Checks a stream store's options and applies the defaults.
 * @throws ConfigurationError naming `owner` and the option that is not a positive integer.
 */
export function checkStreamStoreOptions(owner: string, options: StreamStoreOptions = {}): CheckedStreamStoreOptions {
  const ttlMs = checkInteger(owner, 'ttlMs', options.ttlMs ?? DEFAULT_STREAM_TTL_MS);
  const leaseMs = checkInteger(owner, 'leaseMs', options.leaseMs ?? DEFAULT_STREAM_LEASE_MS, 3);
  const maxChunks = checkInteger(owner, 'maxChunks', options.maxChunks ?? DEFAULT_MAX_STREAM_CHUNKS);
  const maxBytes = checkPositiveNumber(owner, 'maxBytes', options.maxBytes ?? DEFAULT_MAX_STREAM_BYTES);
  return { ttlMs, leaseMs, maxChunks, maxBytes };
}

/**
 * Checks a stream's ids: non-blank strings, kept exactly as given.
 * @throws ConfigurationError otherwise.
 */
export function checkStreamRef(ref: StreamRef): StreamRef {
  if (typeof ref !== 'object' || ref === null) throw new ConfigurationError('A stream is named by { sessionId, turnId }; got none.');
  return { sessionId: checkId(ref.sessionId, 'session id'), turnId: checkId(ref.turnId, 'turn id') };
}

/** A stream named for error messages: `turn "t1" of session "s1"`. Ids only. */
export function describeStream(ref: StreamRef): string {
  return `the stream of turn ${shortId(ref.turnId)} of session ${shortId(ref.sessionId)}`;
}

/**
 * The chunks of one append as JSON strings, with their total UTF-8 bytes.
 * @throws ConfigurationError when `chunks` is not an array; InvalidInputError for a chunk that is not plain JSON.
 */
export function encodeChunks(ref: StreamRef, chunks: readonly JsonValue[]): { json: string[]; bytes: number } {
  if (!Array.isArray(chunks)) throw new ConfigurationError(`An append to ${describeStream(ref)} takes an array of chunks.`);
  const json: string[] = [];
  let bytes = 0;
  for (let i = 0; i < chunks.length; i++) {
    const problem = findNonJson(chunks[i]);
    if (problem !== undefined) {
      throw new InvalidInputError(
        `Chunk ${i} of an append to ${describeStream(ref)} is not plain JSON at ${problem}; nothing was appended.`,
      );
    }
    const text = JSON.stringify(chunks[i]);
    json.push(text);
    bytes += Buffer.byteLength(text, 'utf8');
  }
  return { json, bytes };
}

/**
 * The chunks of one `appendJson` (texts the producer already serialized) with their total UTF-8
 * bytes; the texts are kept as given, not parsed.
 * @throws ConfigurationError when `json` is not an array of strings.
 */
export function measureJsonChunks(ref: StreamRef, json: readonly string[]): { json: readonly string[]; bytes: number } {
  if (!Array.isArray(json)) throw new ConfigurationError(`An appendJson to ${describeStream(ref)} takes an array of JSON texts.`);
  let bytes = 0;
  for (let i = 0; i < json.length; i++) {
    const text = json[i];
    if (typeof text !== 'string') {
      throw new ConfigurationError(
        `Chunk ${i} of an appendJson to ${describeStream(ref)} is a ${typeof text}, not JSON text; nothing was appended. Pass JSON.stringify of each chunk, or call append.`,
      );
    }
    bytes += Buffer.byteLength(text, 'utf8');
  }
  return { json, bytes };
}

/**
 * The error of an append that would take a stream past a limit (nothing was appended).
 * `limit` is the option's name.
 */
export function streamLimitError(ref: StreamRef, limit: 'maxChunks' | 'maxBytes', max: number): InvalidInputError {
  const what = limit === 'maxChunks' ? `${max} chunks` : formatBytes(max);
  return new InvalidInputError(
    `An append to ${describeStream(ref)} would take it past ${what} (${limit}); nothing was appended. Close the stream with 'failed', or raise ${limit}.`,
    { limit },
  );
}

/**
 * The error of a write by a writer whose stream is no longer open for it: closed (with `status`),
 * abandoned, reopened by another producer, or gone (`status` undefined).
 */
export function streamClosedError(ref: StreamRef, status: StreamStatus | 'released' | 'replaced' | undefined): ConcurrencyError {
  const why =
    status === undefined
      ? 'no longer exists (it expired, or the store lost it)'
      : status === 'replaced'
        ? 'was opened again by another producer after its lease ran out'
        : status === 'released'
          ? 'was released by its writer'
          : status === 'abandoned' || status === 'running'
            ? 'was abandoned: its lease ran out before this write'
            : `is closed (${status})`;
  return new ConcurrencyError(ref.sessionId, `${capitalize(describeStream(ref))} ${why}; nothing was written. Stop producing it.`);
}

/**
 * Checks a close's outcome.
 * @throws ConfigurationError for anything but `finished`, `stopped` or `failed`.
 */
export function checkOutcome(ref: StreamRef, outcome: unknown): StreamOutcome {
  if (outcome === 'finished' || outcome === 'stopped' || outcome === 'failed') return outcome;
  throw new ConfigurationError(
    `Closing ${describeStream(ref)} takes 'finished', 'stopped' or 'failed'; got ${typeof outcome === 'string' ? shortId(outcome) : typeof outcome}.`,
  );
}

/**
 * Checks `read`'s `fromIndex`: a non-negative integer, default 0.
 * @throws ConfigurationError otherwise.
 */
export function checkFromIndex(fromIndex: unknown): number {
  return fromIndex === undefined ? 0 : checkInteger('StreamStore.read', 'fromIndex', fromIndex, 0);
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
