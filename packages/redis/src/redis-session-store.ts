import { randomUUID } from 'node:crypto';
import {
  BackendUnavailableError,
  ConcurrencyError,
  ConfigurationError,
  InvalidInputError,
  SessionStateError,
  type GetSessionOptions,
  type ListSessionsOptions,
  type SessionJson,
  type SessionMetadata,
  type SessionPage,
  type SessionStore,
  type SessionSummary,
  type SetSessionOptions,
  type StoredSession,
  type TurnLease,
} from '@ctx/core';
import {
  checkId,
  checkInteger,
  checkListOptions,
  checkSessionForWrite,
  checkSessionId,
  checkTurnLease,
  describeError,
  encodeSessionCursor,
  parseSessionJson,
  sessionOfUser,
  shortId,
  checkOptionNames,
  optionNames,
  abortable,
} from '@ctx/core/backend';
import { Cluster, type Redis } from 'ioredis';
import { CONNECTION_OPTIONS, type RedisClient, RedisConnection, type RedisConnectionOptions } from './connection.js';
import { indexKeys, LISTING_SHARDS, listingShard, sessionKey, shardKeys, turnLeaseKey, type IndexKeys } from './keys.js';
import {
  DELETE_CLUSTER_SCRIPT,
  DELETE_SINGLE_SCRIPT,
  INDEX_PUT_SCRIPT,
  INDEX_REMOVE_SCRIPT,
  LIST_SCRIPT,
  MOVED,
  SET_CLUSTER_SCRIPT,
  SET_SINGLE_SCRIPT,
  TURN_LEASE_SCRIPT,
  TURN_RELEASE_SCRIPT,
} from './session-scripts.js';

/** A lone UTF-16 surrogate (in `u` mode a surrogate pair is one code point, so only a lone one matches). */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;
/** Options of `RedisSessionStore`: the connection, and how long sessions live. */
export interface RedisSessionStoreOptions extends RedisConnectionOptions {
  /**
   * Delete a session this many seconds after it was last saved (every `set` resets the clock; `get`
   * does not). Default: sessions never expire (a `set` also removes an expiry left on the key).
   */
  ttlSeconds?: number;
  /**
   * Called when, on a Redis Cluster, a session was saved (or deleted) but one of its listing entries
   * could not be written (or removed: its listing's node down or stalled, a listing key of the wrong
   * type): `set` (`delete`) still resolves, since the session is stored (deleted), and the store
   * writes the entries again in the background
   * (after 1 s, then 2, 4, ... up to 60 s, 10 tries) and at the session's next save. Called again
   * with a final error when a repair gives up (then run `reindex()`). Default: a process warning
   * (`process.emitWarning`, code `CTX_REDIS_LISTING`), at most one a minute, counting the failures.
   */
  onListingError?: (error: BackendUnavailableError | SessionStateError) => void;
}

/** How many session ids the store remembers the user of (a hint that saves a round trip on a user's change or a delete). */
const KNOWN_USERS = 1000;
/** Index pages a listing reads at most to fill one page on a cluster, where it drops stale entries. */
const MAX_LIST_ROUNDS = 10;
/** Stands for the listing of every session where a user id could go. */
const ALL = Symbol('all sessions');
/** Tries of a single-node write or delete whose stored user keeps changing under it. */
const MAX_MOVES = 5;
/** Background tries of a listing write that failed after its session was saved, before giving up. */
const MAX_REPAIR_TRIES = 10;
/** Sessions whose listing writes wait for a repair at most; past it the oldest is given up (reported). */
const MAX_REPAIRS = 10_000;
/** How often the default `onListingError` warns at most (ms). */
const WARN_EVERY_MS = 60_000;

/** One listing write: a script on one listing's keys. */
interface ListingWrite {
  script: string;
  keys: IndexKeys;
  args: (string | number)[];
}

/** The listing writes of a saved session that failed, waiting for the background pass. */
interface ListingRepair {
  writes: ListingWrite[];
  tries: number;
  /** When the next try is due (ms since the epoch). */
  due: number;
  /** Whether a try is under way (a pass that starts meanwhile leaves it alone). */
  busy?: boolean;
}

/** What `reindex` did. */
export interface ReindexResult {
  /** How many sessions got their listing entries written. */
  indexed: number;
  /** Keys under the prefix that hold no readable session of their own id (left as they are). */
  unreadable: string[];
}

/** A listing entry as the list script returns it. */
interface RawEntry {
  sessionId: string;
  /** The score: `updatedAt` in ms. */
  ms: number;
  /** The revision of the write that made the entry, or undefined when the entry has no metadata. */
  rev: string | undefined;
  summary: SessionSummary | undefined;
  /** The listing (or listing shard) that holds the entry. */
  keys: IndexKeys;
}

const OPTION_NAMES = optionNames<RedisSessionStoreOptions>()({ ...CONNECTION_OPTIONS, ttlSeconds: true, onListingError: true });

/**
 * A `SessionStore` on Redis or Redis Cluster: each session is one hash (`json`, `etag`, `rev`,
 * `user`) under `{prefix}:session:{<encoded session id>}`. `set` is a compare-and-set in a Lua
 * script (optimistic concurrency); etags are random UUIDs, so a deleted and re-created session
 * never matches an old etag. `list` reads listing indexes (every session, and one per user) that
 * `set` and `delete` keep: in the same script on a single node, right after the session on a
 * cluster (see the README for what is atomic where).
 * @throws ConfigurationError for bad options (not exactly one of client/url/nodes, bad prefix, bad ttlSeconds).
 */
export class RedisSessionStore implements SessionStore {
  /** Seconds after the last save at which a session is deleted, or undefined for never. */
  readonly ttlSeconds: number | undefined;
  readonly #connection: RedisConnection;
  /** Session id -> the user last seen stored with it (undefined: none), newest last. A hint only. */
  readonly #known = new Map<string, string | undefined>();
  /** Cluster: session id -> its listing writes that failed after it was saved, oldest first. */
  readonly #repairs = new Map<string, ListingRepair>();
  /** The writes of repairs in progress (each bounded by `timeoutMs`). */
  readonly #repairing = new Set<Promise<unknown>>();
  #repairTimer: ReturnType<typeof setTimeout> | undefined;
  /** When the armed repair timer fires (ms since the epoch). */
  #repairTimerDue = 0;
  readonly #onListingError: (error: BackendUnavailableError | SessionStateError) => void;
  /** The default reporter's last warning (ms) and the failures since. */
  #warned = { at: 0, failures: 0 };

  constructor(options: RedisSessionStoreOptions) {
    checkOptionNames('RedisSessionStore', options, OPTION_NAMES);
    if (options.ttlSeconds !== undefined) checkInteger('RedisSessionStore', 'ttlSeconds', options.ttlSeconds);
    if (options.onListingError !== undefined && typeof options.onListingError !== 'function') {
      throw new ConfigurationError('RedisSessionStore: `onListingError` must be a function.');
    }
    this.ttlSeconds = options.ttlSeconds;
    this.#onListingError = options.onListingError ?? ((error) => this.#warn(error));
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
   * The Redis keys of a listing: one user's (`userId`), or every session's. On a cluster the listing
   * of every session is split into 16 shards, each in its own slot: give `sessionId` for the shard
   * that holds that session's entry (without it, shard 0).
   */
  indexKeys(userId?: string, sessionId?: string): IndexKeys {
    if (userId === undefined && this.#connection.isCluster) {
      return shardKeys(this.#connection.prefix, sessionId === undefined ? 0 : listingShard(sessionId));
    }
    return indexKeys(this.#connection.prefix, userId);
  }

  /** Every key set of a listing: one, or the 16 shards of every session's listing on a cluster. */
  #listingKeys(userId: string | undefined): IndexKeys[] {
    if (userId !== undefined || !this.#connection.isCluster) return [indexKeys(this.#connection.prefix, userId)];
    return Array.from({ length: LISTING_SHARDS }, (_, shard) => shardKeys(this.#connection.prefix, shard));
  }

  /**
   * The stored session and its etag, or undefined (one `HMGET`); with `userId`, undefined too for a
   * session of another user or of none (its JSON is not even parsed).
   * @throws SessionStateError when the stored value is not valid session JSON of that id.
   * @throws ConfigurationError for a blank id or `userId`, before any round trip.
   * @throws BackendUnavailableError when Redis cannot be reached within `timeoutMs`.
   */
  async get(sessionId: string, options: GetSessionOptions = {}): Promise<StoredSession | undefined> {
    const key = this.key(sessionId);
    const { userId } = options;
    if (userId !== undefined) checkId(userId, 'userId of a session read');
    const [json, etag, user] = await this.#connection.call({ operation: 'get', sessionId, key }, options.signal, (c) =>
      c.hmget(key, 'json', 'etag', 'user'),
    );
    if (json == null && etag == null) return undefined;
    // `user` is the owner `set` wrote beside the JSON; the parsed metadata decides all the same.
    if (userId !== undefined && user != null && user !== userId) return undefined;
    const session = readSession(key, sessionId, json ?? null, etag ?? null);
    this.#remember(sessionId, session.metadata.userId);
    return sessionOfUser({ session, etag: etag! }, userId);
  }

  /**
   * Stores a session and resolves to its new etag, and its listing entries (every session's, and its
   * user's, leaving the listing of a user it no longer has). `ifMatch`: a string writes only over
   * that etag, `null` only when nothing is stored, absent always.
   * @throws ConcurrencyError when `ifMatch` does not hold (nothing is written).
   * @throws SessionStateError when `session` is not session JSON that `get` could read back (a NaN,
   *   Map, Date, `undefined`, an array as a state slot, a cycle, nesting past core's limit, JSON
   *   text instead of the object), naming the path; nothing is written.
   * @throws ConfigurationError for an empty or whitespace-only session id, before any round trip.
   * @throws InvalidInputError for a session id or `metadata.userId` holding a lone UTF-16 surrogate
   *   (not well-formed Unicode: UTF-8 text cannot hold it), before any round trip.
   * @throws BackendUnavailableError when Redis cannot be reached within `timeoutMs`. On a cluster a
   *   listing entry that cannot be written after the session was saved does not fail `set`: it goes
   *   to `onListingError` and is written again later (see `repairListings`).
   */
  async set(session: SessionJson, options: SetSessionOptions = {}): Promise<string> {
    // Checked as get will check it, and stored as checked: what is written is what get reads back.
    const json = checkSessionForWrite(session);
    for (const [what, id] of [
      ['Session id', json.sessionId],
      ['userId', json.metadata.userId],
    ] as const) {
      const lone = id === undefined ? null : LONE_SURROGATE.exec(id);
      if (lone) {
        throw new InvalidInputError(
          `${what} ${shortId(id!)} of session ${shortId(json.sessionId)} holds a lone UTF-16 surrogate at index ${lone.index}: Redis keeps the ids of its listings as UTF-8 text, where a lone surrogate becomes U+FFFD and meets other ids. Use ids of well-formed Unicode. Nothing was stored.`,
        );
      }
    }
    const { ifMatch } = options;
    const mode = ifMatch === undefined ? 'any' : ifMatch === null ? 'absent' : 'match';
    const etag = randomUUID();
    const reply = await this.#write(json, mode, ifMatch ?? '', etag, options.signal);
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

  /**
   * Writes a session (or, in `reindex` mode, only its bookkeeping and listing entries, if its etag is
   * still `expected`) with the script of the topology. Resolves to the script's reply.
   */
  async #write(json: SessionJson, mode: string, expected: string, etag: string, signal?: AbortSignal): Promise<unknown[]> {
    const { sessionId, metadata } = json;
    const key = this.key(sessionId);
    const user = metadata.userId;
    const text = mode === 'reindex' ? '' : sessionText(json); // reindex writes no JSON
    this.#connection.checkValueSize(text, '$', `Session ${shortId(sessionId)}`);
    const args = [mode, expected, text, etag, this.ttlSeconds ?? 0, sessionId, user ?? '', flag(user)];
    const site = { operation: mode === 'reindex' ? 'reindex' : 'set', sessionId, key };
    const ms = String(Date.parse(metadata.updatedAt));
    const meta = JSON.stringify(metadata);
    if (!this.#connection.isCluster) {
      const reply = (await this.#moving(site, sessionId, user, signal, (stored) =>
        this.#connection.script(
          this.client,
          SET_SINGLE_SCRIPT,
          [key, ...this.#index(ALL), ...this.#index(user), ...(stored !== user ? this.#index(stored) : [])],
          [...args, ms, meta, flag(stored), stored ?? ''],
        ),
      )) as unknown[];
      if (Number(reply[0]) === 1) this.#remember(sessionId, user);
      return reply;
    }
    const reply = (await this.#connection.call(site, signal, (c) =>
      this.#connection.script(c, SET_CLUSTER_SCRIPT, [key], args),
    )) as unknown[];
    if (Number(reply[0]) !== 1 || reply.length < 6) return reply;
    this.#remember(sessionId, user);
    const [, , rev, hadUser, before, expireAt] = reply as [number, string, string, string, string, string];
    const put = [sessionId, ms, rev, meta, expireAt];
    const writes: ListingWrite[] = [{ script: INDEX_PUT_SCRIPT, keys: this.indexKeys(undefined, sessionId), args: put }];
    if (user !== undefined) writes.push({ script: INDEX_PUT_SCRIPT, keys: this.indexKeys(user), args: put });
    if (hadUser === '1' && before !== user)
      writes.push({ script: INDEX_REMOVE_SCRIPT, keys: this.indexKeys(before), args: [sessionId, rev] });
    // This save's entries supersede a pending repair's; its removals (from a user's listing the
    // session left) are still owed.
    const pending = this.#repairs.get(sessionId);
    this.#repairs.delete(sessionId);
    for (const write of pending?.writes ?? []) if (write.script === INDEX_REMOVE_SCRIPT) writes.push(write);
    if (mode === 'reindex') {
      // reindex() is there to write the entries: a failure fails it (nothing is queued).
      await Promise.all(writes.map((w) => this.#indexCall('reindex', sessionId, w.script, w.keys, w.args, signal)));
      return reply;
    }
    await this.#writeListings('set', sessionId, writes, signal);
    return reply;
  }

  /**
   * Writes a saved session's listing entries (or removes a deleted one's: `operation` 'delete') at
   * once (cluster). What fails is reported to `onListingError` and kept for a repair; it never fails
   * the caller, whose session is stored (or deleted). Resolves to whether every write landed.
   */
  async #writeListings(operation: string, sessionId: string, writes: ListingWrite[], signal?: AbortSignal): Promise<boolean> {
    const results = await Promise.allSettled(writes.map((w) => this.#indexCall(operation, sessionId, w.script, w.keys, w.args, signal)));
    const failed = writes.filter((_, i) => results[i]!.status === 'rejected');
    if (failed.length === 0) return true;
    const error = (results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason;
    const tries = this.#repairs.get(sessionId)?.tries ?? 0;
    this.#queueRepair(sessionId, failed, tries);
    const next = `the background repair (next try in ${repairDelay(tries) / 1000} s)`;
    this.#report(
      error,
      operation === 'delete'
        ? `session ${shortId(sessionId)} is deleted, but ${failed.length} of its ${writes.length} listing removals failed; a page drops the entry as it reads it, and ${next} removes it`
        : `session ${shortId(sessionId)} is saved, but ${failed.length} of its ${writes.length} listing writes failed; it is listed as before until ${next}, its next save or reindex() writes them`,
    );
    return false;
  }

  /** Keeps a session's failed listing writes for the background pass, and arms its timer. */
  #queueRepair(sessionId: string, writes: ListingWrite[], tries: number): void {
    this.#repairs.delete(sessionId);
    this.#repairs.set(sessionId, { writes, tries: tries + 1, due: Date.now() + repairDelay(tries) });
    if (this.#repairs.size > MAX_REPAIRS) {
      const [oldest] = this.#repairs.keys();
      this.#repairs.delete(oldest!);
      this.#report(
        undefined,
        `the listing repair of session ${shortId(oldest!)} was given up: over ${MAX_REPAIRS} sessions wait for one; run reindex() once Redis is healthy`,
      );
    }
    this.#armRepairs();
  }

  /**
   * Schedules the background pass at the earliest due repair (an unref'd timer: it keeps no process
   * alive), moving an armed timer forward when a repair is due before it.
   */
  #armRepairs(): void {
    if (this.#repairs.size === 0 || this.#connection.closed) return;
    let due = Number.POSITIVE_INFINITY;
    for (const repair of this.#repairs.values()) if (!repair.busy) due = Math.min(due, repair.due);
    if (due === Number.POSITIVE_INFINITY) return; // the pass under way arms the timer when it ends
    if (this.#repairTimer !== undefined) {
      if (due >= this.#repairTimerDue) return;
      clearTimeout(this.#repairTimer);
    }
    this.#repairTimerDue = due;
    this.#repairTimer = setTimeout(
      () => {
        this.#repairTimer = undefined;
        void this.#repairDue(false).finally(() => this.#armRepairs());
      },
      Math.max(0, due - Date.now()),
    );
    this.#repairTimer.unref?.();
  }

  /**
   * Writes again the listing entries that failed after their sessions were saved (a cluster's
   * listing node was down or stalled): the background pass runs this by itself (after 1 s, then 2,
   * 4, ... up to 60 s, 10 tries per session), and a session's next save writes its entries anyway.
   * Call it to repair now, e.g. after an outage. Resolves to how many sessions' entries were written
   * and how many still wait (a failure is reported to `onListingError` again, never thrown).
   */
  async repairListings(options: { signal?: AbortSignal } = {}): Promise<{ repaired: number; pending: number }> {
    // A repair in progress (the background pass's, on a node that may have failed over since) is
    // waited for, so that what it could not write is tried again now.
    if (this.#repairing.size > 0) await abortable(Promise.allSettled([...this.#repairing]), options.signal);
    const repaired = await this.#repairDue(true, options.signal);
    return { repaired, pending: this.#repairs.size };
  }

  /** Tries the repairs that are due (all with `all`), at once; resolves to how many succeeded. */
  async #repairDue(all: boolean, signal?: AbortSignal): Promise<number> {
    const now = Date.now();
    const due = [...this.#repairs].filter(([, r]) => !r.busy && (all || r.due <= now));
    const done = await Promise.all(
      due.map(async ([sessionId, repair]) => {
        if (this.#repairs.get(sessionId) !== repair) return false; // saved again meanwhile
        if (repair.tries > MAX_REPAIR_TRIES) {
          this.#repairs.delete(sessionId);
          this.#report(
            undefined,
            `the listing repair of session ${shortId(sessionId)} was given up after ${MAX_REPAIR_TRIES} tries; run reindex()`,
          );
          return false;
        }
        repair.busy = true;
        const writing = Promise.allSettled(
          repair.writes.map((w) => this.#indexCall('repairListings', sessionId, w.script, w.keys, w.args, signal)),
        );
        this.#repairing.add(writing);
        const results = await writing;
        this.#repairing.delete(writing);
        repair.busy = false;
        if (this.#repairs.get(sessionId) !== repair) return false;
        const failed = repair.writes.filter((_, i) => results[i]!.status === 'rejected');
        if (failed.length === 0) {
          this.#repairs.delete(sessionId);
          return true;
        }
        this.#queueRepair(sessionId, failed, repair.tries);
        this.#report(
          (results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason,
          `the listing repair of session ${shortId(sessionId)} failed (try ${repair.tries} of ${MAX_REPAIR_TRIES}); the next try is in ${repairDelay(repair.tries) / 1000} s`,
        );
        return false;
      }),
    );
    return done.filter(Boolean).length;
  }

  /** Hands a listing failure to `onListingError`, as an error of the cause's class that says what was saved. */
  #report(cause: unknown, what: string): void {
    const problem = SessionStateError.isInstance(cause) ? cause.problem : cause instanceof Error ? cause.message : undefined;
    const error = SessionStateError.isInstance(cause)
      ? new SessionStateError(cause.path, `${problem}; ${what}`, { cause })
      : new BackendUnavailableError(
          'redis',
          `Listing write failed: ${problem === undefined ? '' : `${problem.replace(/\.$/, '')}; `}${what}.`,
          {
            cause,
          },
        );
    try {
      this.#onListingError(error);
    } catch {
      // A reporter that throws must not fail the save it reports on.
    }
  }

  /** The default `onListingError`: a process warning at most once a minute, counting the failures meanwhile. */
  #warn(error: Error): void {
    this.#warned.failures++;
    const now = Date.now();
    if (now - this.#warned.at < WARN_EVERY_MS) return;
    const more = this.#warned.failures > 1 ? ` (${this.#warned.failures} listing failures in the last minute)` : '';
    this.#warned = { at: now, failures: 0 };
    process.emitWarning(`${error.message}${more}`, { code: 'CTX_REDIS_LISTING' });
  }

  /**
   * Runs a single-node script that needs the index of the user stored with the session, starting
   * from the user remembered (or `guess`), and again with the stored one while the script answers
   * `moved` (another user than expected is stored).
   * @throws ConcurrencyError when the stored user changed under every try.
   */
  async #moving(
    site: { operation: string; sessionId: string; key: string },
    sessionId: string,
    guess: string | undefined,
    signal: AbortSignal | undefined,
    run: (stored: string | undefined) => Promise<unknown>,
  ): Promise<unknown> {
    let stored = this.#known.has(sessionId) ? this.#known.get(sessionId) : guess;
    for (let i = 0; i < MAX_MOVES; i++) {
      const reply = await this.#connection.call(site, signal, () => run(stored));
      if (!Array.isArray(reply) || reply[0] !== MOVED) return reply;
      stored = reply[1] === '1' ? String(reply[2]) : undefined;
      this.#remember(sessionId, stored);
    }
    throw new ConcurrencyError(sessionId, `The user of session ${shortId(sessionId)} kept changing during ${site.operation}; retry.`);
  }

  /**
   * Takes or renews the lease `lease.turn` of a session for `lease.holder` (see
   * `SessionStore.leaseTurn`): one script call on `{prefix}:turn:{<session>}:<turn>`, a string
   * holding the holder with a TTL of `ttlMs` (`SET ... PX`), so a lease whose holder died expires on
   * the server's clock. Resolves to false while another holder's lease is live.
   * @throws ConfigurationError for a blank session id or a malformed lease, before any round trip.
   * @throws BackendUnavailableError when Redis cannot be reached within `timeoutMs`.
   */
  async leaseTurn(sessionId: string, lease: TurnLease): Promise<boolean> {
    checkTurnLease('RedisSessionStore.leaseTurn', sessionId, lease);
    const key = turnLeaseKey(this.#connection.prefix, sessionId, lease.turn);
    const reply = await this.#connection.call({ operation: 'leaseTurn', sessionId, key }, lease.signal, (c) =>
      this.#connection.script(c, TURN_LEASE_SCRIPT, [key], [lease.holder, lease.ttlMs]),
    );
    return Number(reply) === 1;
  }

  /**
   * Ends the lease `lease.turn` of a session if `lease.holder` holds it (one script call); resolves
   * to whether a live lease of `holder` was ended.
   * @throws ConfigurationError for a blank session id or a malformed lease, before any round trip.
   * @throws BackendUnavailableError when Redis cannot be reached within `timeoutMs`.
   */
  async releaseTurn(sessionId: string, lease: Omit<TurnLease, 'ttlMs'>): Promise<boolean> {
    checkTurnLease('RedisSessionStore.releaseTurn', sessionId, lease, false);
    const key = turnLeaseKey(this.#connection.prefix, sessionId, lease.turn);
    const reply = await this.#connection.call({ operation: 'releaseTurn', sessionId, key }, lease.signal, (c) =>
      this.#connection.script(c, TURN_RELEASE_SCRIPT, [key], [lease.holder]),
    );
    return Number(reply) === 1;
  }

  /**
   * Deletes a session and its listing entries; resolves to whether one was stored. One round trip
   * on a single node when the store read or wrote the session before (else two when it has a user);
   * on a cluster, one for the session and then one to each listing at once, where a removal that
   * fails does not fail `delete` (the session is deleted): it goes to `onListingError` and is
   * repaired as a save's listing writes are (a page drops the entry meanwhile).
   * @throws BackendUnavailableError when Redis cannot be reached within `timeoutMs` (for the session itself).
   */
  async delete(sessionId: string, options: { signal?: AbortSignal } = {}): Promise<boolean> {
    const key = this.key(sessionId);
    const site = { operation: 'delete', sessionId, key };
    const { signal } = options;
    if (!this.#connection.isCluster) {
      const reply = await this.#moving(site, sessionId, undefined, signal, (stored) =>
        this.#connection.script(
          this.client,
          DELETE_SINGLE_SCRIPT,
          [key, ...this.#index(ALL), ...this.#index(stored)],
          [sessionId, flag(stored), stored ?? ''],
        ),
      );
      this.#known.delete(sessionId);
      return Number(reply) === 1;
    }
    const reply = (await this.#connection.call(site, signal, (c) =>
      this.#connection.script(c, DELETE_CLUSTER_SCRIPT, [key], []),
    )) as string[];
    this.#known.delete(sessionId);
    this.#repairs.delete(sessionId); // a pending repair would list the deleted session again
    if (Number(reply[0]) !== 1) return false;
    const [, hadUser, user, rev] = reply as [number, string, string, string];
    // Removals of entries of this revision or older: a session created again under the id keeps its own.
    const writes: ListingWrite[] = [{ script: INDEX_REMOVE_SCRIPT, keys: this.indexKeys(undefined, sessionId), args: [sessionId, rev] }];
    if (hadUser === '1') writes.push({ script: INDEX_REMOVE_SCRIPT, keys: this.indexKeys(user), args: [sessionId, rev] });
    await this.#writeListings('delete', sessionId, writes, signal);
    return true;
  }

  /**
   * One page of sessions, newest first (`metadata.updatedAt` descending, then session id descending
   * in byte order), with `total` (the listing's `ZCARD`). One script call per page on a single node;
   * on a cluster, also one `HMGET` per entry at once, to drop entries whose session is gone or has
   * another user now (left by a write cut between the session and its index).
   * @throws ConfigurationError for a `limit` outside 1-100, a blank `userId`, or a cursor that is
   *   malformed or from another listing, before any round trip.
   * @throws SessionStateError when a listing entry is not metadata (a hand edit), naming it.
   * @throws BackendUnavailableError when Redis cannot be reached within `timeoutMs`.
   */
  async list(options: ListSessionsOptions = {}): Promise<SessionPage> {
    const { userId, limit, cursor } = checkListOptions(options);
    const listing = this.#listingKeys(userId);
    const sessions: SessionSummary[] = [];
    let after = cursor && { ms: cursor.updatedAtMs, sessionId: cursor.sessionId };
    let total = 0;
    for (let round = 1; ; round++) {
      const want = limit + 1 - sessions.length;
      // One page script per shard at once (one listing but on a cluster's listing of every
      // session), merged in the listing's order.
      const replies = await Promise.all(
        listing.map(
          (keys) =>
            this.#indexCall(
              'list',
              userId ?? '*',
              LIST_SCRIPT,
              keys,
              [want, after ? String(after.ms) : '', after?.sessionId ?? ''],
              options.signal,
              userId === undefined ? 'the listing of every session' : `user ${shortId(userId)}`,
            ) as Promise<[number, string[], string[], (string | null)[]]>,
        ),
      );
      total = 0;
      const merged: RawEntry[] = [];
      for (const [i, reply] of replies.entries()) {
        total += Number(reply[0]);
        merged.push(...reply[1].map((sessionId, j) => readEntry(listing[i]!, sessionId, reply[2][j]!, reply[3][j] ?? null)));
      }
      if (replies.length > 1) merged.sort(listingOrder);
      const entries = merged.slice(0, want);
      sessions.push(...(await this.#current(entries, userId, options.signal)));
      const last = entries.at(-1);
      if (sessions.length > limit || entries.length < want || last === undefined) break;
      after = last;
      if (round === MAX_LIST_ROUNDS) {
        // Too many stale entries in a row: a short page, and the next goes on after them.
        const page: SessionPage = { sessions, total };
        page.nextCursor = encodeSessionCursor({ sessionId: last.sessionId, metadata: timeOnly(last.ms) }, userId);
        return page;
      }
    }
    const page: SessionPage = { sessions: sessions.slice(0, limit), total };
    if (sessions.length > limit) page.nextCursor = encodeSessionCursor(sessions[limit - 1]!, userId);
    return page;
  }

  /**
   * The entries of a listing page whose session still belongs in it. An entry without metadata is
   * dropped from the index. On a cluster, each session's `user` and `rev` are read (one `HMGET`
   * each, at once) and an entry is dropped when its session is gone or belongs to another user.
   */
  async #current(entries: RawEntry[], userId: string | undefined, signal?: AbortSignal): Promise<SessionSummary[]> {
    let stored: ([string | null, string | null] | undefined)[] = [];
    if (this.#connection.isCluster) {
      stored = await Promise.all(
        entries.map(({ sessionId }) => {
          const key = sessionKey(this.#connection.prefix, sessionId);
          return this.#connection.call({ operation: 'list', sessionId, key }, signal, (c) => c.hmget(key, 'user', 'rev')) as Promise<
            [string | null, string | null]
          >;
        }),
      );
    }
    const stale = entries.filter(({ summary }, i) => {
      if (summary === undefined) return true;
      const [user, rev] = stored[i] ?? [];
      return rev === null || (userId !== undefined && user !== undefined && user !== userId);
    });
    await Promise.all(
      stale.map(({ sessionId, rev, keys }) =>
        this.#indexCall('list', sessionId, INDEX_REMOVE_SCRIPT, keys, [sessionId, rev ?? ''], signal),
      ),
    );
    return entries.filter((entry) => !stale.includes(entry)).map((entry) => entry.summary!);
  }

  /**
   * Writes the listing entries of every session stored under the prefix (`SCAN` on every node),
   * e.g. for sessions saved by a version of this package that kept no listing. A session saved
   * meanwhile is skipped (its save wrote its entries). Two round trips per session.
   * @throws BackendUnavailableError when Redis cannot be reached within `timeoutMs`.
   */
  async reindex(options: { signal?: AbortSignal } = {}): Promise<ReindexResult> {
    const { signal } = options;
    const pattern = `${this.#connection.prefix}:session:*`;
    const result: ReindexResult = { indexed: 0, unreadable: [] };
    const client = this.client;
    const nodes = client instanceof Cluster ? client.nodes('master') : [client as Redis];
    for (const node of nodes) {
      let cursor = '0';
      do {
        const [next, keys] = await this.#connection.call({ operation: 'reindex', sessionId: '*', key: pattern }, signal, () =>
          node.scan(cursor, 'MATCH', pattern, 'COUNT', 500),
        );
        cursor = next;
        await Promise.all(keys.map((key) => this.#reindexOne(key, result, signal)));
      } while (cursor !== '0');
    }
    return result;
  }

  /** Reads one session key and writes its listing entries if its etag has not changed. */
  async #reindexOne(key: string, result: ReindexResult, signal?: AbortSignal): Promise<void> {
    const [json, etag] = await this.#connection.call({ operation: 'reindex', sessionId: '*', key }, signal, (c) =>
      c.hmget(key, 'json', 'etag'),
    );
    let session: SessionJson;
    try {
      session = parseSessionJson(json);
      if (etag == null || this.key(session.sessionId) !== key) throw new Error('not the session of its key');
    } catch {
      result.unreadable.push(key);
      return;
    }
    const reply = await this.#write(session, 'reindex', etag, randomUUID(), signal);
    if (Number(reply[0]) === 1) result.indexed++;
  }

  /** Runs a script on one listing's keys. */
  #indexCall(
    operation: string,
    sessionId: string,
    script: string,
    keys: IndexKeys,
    args: (string | number)[],
    signal?: AbortSignal,
    scope?: string,
  ): Promise<unknown> {
    return this.#connection.call({ operation, sessionId, key: keys.order, ...(scope === undefined ? {} : { scope }) }, signal, (c) =>
      this.#connection.script(c, script, [keys.order, keys.meta, keys.expires], args),
    );
  }

  /** The three keys of a user's listing as script KEYS (none without a user), or of every session's (`ALL`). */
  #index(userId: string | undefined | typeof ALL): string[] {
    if (userId === undefined) return [];
    const { order, meta, expires } = this.indexKeys(userId === ALL ? undefined : userId);
    return [order, meta, expires];
  }

  /** Remembers the user stored with a session (a hint for the next write or delete). */
  #remember(sessionId: string, userId: string | undefined): void {
    this.#known.delete(sessionId);
    this.#known.set(sessionId, userId);
    if (this.#known.size > KNOWN_USERS) this.#known.delete(this.#known.keys().next().value!);
  }

  /**
   * Closes the connection if this store opened it (`url` / `nodes`); an injected client stays open.
   * Listing repairs still waiting are dropped (reported to `onListingError`; `reindex()` writes them).
   */
  async close(): Promise<void> {
    clearTimeout(this.#repairTimer);
    this.#repairTimer = undefined;
    if (this.#repairs.size > 0) {
      const pending = this.#repairs.size;
      this.#repairs.clear();
      this.#report(undefined, `the store was closed with the listing entries of ${pending} saved sessions unwritten; run reindex()`);
    }
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

/** '1' when a value is given, else '0' (how the scripts take optional arguments). */
function flag(value: string | undefined): string {
  return value === undefined ? '0' : '1';
}

/**
 * A stored session read back.
 * @throws SessionStateError naming the key when it is not valid session JSON of that id.
 */
function readSession(key: string, sessionId: string, json: string | null, etag: string | null): SessionJson {
  if (json == null || etag == null)
    throw new SessionStateError(`redis:${key}`, `holds a hash without its "${json == null ? 'json' : 'etag'}" field; delete the key`);
  let session: SessionJson;
  try {
    session = parseSessionJson(json);
  } catch (error) {
    if (!SessionStateError.isInstance(error)) throw error;
    throw new SessionStateError(`redis:${key}${error.path.slice(1)}`, error.problem, { cause: error, sessionId });
  }
  if (session.sessionId !== sessionId) {
    throw new SessionStateError(`redis:${key}.sessionId`, `holds session ${shortId(session.sessionId)}, not ${shortId(sessionId)}`);
  }
  return session;
}

/** Milliseconds a `Date` can hold either side of the epoch. */
const MAX_TIME_MS = 8.64e15;

/**
 * A listing entry: its score, a time in ms, and `<rev> <metadata JSON>` checked as session
 * metadata, or an entry without summary when the index holds no metadata for the id.
 * @throws SessionStateError naming the key and the session id when the score or the entry is malformed.
 */
function readEntry(keys: IndexKeys, sessionId: string, score: string, text: string | null): RawEntry {
  const ms = Number(score);
  if (!Number.isSafeInteger(ms) || Math.abs(ms) > MAX_TIME_MS) {
    throw new SessionStateError(
      `redis:${keys.order}[${JSON.stringify(sessionId)}]`,
      `has score ${shortId(score)}, not a time in ms; delete the entry or run reindex()`,
    );
  }
  if (text === null) return { sessionId, ms, rev: undefined, summary: undefined, keys };
  const path = `redis:${keys.meta}[${JSON.stringify(sessionId)}]`;
  const space = text.indexOf(' ');
  const rev = text.slice(0, space);
  if (space < 1 || !/^\d+$/.test(rev))
    throw new SessionStateError(path, 'is not "<revision> <metadata JSON>"; delete the entry or run reindex()');
  let metadata: SessionMetadata;
  try {
    // Checked as a session's metadata is: wrapped in the smallest session.
    ({ metadata } = parseSessionJson({
      type: 'ctx.session',
      version: 2,
      sessionId,
      state: {},
      metadata: JSON.parse(text.slice(space + 1)),
    }));
  } catch (error) {
    const at = SessionStateError.isInstance(error) ? error.path.replace(/^\$\.metadata/, '') : '';
    throw new SessionStateError(
      `${path}${at}`,
      `${SessionStateError.isInstance(error) ? error.problem : describeError(error)}; delete the entry or run reindex()`,
      {
        cause: error,
      },
    );
  }
  return { sessionId, ms, rev, summary: { sessionId, metadata }, keys };
}

/** The listing order of raw entries: newest first, then session id descending in byte order (as `ZREVRANGE`). */
function listingOrder(a: RawEntry, b: RawEntry): number {
  return b.ms - a.ms || Buffer.compare(Buffer.from(b.sessionId), Buffer.from(a.sessionId));
}

/** How long a listing repair waits before its next try: 1 s, doubling, at most 60 s. */
function repairDelay(tries: number): number {
  return Math.min(1000 * 2 ** tries, 60_000);
}

/** Metadata holding only a time, for a cursor placed at an entry that was not listed. */
function timeOnly(ms: number): SessionMetadata {
  const at = new Date(ms).toISOString();
  return { createdAt: at, updatedAt: at };
}
