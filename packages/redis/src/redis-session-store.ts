import { randomUUID } from 'node:crypto';
import {
  ConcurrencyError,
  SessionStateError,
  type SessionJson,
  type SessionStore,
  type SetSessionOptions,
  type StoredSession,
} from '@ctx/core';
import { checkInteger, checkSessionForWrite, checkSessionId, describeError, parseSessionJson, shortId } from '@ctx/core/backend';
import { RedisConnection, type RedisClient, type RedisConnectionOptions } from './connection.js';
import { sessionKey } from './keys.js';

/** Options of `RedisSessionStore`: the connection, and how long sessions live. */
export interface RedisSessionStoreOptions extends RedisConnectionOptions {
  /**
   * Delete a session this many seconds after it was last saved (every `set` resets the clock; `get`
   * does not). Default: sessions never expire (a `set` also removes an expiry left on the key).
   */
  ttlSeconds?: number;
}

/**
 * Compare-and-set: writes only if the stored etag is what the caller read. A write whose new etag
 * is already stored was applied before (a resent command) and reports success again.
 * ARGV: mode (any | absent | match), expected etag, json, new etag, ttlSeconds (0 = none).
 * Returns { 1, etag } when written, { 0, current etag } or { 0 } on a conflict.
 */
const SET_SCRIPT = `
local key = KEYS[1]
local mode, expected, json, etag = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local ttl = tonumber(ARGV[5])
local cur = redis.call('HGET', key, 'etag')
if cur == etag then return { 1, etag } end
if mode == 'absent' and cur then return { 0, cur } end
if mode == 'match' and cur ~= expected then
  if cur then return { 0, cur } end
  return { 0 }
end
redis.call('HSET', key, 'json', json, 'etag', etag)
if ttl > 0 then redis.call('EXPIRE', key, ttl) else redis.call('PERSIST', key) end
return { 1, etag }
`;

/**
 * A `SessionStore` on Redis or Redis Cluster: each session is one hash (`json`, `etag`) under
 * `{prefix}:session:{<encoded session id>}`. `set` is a compare-and-set in a Lua script
 * (optimistic concurrency, one round trip); etags are random UUIDs, so a deleted and re-created
 * session never matches an old etag.
 * @throws ConfigurationError for bad options (not exactly one of client/url/nodes, bad prefix, bad ttlSeconds).
 */
export class RedisSessionStore implements SessionStore {
  /** Seconds after the last save at which a session is deleted, or undefined for never. */
  readonly ttlSeconds: number | undefined;
  readonly #connection: RedisConnection;

  constructor(options: RedisSessionStoreOptions) {
    if (options.ttlSeconds !== undefined) checkInteger('RedisSessionStore', 'ttlSeconds', options.ttlSeconds);
    this.ttlSeconds = options.ttlSeconds;
    this.#connection = new RedisConnection(options, 'RedisSessionStore');
  }

  /** The ioredis client in use (injected or owned). */
  get client(): RedisClient {
    return this.#connection.client;
  }

  /**
   * The Redis key of a session.
   * @throws ConfigurationError for an empty or whitespace-only session id.
   */
  key(sessionId: string): string {
    return sessionKey(this.#connection.prefix, checkSessionId(sessionId));
  }

  /**
   * The stored session and its etag, or undefined (one `HMGET`).
   * @throws SessionStateError when the stored value is not valid session JSON of that id.
   * @throws BackendUnavailableError when Redis cannot be reached within `timeoutMs`.
   */
  async get(sessionId: string, options: { signal?: AbortSignal } = {}): Promise<StoredSession | undefined> {
    const key = this.key(sessionId);
    const [json, etag] = await this.#connection.call({ operation: 'get', sessionId, key }, options.signal, (c) =>
      c.hmget(key, 'json', 'etag'),
    );
    if (json == null && etag == null) return undefined;
    if (json == null || etag == null)
      throw new SessionStateError(`redis:${key}`, `holds a hash without its "${json == null ? 'json' : 'etag'}" field; delete the key`);
    let session: SessionJson;
    try {
      session = parseSessionJson(json);
    } catch (error) {
      if (!SessionStateError.isInstance(error)) throw error;
      throw new SessionStateError(`redis:${key}${error.path.slice(1)}`, error.problem, { cause: error });
    }
    if (session.sessionId !== sessionId) {
      throw new SessionStateError(`redis:${key}.sessionId`, `holds session ${shortId(session.sessionId)}, not ${shortId(sessionId)}`);
    }
    return { session, etag };
  }

  /**
   * Stores a session and resolves to its new etag. `ifMatch`: a string writes only over that etag,
   * `null` only when nothing is stored, absent always.
   * @throws ConcurrencyError when `ifMatch` does not hold (nothing is written).
   * @throws SessionStateError when `session` is not session JSON that `get` could read back (a NaN,
   *   Map, Date, `undefined`, an array as a state slot, a cycle, nesting past core's limit, JSON
   *   text instead of the object), naming the path; nothing is written.
   * @throws ConfigurationError for an empty or whitespace-only session id, before any round trip.
   * @throws BackendUnavailableError when Redis cannot be reached within `timeoutMs`.
   */
  async set(session: SessionJson, options: SetSessionOptions = {}): Promise<string> {
    // Checked as get will check it, and stored as checked: what is written is what get reads back.
    const json = checkSessionForWrite(session);
    const text = sessionText(json);
    const key = this.key(json.sessionId);
    const { ifMatch } = options;
    const mode = ifMatch === undefined ? 'any' : ifMatch === null ? 'absent' : 'match';
    const etag = randomUUID();
    const reply = (await this.#connection.call({ operation: 'set', sessionId: json.sessionId, key }, options.signal, (c) =>
      this.#connection.script(c, SET_SCRIPT, [key], [mode, ifMatch ?? '', text, etag, this.ttlSeconds ?? 0]),
    )) as [number, string?];
    if (Number(reply[0]) !== 1) {
      throw new ConcurrencyError(
        json.sessionId,
        mode === 'absent'
          ? `Session ${shortId(json.sessionId)} already exists in Redis; load it before saving over it.`
          : reply[1] === undefined
            ? `Session ${shortId(json.sessionId)} was deleted from Redis since it was read; reload it and retry.`
            : undefined,
      );
    }
    return etag;
  }

  /** Deletes a session; resolves to whether one was stored. */
  async delete(sessionId: string, options: { signal?: AbortSignal } = {}): Promise<boolean> {
    const key = this.key(sessionId);
    return (await this.#connection.call({ operation: 'delete', sessionId, key }, options.signal, (c) => c.del(key))) > 0;
  }

  /** Closes the connection if this store opened it (`url` / `nodes`); an injected client stays open. */
  async close(): Promise<void> {
    await this.#connection.close();
  }
}

/**
 * The JSON text of a session `checkSessionForWrite` accepted.
 * @throws SessionStateError when a getter in it threw or changed its mind since the check.
 */
function sessionText(json: SessionJson): string {
  try {
    return JSON.stringify(json);
  } catch (error) {
    throw new SessionStateError('$', `could not be serialized (${describeError(error)})`, { cause: error });
  }
}
