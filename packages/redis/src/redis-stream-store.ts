import { randomUUID } from 'node:crypto';
import {
  ConcurrencyError,
  SessionStateError,
  type JsonValue,
  type OpenStreamOptions,
  type OpenStreamResult,
  type ReadStreamOptions,
  type StreamCallOptions,
  type StreamInfo,
  type StreamLimit,
  type StreamOutcome,
  type StreamReadItem,
  type StreamRef,
  type StreamStatus,
  type StreamStore,
  type StreamStoreOptions,
  type StreamWriter,
} from '@ctx/core';
import {
  type CheckedStreamStoreOptions,
  checkFromIndex,
  checkId,
  checkInteger,
  checkOptionNames,
  checkOutcome,
  checkStreamRef,
  checkStreamStoreOptions,
  describeStream,
  encodeChunks,
  measureJsonChunks,
  optionNames,
  shortId,
  startRenewal,
  streamClosedError,
  streamLimitError,
  withDeadline,
} from '@ctx/core/backend';
import type { Cluster, Redis } from 'ioredis';
import { CONNECTION_OPTIONS, type CallSite, type RedisClient, RedisConnection, type RedisConnectionOptions } from './connection.js';
import { streamKeys } from './keys.js';

/** Options of `RedisStreamStore`: the connection, the lifetimes and limits of every stream store, and how long a read blocks. */
export interface RedisStreamStoreOptions extends RedisConnectionOptions, StreamStoreOptions {
  /**
   * The longest a following read waits in one `XREAD BLOCK` before it checks the producer's lease
   * again, in ms. Default 1000 (at most half of `timeoutMs`). A read notices a dead producer within
   * `leaseMs` plus this.
   */
  blockMs?: number;
}

const OPTION_NAMES = optionNames<RedisStreamStoreOptions>()({
  ...CONNECTION_OPTIONS,
  ttlMs: true,
  leaseMs: true,
  maxChunks: true,
  maxBytes: true,
  blockMs: true,
});

/** How many entries one `XRANGE` or `XREAD` fetches. */
const PAGE = 256;

// Lua: the server's clock in ms, so every process judges leases by the same clock.
const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

// The fields of the meta hash every script that describes a stream replies with, in this order.
const INFO_FIELDS = `'turn', 'openId', 'status', 'lease', 'openedAt', 'closedAt', 'count', 'stop', 'limit'`;

// KEYS: meta, the turn's key. ARGV: turn (JSON), new open id, leaseMs, ttlMs.
// Replies {1, info..., now} when opened, {0, info..., now} when the same turn runs, {-1, info..., now} when another does.
const OPEN_SCRIPT = `${NOW}
local m = redis.call('HMGET', KEYS[1], ${INFO_FIELDS})
if m[1] and m[3] == 'running' and tonumber(m[4]) >= now then
  local code = -1
  if m[1] == ARGV[1] then code = 0 end
  return {code, m[1], m[2], m[3], m[4], m[5], m[6] or '', m[7], m[8], m[9] or '', now}
end
local lease = tonumber(ARGV[3])
local keep = lease + tonumber(ARGV[4])
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'turn', ARGV[1], 'openId', ARGV[2], 'status', 'running', 'lease', now + lease, 'openedAt', now, 'count', 0, 'bytes', 0, 'stop', 0)
redis.call('PEXPIRE', KEYS[1], keep)
redis.call('SET', KEYS[2], ARGV[2], 'PX', keep)
return {1, ARGV[1], ARGV[2], 'running', now + lease, now, '', 0, '0', '', now}
`;

// The checks every write of a writer makes first. KEYS: meta, chunks, the turn's key. ARGV[1] the writer's open id.
const CHECK_WRITER = `${NOW}
local m = redis.call('HMGET', KEYS[1], 'openId', 'status', 'lease', 'count', 'bytes', 'stop', 'limit')
if not m[1] then return {-1} end
if m[1] ~= ARGV[1] then return {-2} end`;

// KEYS: meta, chunks, turn. ARGV: open id, leaseMs, ttlMs, maxChunks, maxBytes, the batch's bytes, chunk JSON...
// Replies {1, stop}, or a negative code (see \`settle\`). A batch past a limit records the limit
// (the first one reached) and renews the lease: the stream stays open, and stoppable.
const APPEND_SCRIPT = `${CHECK_WRITER}
if m[2] ~= 'running' then return {-3, m[2]} end
if tonumber(m[3]) < now then return {-4} end
local n = #ARGV - 6
local count = tonumber(m[4])
local bytes = tonumber(m[5]) + tonumber(ARGV[6])
local limit = false
if count + n > tonumber(ARGV[4]) then limit = 'maxChunks' elseif bytes > tonumber(ARGV[5]) then limit = 'maxBytes' end
local lease = tonumber(ARGV[2])
local keep = lease + tonumber(ARGV[3])
if limit then
  if not m[7] then redis.call('HSET', KEYS[1], 'limit', limit) end
  redis.call('HSET', KEYS[1], 'lease', now + lease)
  for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], keep) end
  if limit == 'maxChunks' then return {-5, m[6]} end
  return {-6, m[6]}
end
for i = 1, n do redis.call('XADD', KEYS[2], '0-' .. (count + i), 'c', ARGV[6 + i]) end
redis.call('HSET', KEYS[1], 'count', count + n, 'bytes', bytes, 'lease', now + lease)
for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], keep) end
return {1, m[6]}
`;

// KEYS: meta, chunks, turn. ARGV: open id, leaseMs, ttlMs. Replies {1, stop} or a negative code.
const RENEW_SCRIPT = `${CHECK_WRITER}
if m[2] ~= 'running' then return {-3, m[2]} end
if tonumber(m[3]) < now then return {-4} end
local lease = tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'lease', now + lease)
local keep = lease + tonumber(ARGV[3])
for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], keep) end
return {1, m[6]}
`;

// KEYS: meta, chunks, turn. ARGV: open id, outcome, ttlMs. Appends the end entry after the chunks
// (with the limit an append was refused for, if one was).
const CLOSE_SCRIPT = `${CHECK_WRITER}
if m[2] == ARGV[2] then return {1} end
if m[2] ~= 'running' then return {-3, m[2]} end
if tonumber(m[3]) < now then return {-4} end
if m[7] then redis.call('XADD', KEYS[2], '0-' .. (tonumber(m[4]) + 1), 'e', ARGV[2], 'l', m[7])
else redis.call('XADD', KEYS[2], '0-' .. (tonumber(m[4]) + 1), 'e', ARGV[2]) end
redis.call('HSET', KEYS[1], 'status', ARGV[2], 'closedAt', now)
for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], tonumber(ARGV[3])) end
return {1}
`;

// KEYS: meta. ARGV: turn (JSON) or ''. Replies the open id of the stream asked to stop, or nil.
const STOP_SCRIPT = `${NOW}
local m = redis.call('HMGET', KEYS[1], 'turn', 'status', 'lease', 'openId')
if m[1] and m[2] == 'running' and tonumber(m[3]) >= now and (ARGV[1] == '' or ARGV[1] == m[1]) then
  redis.call('HSET', KEYS[1], 'stop', 1)
  return m[4]
end
return false
`;

// KEYS: meta. Replies {info..., now}.
const FIND_SCRIPT = `${NOW}
local m = redis.call('HMGET', KEYS[1], ${INFO_FIELDS})
return {m[1] or '', m[2] or '', m[3] or '', m[4] or '', m[5] or '', m[6] or '', m[7] or '', m[8] or '', m[9] or '', now}
`;

// KEYS: meta, chunks. ARGV: open id, first entry id, count. Replies {entries, state}: state is the
// stream's status, 'abandoned' when its lease ran out, or 'gone' when the meta is of another open.
// The third element is the limit an append was refused for, or ''.
const READ_SCRIPT = `${NOW}
local entries = redis.call('XRANGE', KEYS[2], ARGV[2], '+', 'COUNT', ARGV[3])
local m = redis.call('HMGET', KEYS[1], 'openId', 'status', 'lease', 'limit')
local state = 'running'
if m[1] ~= ARGV[1] then state = 'gone'
elseif m[2] ~= 'running' then state = m[2]
elseif tonumber(m[3]) < now then state = 'abandoned' end
local limit = ''
if m[1] == ARGV[1] and m[4] then limit = m[4] end
return {entries, state, limit}
`;

type Entry = [id: string, fields: string[]];

/**
 * A `StreamStore` on Redis or Redis Cluster: any process sharing the Redis can replay a turn's
 * stream and follow it live, and stop its producer. Each opened stream's chunks are a Redis Stream
 * (entry `0-<n>` holds chunk `n - 1` as JSON, then one end entry with the outcome), so a replay is
 * `XRANGE` and following is `XREAD BLOCK` on a connection of the read's own (created on first
 * need, closed when the read ends), woken by the very `XADD` that appends: no pub/sub, no polling
 * while chunks flow, and nothing is lost between the replay and the follow. Every write is one Lua
 * script on the session's hash tag (atomic, on a cluster too) that checks the writer's open id, the
 * status, the lease (by the server's clock) and the limits. Keys (see `streamKeys`):
 * `{prefix}:stream:{<session>}` (the current stream's hash), `...:turn:<turn>` (the open id of the
 * turn's latest stream) and `...:chunks:<open id>`, all expiring `ttlMs` after the close, or after
 * the lease ran out.
 * @throws ConfigurationError for bad options (not exactly one of client/url/nodes, a bad prefix or limit).
 */
export class RedisStreamStore implements StreamStore {
  readonly specificationVersion = 'v1';
  readonly #connection: RedisConnection;
  readonly #options: CheckedStreamStoreOptions;
  readonly #blockMs: number;
  /** This instance's open writers by open id: their stop controllers (a stop asked here reaches them at once) and how to end their renewals. */
  readonly #local = new Map<string, { stop: AbortController; finish: () => void }>();
  /** The connections of reads that are following a stream now, closed by `close()`. */
  readonly #readers = new Set<RedisClient>();
  /**
   * The connection subscribed to the stop channel while this instance has writers (a stop asked on
   * another instance is published there, and reaches the producer at once), and the timer that
   * closes it once none is left for a second.
   */
  #stops: { client: RedisClient; ready: Promise<void> } | undefined;
  #stopsIdle: ReturnType<typeof setTimeout> | undefined;

  constructor(options: RedisStreamStoreOptions) {
    checkOptionNames('RedisStreamStore', options, OPTION_NAMES);
    const { ttlMs, leaseMs, maxChunks, maxBytes, blockMs, ...connection } = options ?? {};
    this.#options = checkStreamStoreOptions('RedisStreamStore', { ttlMs, leaseMs, maxChunks, maxBytes });
    this.#connection = new RedisConnection(connection, 'RedisStreamStore');
    const block = checkInteger('RedisStreamStore', 'blockMs', blockMs ?? 1000);
    this.#blockMs = Math.max(1, Math.min(block, Math.floor(this.#connection.timeoutMs / 2)));
  }

  /** The ioredis client in use (injected or owned). */
  get client(): RedisClient {
    return this.#connection.client;
  }

  /** Opens a turn's stream (one script call). @throws ConcurrencyError (`turnRunning`) when another turn of the session runs. */
  async open(ref: StreamRef, options: OpenStreamOptions = {}): Promise<OpenStreamResult> {
    const checked = checkStreamRef(ref);
    const keys = streamKeys(this.#connection.prefix, checked.sessionId);
    const openId = randomUUID();
    const reply = (await this.#call('open', checked.sessionId, keys.meta, options.signal, (c) =>
      this.#connection.script(
        c,
        OPEN_SCRIPT,
        [keys.meta, keys.turn(checked.turnId)],
        [JSON.stringify(checked.turnId), openId, this.#options.leaseMs, this.#options.ttlMs],
      ),
    )) as [number, ...string[]];
    const info = infoOf(checked.sessionId, keys.meta, reply.slice(1) as string[]);
    const code = Number(reply[0]);
    if (code === 0) return { created: false, info };
    if (code === -1) {
      throw new ConcurrencyError(
        checked.sessionId,
        `Session ${shortId(checked.sessionId)} already streams turn ${shortId(info.turnId)}; ${describeStream(checked)} was not opened. Wait for that turn to end, or stop it (requestStop).`,
        { turnRunning: true },
      );
    }
    const writer = this.#writer(checked, openId);
    await this.#listenForStops();
    return { created: true, writer, info };
  }

  /** The session's running stream, else its most recent one kept; undefined when none (one script call). */
  async find(sessionId: string, options: StreamCallOptions = {}): Promise<StreamInfo | undefined> {
    checkId(sessionId, 'session id');
    const { meta } = streamKeys(this.#connection.prefix, sessionId);
    const reply = (await this.#call('find', sessionId, meta, options.signal, (c) =>
      this.#connection.script(c, FIND_SCRIPT, [meta], []),
    )) as string[];
    return reply[0] === '' ? undefined : infoOf(sessionId, meta, reply);
  }

  /**
   * Replays a stream from `fromIndex`, then follows it with `XREAD BLOCK` until its end entry, its
   * lease runs out, or the signal aborts. @throws BackendUnavailableError (from the iteration)
   * when Redis is lost mid-read.
   */
  read(ref: StreamRef, options: ReadStreamOptions = {}): AsyncIterable<StreamReadItem> {
    const checked = checkStreamRef(ref);
    const fromIndex = checkFromIndex(options.fromIndex);
    return this.#follow(checked, fromIndex, options.signal);
  }

  /** Asks the producer of the session's running stream to stop, wherever it runs; resolves to whether one runs (one script call). */
  async requestStop(ref: { sessionId: string; turnId?: string }, options: StreamCallOptions = {}): Promise<boolean> {
    const sessionId = checkId(ref?.sessionId, 'session id');
    const turnId = ref.turnId === undefined ? undefined : checkId(ref.turnId, 'turn id');
    const { meta } = streamKeys(this.#connection.prefix, sessionId);
    const openId = await this.#call('requestStop', sessionId, meta, options.signal, (c) =>
      this.#connection.script(c, STOP_SCRIPT, [meta], [turnId === undefined ? '' : JSON.stringify(turnId)]),
    );
    if (typeof openId !== 'string') return false;
    const local = this.#local.get(openId);
    if (local) local.stop.abort();
    else {
      // The producer runs elsewhere: tell it now (it also learns of it at its next renewal, should this be lost).
      await this.#call('requestStop', sessionId, meta, options.signal, (c) => c.publish(this.#stopChannel, openId)).catch(() => {});
    }
    return true;
  }

  /** The channel stops are published on, one per prefix: the message is the open id of the stream to stop. */
  get #stopChannel(): string {
    return `${this.#connection.prefix}:stream-stops`;
  }

  /**
   * Subscribes to the stop channel, on a connection of its own, unless already subscribed: resolves
   * once subscribed, or after \`timeoutMs\` (a stop then arrives with a renewal instead). Never rejects.
   */
  #listenForStops(): Promise<void> {
    clearTimeout(this.#stopsIdle);
    this.#stopsIdle = undefined;
    if (this.#stops) return this.#stops.ready;
    const client = this.#connection.isCluster
      ? (this.#connection.client as Cluster).duplicate()
      : (this.#connection.client as Redis).duplicate({ maxRetriesPerRequest: null, enableOfflineQueue: true });
    client.on('error', () => {}); // a lost subscription falls back to the renewals, and is made again on reconnect
    client.on('message', (_channel: string, openId: string) => this.#local.get(openId)?.stop.abort());
    const subscribed = client.subscribe(this.#stopChannel).then(
      () => {},
      () => {},
    );
    let timer: ReturnType<typeof setTimeout> | undefined;
    const waited = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.#connection.timeoutMs);
      timer.unref?.();
    });
    const ready = Promise.race([subscribed, waited]).finally(() => clearTimeout(timer));
    this.#stops = { client, ready };
    return ready;
  }

  /** Closes the stop subscription a second after the last writer of this instance ended (another open in between keeps it). */
  #idleStops(): void {
    if (this.#local.size > 0 || !this.#stops || this.#stopsIdle) return;
    this.#stopsIdle = setTimeout(() => {
      this.#stopsIdle = undefined;
      if (this.#local.size > 0 || !this.#stops) return;
      this.#stops.client.disconnect();
      this.#stops = undefined;
    }, 1000);
    this.#stopsIdle.unref?.();
  }

  /**
   * Closes an owned connection and the connections of reads still following, and stops the lease
   * renewals of this instance's writers (their streams end `abandoned` unless closed first); an
   * injected client is left open.
   */
  async close(): Promise<void> {
    for (const { finish } of [...this.#local.values()]) finish();
    clearTimeout(this.#stopsIdle);
    this.#stopsIdle = undefined;
    this.#stops?.client.disconnect();
    this.#stops = undefined;
    for (const reader of this.#readers) reader.disconnect();
    this.#readers.clear();
    await this.#connection.close();
  }

  #writer(ref: StreamRef, openId: string): StreamWriter {
    const keys = streamKeys(this.#connection.prefix, ref.sessionId);
    const writeKeys = [keys.meta, keys.chunks(openId), keys.turn(ref.turnId)];
    const { leaseMs, ttlMs, maxChunks, maxBytes } = this.#options;
    const stop = new AbortController();
    let ended: 'released' | undefined;
    const finish = () => {
      stopRenewal();
      this.#local.delete(openId);
      this.#idleStops();
    };
    this.#local.set(openId, { stop, finish });
    // Reads a write's reply: aborts the stop signal when a stop was asked; throws for a refused write.
    const settle = (reply: unknown[]): void => {
      const code = Number(reply[0]);
      if (code === 1) {
        if (reply[1] === '1') stop.abort();
        return;
      }
      if (code === -5 || code === -6) {
        if (reply[1] === '1') stop.abort();
        throw code === -5 ? streamLimitError(ref, 'maxChunks', maxChunks) : streamLimitError(ref, 'maxBytes', maxBytes);
      }
      finish();
      throw streamClosedError(
        ref,
        code === -1 ? undefined : code === -2 ? 'replaced' : code === -3 ? (reply[1] as StreamStatus) : 'abandoned',
      );
    };
    const renew = async () => {
      const reply = (await this.#call('renew', ref.sessionId, keys.meta, undefined, (c) =>
        this.#connection.script(c, RENEW_SCRIPT, writeKeys, [openId, leaseMs, ttlMs]),
      )) as unknown[];
      settle(reply);
    };
    // A renewal every third of the lease, and at least every second, so a stop asked elsewhere arrives within about a second.
    const stopRenewal = startRenewal(Math.max(1, Math.min(1000, Math.floor(leaseMs / 3))), renew);
    const appendTexts = async (encode: () => { json: readonly string[]; bytes: number }, options: StreamCallOptions) => {
      options.signal?.throwIfAborted();
      if (ended) throw streamClosedError(ref, ended);
      const { json, bytes } = encode();
      const reply = (await this.#call('append', ref.sessionId, keys.meta, options.signal, (c) =>
        this.#connection.script(c, APPEND_SCRIPT, writeKeys, [openId, leaseMs, ttlMs, maxChunks, maxBytes, bytes, ...json]),
      )) as unknown[];
      settle(reply);
    };
    return {
      sessionId: ref.sessionId,
      turnId: ref.turnId,
      stopSignal: stop.signal,
      append: (chunks: readonly JsonValue[], options: StreamCallOptions = {}) => appendTexts(() => encodeChunks(ref, chunks), options),
      // The texts as given: entries are JSON texts either way, and a read parses each.
      appendJson: (texts: readonly string[], options: StreamCallOptions = {}) => appendTexts(() => measureJsonChunks(ref, texts), options),
      close: async (outcome: StreamOutcome, options: StreamCallOptions = {}) => {
        options.signal?.throwIfAborted();
        const checked = checkOutcome(ref, outcome);
        if (ended) throw streamClosedError(ref, ended);
        const reply = (await this.#call('close', ref.sessionId, keys.meta, options.signal, (c) =>
          this.#connection.script(c, CLOSE_SCRIPT, writeKeys, [openId, checked, ttlMs]),
        )) as unknown[];
        settle(reply);
        finish();
      },
      release: () => {
        if (ended) return;
        ended = 'released';
        finish();
      },
    };
  }

  async *#follow(ref: StreamRef, fromIndex: number, signal: AbortSignal | undefined): AsyncGenerator<StreamReadItem> {
    const keys = streamKeys(this.#connection.prefix, ref.sessionId);
    let blocking: RedisClient | undefined;
    try {
      const openId = await this.#call('read', ref.sessionId, keys.turn(ref.turnId), signal, (c) => c.get(keys.turn(ref.turnId)));
      if (openId === null) return;
      const chunksKey = keys.chunks(openId);
      let next = fromIndex;
      for (;;) {
        // Replay what is stored, with the stream's state read in the same script (nothing can slip between).
        const [entries, state, limit] = (await this.#call('read', ref.sessionId, chunksKey, signal, (c) =>
          this.#connection.script(c, READ_SCRIPT, [keys.meta, chunksKey], [openId, `0-${next + 1}`, PAGE]),
        )) as [Entry[], string, string];
        for (const entry of entries) {
          const item = itemOf(chunksKey, entry);
          if (item.type === 'end') return yield item;
          next = item.index + 1;
          yield item;
          if (signal?.aborted) return;
        }
        if (entries.length === PAGE) continue;
        if (state !== 'running') {
          // Closed streams end with their end entry, read above; a stream replaced or gone without one was abandoned.
          const status = state === 'finished' || state === 'stopped' || state === 'failed' ? state : 'abandoned';
          yield limit === 'maxChunks' || limit === 'maxBytes' ? { type: 'end', status, limitReached: limit } : { type: 'end', status };
          return;
        }
        // Follow: block until the next entries (the append's own XADD wakes the read), or time out and check the lease again.
        blocking ??= this.#blockingClient();
        for (;;) {
          const client = blocking;
          const reply = (await this.#call(
            'read',
            ref.sessionId,
            chunksKey,
            signal,
            () => (client as Redis).xread('COUNT', PAGE, 'BLOCK', this.#blockMs, 'STREAMS', chunksKey, `0-${next}`),
            this.#blockMs + this.#connection.timeoutMs,
          )) as [string, Entry[]][] | null;
          if (!reply) break;
          for (const entry of reply[0]?.[1] ?? []) {
            const item = itemOf(chunksKey, entry);
            if (item.type === 'end') return yield item;
            next = item.index + 1;
            yield item;
            if (signal?.aborted) return;
          }
        }
      }
    } catch (error) {
      if (signal?.aborted) return;
      throw error;
    } finally {
      if (blocking) {
        this.#readers.delete(blocking);
        blocking.disconnect();
      }
    }
  }

  /** A connection of one read's own for `XREAD BLOCK` (a blocking command holds its connection): never reconnects, never resends. */
  #blockingClient(): RedisClient {
    const client = this.#connection.client;
    const overrides = {
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      enableOfflineQueue: true,
      commandTimeout: this.#blockMs + this.#connection.timeoutMs,
      connectTimeout: this.#connection.timeoutMs,
      retryStrategy: () => null,
    };
    const duplicate = this.#connection.isCluster
      ? (client as Cluster).duplicate(undefined, {
          redisOptions: { ...(client as Cluster).options.redisOptions, ...overrides },
          clusterRetryStrategy: () => null,
        })
      : (client as Redis).duplicate(overrides);
    // Failures reach the read through its command.
    duplicate.on('error', () => {});
    this.#readers.add(duplicate);
    return duplicate;
  }

  /** One Redis call with the connection's deadline (or `timeoutMs`), signal and error rules. */
  #call<T>(
    operation: string,
    sessionId: string,
    key: string,
    signal: AbortSignal | undefined,
    fn: (client: RedisClient) => Promise<T>,
    timeoutMs?: number,
  ): Promise<T> {
    const site: CallSite = { operation, sessionId, scope: `the streams of session ${shortId(sessionId)}`, key };
    if (timeoutMs === undefined) return this.#connection.call(site, signal, fn);
    signal?.throwIfAborted();
    return withDeadline(() => fn(this.#connection.client), {
      timeoutMs,
      signal,
      backend: 'redis',
      operation: `Redis ${operation} of ${shortId(key, 120)} on ${this.#connection.describe(key)}`,
      hint: 'Check that the server is up and reachable.',
      mapError: (error) => this.#connection.translate(error, site),
    });
  }
}

/** A `StreamInfo` from a script's reply: turn (JSON), open id, status, lease, openedAt, closedAt, count, stop, limit, now. */
function infoOf(sessionId: string, key: string, fields: readonly string[]): StreamInfo {
  const [turn, , status, lease, openedAt, closedAt, count, stop, limit, now] = fields.map((f) => (f === null ? '' : String(f)));
  let turnId: unknown;
  try {
    turnId = JSON.parse(turn!);
  } catch {
    turnId = undefined;
  }
  if (typeof turnId !== 'string' || !['running', 'finished', 'stopped', 'failed'].includes(status!)) {
    throw new SessionStateError(`redis:${key}`, 'is not the hash of a stream (it was edited by hand); delete the key', { sessionId });
  }
  const info: StreamInfo = {
    sessionId,
    turnId,
    status: status === 'running' && Number(lease) < Number(now) ? 'abandoned' : (status as StreamStatus),
    chunkCount: Number(count),
    openedAt: new Date(Number(openedAt)).toISOString(),
    stopRequested: stop === '1',
  };
  if (closedAt) info.closedAt = new Date(Number(closedAt)).toISOString();
  if (limit === 'maxChunks' || limit === 'maxBytes') info.limitReached = limit as StreamLimit;
  return info;
}

/** A read item from a stream entry: `0-<n>` with `c` (chunk `n - 1`) or `e` (the end). @throws SessionStateError for anything else. */
function itemOf(key: string, [id, fields]: Entry): StreamReadItem {
  const index = Number(id.slice(2)) - 1;
  if (id.startsWith('0-') && fields[0] === 'c' && fields[1] !== undefined) {
    try {
      return { type: 'chunk', index, chunk: JSON.parse(fields[1]) as JsonValue };
    } catch (error) {
      throw new SessionStateError(`redis:${key}.${id}`, 'holds a chunk that is not JSON; delete the key', { cause: error });
    }
  }
  if (fields[0] === 'e' && (fields[1] === 'finished' || fields[1] === 'stopped' || fields[1] === 'failed')) {
    const limit = fields[2] === 'l' ? fields[3] : undefined;
    if (limit === 'maxChunks' || limit === 'maxBytes') return { type: 'end', status: fields[1], limitReached: limit };
    if (fields.length === 2) return { type: 'end', status: fields[1] };
  }
  throw new SessionStateError(`redis:${key}.${id}`, 'is not an entry of a ctx stream (it was edited by hand); delete the key');
}
