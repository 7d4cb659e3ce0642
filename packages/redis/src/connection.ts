import { createHash } from 'node:crypto';
import { BackendUnavailableError, ConfigurationError, CtxError, SessionStateError } from '@ctx/core';
import { checkPositiveNumber, shortId, withDeadline } from '@ctx/core/backend';
import { Cluster, Redis, type ClusterNode, type ClusterOptions, type RedisOptions } from 'ioredis';
import { checkPrefix } from './keys.js';

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
  /** A Redis URL (`redis://[user:password@]host:port[/db]`, `rediss://` for TLS): opens an owned single-node connection. */
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
  /** ioredis `Cluster` options for an owned cluster connection, merged over the defaults. */
  clusterOptions?: ClusterOptions;
  /** First part of every key this package writes. Default `ctx`. No braces, glob characters or whitespace. */
  prefix?: string;
  /**
   * Upper bound of every Redis call in milliseconds (connection, command and reply): past it the
   * call fails with `BackendUnavailableError`. Default 5000.
   */
  timeoutMs?: number;
}

/** The default key prefix. */
export const DEFAULT_PREFIX = 'ctx';
/** The default upper bound of one Redis call, in milliseconds. */
export const DEFAULT_TIMEOUT_MS = 5000;

const TRANSIENT_REPLIES = new Set(['LOADING', 'BUSY', 'CLUSTERDOWN', 'MASTERDOWN', 'TRYAGAIN', 'READONLY', 'OOM', 'MISCONF', 'NOREPLICAS']);
const AUTH_REPLIES = new Set(['NOAUTH', 'WRONGPASS', 'NOPERM']);

/** What a failed call was doing, for error messages. */
export interface CallSite {
  /** The method, e.g. `saveMessages`. */
  operation: string;
  sessionId: string;
  /** The Redis key the call touched. */
  key: string;
}

/** A connection with the package's timeout, abort and error rules. Internal. */
export class RedisConnection {
  readonly client: RedisClient;
  readonly owned: boolean;
  readonly prefix: string;
  readonly timeoutMs: number;
  readonly #scripts = new Map<string, string>();
  #closed = false;

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
    if (options.client !== undefined) {
      if (typeof options.client !== 'object' || options.client === null || typeof (options.client as Redis).evalsha !== 'function') {
        throw new ConfigurationError(`${owner}: \`client\` must be an ioredis Redis or Cluster instance.`);
      }
      this.client = options.client;
      this.owned = false;
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
      this.client = new Cluster([...options.nodes], {
        redisOptions,
        enableOfflineQueue: true,
        slotsRefreshTimeout: timeoutMs,
        clusterRetryStrategy: (times) => Math.min(times * 50, 500),
        retryDelayOnFailover: 100,
        retryDelayOnClusterDown: 100,
        ...options.clusterOptions,
      });
    }
    this.owned = true;
    // Failures reach callers through their commands; without a listener ioredis prints every reconnect error.
    this.client.on('error', () => {});
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
    return withDeadline(() => fn(this.client), {
      timeoutMs: this.timeoutMs,
      signal,
      backend: 'redis',
      operation: `Redis ${where(site)} on ${this.describe()}`,
      hint: 'Check that the server is up and reachable, or raise timeoutMs.',
      mapError: (error) => this.translate(error, site),
    });
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
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return client.eval(source, keys.length, ...keys, ...args);
    }
  }

  /** A ctx error for what an ioredis call threw. */
  translate(error: unknown, site: CallSite): Error {
    if (CtxError.isInstance(error)) return error;
    const at = where(site);
    const message = (error instanceof Error ? error.message : String(error)).replace(/\.+$/, '');
    const isReply = error instanceof Error && error.name === 'ReplyError';
    const code = isReply ? message.split(/\s/, 1)[0]! : '';
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
      return new BackendUnavailableError('redis', `Redis failed ${at}: ${message}`, { cause: error });
    }
    return new BackendUnavailableError(
      'redis',
      `Redis is unavailable for ${at} (${this.describe()}): ${message}. Retry once Redis is reachable again.`,
      { cause: error },
    );
  }

  /** Whether the client is a Redis Cluster (keys of different hash tags may then live on different nodes). */
  get isCluster(): boolean {
    return this.client instanceof Cluster || (this.client as { isCluster?: boolean }).isCluster === true;
  }

  /** Where the connection points, without credentials. */
  describe(): string {
    if (this.isCluster) return 'Redis Cluster';
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
  return `${site.operation} for session ${shortId(site.sessionId)} (key ${shortId(site.key, 120)})`;
}
