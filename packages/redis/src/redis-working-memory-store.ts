import { randomUUID } from 'node:crypto';
import {
  InvalidInputError,
  SessionStateError,
  type JsonValue,
  type PutWorkingMemoryOptions,
  type StoredWorkingMemory,
  type WorkingMemoryCallOptions,
  type WorkingMemoryEntry,
  type WorkingMemoryKey,
  type WorkingMemoryStore,
} from '@ctx/core';
import {
  checkId,
  checkWorkingMemoryEtag,
  checkWorkingMemoryKey,
  describeWorkingMemoryKey,
  findNonJson,
  checkOptionNames,
  optionNames,
} from '@ctx/core/backend';
import { CONNECTION_OPTIONS, type RedisClient, RedisConnection, type RedisConnectionOptions } from './connection.js';
import { encodeKeyPart } from './keys.js';

/** Options of `RedisWorkingMemoryStore`: the connection (see `RedisConnectionOptions`). */
export type RedisWorkingMemoryStoreOptions = RedisConnectionOptions;

/** The Redis keys of one working-memory record. */
export interface WorkingMemoryKeys {
  /** The record's hash: `record` (JSON text), `etag`, `updatedAt`, and `sessionId` (a JSON string) for a session's record. */
  record: string;
  /** The set of the record keys of its user, or undefined for the record of a session without a user. */
  index: string | undefined;
}

// Lua. KEYS[1] the record, KEYS[2] (optional) its user's index. ARGV: mode (any | absent | match),
// the expected etag, the record's JSON, the new etag, updatedAt, the session id ('' for a user's record).
// Replies {1} when written, else {0, <the stored etag>} ({0} when nothing is stored).
const PUT_SCRIPT = `
local cur = redis.call('HGET', KEYS[1], 'etag')
if (ARGV[1] == 'absent' and cur) or (ARGV[1] == 'match' and cur ~= ARGV[2]) then return {0, cur} end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'record', ARGV[3], 'etag', ARGV[4], 'updatedAt', ARGV[5])
if ARGV[6] ~= '' then redis.call('HSET', KEYS[1], 'sessionId', ARGV[6]) end
if KEYS[2] then redis.call('SADD', KEYS[2], KEYS[1]) end
return {1}
`;

// Lua. KEYS[1] the record, KEYS[2] (optional) its user's index. Replies 1 when a record was deleted.
const DELETE_SCRIPT = `
local n = redis.call('DEL', KEYS[1])
if KEYS[2] then redis.call('SREM', KEYS[2], KEYS[1]) end
return n
`;

// Lua. KEYS[1] a user's index (its records share its hash tag). Replies each record as
// {sessionId or '', record, etag, updatedAt}, dropping index entries whose record is gone.
const LIST_SCRIPT = `
local out = {}
for _, key in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local v = redis.call('HMGET', key, 'record', 'etag', 'updatedAt', 'sessionId')
  if v[1] and v[2] then
    out[#out + 1] = {v[4] or '', v[1], v[2], v[3] or '', key}
  else
    redis.call('SREM', KEYS[1], key)
  end
end
return out
`;

// Lua. KEYS[1] a user's index. Deletes every record it lists and the index; replies how many records there were.
const DELETE_USER_SCRIPT = `
local n = 0
for _, key in ipairs(redis.call('SMEMBERS', KEYS[1])) do n = n + redis.call('DEL', key) end
redis.call('DEL', KEYS[1])
return n
`;

const OPTION_NAMES = optionNames<RedisWorkingMemoryStoreOptions>()({ ...CONNECTION_OPTIONS });

/**
 * A `WorkingMemoryStore` on Redis or Redis Cluster. A record is a hash (`record`, `etag`,
 * `updatedAt`, `sessionId`); every record of one user, and the set indexing them, share the hash
 * tag `{u:<encoded userId>}`, so each write, delete, list and user delete is one Lua script, atomic
 * on a cluster too. `put` is a compare-and-set (optimistic concurrency); etags are random UUIDs, so
 * a deleted and re-created record never matches an old etag. Keys:
 * `{prefix}:wm:{u:<user>}:user`, `{prefix}:wm:{u:<user>}:session:<session>`, `{prefix}:wm:{u:<user>}:index`,
 * and `{prefix}:wm:{s:<session>}:session` for a session without a user (not indexed).
 * @throws ConfigurationError for bad options (not exactly one of client/url/nodes, a bad prefix).
 */
export class RedisWorkingMemoryStore implements WorkingMemoryStore {
  readonly specificationVersion = 'v1';
  readonly #connection: RedisConnection;

  constructor(options: RedisWorkingMemoryStoreOptions) {
    checkOptionNames('RedisWorkingMemoryStore', options, OPTION_NAMES);
    this.#connection = new RedisConnection(options, 'RedisWorkingMemoryStore');
  }

  /** The ioredis client in use (injected or owned). */
  get client(): RedisClient {
    return this.#connection.client;
  }

  /** The Redis keys of a record. @throws ConfigurationError for a bad key. */
  keys(key: WorkingMemoryKey): WorkingMemoryKeys {
    const { userId, sessionId } = checkWorkingMemoryKey(key);
    const base = `${this.#connection.prefix}:wm:`;
    if (userId === undefined) return { record: `${base}{s:${encodeKeyPart(sessionId!)}}:session`, index: undefined };
    const user = `${base}{u:${encodeKeyPart(userId)}}`;
    return { record: sessionId === undefined ? `${user}:user` : `${user}:session:${encodeKeyPart(sessionId)}`, index: `${user}:index` };
  }

  /**
   * The stored record and its etag, or undefined (one `HMGET`).
   * @throws SessionStateError when the stored hash is not a record (a hand edit), naming the key.
   * @throws ConfigurationError for a bad key; BackendUnavailableError when Redis cannot be reached within `timeoutMs`.
   */
  async get(key: WorkingMemoryKey, options: WorkingMemoryCallOptions = {}): Promise<StoredWorkingMemory | undefined> {
    const { record: redisKey } = this.keys(key);
    const [record, etag, updatedAt] = await this.#connection.call(this.#site('get', key, redisKey), options.signal, (c) =>
      c.hmget(redisKey, 'record', 'etag', 'updatedAt'),
    );
    if (record == null && etag == null) return undefined;
    return readRecord(redisKey, record ?? null, etag ?? null, updatedAt ?? null);
  }

  /**
   * Stores a record and resolves to its new etag (one script call).
   * @throws ConcurrencyError when `ifMatch` does not hold (nothing is written).
   * @throws InvalidInputError for a record that is not plain JSON; SessionStateError for one over
   *   `maxValueBytes`; ConfigurationError for a bad key, all before any round trip.
   * @throws BackendUnavailableError when Redis cannot be reached within `timeoutMs`.
   */
  async put(key: WorkingMemoryKey, record: JsonValue, options: PutWorkingMemoryOptions = {}): Promise<string> {
    const checked = checkWorkingMemoryKey(key);
    const keys = this.keys(checked);
    const problem = findNonJson(record);
    if (problem !== undefined) {
      throw new InvalidInputError(
        `The working memory of ${describeWorkingMemoryKey(checked)} is not plain JSON at ${problem}; nothing was stored.`,
      );
    }
    const text = JSON.stringify(record);
    this.#connection.checkValueSize(text, '$', `The working memory of ${describeWorkingMemoryKey(checked)}`);
    const { ifMatch } = options;
    const mode = ifMatch === undefined ? 'any' : ifMatch === null ? 'absent' : 'match';
    const etag = randomUUID();
    const redisKeys = keys.index === undefined ? [keys.record] : [keys.record, keys.index];
    const reply = (await this.#connection.call(this.#site('put', checked, keys.record), options.signal, (c) =>
      this.#connection.script(c, PUT_SCRIPT, redisKeys, [
        mode,
        ifMatch ?? '',
        text,
        etag,
        new Date().toISOString(),
        // As JSON: Redis keeps UTF-8, and JSON escapes a lone surrogate, so every session id reads back as written.
        checked.sessionId === undefined ? '' : JSON.stringify(checked.sessionId),
      ]),
    )) as [number, string?];
    if (Number(reply[0]) !== 1) checkWorkingMemoryEtag(checked, reply[1] ?? undefined, ifMatch);
    return etag;
  }

  /** Deletes a record; resolves to whether one was stored (one script call). @throws ConfigurationError for a bad key. */
  async delete(key: WorkingMemoryKey, options: WorkingMemoryCallOptions = {}): Promise<boolean> {
    const keys = this.keys(key);
    const redisKeys = keys.index === undefined ? [keys.record] : [keys.record, keys.index];
    const reply = await this.#connection.call(this.#site('delete', key, keys.record), options.signal, (c) =>
      this.#connection.script(c, DELETE_SCRIPT, redisKeys, []),
    );
    return Number(reply) === 1;
  }

  /**
   * Every record of the user (one script call over their index).
   * @throws SessionStateError for a record that is not one (a hand edit); ConfigurationError for a blank `userId`.
   */
  async listUser(userId: string, options: WorkingMemoryCallOptions = {}): Promise<WorkingMemoryEntry[]> {
    checkId(userId, 'userId');
    const index = this.keys({ userId }).index!;
    const reply = (await this.#connection.call(this.#site('listUser', { userId }, index), options.signal, (c) =>
      this.#connection.script(c, LIST_SCRIPT, [index], []),
    )) as Array<[string, string, string, string, string]>;
    return reply.map(([sessionId, record, etag, updatedAt, key]) => {
      const stored = readRecord(key, record, etag, updatedAt);
      return sessionId === '' ? stored : { sessionId: readSessionId(key, sessionId), ...stored };
    });
  }

  /** Deletes every record of the user; resolves to how many there were (one script call). @throws ConfigurationError for a blank `userId`. */
  async deleteUser(userId: string, options: WorkingMemoryCallOptions = {}): Promise<number> {
    checkId(userId, 'userId');
    const index = this.keys({ userId }).index!;
    const reply = await this.#connection.call(this.#site('deleteUser', { userId }, index), options.signal, (c) =>
      this.#connection.script(c, DELETE_USER_SCRIPT, [index], []),
    );
    return Number(reply);
  }

  /** Closes an owned connection; an injected client is left open. */
  async close(): Promise<void> {
    await this.#connection.close();
  }

  #site(operation: string, key: WorkingMemoryKey, redisKey: string) {
    return {
      operation,
      sessionId: key.sessionId ?? key.userId ?? '',
      scope: `working memory of ${describeWorkingMemoryKey(key)}`,
      key: redisKey,
    };
  }
}

/** A stored record. @throws SessionStateError naming the key when a field is missing or the record is not JSON. */
function readRecord(key: string, record: string | null, etag: string | null, updatedAt: string | null): StoredWorkingMemory {
  if (record == null || etag == null) {
    throw new SessionStateError(`redis:${key}`, `holds a hash without its "${record == null ? 'record' : 'etag'}" field; delete the key`);
  }
  let value: JsonValue;
  try {
    value = JSON.parse(record) as JsonValue;
  } catch (error) {
    throw new SessionStateError(`redis:${key}.record`, `is not JSON (${(error as Error).message}); delete the key`, { cause: error });
  }
  return { record: value, etag, updatedAt: updatedAt ?? new Date(0).toISOString() };
}

/** The session id a record's hash holds as a JSON string. @throws SessionStateError for anything else (a hand edit). */
function readSessionId(key: string, text: string): string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  if (typeof value !== 'string')
    throw new SessionStateError(`redis:${key}.sessionId`, 'must be a JSON string (the record was edited by hand)');
  return value;
}
