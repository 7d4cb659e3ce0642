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

/** The Redis keys of one session's resumable streams (`RedisStreamStore`), all in the slot of the session's hash tag. */
export interface StreamKeys {
  /** The hash of the session's current (running or most recent) stream: its turn, open id, status, lease and counts. */
  meta: string;
  /** The string holding the open id of the latest stream of a turn. */
  turn: (turnId: string) => string;
  /** The Redis Stream of one opened stream's chunks, entry `0-<n>` for chunk `n - 1`, then its end entry. */
  chunks: (openId: string) => string;
}

/**
 * `{prefix}:stream:{{encoded sessionId}}`, with `:turn:<encoded turnId>` and `:chunks:<open id>`
 * after it. `openId` is a checked random UUID of the store's own making.
 */
export function streamKeys(prefix: string, sessionId: string): StreamKeys {
  const meta = `${prefix}:stream:{${encodeKeyPart(sessionId)}}`;
  return { meta, turn: (turnId) => `${meta}:turn:${encodeKeyPart(turnId)}`, chunks: (openId) => `${meta}:chunks:${openId}` };
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

/** CRC16/XMODEM table, as Redis Cluster hashes keys to slots. */
const CRC16_TABLE = Array.from({ length: 256 }, (_, byte) => {
  let crc = byte << 8;
  for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  return crc;
});

/** The number of hash slots of a Redis Cluster. */
export const CLUSTER_SLOTS = 16384;

/**
 * The Redis Cluster hash slot of a key (0-16383): CRC16 of its hash tag (the text between the
 * first `{` and the next `}`, when not empty) or of the whole key, modulo 16384, as `CLUSTER KEYSLOT`.
 */
export function clusterSlot(key: string): number {
  let bytes = Buffer.from(key, 'utf8');
  const open = bytes.indexOf(0x7b);
  if (open !== -1) {
    const close = bytes.indexOf(0x7d, open + 1);
    if (close > open + 1) bytes = bytes.subarray(open + 1, close);
  }
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ CRC16_TABLE[((crc >> 8) ^ byte) & 0xff]!;
  return crc % CLUSTER_SLOTS;
}

/** How many shards the listing of every session has on a Redis Cluster. */
export const LISTING_SHARDS = 16;

/**
 * The hash tag of each shard of the listing of every session on a cluster: `all:<k>.<n>`, with the
 * smallest `n` that puts shard `k` in the `k`-th sixteenth of the slots, so the shards spread evenly
 * over masters that split the slots evenly (as `redis-cli --cluster create` does).
 */
const SHARD_TAGS = Array.from({ length: LISTING_SHARDS }, (_, k) => {
  for (let n = 0; ; n++) {
    const tag = `all:${k}.${n}`;
    if (Math.floor((clusterSlot(`{${tag}}`) * LISTING_SHARDS) / CLUSTER_SLOTS) === k) return tag;
  }
});

/** The shard (0-15) of the listing of every session that holds a session's entry on a cluster. */
export function listingShard(sessionId: string): number {
  return clusterSlot(`{${encodeKeyPart(sessionId)}}`) % LISTING_SHARDS;
}

/**
 * The keys of one shard of the listing of every session on a cluster:
 * `{prefix}:sessions:{all:<k>.<n>}:order` (and `:meta`, `:expires`).
 */
export function shardKeys(prefix: string, shard: number): IndexKeys {
  const base = `${prefix}:sessions:{${SHARD_TAGS[shard]}}`;
  return { order: `${base}:order`, meta: `${base}:meta`, expires: `${base}:expires` };
}
