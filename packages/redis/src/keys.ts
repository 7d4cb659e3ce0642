import { createHash } from 'node:crypto';
import { ConfigurationError } from '@ctx/core';
import { encodeIdSegment } from '@ctx/core/backend';

/** Longest encoded id kept readable in a key; longer ids are hashed (see `encodeKeyPart`). */
export const MAX_ENCODED_ID_LENGTH = 200;

/**
 * Encodes an id (a session id or a source id) for use inside a Redis key, injectively, with core's
 * `encodeIdSegment`: ASCII letters, digits, `.`, `_` and `-` stay, every other character becomes
 * `%XX` per UTF-8 byte (a lone UTF-16 surrogate `%uXXXX`). The result never holds `{`, `}`, `:`,
 * glob characters, whitespace or line breaks. An encoding longer than `MAX_ENCODED_ID_LENGTH`
 * characters is replaced by `~` and the SHA-256 of that encoding in base64url (44 characters in
 * all); `~` never starts a readable encoding, so the two forms cannot meet.
 */
export function encodeKeyPart(id: string): string {
  const out = encodeIdSegment(id);
  if (out.length <= MAX_ENCODED_ID_LENGTH) return out;
  return `~${createHash('sha256').update(out, 'latin1').digest('base64url')}`;
}

const PREFIX_FORBIDDEN = /[{}*?[\]\\\s]/;

/**
 * Checks a key prefix: non-empty, and free of `{`, `}` (they would move the Redis Cluster hash
 * tag), glob characters and whitespace.
 * @throws ConfigurationError for a bad prefix.
 */
export function checkPrefix(prefix: unknown): string {
  if (typeof prefix !== 'string' || prefix === '' || PREFIX_FORBIDDEN.test(prefix)) {
    throw new ConfigurationError(
      `The Redis key prefix must be a non-empty string without braces, glob characters (* ? [ ] \\) or whitespace; got ${JSON.stringify(prefix)}.`,
    );
  }
  return prefix;
}

/** The Redis keys of one conversation of one history provider. */
export interface HistoryKeys {
  /** The list of messages as JSON text, oldest first. */
  messages: string;
  /** The sorted set of stored message ids, scored by their sequence number. */
  ids: string;
}

/** `{prefix}:history:{encoded sourceId}:{{encoded sessionId}}:messages` and `:ids`. */
export function historyKeys(prefix: string, sourceId: string, sessionId: string): HistoryKeys {
  const base = `${prefix}:history:${encodeKeyPart(sourceId)}:{${encodeKeyPart(sessionId)}}`;
  return { messages: `${base}:messages`, ids: `${base}:ids` };
}

/** `{prefix}:session:{{encoded sessionId}}`. */
export function sessionKey(prefix: string, sessionId: string): string {
  return `${prefix}:session:{${encodeKeyPart(sessionId)}}`;
}

/**
 * `{prefix}:turn:{{encoded sessionId}}:<turn>`: the lease on a turn running on a session (a string
 * holding its holder, with a TTL), in the slot of the session's own key. `turn` is a checked lease
 * key (`checkTurnLease`: letters, digits, `_` and `-`).
 */
export function turnLeaseKey(prefix: string, sessionId: string, turn: string): string {
  return `${prefix}:turn:{${encodeKeyPart(sessionId)}}:${turn}`;
}

/** The Redis keys of one session listing: every session, or one user's. All three share one hash tag. */
export interface IndexKeys {
  /** The sorted set of session ids, scored by `metadata.updatedAt` in ms since the epoch. */
  order: string;
  /** The hash of session id -> `<revision> <metadata JSON>`. */
  meta: string;
  /** The sorted set of session ids written with a TTL, scored by when they expire (ms). */
  expires: string;
}

/**
 * `{prefix}:sessions:{all}:order` (and `:meta`, `:expires`) for every session, or
 * `{prefix}:sessions:{user:<encoded userId>}:...` for one user's: the hash tag puts each listing in
 * one slot, and each user in their own.
 */
export function indexKeys(prefix: string, userId?: string): IndexKeys {
  const base = `${prefix}:sessions:{${userId === undefined ? 'all' : `user:${encodeKeyPart(userId)}`}}`;
  return { order: `${base}:order`, meta: `${base}:meta`, expires: `${base}:expires` };
}
