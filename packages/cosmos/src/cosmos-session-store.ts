import { randomUUID } from 'node:crypto';
import type { Container, ItemDefinition } from '@azure/cosmos';
import {
  BackendUnavailableError,
  ConcurrencyError,
  ConfigurationError,
  SessionStateError,
  type GetSessionOptions,
  type ListSessionsOptions,
  type SessionJson,
  type SessionPage,
  type SessionStore,
  type SessionSummary,
  type SetSessionOptions,
  type StoredSession,
  type TurnLease,
} from '@ctx/core';
import {
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
} from '@ctx/core/backend';
import { CONNECTION_OPTIONS, CosmosConnection, type CosmosConnectionOptions, type Operation, statusOf } from './connection.js';
import { SESSION_STORE_INDEXING_POLICY, SESSION_STORE_PARTITION_KEY } from './history-layout.js';
import { encodeItemId } from './ids.js';
import { missingCompositeIndexes, SESSION_LIST_COMPOSITE_INDEXES } from './indexing.js';
import { itemTooLarge } from './limits.js';

/** Options of `CosmosSessionStore`: the connection, and how long sessions live. */
export interface CosmosSessionStoreOptions extends CosmosConnectionOptions {
  /**
   * Cosmos DB deletes a session this many seconds after it was last saved (item `ttl`; every `set`
   * resets the clock, `get` does not). Needs TTL on for the container (`defaultTtl: -1`, which
   * `createIfNotExists` sets). Default: sessions never expire.
   */
  ttlSeconds?: number;
}

/** A stored session: one item per session, partitioned by its own id (`/id`). */
export interface SessionItem {
  /** The session id encoded by `encodeItemId` (also the partition key value). */
  id: string;
  /** The session id as given. */
  sessionId: string;
  /** The session JSON (`session.toJSON()`), as a JSON object. */
  session: SessionJson;
  /** A random id of the write that stored this version, so a retried write can recognise its own success. */
  writeId: string;
  /** ISO 8601: the last `set`. */
  updatedAt: string;
  /** `session.metadata.userId`, when the session has an owner: what `list({ userId })` filters on. */
  userId?: string;
  /** `session.metadata.updatedAt` in milliseconds since the epoch: what `list` sorts on (then `sessionId`). */
  updatedAtMs: number;
  ttl?: number;
}

/**
 * The lease on a turn running on a session (`leaseTurn`): an item of its own beside the session's,
 * with the id `encodeItemId(sessionId, 'turn', turn)` (partitioned by it, as every item here), which
 * no session item can have (their ids have one part, so no `:`).
 */
export interface TurnLeaseItem {
  id: string;
  /** The session id as given. */
  sessionId: string;
  /** The lease's turn key. */
  turn: string;
  /** Who holds it. */
  holder: string;
  /** When it expires, in ms since the epoch (the clock of the process that took or renewed it). */
  expiresAtMs: number;
  /** Seconds after the last write at which Cosmos DB deletes the item (a minute past the lease), where the container has TTL on. */
  ttl: number;
}

/** How long an expired lease item is kept before Cosmos DB deletes it, in seconds (where TTL is on). */
const LEASE_ITEM_GRACE_SECONDS = 60;

/** Sorts newer than any session: the keyset condition of a first page. */
const AFTER_EVERY_TIME = Number.MAX_SAFE_INTEGER;

const OPTION_NAMES = optionNames<CosmosSessionStoreOptions>()({ ...CONNECTION_OPTIONS, ttlSeconds: true });

/**
 * A `SessionStore` on Azure Cosmos DB: one item per session in a container partitioned by `/id`,
 * with optimistic concurrency on the item's ETag (`ifMatch` becomes an `IfMatch` condition; a
 * create for `ifMatch: null`). A write retried after a lost response recognises its own earlier
 * success (by a random write id) instead of reporting a conflict.
 * @throws ConfigurationError for bad options.
 */
export class CosmosSessionStore implements SessionStore {
  /** Seconds after the last save at which a session is deleted, or undefined for never. */
  readonly ttlSeconds: number | undefined;
  readonly #connection: CosmosConnection;

  constructor(options: CosmosSessionStoreOptions) {
    checkOptionNames('CosmosSessionStore', options, OPTION_NAMES);
    if (options.ttlSeconds !== undefined) checkInteger('CosmosSessionStore', 'ttlSeconds', options.ttlSeconds);
    this.ttlSeconds = options.ttlSeconds;
    this.#connection = new CosmosConnection(options, 'CosmosSessionStore', 'sessions', {
      partitionKey: SESSION_STORE_PARTITION_KEY,
      indexingPolicy: SESSION_STORE_INDEXING_POLICY,
      needsTtl: options.ttlSeconds !== undefined,
      advice: 'Sessions are stored one item per session, partitioned by the item id.',
    });
  }

  /** The container in use. */
  get container(): Container {
    return this.#connection.container;
  }

  /**
   * The item id (and partition key value) of a session: `encodeItemId(sessionId)`.
   * @throws ConfigurationError for an empty or whitespace-only session id.
   */
  itemId(sessionId: string): string {
    return encodeItemId(checkSessionId(sessionId));
  }

  /**
   * The stored session and its ETag, or undefined (one point read); with `userId`, undefined too
   * for a session of another user or of none.
   * @throws SessionStateError when the stored item is not valid session JSON of that id.
   * @throws ConfigurationError for a blank id or `userId`, before any request.
   * @throws BackendUnavailableError when Cosmos DB fails or does not answer within `timeoutMs`.
   */
  async get(sessionId: string, options: GetSessionOptions = {}): Promise<StoredSession | undefined> {
    const id = this.itemId(sessionId);
    const { userId } = options;
    if (userId !== undefined) sessionOfUser(undefined, userId);
    const stored = await this.#connection.run({ operation: 'get', sessionId }, options.signal, async (op) => {
      const item = await this.#read(op, id);
      return item && { session: this.#decode(item, id, sessionId), etag: item._etag! };
    });
    return sessionOfUser(stored, userId);
  }

  /**
   * Stores a session and resolves to its new ETag. `ifMatch`: a string writes only over that ETag
   * (`IfMatch` replace), `null` only when nothing is stored (create), absent always (upsert).
   * @throws ConcurrencyError when `ifMatch` does not hold (nothing is written).
   * @throws SessionStateError when `session` is not session JSON that `get` could read back (a NaN,
   *   Map, Date, `undefined`, an array as a state slot, a cycle, nesting past core's limit, JSON
   *   text instead of the object), naming the path, or an item over Cosmos DB's 2 MB item size limit;
   *   nothing is written.
   * @throws ConfigurationError for an empty or whitespace-only session id, before any request.
   * @throws BackendUnavailableError when Cosmos DB fails or does not answer in time.
   */
  async set(session: SessionJson, options: SetSessionOptions = {}): Promise<string> {
    const json = checkSessionForWrite(session);
    const sessionId = json.sessionId;
    const id = this.itemId(sessionId);
    const { ifMatch } = options;
    if (ifMatch !== undefined && ifMatch !== null && (typeof ifMatch !== 'string' || ifMatch === '')) {
      throw new ConfigurationError(
        `CosmosSessionStore.set for session ${shortId(sessionId)}: ifMatch must be the etag get() returned, null (write only if nothing is stored) or undefined (write always); got ${typeof ifMatch === 'string' ? '""' : typeof ifMatch}.`,
      );
    }
    const item: SessionItem = {
      id,
      sessionId,
      // What get will read: the checked session, as JSON (a private copy; extra top-level fields are not kept).
      session: JSON.parse(sessionText(json)) as SessionJson,
      writeId: randomUUID(),
      updatedAt: new Date().toISOString(),
      updatedAtMs: Date.parse(json.metadata.updatedAt),
    };
    if (json.metadata.userId !== undefined) item.userId = json.metadata.userId;
    if (this.ttlSeconds !== undefined) item.ttl = this.ttlSeconds;
    const tooLarge = itemTooLarge(`the item of session ${shortId(sessionId)}`, Buffer.byteLength(JSON.stringify(item), 'utf8'));
    if (tooLarge) throw new SessionStateError('$', tooLarge);
    return this.#connection.run({ operation: 'set', sessionId }, options.signal, async (op) => {
      try {
        const written =
          ifMatch === undefined
            ? await op.step((c, abortSignal) => c.items.upsert<SessionItem>(item, { abortSignal }))
            : ifMatch === null
              ? await op.step((c, abortSignal) => c.items.create<SessionItem>(item, { abortSignal }), [409])
              : await op.step(
                  (c, abortSignal) =>
                    c.item(id, id).replace<SessionItem>(item, { abortSignal, accessCondition: { type: 'IfMatch', condition: ifMatch } }),
                  [404, 412],
                );
        return etagOf(
          written.resource,
          written.headers?.etag,
          `CosmosSessionStore.set for session ${shortId(sessionId)} on ${this.#connection.where}`,
        );
      } catch (error) {
        const status = statusOf(error);
        if (status !== 409 && status !== 412 && status !== 404) throw error;
        // A conflict, or our own earlier attempt whose response was lost: the write id tells.
        const current = await this.#read(op, id);
        if (current?.writeId === item.writeId) return current._etag!;
        throw new ConcurrencyError(
          sessionId,
          ifMatch === null
            ? `Session ${shortId(sessionId)} already exists in Cosmos DB; load it before saving over it.`
            : current === undefined
              ? `Session ${shortId(sessionId)} was deleted from Cosmos DB since it was read; reload it and retry.`
              : undefined,
          { cause: error },
        );
      }
    });
  }

  /**
   * Takes or renews the lease `lease.turn` of a session for `lease.holder` (see
   * `SessionStore.leaseTurn`): a point read of the lease item, then a create (none stored) or an
   * `IfMatch` replace (an expired lease, or this holder's), so two processes never both take it.
   * Expiry is an `expiresAtMs` time on the clocks of the processes (keep them in sync within a
   * fraction of `ttlMs`); the item also carries a `ttl`, so Cosmos DB deletes an abandoned one where
   * the container has TTL on. Resolves to false while another holder's lease is live, or when
   * another process changed the item between the read and the write.
   * @throws ConfigurationError for a blank session id or a malformed lease, before any request.
   * @throws BackendUnavailableError when Cosmos DB fails or does not answer within `timeoutMs`.
   */
  async leaseTurn(sessionId: string, lease: TurnLease): Promise<boolean> {
    checkTurnLease('CosmosSessionStore.leaseTurn', sessionId, lease);
    const id = encodeItemId(sessionId, 'turn', lease.turn);
    return this.#connection.run({ operation: 'leaseTurn', sessionId }, lease.signal, async (op) => {
      const current = await this.#readLease(op, id);
      const now = Date.now();
      if (current && current.holder !== lease.holder && current.expiresAtMs > now) return false;
      const item: TurnLeaseItem = {
        id,
        sessionId,
        turn: lease.turn,
        holder: lease.holder,
        expiresAtMs: now + lease.ttlMs,
        ttl: Math.ceil(lease.ttlMs / 1000) + LEASE_ITEM_GRACE_SECONDS,
      };
      try {
        if (current === undefined) await op.step((c, abortSignal) => c.items.create<TurnLeaseItem>(item, { abortSignal }), [409]);
        else
          await op.step(
            (c, abortSignal) =>
              c.item(id, id).replace<TurnLeaseItem>(item, { abortSignal, accessCondition: { type: 'IfMatch', condition: current._etag! } }),
            [404, 412],
          );
        return true;
      } catch (error) {
        const status = statusOf(error);
        if (status === 409 || status === 404 || status === 412) return false; // another process got there first
        throw error;
      }
    });
  }

  /**
   * Ends the lease `lease.turn` of a session if `lease.holder` holds it (a point read, then an
   * `IfMatch` delete); resolves to whether a live lease of `holder` was ended.
   * @throws ConfigurationError for a blank session id or a malformed lease, before any request.
   * @throws BackendUnavailableError when Cosmos DB fails or does not answer within `timeoutMs`.
   */
  async releaseTurn(sessionId: string, lease: Omit<TurnLease, 'ttlMs'>): Promise<boolean> {
    checkTurnLease('CosmosSessionStore.releaseTurn', sessionId, lease, false);
    const id = encodeItemId(sessionId, 'turn', lease.turn);
    return this.#connection.run({ operation: 'releaseTurn', sessionId }, lease.signal, async (op) => {
      const current = await this.#readLease(op, id);
      if (current?.holder !== lease.holder) return false;
      try {
        await op.step(
          (c, abortSignal) => c.item(id, id).delete({ abortSignal, accessCondition: { type: 'IfMatch', condition: current._etag! } }),
          [404, 412],
        );
      } catch (error) {
        const status = statusOf(error);
        if (status === 404 || status === 412) return false;
        throw error;
      }
      return current.expiresAtMs > Date.now();
    });
  }

  /** The lease item `id`, or undefined when there is none or it is not a lease (it then counts as free). */
  async #readLease(op: Operation, id: string): Promise<(TurnLeaseItem & ItemDefinition) | undefined> {
    let resource: (TurnLeaseItem & ItemDefinition) | undefined;
    try {
      ({ resource } = await op.step((c, abortSignal) => c.item(id, id).read<TurnLeaseItem>({ abortSignal }), [404]));
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw error;
    }
    if (!resource || typeof resource.holder !== 'string' || typeof resource.expiresAtMs !== 'number') {
      return resource && { ...resource, holder: '', expiresAtMs: 0 };
    }
    return resource;
  }

  /** Deletes a session; resolves to whether one was stored. */
  async delete(sessionId: string, options: { signal?: AbortSignal } = {}): Promise<boolean> {
    const id = this.itemId(sessionId);
    return this.#connection.run({ operation: 'delete', sessionId }, options.signal, async (op) => {
      try {
        await op.step((c, abortSignal) => c.item(id, id).delete({ abortSignal }), [404]);
        return true;
      } catch (error) {
        if (statusOf(error) === 404) return false;
        throw error;
      }
    });
  }

  /**
   * One page of sessions, newest first (`metadata.updatedAt` descending, then `sessionId`
   * descending), only the user's with `userId`. One query of the container, which is partitioned
   * by session, so it reaches every physical partition (the SDK fetches a query plan, then queries
   * each partition key range and merges): `SELECT TOP limit+1` of the id and the metadata only,
   * never the sessions, with the cursor as a WHERE condition (keyset paging), sorted by the stored
   * `updatedAtMs` and `sessionId` (and `userId`, which the filter fixes, so the query uses the
   * composite index that starts with it). `total` is not given: counting is another query over
   * every partition. Sessions stored by versions of this package before listing existed have no
   * `updatedAtMs` and are listed after their next `set`.
   * @throws ConfigurationError for a `limit` out of 1-100, a blank `userId`, a cursor that is not
   *   from a listing of the same `userId`, or a container without the composite indexes the query
   *   needs (the message names them), before any query.
   * @throws SessionStateError when a listed item's metadata is not session metadata.
   * @throws BackendUnavailableError when Cosmos DB fails or does not answer within `timeoutMs`.
   */
  async list(options: ListSessionsOptions = {}): Promise<SessionPage> {
    const { userId, limit, cursor } = checkListOptions(options);
    return this.#connection.run({ operation: 'list', ...(userId === undefined ? {} : { userId }) }, options.signal, async (op) => {
      this.#checkListIndexes(userId);
      const parameters = [
        { name: '@t', value: cursor?.updatedAtMs ?? AFTER_EVERY_TIME },
        { name: '@s', value: cursor?.sessionId ?? '' },
      ];
      let where = '(c.updatedAtMs < @t OR (c.updatedAtMs = @t AND c.sessionId < @s))';
      let order = 'c.updatedAtMs DESC, c.sessionId DESC';
      if (userId !== undefined) {
        where = `c.userId = @userId AND ${where}`;
        order = `c.userId DESC, ${order}`;
        parameters.push({ name: '@userId', value: userId });
      }
      // limit is a checked integer (1-100), so TOP is written out.
      const query = {
        query: `SELECT TOP ${limit + 1} c.id, c.sessionId, c.session.metadata FROM c WHERE ${where} ORDER BY ${order}`,
        parameters,
      };
      const rows = await op.step(async (c, abortSignal) => (await c.items.query<ListRow>(query, { abortSignal }).fetchAll()).resources);
      const sessions = rows.slice(0, limit).map((row) => this.#summary(row));
      const page: SessionPage = { sessions };
      if (rows.length > limit) page.nextCursor = encodeSessionCursor(sessions[limit - 1]!, userId);
      return page;
    });
  }

  /** Disposes of the client if this store created it (`endpoint`); an injected client or container stays open. */
  async close(): Promise<void> {
    this.#connection.close();
  }

  async #read(op: Operation, id: string): Promise<(SessionItem & ItemDefinition) | undefined> {
    try {
      const { resource } = await op.step((c, abortSignal) => c.item(id, id).read<SessionItem>({ abortSignal }), [404]);
      return resource;
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw error;
    }
  }

  /** @throws ConfigurationError when the container lacks the composite index the listing's ORDER BY needs. */
  #checkListIndexes(userId: string | undefined): void {
    const needed = SESSION_LIST_COMPOSITE_INDEXES.filter((need) => (need.paths[0]!.path === '/userId') === (userId !== undefined));
    const missing = missingCompositeIndexes(this.#connection.indexingPolicy, needed);
    if (missing.length === 0) return;
    throw new ConfigurationError(
      `CosmosSessionStore.list: container ${this.#connection.where} has no composite index ${missing.map((m) => JSON.stringify(m.paths)).join(' or ')}, so Cosmos DB would refuse ${missing.map((m) => m.usedBy).join(' and ')} (an ORDER BY on several properties needs one). Add SESSION_STORE_INDEXING_POLICY's compositeIndexes and includedPaths to the container's indexing policy, e.g. container.replace({ ...definition, indexingPolicy: SESSION_STORE_INDEXING_POLICY }); sessions saved before then are listed after their next set.`,
    );
  }

  /** A listed row as a summary, its metadata checked as `get` would check it. */
  #summary(row: ListRow): SessionSummary {
    const path = `cosmos:${this.#connection.where}[${JSON.stringify(typeof row.id === 'string' ? row.id : '?')}]`;
    if (typeof row.sessionId !== 'string' || row.sessionId === '') {
      throw new SessionStateError(`${path}.sessionId`, 'must be a non-empty string; fix or delete the item');
    }
    try {
      const { metadata } = parseSessionJson({
        type: 'ctx.session',
        version: 2,
        sessionId: row.sessionId,
        metadata: row.metadata,
        state: {},
      });
      return { sessionId: row.sessionId, metadata };
    } catch (error) {
      if (!SessionStateError.isInstance(error)) throw error;
      throw new SessionStateError(`${path}.session${error.path.slice(1)}`, `${error.problem}; fix or delete the item`, { cause: error });
    }
  }

  #decode(item: SessionItem & ItemDefinition, id: string, sessionId: string): SessionJson {
    const path = `cosmos:${this.#connection.where}[${JSON.stringify(id)}]`;
    if (item.sessionId !== sessionId) {
      throw new SessionStateError(
        `${path}.sessionId`,
        `holds session ${typeof item.sessionId === 'string' ? shortId(item.sessionId) : typeof item.sessionId}, not ${shortId(sessionId)}; fix or delete the item`,
      );
    }
    if (typeof item._etag !== 'string') throw new SessionStateError(`${path}._etag`, 'is missing (not an item read from Cosmos DB)');
    let json: SessionJson;
    try {
      json = parseSessionJson(item.session);
    } catch (error) {
      if (!SessionStateError.isInstance(error)) throw error;
      throw new SessionStateError(`${path}.session${error.path.slice(1)}`, error.problem, { cause: error, sessionId });
    }
    if (json.sessionId !== sessionId) {
      throw new SessionStateError(
        `${path}.session.sessionId`,
        `holds session ${shortId(json.sessionId)}, not ${shortId(sessionId)}; fix or delete the item`,
      );
    }
    return json;
  }
}

/** What the listing query returns per session, before it is checked. */
interface ListRow {
  id?: unknown;
  sessionId?: unknown;
  metadata?: unknown;
}

/**
 * The ETag of a write, from the item or the response header.
 * @throws BackendUnavailableError when Cosmos DB sent neither (`what` names the call).
 */
function etagOf(resource: { _etag?: string } | undefined, header: unknown, what: string): string {
  const etag = resource?._etag ?? (typeof header === 'string' ? header : undefined);
  if (etag === undefined) {
    throw new BackendUnavailableError(
      'cosmos',
      `Cosmos DB answered ${what} without an ETag, so the write cannot be confirmed. Read the session again (get) before saving over it.`,
    );
  }
  return etag;
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
