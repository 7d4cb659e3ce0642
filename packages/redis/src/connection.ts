import type { OptionFlags } from '@ctx/core/backend';
import { createHash } from 'node:crypto';
import { BackendUnavailableError, ConfigurationError, CtxError, SessionStateError } from '@ctx/core';
import { checkInteger, checkPositiveNumber, formatBytes, shortId, withDeadline } from '@ctx/core/backend';
import { Cluster, Redis, type ClusterNode, type ClusterOptions, type RedisOptions } from 'ioredis';
import { checkPrefix, clusterSlot } from './keys.js';

/** An ioredis connection: a single node (`Redis`) or a cluster (`Cluster`). */
export type RedisClient = Redis | Cluster;

/**
 * How a Redis provider or store reaches Redis. Give exactly one of `client`, `url` and `nodes`.
 * With `url` or `nodes` the package opens the connection itself, tuned to fail fast, and closes it
 * in `close()`; an injected `client` is shared and never closed here.
 */
export interface RedisConnectionOptions {
  /**
   * An ioredis `Redis` or `Cluster` instance to share with the app. Not closed by `close()`.
   * For fast failures set on it what an owned connection gets: `maxRetriesPerRequest: 0`,
   * `commandTimeout` and `connectTimeout` (ms), `autoResendUnfulfilledCommands: false`, and an
   * `error` listener. `timeoutMs` bounds every call anyway.
   */
  client?: RedisClient;
  /**
   * A Redis URL (`redis://[user:password@]host:port[/db]`, `rediss://` for TLS): opens an owned
   * single-node connection to database `db` (default 0). An index the server does not have fails
   * the first call with a `ConfigurationError` naming it and the server's `databases`.
   */
  url?: string;
  /** Seed nodes of a Redis Cluster (`[{ host, port }]` or `'host:port'` strings): opens an owned cluster connection. */
  nodes?: readonly ClusterNode[];
  /**
   * ioredis options for an owned connection (for a cluster: of each node connection), merged over
   * the fail-fast defaults `{ connectTimeout: timeoutMs, commandTimeout: timeoutMs,
   * maxRetriesPerRequest: 0, autoResendUnfulfilledCommands: false, enableOfflineQueue: true,
   * retryStrategy: 50 ms more per attempt, at most 500 ms }`.
   */
  redisOptions?: RedisOptions;
  /**
   * ioredis `Cluster` options for an owned cluster connection, merged over the defaults
   * (`CLUSTER_DEFAULTS`: the slot map refreshed every second, so a promoted replica is followed
   * within about a second of its promotion, even when the old master stalls without closing its
   * connections; `CLUSTERDOWN` retried by the package on the key's own node; `TRYAGAIN` resent by
   * ioredis without a pause, then by the package).
   * A cluster has only database 0: a `db` in `redisOptions` is a `ConfigurationError`.
   */
  clusterOptions?: ClusterOptions;
  /** First part of every key this package writes. Default `ctx`. No braces, glob characters or whitespace. */
  prefix?: string;
  /**
   * Upper bound of every Redis call in milliseconds (connection, command and reply): past it the
   * call fails with `BackendUnavailableError`. Default 5000.
   */
  timeoutMs?: number;
  /**
   * The largest value written to Redis, in UTF-8 bytes: one stored message's JSON (history), one
   * session's JSON (session store). A larger one is refused before any round trip with a
   * `SessionStateError` naming this limit. Default 512 MiB, Redis's default `proto-max-bulk-len`
   * (past which the server drops the connection with a protocol error); set it to your server's
   * value, or lower to bound memory.
   */
  maxValueBytes?: number;
}

/** Every option of `RedisConnectionOptions`, spread into the option names of the classes built on it. */
export const CONNECTION_OPTIONS: OptionFlags<RedisConnectionOptions> = {
  client: true,
  url: true,
  nodes: true,
  redisOptions: true,
  clusterOptions: true,
  prefix: true,
  timeoutMs: true,
  maxValueBytes: true,
};

/** The default key prefix. */
export const DEFAULT_PREFIX = 'ctx';
/** The default upper bound of one Redis call, in milliseconds. */
export const DEFAULT_TIMEOUT_MS = 5000;
/** The default `maxValueBytes`: Redis's default `proto-max-bulk-len`, 512 MiB. */
export const DEFAULT_MAX_VALUE_BYTES = 512 * 1024 * 1024;

/**
 * The ioredis `Cluster` options an owned cluster connection starts from (`clusterOptions` are merged
 * over them), and what an injected `Cluster` should be given for the same failover behaviour:
 * - `slotsRefreshInterval: 1000`, `slotsRefreshTimeout: 1000`: the slot map is asked for every
 *   second (ioredis's default is never), so after a failover the promoted replica gets its slots'
 *   commands within about a second, also when the old master stalls with its connections open
 *   (no error then tells ioredis to look); a refresh that asks a stalled node gives up after 1 s
 *   and asks the next node;
 * - `retryDelayOnClusterDown: 0`: ioredis would resend a `CLUSTERDOWN` command to a random node,
 *   which may be the stalled one; the package resends it itself, to the node that serves the key,
 *   every 100-500 ms within `timeoutMs` (the server did not run it);
 * - `retryDelayOnTryAgain: 0`: ioredis resends a `TRYAGAIN` command itself whatever this is set to
 *   (to a random node, up to `maxRedirections` times); 0 makes that burst short (no pause between
 *   its tries), after which the package resends it to the key's node as a `CLUSTERDOWN` one;
 * - `retryDelayOnFailover: 100`, `clusterRetryStrategy` 50 ms more per attempt up to 500 ms,
 *   `enableOfflineQueue: true`.
 */
export const CLUSTER_DEFAULTS: Readonly<ClusterOptions> = Object.freeze({
  enableOfflineQueue: true,
  slotsRefreshInterval: 1000,
  slotsRefreshTimeout: 1000,
  clusterRetryStrategy: (times: number) => Math.min(times * 50, 500),
  retryDelayOnFailover: 100,
  retryDelayOnClusterDown: 0,
  retryDelayOnTryAgain: 0,
});

/** `CLUSTER_DEFAULTS`, with the slot map's refresh bounded by `timeoutMs` when that is shorter. */
function clusterDefaults(timeoutMs: number): ClusterOptions {
  return { ...CLUSTER_DEFAULTS, slotsRefreshTimeout: Math.min(timeoutMs, 1000) };
}

/** Replies that mean the command was not run and may be sent again (the cluster is failing over or resharding). */
const RESEND_REPLIES = /^(?:CLUSTERDOWN|TRYAGAIN)\b|Last error: ReplyError: (?:CLUSTERDOWN|TRYAGAIN)\b/;
/** `NOSCRIPT`, also as ioredis's last error after too many redirections (a promoted replica has no scripts loaded). */
const NOSCRIPT = /^NOSCRIPT\b|Last error: ReplyError: NOSCRIPT\b/;
/** What ioredis says when a command ran out of redirections; the message goes on with the last error. */
const TOO_MANY_REDIRECTIONS = /^Too many Cluster redirections\. Last error: (?:ReplyError: )?/;

/** What a failed connection attempt's error code means, for error messages. */
const CONNECT_FAILURES: Record<string, string> = {
  ECONNREFUSED: 'refused the connection',
  ENOTFOUND: 'could not be resolved (no such host)',
  EAI_AGAIN: 'could not be resolved (DNS lookup failed)',
  ETIMEDOUT: 'did not accept the connection in time',
  ECONNRESET: 'closed the connection',
  EHOSTUNREACH: 'is unreachable (no route to host)',
  ENETUNREACH: 'is unreachable (network unreachable)',
};

const TRANSIENT_REPLIES = new Set(['LOADING', 'BUSY', 'CLUSTERDOWN', 'MASTERDOWN', 'TRYAGAIN', 'READONLY', 'OOM', 'MISCONF', 'NOREPLICAS']);
const AUTH_REPLIES = new Set(['NOAUTH', 'WRONGPASS', 'NOPERM']);

/** What a failed call was doing, for error messages. */
export interface CallSite {
  /** The method, e.g. `saveMessages`. */
  operation: string;
  sessionId: string;
  /** What the call was for when it is not one session (a listing): e.g. `user "u1"`. */
  scope?: string;
  /** The Redis key the call touched. */
  key: string;
}

/** A connection with the package's timeout, abort and error rules. Internal. */
export class RedisConnection {
  readonly client: RedisClient;
  readonly owned: boolean;
  readonly prefix: string;
  readonly timeoutMs: number;
  readonly maxValueBytes: number;
  readonly #owner: string;
  readonly #scripts = new Map<string, string>();
  #closed = false;
  /** The last error of an owned connection's connect attempts, cleared once it is ready. */
  #connectError: (Error & { code?: string }) | undefined;
  /** Settles once the configured database is known to exist (single node, `db` > 0 only). */
  #database: Promise<void> | undefined;
  /** Whether the database needs no more checking (it exists, or it is database 0): calls skip the check. */
  #databaseChecked = false;

  constructor(options: RedisConnectionOptions, owner: string) {
    const given = [options.client !== undefined, options.url !== undefined, options.nodes !== undefined].filter(Boolean).length;
    if (given !== 1) {
      throw new ConfigurationError(
        `${owner} needs exactly one of \`client\` (an ioredis Redis or Cluster), \`url\` or \`nodes\`; got ${given}.`,
      );
    }
    this.prefix = checkPrefix(options.prefix ?? DEFAULT_PREFIX);
    const timeoutMs = checkPositiveNumber(owner, 'timeoutMs', options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    this.timeoutMs = timeoutMs;
    this.maxValueBytes = checkInteger(owner, 'maxValueBytes', options.maxValueBytes ?? DEFAULT_MAX_VALUE_BYTES, 1);
    this.#owner = owner;
    if (options.client !== undefined) {
      if (typeof options.client !== 'object' || options.client === null || typeof (options.client as Redis).evalsha !== 'function') {
        throw new ConfigurationError(`${owner}: \`client\` must be an ioredis Redis or Cluster instance.`);
      }
      this.client = options.client;
      this.owned = false;
      this.#checkClusterDatabase();
      return;
    }
    const redisOptions: RedisOptions = {
      connectTimeout: timeoutMs,
      commandTimeout: timeoutMs,
      // A command waits for the connection at most until the next failed reconnect attempt, and a
      // command cut off by a dropped connection fails rather than being sent again later.
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      enableOfflineQueue: true,
      retryStrategy: (times) => Math.min(times * 50, 500),
      ...options.redisOptions,
    };
    if (options.url !== undefined) {
      if (typeof options.url !== 'string' || !/^rediss?:\/\//.test(options.url)) {
        throw new ConfigurationError(`${owner}: \`url\` must start with redis:// or rediss://.`);
      }
      this.client = new Redis(options.url, redisOptions);
    } else {
      if (!Array.isArray(options.nodes) || options.nodes.length === 0)
        throw new ConfigurationError(`${owner}: \`nodes\` must list at least one cluster node.`);
      this.client = new Cluster([...options.nodes], { ...clusterDefaults(timeoutMs), redisOptions, ...options.clusterOptions });
    }
    this.owned = true;
    this.#checkClusterDatabase();
    // Failures reach callers through their commands; without a listener ioredis prints every
    // reconnect error. The last one says why commands fail while the connection is down.
    this.client.on('error', (error: Error & { code?: string }) => {
      if (error?.code !== undefined && CONNECT_FAILURES[error.code] !== undefined) this.#connectError = error;
    });
    this.client.on('ready', () => {
      this.#connectError = undefined;
    });
  }

  /** A cluster has database 0 only: any other index is refused, not silently ignored. */
  #checkClusterDatabase(): void {
    if (!this.isCluster) return;
    const db = (this.client as Cluster).options?.redisOptions?.db;
    if (db !== undefined && db !== 0) {
      throw new ConfigurationError(
        `${this.#owner}: database ${db} was asked of a Redis Cluster, which has database 0 only. Remove \`db\` from redisOptions, or give each application its own key prefix instead.`,
      );
    }
  }

  /**
   * Checks once, before the first command, that the server has the database the connection
   * selects (ioredis falls back to database 0 without a word when `SELECT` fails); undefined when
   * nothing is left to check (database 0, clusters, a database found before). A failure to reach the server is not remembered: the next call checks again.
   */
  #checkDatabase(client: RedisClient): Promise<void> | undefined {
    if (this.#databaseChecked) return undefined;
    const db = this.isCluster ? 0 : Number((client as Redis).options?.db ?? 0);
    if (!db) {
      this.#databaseChecked = true;
      return undefined;
    }
    this.#database ??= (async () => {
      try {
        await (client as Redis).select(db);
        this.#databaseChecked = true;
      } catch (error) {
        if (!(error instanceof Error) || !/DB index is out of range/i.test(error.message)) {
          this.#database = undefined;
          throw error;
        }
        let databases = 'a number of databases this connection may not read (CONFIG GET databases was refused)';
        try {
          const reply = (await (client as Redis).config('GET', 'databases')) as string[];
          if (reply?.[1] !== undefined) databases = `${reply[1]} (databases 0-${Number(reply[1]) - 1})`;
        } catch {
          // Managed services often refuse CONFIG: the count stays unknown.
        }
        throw new ConfigurationError(
          `${this.#owner}: the Redis server at ${this.describe()} has no database ${db}: its \`databases\` setting is ${databases}. Use an index it has in the url (redis://host:port/<db>), or raise \`databases\` in the server's configuration.`,
          { cause: error },
        );
      }
    })();
    return this.#database;
  }

  /**
   * Runs one Redis call within `timeoutMs`, honouring `signal` (core's `withDeadline`), and turns
   * what it throws into a ctx error (`translate`).
   */
  async call<T>(site: CallSite, signal: AbortSignal | undefined, fn: (client: RedisClient) => Promise<T>): Promise<T> {
    signal?.throwIfAborted();
    if (this.#closed) {
      throw new BackendUnavailableError(
        'redis',
        `${site.operation} for session ${shortId(site.sessionId)} was called after close(); create a new instance.`,
      );
    }
    const describe = () => this.describe(site.key);
    const client = this.client;
    const run = this.isCluster ? () => this.#resending(client, signal, fn) : () => fn(client);
    return withDeadline(
      this.#databaseChecked
        ? run
        : async () => {
            const checking = this.#checkDatabase(client);
            if (checking) await checking;
            return run();
          },
      {
        timeoutMs: this.timeoutMs,
        signal,
        backend: 'redis',
        // Built only when a call fails or times out.
        get operation() {
          return `Redis ${where(site)} on ${describe()}`;
        },
        hint: 'Check that the server is up and reachable, or raise timeoutMs.',
        mapError: (error) => this.translate(error, site),
      },
    );
  }

  /**
   * Runs a cluster call, sending it again to the node that serves its key while the cluster answers
   * `CLUSTERDOWN` or `TRYAGAIN` (the command was not run), every 100-500 ms with a refresh of the slot
   * map, until `timeoutMs` has passed or `signal` aborts. A command that timed out asks for a
   * refresh too (its node may have stalled and been replaced), but is not sent again: it may have run.
   */
  async #resending<T>(client: RedisClient, signal: AbortSignal | undefined, fn: (client: RedisClient) => Promise<T>): Promise<T> {
    const deadline = Date.now() + this.timeoutMs;
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn(client);
      } catch (error) {
        const message = error instanceof Error ? error.message : '';
        if (/timed out/i.test(message)) (client as Cluster).refreshSlotsCache();
        const pause = Math.min(100 * attempt, 500);
        if (!RESEND_REPLIES.test(message) || signal?.aborted || Date.now() + pause >= deadline || this.#closed) throw error;
        (client as Cluster).refreshSlotsCache();
        await new Promise((resolve) => setTimeout(resolve, pause));
        // The caller may have left meanwhile (it was answered with the abort): send nothing behind it.
        if (signal?.aborted || this.#closed) throw error;
      }
    }
  }

  /**
   * Runs a Lua script by its SHA-1 (`EVALSHA`, one round trip), loading it with `EVAL` only when the
   * node answers `NOSCRIPT` (the first call per node, or after a restart).
   */
  async script(client: RedisClient, source: string, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    let sha = this.#scripts.get(source);
    if (sha === undefined) {
      sha = createHash('sha1').update(source).digest('hex');
      this.#scripts.set(source, sha);
    }
    try {
      return await client.evalsha(sha, keys.length, ...keys, ...args);
    } catch (error) {
      // After a failover the promoted replica has no scripts; ioredis may report that as its last
      // error after too many redirections.
      if (!(error instanceof Error) || !NOSCRIPT.test(error.message)) throw error;
      return client.eval(source, keys.length, ...keys, ...args);
    }
  }

  /**
   * Refuses a value over `maxValueBytes` before it is sent.
   * @throws SessionStateError at `path`, naming the size and the limit.
   */
  checkValueSize(text: string, path: string, what: string): void {
    if (text.length <= this.maxValueBytes / 3) return; // at most 3 UTF-8 bytes per UTF-16 unit: surely within
    const bytes = Buffer.byteLength(text, 'utf8');
    if (bytes <= this.maxValueBytes) return;
    throw new SessionStateError(
      path,
      `${what} is ${bytes} bytes of JSON, over ${this.#owner}'s maxValueBytes (${this.maxValueBytes} bytes, ${formatBytes(this.maxValueBytes)}; Redis refuses values over its proto-max-bulk-len, 512 MB by default); nothing was written. Store large data by uri, or raise maxValueBytes together with the server's proto-max-bulk-len`,
    );
  }

  /** A ctx error for what an ioredis call threw. */
  translate(error: unknown, site: CallSite): Error {
    if (CtxError.isInstance(error)) return error;
    const at = where(site);
    const raw = error instanceof Error ? error.message : String(error);
    // ioredis wraps a cluster reply that came after its redirections ran out: judge the reply itself.
    const wrapped = TOO_MANY_REDIRECTIONS.test(raw) && /Last error: ReplyError: /.test(raw);
    const message = raw.replace(/\.+$/, '');
    const isReply = wrapped || (error instanceof Error && error.name === 'ReplyError');
    const code = isReply ? message.replace(TOO_MANY_REDIRECTIONS, '').split(/\s/, 1)[0]! : '';
    if (code === 'WRONGTYPE') {
      return new SessionStateError(
        `redis:${site.key}`,
        `holds a value of the wrong Redis type for ${site.operation} (${message}); delete that key or use another prefix`,
        { cause: error },
      );
    }
    if (AUTH_REPLIES.has(code)) {
      return new ConfigurationError(`Redis refused ${at}: ${message}. Check the credentials and ACL permissions of the connection.`, {
        cause: error,
      });
    }
    if (isReply && !TRANSIENT_REPLIES.has(code)) {
      return new BackendUnavailableError('redis', `Redis failed ${at} on ${this.describe(site.key)}: ${message}`, { cause: error });
    }
    const connect = this.#connectError ?? connectErrorOf(error);
    if (!isReply && connect?.code !== undefined && CONNECT_FAILURES[connect.code] !== undefined) {
      return new BackendUnavailableError(
        'redis',
        `Redis at ${this.describe(site.key)} ${CONNECT_FAILURES[connect.code]} (${connect.code}), so ${at} failed. Check that the server is running there and reachable (host, port, firewall), then retry.`,
        { cause: connect },
      );
    }
    return new BackendUnavailableError(
      'redis',
      `Redis is unavailable for ${at} (${this.describe(site.key)}): ${message}. Retry once Redis is reachable again.`,
      { cause: error },
    );
  }

  /** Whether `close()` was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Whether the client is a Redis Cluster (keys of different hash tags may then live on different nodes). */
  get isCluster(): boolean {
    return this.client instanceof Cluster || (this.client as { isCluster?: boolean }).isCluster === true;
  }

  /**
   * Where the connection points, without credentials; on a cluster, the node that serves `key` as
   * the client's slot map has it (`Redis Cluster node 10.0.0.2:6379 (slot 866)`).
   */
  describe(key?: string): string {
    if (this.isCluster) {
      if (key === undefined) return 'Redis Cluster';
      const slot = clusterSlot(key);
      const node = (this.client as Cluster).slots?.[slot]?.[0];
      return node === undefined ? `Redis Cluster (slot ${slot}, no node known for it yet)` : `Redis Cluster node ${node} (slot ${slot})`;
    }
    const { host, port } = (this.client as Redis).options ?? {};
    return host !== undefined ? `${host}:${port}` : 'Redis';
  }

  /** Closes an owned connection (QUIT, then a hard disconnect if that does not finish in time); a shared client is left open. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (!this.owned) return;
    const client = this.client;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await Promise.race([client.quit(), new Promise((resolve) => (timer = setTimeout(resolve, Math.min(this.timeoutMs, 1000))))]);
    } catch {
      // The connection is going away either way.
    } finally {
      clearTimeout(timer);
      client.disconnect();
    }
  }
}

/** `<operation> for session "<id>" (key "<key>")`, for error messages. */
function where(site: CallSite): string {
  return `${site.operation} for ${site.scope ?? `session ${shortId(site.sessionId)}`} (key ${shortId(site.key, 120)})`;
}

/** The connect error a command failed with directly (not through the retry limit), if it was one. */
function connectErrorOf(error: unknown): (Error & { code?: string }) | undefined {
  return error instanceof Error && typeof (error as { code?: unknown }).code === 'string' ? (error as Error & { code: string }) : undefined;
}
