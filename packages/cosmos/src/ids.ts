import { createHash } from 'node:crypto';
import { ConfigurationError } from '@ctx/core';
import { encodeIdSegment, shortId } from '@ctx/core/backend';

/** Longest encoded id part kept readable in an item id; longer ones are hashed (see `encodeIdPart`). */
export const MAX_ID_PART_LENGTH = 80;

/** Longest session id (in UTF-8 bytes) used as it is as a partition key value; longer ones are hashed. */
export const MAX_PARTITION_VALUE_BYTES = 100;

/**
 * Encodes an id (a session id, source id or message id) for use inside a Cosmos DB item id,
 * injectively, with core's `encodeIdSegment`: ASCII letters, digits, `.` and `-` stay; every other
 * character, `_` included, becomes `_XX` per UTF-8 byte, and a lone UTF-16 surrogate `_uXXXX`. The
 * result never holds `/`, `\`, `?`, `#` (which Cosmos DB forbids in ids), `%` (which breaks some
 * REST paths), `:` (the package's separator) or whitespace. An encoding longer than
 * `MAX_ID_PART_LENGTH` characters is replaced by `~` and the SHA-256 of that encoding in base64url
 * (44 characters); `~` never starts a readable encoding, so the two forms cannot meet.
 */
export function encodeIdPart(id: string): string {
  return bounded(encodeIdSegment(id, { escape: '_', keep: /[A-Za-z0-9.-]/ }));
}

/** An encoding as it is when it has at most `MAX_ID_PART_LENGTH` characters, else `~` and its SHA-256 in base64url. */
function bounded(encoded: string): string {
  if (encoded.length <= MAX_ID_PART_LENGTH) return encoded;
  return `~${createHash('sha256').update(encoded, 'latin1').digest('base64url')}`;
}

const DOTS_ONLY = /^\.+$/;

/**
 * The id of an item: its parts (ids as given) each encoded by `encodeIdPart` and joined by `:`.
 * The SDK puts an item id into the request URL as one path segment, and a segment made only of
 * dots is resolved away (`..` is the parent: a read of item `..` reads the container, a delete
 * deletes it), so an id that would consist only of dots (only a one-part id can: the session
 * store's) has every dot written as `_2E` instead (`..` becomes `_2E_2E`), hashed like any part
 * past `MAX_ID_PART_LENGTH` characters. `_2E` never appears in another encoding (a `.` is kept
 * everywhere else), so ids stay distinct, and every other id is exactly what it was before.
 */
export function encodeItemId(...parts: readonly string[]): string {
  const id = parts.map(encodeIdPart).join(':');
  return DOTS_ONLY.test(id) ? bounded(id.replaceAll('.', '_2E')) : id;
}

/**
 * The partition key value of a session: the session id itself when it is well-formed Unicode of at
 * most `MAX_PARTITION_VALUE_BYTES` UTF-8 bytes and does not start with `~`; otherwise `~` and the
 * SHA-256 of its UTF-16 code units in base64url. Short ids therefore stay readable in the portal and
 * in queries, while 4 KB ids, lone surrogates and ids that would exceed a partition key's size limit
 * (101 bytes on containers without large partition keys) still map to distinct values.
 */
export function sessionPartitionValue(sessionId: string): string {
  if (!sessionId.startsWith('~') && isWellFormed(sessionId) && Buffer.byteLength(sessionId, 'utf8') <= MAX_PARTITION_VALUE_BYTES)
    return sessionId;
  return `~${createHash('sha256').update(sessionId, 'utf16le').digest('base64url')}`;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Whether `text` is well-formed UTF-16 (no lone surrogates), like ES2024's `String.prototype.isWellFormed`. */
function isWellFormed(text: string): boolean {
  return !LONE_SURROGATE.test(text);
}

/**
 * Checks a tenant or user id of a hierarchical partition key: a well-formed string with at least
 * one character that is not whitespace, of at most `MAX_PARTITION_VALUE_BYTES` UTF-8 bytes (it is
 * stored and used as a partition key value as it is).
 * @throws ConfigurationError otherwise.
 */
export function checkScopePart(name: 'tenantId' | 'userId', value: unknown): string {
  if (
    typeof value !== 'string' ||
    value.trim() === '' ||
    !isWellFormed(value) ||
    Buffer.byteLength(value, 'utf8') > MAX_PARTITION_VALUE_BYTES
  ) {
    throw new ConfigurationError(
      `${name} must be a string with at least one non-whitespace character and at most ${MAX_PARTITION_VALUE_BYTES} UTF-8 bytes (it is a partition key value); got ${typeof value === 'string' ? shortId(value) : typeof value}.`,
    );
  }
  return value;
}
