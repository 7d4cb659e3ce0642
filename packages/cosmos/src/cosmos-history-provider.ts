import { randomUUID } from 'node:crypto';
import type { Container, OperationInput, PartitionKey, SqlParameter } from '@azure/cosmos';
import {
  ConcurrencyError,
  ConfigurationError,
  HistoryProvider,
  InvalidInputError,
  Message,
  SessionStateError,
  type ClearHistoryArgs,
  type ForkHistoryArgs,
  type GetHistoryArgs,
  type HistoryProviderOptions,
  type JsonObject,
  type PopHistoryArgs,
  type SaveHistoryArgs,
} from '@ctx/core';
import {
  checkId,
  checkInteger,
  checkOptionNames,
  checkSessionId,
  describeError,
  findRetriedTurn,
  HISTORY_PROVIDER_OPTIONS,
  type HistoryTurn,
  messageIdConflict,
  optionNames,
  sameMessageContent,
  shortId,
} from '@ctx/core/backend';
import { CONNECTION_OPTIONS, CosmosConnection, type CosmosConnectionOptions, isTransient, type Operation, statusOf } from './connection.js';
import {
  HIERARCHICAL_PARTITION_KEY,
  HISTORY_INDEXING_POLICY,
  SESSION_PARTITION_KEY,
  type CosmosScope,
  type CosmosScopeResolver,
  type HeadItem,
  type MessageItem,
} from './history-layout.js';
import { checkScopePart, encodeItemId, sessionPartitionValue } from './ids.js';
import { HISTORY_RANGE_INDEXES } from './indexing.js';
import { itemTooLarge, MAX_ITEM_DEPTH, nestingDepth } from './limits.js';

/** Options of `CosmosHistoryProvider`: the history options of `@ctx/core`, the connection, partitioning and retention. */
export interface CosmosHistoryProviderOptions extends HistoryProviderOptions, CosmosConnectionOptions {
  /**
   * Hierarchical partitioning by tenant, user and session (`/tenantId`, `/userId`, `/sessionKey`):
   * a fixed scope for every session of this provider, or a function that works it out per session
   * from the session id and the provider's state slot. Default: none, and the container is
   * partitioned by session alone (`/sessionKey`). The container's partition key must match.
   */
  scope?: CosmosScope | CosmosScopeResolver;
  /**
   * Cosmos DB deletes each message this many seconds after it was saved (item `ttl`), and a
   * conversation's head this many seconds after its last save. Needs TTL on for the container
   * (`defaultTtl: -1`, which `createIfNotExists` sets). Default: nothing expires.
   */
  ttlSeconds?: number;
}

/** Options of the provider's maintenance methods. */
export interface CosmosCallOptions {
  /** The scope of the session (hierarchical partitioning); default: the provider's `scope`. */
  scope?: CosmosScope;
  /** The provider's state slot of the session, passed to a `scope` resolver. Default `{}`. */
  state?: JsonObject;
  /** Aborts the call (rejects with the signal's reason; a request already sent may still complete). */
  signal?: AbortSignal;
}

/** Every option name of `CosmosHistoryProvider`: core's history options, the connection's, and its own. */
const OPTION_NAMES = optionNames<CosmosHistoryProviderOptions>()({
  ...HISTORY_PROVIDER_OPTIONS,
  ...CONNECTION_OPTIONS,
  scope: true,
  ttlSeconds: true,
});

/** Options of `CosmosHistoryProvider.listMessages`. */
export interface ListMessagesOptions extends CosmosCallOptions {
  /** Where to continue: the `nextCursor` of the previous page (a Cosmos DB continuation token). */
  cursor?: string;
  /** Messages per page, at most. Default 100. */
  limit?: number;
}

/** One page of a conversation, oldest first. */
export interface MessagePage {
  /** The page's messages, oldest first. */
  messages: Message[];
  /** Pass it as `cursor` for the next page; undefined after the last page. */
  nextCursor: string | undefined;
}

/** Options of `CosmosHistoryProvider.exportMessages`. */
export interface ExportMessagesOptions extends CosmosCallOptions {
  /** Messages fetched per request. Default 500. */
  pageSize?: number;
}

/** Options of `CosmosHistoryProvider.listSessions`. */
export interface ListSessionsOptions {
  /** Only this tenant's sessions (hierarchical partitioning: the query stays within the tenant's partitions). */
  tenantId?: string;
  /** Only this user's sessions (with `tenantId` under hierarchical partitioning). */
  userId?: string;
  /** Sessions per page, at most. Default 100. */
  limit?: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string;
  /** Aborts the call (rejects with the signal's reason). */
  signal?: AbortSignal;
}

/** A session that has history under this provider's `sourceId`. */
export interface CosmosSessionSummary {
  /** The session id, as it was given. */
  sessionId: string;
  /** Hierarchical partitioning only. */
  tenantId?: string;
  /** Hierarchical partitioning only. */
  userId?: string;
  /** ISO 8601: the first save. */
  createdAt: string;
  /** ISO 8601: the last save. */
  updatedAt: string;
  /** The last sequence number a save handed out (`replaceMessages` places messages between numbers without taking new ones). */
  lastSeq: number;
}

/** One page of `listSessions`, most recently updated first. */
export interface SessionPage {
  /** The page's sessions, most recently updated first. */
  sessions: CosmosSessionSummary[];
  /** Pass it as `cursor` for the next page; undefined after the last page. */
  nextCursor: string | undefined;
}

/** Where one session's history lives. */
interface Location {
  sessionId: string;
  sessionKey: string;
  /** The partition key value: the session key, or [tenant, user, session key]. */
  partitionKey: PartitionKey;
  /** The partition key fields every item carries. */
  fields: { sessionKey: string; tenantId?: string; userId?: string };
  /** The ids the head's item id is made of: [tenant, user,] session, sourceId; a message adds its own id. */
  parts: string[];
  /** `[<tenant>:<user>:]<session>:<sourceId>`, encoded (`encodeItemId`): the head's id and the prefix of every message id. */
  prefix: string;
}

/** Cosmos DB's limits of one transactional batch. */
const MAX_BATCH_OPERATIONS = 100;
const MAX_BATCH_BYTES = 2 * 1024 * 1024 - 16 * 1024;
/** Reads and plans of one `replaceMessages` before other writers getting in the way is a `ConcurrencyError`. */
const MAX_REPLACE_ROUNDS = 10;
/** Queries of one `clear` that still find items (saves racing it) before it is a `ConcurrencyError`. */
const MAX_CLEAR_ROUNDS = 10;

/**
 * Conversation history in Azure Cosmos DB for NoSQL: one item per message, partitioned by session
 * (or by tenant, user and session). A per-session head item hands out sequence numbers with an
 * atomic `incr` patch, so messages keep one exact order even under concurrent writers; a turn is
 * then written in one transactional batch (all or nothing on Cosmos DB), and the message id is
 * part of the item id, so a retried save never stores a message twice. A run reads only its window
 * (`TOP n ... ORDER BY seq DESC` in one logical partition). Default `sourceId` is `cosmos`.
 *
 * Failures: an unreachable, throttling or failing service gives `BackendUnavailableError` within
 * `timeoutMs` (after the SDK's 429 retries and the package's transient retries); a stored item
 * that is not a valid message gives `SessionStateError` naming the item; a container that is
 * missing or partitioned differently gives `ConfigurationError`. The history methods need no state
 * slot: with `state` undefined, or called without arguments, they work as with an empty one (a
 * `scope` resolver is given `{}`).
 * @throws ConfigurationError for bad options, or an option it does not know (named; only the top-level
 *   names: `clientOptions` goes to the SDK as it is).
 */
export class CosmosHistoryProvider extends HistoryProvider {
  /** Seconds each message and head live after they were written, or undefined for never. */
  readonly ttlSeconds: number | undefined;
  readonly #connection: CosmosConnection;
  readonly #scope: CosmosScope | CosmosScopeResolver | undefined;
  readonly #hierarchical: boolean;

  constructor(options: CosmosHistoryProviderOptions) {
    checkOptionNames('CosmosHistoryProvider', options, OPTION_NAMES);
    super({ ...options, sourceId: options.sourceId ?? 'cosmos' });
    checkId(this.sourceId, 'sourceId of CosmosHistoryProvider');
    if (options.ttlSeconds !== undefined) checkInteger('CosmosHistoryProvider', 'ttlSeconds', options.ttlSeconds);
    this.ttlSeconds = options.ttlSeconds;
    const scope = options.scope;
    if (scope !== undefined && typeof scope !== 'function') {
      if (typeof scope !== 'object' || scope === null)
        throw new ConfigurationError('CosmosHistoryProvider: scope must be { tenantId, userId } or a function returning one.');
      checkScopePart('tenantId', scope.tenantId);
      checkScopePart('userId', scope.userId);
    }
    this.#scope = scope;
    this.#hierarchical = scope !== undefined;
    this.#connection = new CosmosConnection(options, 'CosmosHistoryProvider', 'history', {
      partitionKey: this.#hierarchical ? HIERARCHICAL_PARTITION_KEY : SESSION_PARTITION_KEY,
      indexingPolicy: HISTORY_INDEXING_POLICY,
      rangeIndexes: HISTORY_RANGE_INDEXES,
      needsTtl: options.ttlSeconds !== undefined,
      advice: this.#hierarchical
        ? 'With `scope`, history is partitioned by tenant, user and session.'
        : 'History is partitioned by session; for tenant/user/session partitioning pass `scope`.',
    });
  }

  /** The container in use (checked, or created with `createIfNotExists`, before the first operation). */
  get container(): Container {
    return this.#connection.container;
  }

  /** Whether the provider partitions by tenant, user and session. */
  get hierarchical(): boolean {
    return this.#hierarchical;
  }

  /**
   * The item ids of a session's head and of one of its messages (for operations and debugging).
   * Under hierarchical partitioning pass the scope (default: the provider's).
   */
  async itemIds(
    sessionId: string,
    messageId: string,
    options: Pick<CosmosCallOptions, 'scope' | 'state'> = {},
  ): Promise<{ head: string; message: string }> {
    const loc = await this.#locate(sessionId, options.state, options.scope);
    return { head: loc.prefix, message: encodeItemId(...loc.parts, messageId) };
  }

  /** The partition key value of a session: its id, or `~` and a hash for ids over 100 UTF-8 bytes. */
  partitionValue(sessionId: string): string {
    return sessionPartitionValue(checkSessionId(sessionId));
  }

  /**
   * The newest `limit` messages (all without a limit), oldest first: one query in the session's
   * logical partition (`TOP n ... ORDER BY seq DESC`).
   * @throws SessionStateError when a stored item is not a valid message (path `cosmos:<db>/<container>[<item id>]...`).
   * @throws BackendUnavailableError when Cosmos DB fails or does not answer within `timeoutMs`.
   */
  async getMessages(sessionId: string, { state, limit, signal }: GetHistoryArgs = { state: {} }): Promise<Message[]> {
    if (limit !== undefined)
      checkInteger(`CosmosHistoryProvider.getMessages for session ${shortId(checkSessionId(sessionId))}`, 'limit', limit);
    const loc = await this.#locate(sessionId, state);
    return this.#connection.run({ operation: 'getMessages', sessionId }, signal, async (op) => {
      const filter = this.#messageFilter(loc);
      if (limit !== undefined) {
        const query = {
          query: `SELECT TOP @limit c.id, c.seq, c.message FROM c WHERE ${filter.where} ORDER BY c.seq DESC`,
          parameters: [...filter.parameters, { name: '@limit', value: limit }],
        };
        const items = await op.step((c, abortSignal) =>
          fetchAll(c, query, { partitionKey: loc.partitionKey, maxItemCount: limit, abortSignal }),
        );
        return items.reverse().map((item) => this.#decode(item, loc));
      }
      const query = {
        query: `SELECT c.id, c.seq, c.message FROM c WHERE ${filter.where} ORDER BY c.seq ASC`,
        parameters: filter.parameters,
      };
      const items = await op.step((c, abortSignal) =>
        fetchAll(c, query, { partitionKey: loc.partitionKey, maxItemCount: 1000, abortSignal }),
      );
      return items.map((item) => this.#decode(item, loc));
    });
  }

  /**
   * Appends messages in order: reserves their sequence numbers with one patch of the session's head
   * item, then writes them in one transactional batch (more than 100 messages, or 2 MB, take more
   * batches, checked for conflicting ids first). Ids already stored with the same content are
   * skipped; an id stored with other content refuses the batch.
   * A batch of a run goes where its turn is stored (`SaveHistoryArgs.turn`, core's
   * `findRetriedTurn`): the opening batch of a turn whose input messages are already stored (its
   * batch conflicts) replaces that earlier attempt in place, wherever it sits: its messages are
   * upserted at positions between the attempt's neighbours (fractional `seq`) and the attempt's
   * other items deleted, in one transactional batch when it fits (all or nothing on Cosmos DB). A
   * later batch of a turn (`persistence: 'model-call'`) goes right after the stored turn when
   * other turns follow it (two more queries per such batch).
   * @throws SessionStateError when a message is malformed or over 2 MB, or (with a
   *   `message-id-conflict` diagnostic) when its id is stored with other content; nothing is stored.
   * @throws BackendUnavailableError when Cosmos DB fails or does not answer in time; retrying the same messages is safe.
   */
  async saveMessages(
    sessionId: string,
    messages: readonly Message[],
    { state, signal, turn, report }: SaveHistoryArgs = { state: {} },
  ): Promise<void> {
    await this.#append(sessionId, messages, { state, signal }, turn, report);
  }

  /**
   * `saveMessages`, resolving to how many messages were new (the rest were already stored).
   * @throws like `saveMessages`.
   */
  async append(sessionId: string, messages: readonly Message[], options: CosmosCallOptions = {}): Promise<number> {
    return this.#append(sessionId, messages, options);
  }

  async #append(
    sessionId: string,
    messages: readonly Message[],
    options: CosmosCallOptions,
    turn?: HistoryTurn,
    report?: SaveHistoryArgs['report'],
  ): Promise<number> {
    checkSessionId(sessionId);
    /** The conflict over `messageId`, the batch's `index`-th message (found by id when not given). */
    const conflictOf = (
      messageId: string,
      index = Math.max(
        0,
        messages.findIndex((m) => m?.id === messageId),
      ),
    ): SessionStateError => messageIdConflict({ sourceId: this.sourceId, sessionId, messageId, index, batchSize: messages.length, report });
    const unique = checkMessages(messages, (index, messageId) => conflictOf(messageId, index));
    const loc = await this.#locate(sessionId, options.state, options.scope);
    if (unique.length === 0) return 0;
    return this.#connection.run({ operation: 'saveMessages', sessionId }, options.signal, async (op) => {
      const last = await this.#allocate(op, loc, unique.length);
      let items = unique.map((m, i) => this.#item(loc, m, last - unique.length + 1 + i));
      // Over several batches a conflict found part way would leave the batches before it: look first.
      if (chunkBySize(items).length > 1) {
        const stored = await this.#readItems(op, loc, items);
        const clash = items.find((item) => stored.has(item.id) && !sameMessageContent(stored.get(item.id)!.message, item.message));
        if (clash) throw conflictOf(clash.message.id);
      }
      const inputIds = turn?.inputIds ?? [];
      if (turn && !turn.opens && inputIds.length > 0) items = await this.#placeAfterTurn(op, loc, items, inputIds);
      const retried =
        turn?.opens && inputIds.length > 0
          ? (stored: Map<string, RawItem>, created: Set<string>) =>
              this.#replaceRetriedTurn(op, loc, items, inputIds, stored, created, conflictOf)
          : undefined;
      return this.#createAll(op, loc, items, conflictOf, retried);
    });
  }

  /**
   * The stored items of a turn read from its oldest stored input on (page by page until the turn
   * ends), with up to 100 before it (`withBefore`), oldest first, limited to positions below
   * `below`; and where the turn sits among them (`findRetriedTurn`), or undefined when it is not stored.
   */
  async #storedTurn(
    op: Operation,
    loc: Location,
    inputIds: readonly string[],
    inputs: readonly Message[],
    below: number,
    withBefore = true,
  ): Promise<{ stored: RawItem[]; span: { start: number; end: number } } | undefined> {
    const filter = this.#messageFilter(loc);
    const options = (abortSignal: AbortSignal, maxItemCount = 1000) => ({ partitionKey: loc.partitionKey, maxItemCount, abortSignal });
    const parameters = [...filter.parameters, { name: '@below', value: below }];
    const inputSeqs = await op.step((c, abortSignal) =>
      fetchAll<unknown>(
        c,
        {
          query: `SELECT VALUE c.seq FROM c WHERE ${filter.where} AND ARRAY_CONTAINS(@ids, c.id) AND c.seq < @below`,
          parameters: [...parameters, { name: '@ids', value: inputIds.map((id) => encodeItemId(...loc.parts, id)) }],
        },
        options(abortSignal),
      ),
    );
    const from = Math.min(...inputSeqs.filter((s): s is number => typeof s === 'number' && Number.isFinite(s)));
    if (!Number.isFinite(from)) return undefined;
    const withFrom = [...parameters, { name: '@from', value: from }];
    const before = !withBefore
      ? []
      : await op.step((c, abortSignal) =>
          fetchAll(
            c,
            {
              query: `SELECT TOP 100 c.id, c.seq, c.message FROM c WHERE ${filter.where} AND c.seq < @from ORDER BY c.seq DESC`,
              parameters: withFrom,
            },
            options(abortSignal),
          ),
        );
    const stored = before.reverse();
    const decoded = stored.map((item) => this.#decode(item, loc));
    const after = await op.step((c, abortSignal) =>
      Promise.resolve(
        c.items.query<RawItem>(
          {
            query: `SELECT c.id, c.seq, c.message FROM c WHERE ${filter.where} AND c.seq >= @from AND c.seq < @below ORDER BY c.seq ASC`,
            parameters: withFrom,
          },
          options(abortSignal, 100),
        ),
      ),
    );
    // A page at a time: the turn ends at the first message after it, usually on the first page;
    // its inputs are stored together, so a turn not found within 200 messages of the oldest is not there.
    for (let read = 0; ; ) {
      const page = await op.step(() => after.fetchNext());
      for (const item of page.resources) {
        stored.push(item);
        decoded.push(this.#decode(item, loc));
      }
      read += page.resources.length;
      const span = findRetriedTurn(decoded, inputIds, inputs);
      const more = after.hasMoreResults() && page.resources.length > 0;
      if (span !== undefined && (span.end < stored.length || !more)) return { stored, span };
      if (!more || (span === undefined && read >= 200)) return span && { stored, span };
    }
  }

  /**
   * Positions for `items` in place of `stored[start..end)`: between the message before and the one
   * after, or undefined when nothing follows (the reserved whole numbers at the end do) or floating
   * point has no room left between them.
   */
  #between(stored: readonly RawItem[], start: number, end: number, count: number): number[] | undefined {
    const next = stored[end]?.seq;
    if (typeof next !== 'number') return undefined;
    const previous = start > 0 ? stored[start - 1]!.seq : undefined;
    const lo = typeof previous === 'number' ? previous : Math.min(next, Number(stored[start]?.seq ?? next)) - 1;
    return spread(lo, next, count);
  }

  /**
   * A later batch of a turn (`persistence: 'model-call'`) at positions right after the stored turn
   * when other turns were stored after it; `items` as they are when the turn is the newest or is
   * not stored.
   */
  async #placeAfterTurn(op: Operation, loc: Location, items: MessageItem[], inputIds: readonly string[]): Promise<MessageItem[]> {
    // Only where the turn ends matters here: the messages before it are not read.
    const found = await this.#storedTurn(op, loc, inputIds, [], items[0]!.seq, false);
    if (found === undefined) return items;
    const seqs = this.#between(found.stored, found.span.end, found.span.end, items.length);
    return seqs ? items.map((item, i) => ({ ...item, seq: seqs[i]! })) : items;
  }

  /**
   * When a stored earlier attempt of the turn `items` open is found (`findRetriedTurn`, wherever it
   * sits), writes `items` in its place and resolves to their count; resolves to undefined (nothing
   * changed) when there is none. `stored` holds the items of the batch's ids as read after its
   * conflict, `created` those the failed batch wrote all the same (a store whose batches are not atomic).
   * @throws SessionStateError (`conflictOf`) when a message of the batch is stored outside the attempt with other content.
   */
  async #replaceRetriedTurn(
    op: Operation,
    loc: Location,
    items: MessageItem[],
    inputIds: readonly string[],
    stored: Map<string, RawItem>,
    created: Set<string>,
    conflictOf: (messageId: string) => SessionStateError,
  ): Promise<number | undefined> {
    const ids = new Set(inputIds);
    const inputs = items.filter((item) => ids.has(item.message.id)).map((item) => item.message);
    const found = await this.#storedTurn(op, loc, inputIds, inputs, items[0]!.seq);
    if (found === undefined) return undefined;
    const attempt = found.stored.slice(found.span.start, found.span.end);
    const replaced = new Set(attempt.map((item) => item.id as string));
    const clash = items.find(
      (item) =>
        !replaced.has(item.id) &&
        !created.has(item.id) &&
        stored.has(item.id) &&
        !sameMessageContent(stored.get(item.id)!.message, item.message),
    );
    if (clash) {
      await this.#deleteOwn(op, loc, [...created]);
      throw conflictOf(clash.message.id);
    }
    // Messages stored elsewhere with the same content stay where they are.
    const writes = items.filter((item) => replaced.has(item.id) || created.has(item.id) || !stored.has(item.id));
    const seqs = this.#between(found.stored, found.span.start, found.span.end, writes.length);
    const placed = seqs ? writes.map((item, i) => ({ ...item, seq: seqs[i]! })) : writes;
    const kept = new Set(placed.map((item) => item.id));
    const operations = [
      ...placed.map((item): OperationInput => ({ operationType: 'Upsert', resourceBody: item as unknown as JsonObject })),
      ...attempt
        .filter((item) => !kept.has(item.id as string))
        .map((item): OperationInput => ({ operationType: 'Delete', id: item.id as string })),
    ];
    // One batch when it fits; over several, the writes go before the deletes (extra messages on a failure, never missing ones).
    for (const chunk of chunkBySize(operations)) {
      const statuses = await this.#batch(op, loc, chunk);
      if (!statuses.every(ok)) throw this.#batchFailure(statuses, loc);
    }
    return placed.length;
  }

  /**
   * Replaces a session's stored history with `messages` (compaction rewrites history through it),
   * writing only what changed. One query reads the session's items; the longest run of messages
   * already stored in the same relative order keeps its items and positions (rewritten in place
   * only when their content changed), every other message is upserted at a position between its
   * neighbours (fractional `seq` values: no numbers are taken from the head), and items whose id
   * is not in `messages` are deleted. All of it goes into one transactional batch (more than 100
   * operations or 2 MB take several) together with a write of the head item conditioned on the
   * ETag read (or its creation): on Cosmos DB a replace that fits one batch is all or nothing, and
   * if a save, another replace or a clear changed the head after the read, or a message to delete
   * is gone, nothing of it applies and it reads and plans again. Over several batches, writes go
   * before deletes: a failure part way leaves extra messages, never missing ones, and calling it
   * again finishes the job. Turns saved before the read and not in `messages` are removed; turns
   * saved after it stay, after the replaced history; a message popped meanwhile stays popped.
   * @throws like `saveMessages`; ConcurrencyError when other writers got in the way 10 times in a row.
   */
  override async replaceMessages(
    sessionId: string,
    messages: readonly Message[],
    { state, signal }: SaveHistoryArgs = { state: {} },
  ): Promise<void> {
    checkSessionId(sessionId);
    const unique = checkMessages(messages);
    const loc = await this.#locate(sessionId, state);
    const wanted = unique.map((message) => ({ id: encodeItemId(...loc.parts, message.id), message }));
    await this.#connection.run({ operation: 'replaceMessages', sessionId }, signal, async (op) => {
      const filter = this.#partitionFilter(loc);
      const query = {
        query: `SELECT c.id, c.kind, c.seq, c.message, c.lastSeq, c.createdAt, c._etag FROM c WHERE ${filter.where} AND c.sourceId = @sourceId AND (c.kind = 'message' OR c.id = @head)`,
        parameters: [...filter.parameters, { name: '@sourceId', value: this.sourceId }, { name: '@head', value: loc.prefix }],
      };
      for (let round = 0; round < MAX_REPLACE_ROUNDS; round++) {
        const items = await op.step((c, abortSignal) =>
          fetchAll(c, query, { partitionKey: loc.partitionKey, maxItemCount: 1000, abortSignal }),
        );
        const head = items.find((item) => item.id === loc.prefix && item.kind === 'head');
        const plan = planReplace(
          items.filter((item) => item.kind === 'message'),
          wanted,
        );
        if (plan.writes.length === 0 && plan.deletes.length === 0) return;
        const now = new Date().toISOString();
        let fence: OperationInput;
        if (head === undefined) {
          fence = { operationType: 'Create', resourceBody: this.#head(loc, plan.top, now, now) as unknown as JsonObject };
        } else {
          if (typeof head.lastSeq !== 'number' || !Number.isSafeInteger(head.lastSeq)) throw this.#corruptHead(loc);
          const createdAt = typeof head.createdAt === 'string' ? head.createdAt : now;
          const body = this.#head(loc, head.lastSeq, createdAt, now) as unknown as JsonObject;
          fence = { operationType: 'Replace', id: loc.prefix, resourceBody: body, ifMatch: String(head._etag) };
        }
        const operations: OperationInput[] = [
          fence,
          ...plan.writes.map(
            ({ index, seq }): OperationInput => ({
              operationType: 'Upsert',
              resourceBody: this.#item(loc, wanted[index]!.message, seq) as unknown as JsonObject,
            }),
          ),
          ...plan.deletes.map((id): OperationInput => ({ operationType: 'Delete', id })),
        ];
        if (await this.#applyAll(op, loc, operations)) return;
      }
      throw new ConcurrencyError(
        `CosmosHistoryProvider.replaceMessages for session ${shortId(sessionId)}: other writers changed the history ${MAX_REPLACE_ROUNDS} times in a row while it was being replaced; try again.`,
      );
    });
  }

  /**
   * Removes the newest `count` (default 1) messages of a session and resolves to them, oldest
   * first: one query for them (`TOP n ... ORDER BY seq DESC` in the session's partition), then
   * transactional batches of up to 100 deletes. Each of several concurrent pops returns only the
   * messages it deleted itself; a message saved while a pop runs is never removed by it. Sequence
   * numbers are never handed out again.
   * @throws SessionStateError when an item to pop is not a valid message (nothing is deleted).
   * @throws ConfigurationError for a `count` that is not a positive integer, before any request.
   * @throws BackendUnavailableError when Cosmos DB fails or does not answer within `timeoutMs`.
   */
  override async popMessages(sessionId: string, { state, count = 1, signal }: PopHistoryArgs = { state: {} }): Promise<Message[]> {
    checkInteger(`CosmosHistoryProvider.popMessages for session ${shortId(checkSessionId(sessionId))}`, 'count', count);
    const loc = await this.#locate(sessionId, state);
    return this.#connection.run({ operation: 'popMessages', sessionId }, signal, async (op) => {
      const filter = this.#messageFilter(loc);
      const popped: { seq: number; message: Message }[] = [];
      // A pop that loses a race (another pop deleted what it read first) reads the next newest
      // messages and tries again; each round at least one of the racing pops makes progress.
      for (let round = 0; popped.length < count; round++) {
        if (round === 100)
          throw new ConcurrencyError(
            `CosmosHistoryProvider.popMessages for session ${shortId(sessionId)}: other pops took the messages it read 100 times in a row; try again.`,
          );
        const want = count - popped.length;
        const query = {
          query: `SELECT TOP @limit c.id, c.seq, c.message FROM c WHERE ${filter.where} ORDER BY c.seq DESC`,
          parameters: [...filter.parameters, { name: '@limit', value: want }],
        };
        const items = await op.step((c, abortSignal) =>
          fetchAll(c, query, { partitionKey: loc.partitionKey, maxItemCount: want, abortSignal }),
        );
        const read = items.map((item) => ({ id: item.id as string, seq: item.seq as number, message: this.#decode(item, loc) }));
        const taken = await this.#deleteOwn(
          op,
          loc,
          read.map((m) => m.id),
        );
        popped.push(...read.filter((m) => taken.has(m.id)));
        if (read.length < want && taken.size === read.length) break;
      }
      return popped.sort((a, b) => a.seq - b.seq).map((m) => m.message);
    });
  }

  /** Deletes items by id in transactional batches; resolves to the ids this call deleted (not those already gone). */
  async #deleteOwn(op: Operation, loc: Location, ids: readonly string[]): Promise<Set<string>> {
    const taken = new Set<string>();
    for (let i = 0; i < ids.length; i += MAX_BATCH_OPERATIONS) {
      const chunk = ids.slice(i, i + MAX_BATCH_OPERATIONS);
      const response = await op.step((c, abortSignal) =>
        c.items.batch(
          chunk.map((id) => ({ operationType: 'Delete', id, partitionKey: loc.partitionKey })),
          loc.partitionKey,
          { abortSignal },
        ),
      );
      const statuses = (response.result ?? []).map((r) => r.statusCode);
      if (statuses.length === chunk.length && statuses.every(ok)) {
        for (const id of chunk) taken.add(id);
        continue;
      }
      // Some were deleted meanwhile (a 404 fails the whole batch): delete the rest one by one.
      for (const id of chunk) {
        try {
          await op.step((c, abortSignal) => c.item(id, loc.partitionKey).delete({ abortSignal }), [404]);
          taken.add(id);
        } catch (error) {
          if (statusOf(error) !== 404) throw error;
        }
      }
    }
    return taken;
  }

  /**
   * One page of a session's messages, oldest first, for export or inspection. The cursor is a
   * Cosmos DB continuation token of the ordered query.
   * @throws SessionStateError for a corrupt item, BackendUnavailableError when Cosmos DB fails.
   */
  async listMessages(sessionId: string, options: ListMessagesOptions = {}): Promise<MessagePage> {
    const owner = `CosmosHistoryProvider.listMessages for session ${shortId(checkSessionId(sessionId))}`;
    const limit = checkInteger(owner, 'limit', options.limit ?? 100);
    if (options.cursor !== undefined && (typeof options.cursor !== 'string' || options.cursor === '')) {
      throw new ConfigurationError(
        `${owner}: cursor must be the nextCursor of a previous page, got ${describeCursor(options.cursor)}. Omit it to start from the oldest stored message.`,
      );
    }
    const loc = await this.#locate(sessionId, options.state, options.scope);
    return this.#connection.run({ operation: 'listMessages', sessionId }, options.signal, async (op) => {
      const filter = this.#messageFilter(loc);
      const query = {
        query: `SELECT c.id, c.seq, c.message FROM c WHERE ${filter.where} ORDER BY c.seq ASC`,
        parameters: filter.parameters,
      };
      const page = await op.step(async (c, abortSignal) => {
        const iterator = c.items.query<RawItem>(query, {
          partitionKey: loc.partitionKey,
          maxItemCount: limit,
          abortSignal,
          ...(options.cursor ? { continuationToken: options.cursor } : {}),
        });
        return iterator.fetchNext();
      });
      return {
        messages: page.resources.map((item) => this.#decode(item, loc)),
        nextCursor: page.hasMoreResults && page.continuationToken ? page.continuationToken : undefined,
      };
    });
  }

  /**
   * Every stored message of a session, oldest first, `pageSize` per request (one ordered query,
   * followed by its continuation tokens).
   * @throws like `listMessages`.
   */
  async *exportMessages(sessionId: string, options: ExportMessagesOptions = {}): AsyncGenerator<Message, void, undefined> {
    let cursor: string | undefined;
    do {
      const page = await this.listMessages(sessionId, {
        ...options,
        limit: options.pageSize ?? 500,
        ...(cursor === undefined ? {} : { cursor }),
      });
      yield* page.messages;
      cursor = page.nextCursor;
    } while (cursor !== undefined);
  }

  /** How many messages are stored for a session (`SELECT VALUE COUNT(1)` in its partition). */
  async countMessages(sessionId: string, options: CosmosCallOptions = {}): Promise<number> {
    const loc = await this.#locate(sessionId, options.state, options.scope);
    return this.#connection.run({ operation: 'countMessages', sessionId }, options.signal, async (op) => {
      const filter = this.#messageFilter(loc);
      const [count] = await op.step((c, abortSignal) =>
        fetchAll<number>(
          c,
          { query: `SELECT VALUE COUNT(1) FROM c WHERE ${filter.where}`, parameters: filter.parameters },
          { partitionKey: loc.partitionKey, abortSignal },
        ),
      );
      return count ?? 0;
    });
  }

  /**
   * Deletes a session's history for this provider's `sourceId` (its messages and its head), in
   * transactional batches of up to 100 deletes within the session's partition, the head last;
   * other source ids are left alone. It queries the item ids again until none is left (messages
   * saved while it runs are deleted too): two queries and one batch per 100 items when nothing
   * races it. Resolves to whether there was any.
   * @throws ConcurrencyError when saves kept adding items through 10 rounds.
   * @throws BackendUnavailableError when Cosmos DB fails or does not answer within `timeoutMs`.
   */
  async clear(sessionId: string, options: CosmosCallOptions = {}): Promise<boolean> {
    const loc = await this.#locate(sessionId, options.state, options.scope);
    return this.#connection.run({ operation: 'clear', sessionId }, options.signal, (op) => this.#clear(op, loc));
  }

  /**
   * `clear` for `agent.deleteSession` (the default `onSessionDeleted`): when it resolves, nothing
   * of the session is stored under this provider's `sourceId`. Costs as `clear`.
   * @throws like `clear`.
   */
  override async clearMessages(sessionId: string, { state, signal }: ClearHistoryArgs = { state: {} }): Promise<void> {
    const loc = await this.#locate(sessionId, state);
    await this.#connection.run({ operation: 'clearMessages', sessionId }, signal, (op) => this.#clear(op, loc));
  }

  async #clear(op: Operation, loc: Location): Promise<boolean> {
    const filter = this.#partitionFilter(loc);
    const query = {
      query: `SELECT VALUE c.id FROM c WHERE ${filter.where} AND c.sourceId = @sourceId AND (c.kind = 'message' OR c.kind = 'head')`,
      parameters: [...filter.parameters, { name: '@sourceId', value: this.sourceId }],
    };
    let any = false;
    for (let round = 0; round < MAX_CLEAR_ROUNDS; round++) {
      const ids = await op.step((c, abortSignal) =>
        fetchAll<string>(c, query, { partitionKey: loc.partitionKey, maxItemCount: 1000, abortSignal }),
      );
      if (ids.length === 0) return any;
      // The head goes last, so a save racing the clear never restarts the numbering under live messages.
      ids.sort((a, b) => Number(a === loc.prefix) - Number(b === loc.prefix));
      if ((await this.#deleteAll(op, loc, ids)) > 0) any = true;
    }
    throw new ConcurrencyError(
      `CosmosHistoryProvider.clear for session ${shortId(loc.sessionId)}: saves kept adding messages through ${MAX_CLEAR_ROUNDS} rounds of deletes; stop the runs on this session and try again.`,
    );
  }

  /**
   * Copies a session's history (up to and including `atMessageId`, or all of it) to a new session
   * on the server side, for `agent.forkSession`; resolves to how many messages were copied. Round
   * trips: with `atMessageId` a point read of that message (its position), then one ordered query
   * of the messages up to it (the SDK's query plan first; a page per 1,000 messages), then
   * transactional batches of at most 100 operations in the new session's partition: the new head
   * first, created with a condition (it must not exist), then the copies at the same positions.
   * So n messages take 3 + ceil((n + 1) / 100) requests with `atMessageId`, one fewer without.
   * A batch retried after its answer was lost recognises the head it wrote (`forkId`).
   * @throws InvalidInputError when `atMessageId` is not in the history (empty, unknown, or of another
   *   session or source id: the caller's mistake), before anything is written.
   * @throws ConfigurationError when the new session already has history under this `sourceId`, before
   *   anything is written; for blank or equal session ids, or an `atMessageId` that is not a string.
   * @throws SessionStateError when a stored item to copy is not a valid message (nothing is written).
   * @throws BackendUnavailableError when Cosmos DB fails or does not answer within `timeoutMs`; a
   *   fork that failed part way leaves the new session's head and some copies, which
   *   `clearMessages` removes.
   */
  override async forkMessages(
    fromSessionId: string,
    toSessionId: string,
    args: ForkHistoryArgs = { fromState: {}, toState: {} },
  ): Promise<number> {
    const { fromState, toState, atMessageId, signal } = args;
    const owner = `CosmosHistoryProvider.forkMessages from session ${shortId(checkSessionId(fromSessionId))}`;
    if (checkSessionId(toSessionId) === fromSessionId) throw new ConfigurationError(`${owner}: the new session needs another id.`);
    if (atMessageId !== undefined && (typeof atMessageId !== 'string' || atMessageId === '')) {
      const message = `${owner}: atMessageId must be the id of a stored message, got ${describeCursor(atMessageId)}.`;
      // An empty id names no stored message (the caller's mistake); another type is a bug of the code calling.
      throw typeof atMessageId === 'string' ? new InvalidInputError(message) : new ConfigurationError(message);
    }
    const from = await this.#locate(fromSessionId, fromState);
    const to = await this.#locate(toSessionId, toState);
    return this.#connection.run({ operation: 'forkMessages', sessionId: fromSessionId }, signal, async (op) => {
      const filter = this.#messageFilter(from);
      const parameters = [...filter.parameters];
      let upTo = '';
      if (atMessageId !== undefined) {
        const at = await this.#readItem(op, from, encodeItemId(...from.parts, atMessageId));
        if (at === undefined) {
          throw new InvalidInputError(
            `${owner}: message ${shortId(atMessageId)} is not in its history under source id "${this.sourceId}"; nothing was copied.`,
          );
        }
        this.#decode(at, from);
        upTo = ' AND c.seq <= @at';
        parameters.push({ name: '@at', value: at.seq as number });
      }
      const query = { query: `SELECT c.id, c.seq, c.message FROM c WHERE ${filter.where}${upTo} ORDER BY c.seq ASC`, parameters };
      const stored = await op.step((c, abortSignal) =>
        fetchAll(c, query, { partitionKey: from.partitionKey, maxItemCount: 1000, abortSignal }),
      );
      const copies = stored.map((raw) => this.#item(to, this.#decode(raw, from), raw.seq as number));
      if (copies.length === 0) return 0;
      const now = new Date().toISOString();
      const top = Math.max(0, Math.ceil(copies.at(-1)!.seq));
      const head: HeadItem = { ...this.#head(to, top, now, now), forkId: randomUUID() };
      const chunks = chunkBySize<OperationInput>([
        { operationType: 'Create', resourceBody: head as unknown as JsonObject },
        ...copies.map((item): OperationInput => ({ operationType: 'Upsert', resourceBody: item as unknown as JsonObject })),
      ]);
      for (const [i, chunk] of chunks.entries()) {
        const statuses = await this.#batch(op, to, chunk, i === 0 ? [409] : [], 'forkMessages');
        if (statuses.every(ok)) continue;
        // The head exists: this fork's own, its answer lost (send the copies again), or another's.
        const existing = await this.#readItem(op, to, to.prefix);
        if (existing === undefined || existing.forkId !== head.forkId) {
          throw new ConfigurationError(
            `${owner}: session ${shortId(toSessionId)} already has history under source id "${this.sourceId}"; fork into a new session id (or clear that one first). Nothing was copied.`,
          );
        }
        if (chunk.length > 1) await this.#batch(op, to, chunk.slice(1), [], 'forkMessages');
      }
      return copies.length;
    });
  }

  /** One item by id in a session's partition, or undefined (404). */
  async #readItem(op: Operation, loc: Location, id: string): Promise<RawItem | undefined> {
    try {
      const { resource } = await op.step((c, abortSignal) => c.item(id, loc.partitionKey).read({ abortSignal }), [404]);
      return resource as RawItem | undefined;
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw error;
    }
  }

  /**
   * The sessions with history under this provider's `sourceId`, most recently updated first, read
   * from their head items. With hierarchical partitioning, `tenantId` (and `userId`) keep the query
   * within that tenant's (user's) partitions; otherwise it is a cross-partition query.
   * @throws ConfigurationError when `tenantId`/`userId` are given without hierarchical partitioning.
   */
  async listSessions(options: ListSessionsOptions = {}): Promise<SessionPage> {
    const limit = checkInteger('CosmosHistoryProvider.listSessions', 'limit', options.limit ?? 100);
    if (!this.#hierarchical && (options.tenantId !== undefined || options.userId !== undefined)) {
      throw new ConfigurationError(
        'CosmosHistoryProvider.listSessions: tenantId and userId need hierarchical partitioning (the `scope` option).',
      );
    }
    if (options.userId !== undefined && options.tenantId === undefined) {
      throw new ConfigurationError(
        'CosmosHistoryProvider.listSessions: userId needs tenantId (the partition key is tenant, then user, then session).',
      );
    }
    const parameters: SqlParameter[] = [{ name: '@sourceId', value: this.sourceId }];
    let where = `c.kind = 'head' AND c.sourceId = @sourceId`;
    let partitionKey: PartitionKey | undefined;
    if (options.tenantId !== undefined) {
      where += ' AND c.tenantId = @tenantId';
      parameters.push({ name: '@tenantId', value: checkScopePart('tenantId', options.tenantId) });
      partitionKey = [options.tenantId];
      if (options.userId !== undefined) {
        where += ' AND c.userId = @userId';
        parameters.push({ name: '@userId', value: checkScopePart('userId', options.userId) });
        partitionKey = [options.tenantId, options.userId];
      }
    }
    if (options.cursor !== undefined && (typeof options.cursor !== 'string' || options.cursor === '')) {
      throw new ConfigurationError(
        `CosmosHistoryProvider.listSessions: cursor must be the nextCursor of a previous page, got ${describeCursor(options.cursor)}. Omit it to start from the most recently updated session.`,
      );
    }
    return this.#connection.run({ operation: 'listSessions' }, options.signal, async (op) => {
      const query = {
        query: `SELECT c.id, c.sessionId, c.tenantId, c.userId, c.createdAt, c.updatedAt, c.lastSeq FROM c WHERE ${where} ORDER BY c.updatedAt DESC`,
        parameters,
      };
      // A cross-partition ORDER BY runs in the SDK's query pipeline, which resumes from a continuation
      // token only with `enableQueryControl` (without it, @azure/cosmos 4.9 gives no token after page 1
      // and throws on one). With it, a page may come back short or empty while partitions remain, so
      // pages are fetched until `limit` sessions or the end.
      const sessions: CosmosSessionSummary[] = [];
      let cursor = options.cursor;
      for (;;) {
        const page = await op.step(async (c, abortSignal) => {
          try {
            return await c.items
              .query<RawItem>(query, {
                maxItemCount: limit - sessions.length,
                enableQueryControl: true,
                abortSignal,
                ...(partitionKey ? { partitionKey } : {}),
                ...(cursor ? { continuationToken: cursor } : {}),
              })
              .fetchNext();
          } catch (error) {
            // The SDK refuses a token it cannot parse with a plain Error, before any request.
            if (
              cursor !== undefined &&
              statusOf(error) === undefined &&
              !abortSignal.aborted &&
              error instanceof Error &&
              !isTransient(error)
            )
              throw new ConfigurationError(
                `CosmosHistoryProvider.listSessions: cursor ${shortId(cursor)} is not a nextCursor of listSessions with these options (${error.message}).`,
                { cause: error },
              );
            throw error;
          }
        });
        sessions.push(...page.resources.map((raw) => this.#decodeSummary(raw)));
        cursor = page.hasMoreResults && page.continuationToken ? page.continuationToken : undefined;
        if (cursor === undefined || sessions.length >= limit) return { sessions, nextCursor: cursor };
      }
    });
  }

  /** Disposes of the client if this provider created it (`endpoint`); an injected client or container stays open. */
  async close(): Promise<void> {
    this.#connection.close();
  }

  // ---------------------------------------------------------------------------------------------

  async #locate(sessionId: string, state: JsonObject | undefined, explicit?: CosmosScope): Promise<Location> {
    checkSessionId(sessionId);
    const sessionKey = sessionPartitionValue(sessionId);
    if (!this.#hierarchical) {
      if (explicit !== undefined)
        throw new ConfigurationError(
          'CosmosHistoryProvider: a scope was given, but this provider partitions by session only (no `scope` option).',
        );
      const parts = [sessionId, this.sourceId];
      return { sessionId, sessionKey, partitionKey: sessionKey, fields: { sessionKey }, parts, prefix: encodeItemId(...parts) };
    }
    const resolved = explicit ?? (typeof this.#scope === 'function' ? await this.#scope({ sessionId, state: state ?? {} }) : this.#scope);
    if (typeof resolved !== 'object' || resolved === null)
      throw new ConfigurationError(`CosmosHistoryProvider: the scope of session ${shortId(sessionId)} must be { tenantId, userId }.`);
    const tenantId = checkScopePart('tenantId', resolved.tenantId);
    const userId = checkScopePart('userId', resolved.userId);
    // Ids carry the tenant and user too: unique across the whole container, so data can be copied
    // into a container with another partition key without collisions.
    const parts = [tenantId, userId, sessionId, this.sourceId];
    return {
      sessionId,
      sessionKey,
      partitionKey: [tenantId, userId, sessionKey],
      fields: { tenantId, userId, sessionKey },
      parts,
      prefix: encodeItemId(...parts),
    };
  }

  /** `c.sessionKey = @sessionKey` (and tenant and user): the logical partition, stated in the query too. */
  #partitionFilter(loc: Location): { where: string; parameters: SqlParameter[] } {
    const parameters: SqlParameter[] = [{ name: '@sessionKey', value: loc.sessionKey }];
    let where = 'c.sessionKey = @sessionKey';
    if (loc.fields.tenantId !== undefined) {
      where += ' AND c.tenantId = @tenantId AND c.userId = @userId';
      parameters.push({ name: '@tenantId', value: loc.fields.tenantId }, { name: '@userId', value: loc.fields.userId! });
    }
    return { where, parameters };
  }

  #messageFilter(loc: Location): { where: string; parameters: SqlParameter[] } {
    const partition = this.#partitionFilter(loc);
    return {
      where: `${partition.where} AND c.kind = 'message' AND c.sourceId = @sourceId`,
      parameters: [...partition.parameters, { name: '@sourceId', value: this.sourceId }],
    };
  }

  #item(loc: Location, message: Message, seq: number): MessageItem {
    const item: MessageItem = {
      id: encodeItemId(...loc.parts, message.id),
      kind: 'message',
      ...loc.fields,
      sourceId: this.sourceId,
      seq,
      message,
    };
    if (this.ttlSeconds !== undefined) item.ttl = this.ttlSeconds;
    return item;
  }

  /**
   * Reserves `count` sequence numbers for a session and resolves to the last one. One atomic
   * `incr` patch of the head item; when there is no head yet (a new session, or after `clear` or
   * expiry), it is created starting after the newest stored message, and a lost creation race goes
   * back to patching. Numbers are never handed out twice; a retried patch only leaves a gap.
   */
  async #allocate(op: Operation, loc: Location, count: number): Promise<number> {
    const now = new Date().toISOString();
    const operations = [
      { op: 'incr' as const, path: '/lastSeq', value: count },
      { op: 'set' as const, path: '/updatedAt', value: now },
      ...(this.ttlSeconds !== undefined ? [{ op: 'set' as const, path: '/ttl', value: this.ttlSeconds }] : []),
    ];
    for (let round = 0; ; round++) {
      try {
        const { resource } = await op.step(
          (c, abortSignal) => c.item(loc.prefix, loc.partitionKey).patch<HeadItem>(operations, { abortSignal }),
          [400, 404],
        );
        const last = resource?.lastSeq;
        if (typeof last !== 'number' || !Number.isSafeInteger(last)) throw this.#corruptHead(loc);
        return last;
      } catch (error) {
        const status = statusOf(error);
        if (status === 400) {
          // `incr` fails on a head whose counter is not a number: say so, rather than "bad request".
          const { resource } = await op.step((c, abortSignal) => c.item(loc.prefix, loc.partitionKey).read<HeadItem>({ abortSignal }));
          if (resource && !Number.isSafeInteger(resource.lastSeq)) throw this.#corruptHead(loc);
          throw error;
        }
        if (status !== 404 || round > 5) throw error;
      }
      const filter = this.#messageFilter(loc);
      const newest = await op.step((c, abortSignal) =>
        fetchAll<unknown>(
          c,
          { query: `SELECT TOP 1 VALUE c.seq FROM c WHERE ${filter.where} ORDER BY c.seq DESC`, parameters: filter.parameters },
          { partitionKey: loc.partitionKey, abortSignal },
        ),
      );
      // Positions a replace gave are fractional: start at the next whole number after them.
      const start = typeof newest[0] === 'number' && Number.isFinite(newest[0]) ? Math.max(0, Math.ceil(newest[0])) : 0;
      const head = this.#head(loc, start + count, now, now);
      try {
        await op.step((c, abortSignal) => c.items.create(head, { abortSignal }), [409]);
        return head.lastSeq;
      } catch (error) {
        if (statusOf(error) !== 409) throw error;
      }
    }
  }

  /** A session's head item as a save or a replace writes it. */
  #head(loc: Location, lastSeq: number, createdAt: string, updatedAt: string): HeadItem {
    const head: HeadItem = {
      id: loc.prefix,
      kind: 'head',
      ...loc.fields,
      sessionId: loc.sessionId,
      sourceId: this.sourceId,
      lastSeq,
      createdAt,
      updatedAt,
    };
    if (this.ttlSeconds !== undefined) head.ttl = this.ttlSeconds;
    return head;
  }

  #corruptHead(loc: Location): SessionStateError {
    return new SessionStateError(
      `cosmos:${this.#connection.where}[${JSON.stringify(loc.prefix)}].lastSeq`,
      'must be an integer (the head item of this conversation is corrupt); delete that item to renumber from the stored messages',
    );
  }

  /**
   * Creates message items; resolves to how many were new. Ids already stored with the same content
   * are skipped; one stored with other content throws `conflictOf` (what a failed batch wrote all
   * the same, on a store whose batches are not atomic, is deleted first). When a batch conflicts
   * and `retried` says it replaced a retried turn, its count is what was written.
   */
  async #createAll(
    op: Operation,
    loc: Location,
    items: MessageItem[],
    conflictOf: (messageId: string) => SessionStateError,
    retried?: (stored: Map<string, RawItem>, created: Set<string>) => Promise<number | undefined>,
  ): Promise<number> {
    let created = 0;
    for (const chunk of chunkBySize(items)) {
      const statuses = await this.#batch(
        op,
        loc,
        chunk.map((item) => ({ operationType: 'Create', resourceBody: item as unknown as JsonObject })),
      );
      if (statuses.every(ok)) {
        created += chunk.length;
        continue;
      }
      // On Cosmos DB the failed batch did nothing; a store whose batches are not atomic applied the operations before the failing one.
      const wrote = new Set(chunk.filter((_, i) => ok(statuses[i]!)).map((item) => item.id));
      const stored = await this.#readItems(op, loc, chunk);
      const replaced = await retried?.(stored, wrote);
      if (replaced !== undefined) return replaced;
      const clash = chunk.find(
        (item) => !wrote.has(item.id) && stored.has(item.id) && !sameMessageContent(stored.get(item.id)!.message, item.message),
      );
      if (clash) {
        await this.#deleteOwn(op, loc, [...wrote]);
        throw conflictOf(clash.message.id);
      }
      created += wrote.size;
      // Some messages were stored before (a retried save): store the rest, keeping the positions reserved for them.
      let pending = chunk.filter((item) => !stored.has(item.id));
      for (let round = 0; pending.length > 0; round++) {
        const again = await this.#batch(
          op,
          loc,
          pending.map((item) => ({ operationType: 'Create', resourceBody: item as unknown as JsonObject })),
        );
        if (again.every(ok)) {
          created += pending.length;
          break;
        }
        if (round >= 3) throw this.#batchFailure(again, loc);
        const now = await this.#existingIds(
          op,
          loc,
          pending.map((item) => item.id),
        );
        pending = pending.filter((item) => !now.has(item.id));
      }
    }
    return created;
  }

  /** The stored items (id, seq, message) among `items`' ids, by item id. */
  async #readItems(op: Operation, loc: Location, items: readonly MessageItem[]): Promise<Map<string, RawItem>> {
    const filter = this.#partitionFilter(loc);
    const found = new Map<string, RawItem>();
    for (let i = 0; i < items.length; i += 1000) {
      const query = {
        query: `SELECT c.id, c.seq, c.message FROM c WHERE ${filter.where} AND ARRAY_CONTAINS(@ids, c.id)`,
        parameters: [...filter.parameters, { name: '@ids', value: items.slice(i, i + 1000).map((item) => item.id) }],
      };
      const page = await op.step((c, abortSignal) =>
        fetchAll(c, query, { partitionKey: loc.partitionKey, maxItemCount: 1000, abortSignal }),
      );
      for (const item of page) if (typeof item.id === 'string') found.set(item.id, item);
    }
    return found;
  }

  /**
   * Runs one transactional batch; resolves to the per-operation statuses when only `conflicts`
   * (statuses another writer causes) failed it, and throws for any other failure.
   */
  async #batch(
    op: Operation,
    loc: Location,
    operations: OperationInput[],
    conflicts: readonly number[] = [409],
    operation = 'saveMessages',
  ): Promise<number[]> {
    // Fresh operation objects for every attempt: the SDK rewrites each operation's partitionKey in place.
    const response = await op.step((c, abortSignal) =>
      c.items.batch(
        operations.map((o) => ({ ...o, partitionKey: loc.partitionKey })),
        loc.partitionKey,
        { abortSignal },
      ),
    );
    const statuses = (response.result ?? []).map((r) => r.statusCode);
    if (statuses.length !== operations.length)
      throw new Error(`Batch request error: ${statuses.length} results for ${operations.length} operations`);
    if (!statuses.every((s) => ok(s) || s === 424 || conflicts.includes(s))) throw this.#batchFailure(statuses, loc, operation);
    return statuses;
  }

  #batchFailure(statuses: number[], loc: Location, operation = 'saveMessages'): Error {
    const failed = statuses.find((s) => !ok(s) && s !== 424) ?? statuses.find((s) => !ok(s));
    const error = Object.assign(new Error(`Batch request error: an operation failed with ${failed} (statuses ${statuses.join(',')})`), {
      code: failed,
    });
    return this.#connection.translate(error, { operation, sessionId: loc.sessionId });
  }

  /**
   * Runs a replace's operations in transactional batches, in order; resolves to false at the first
   * batch another writer got in the way of (a message to read or delete gone, 404; an id created
   * meanwhile, 409; a changed item, 412): the caller reads and plans again.
   */
  async #applyAll(op: Operation, loc: Location, operations: readonly OperationInput[]): Promise<boolean> {
    for (const chunk of chunkBySize(operations)) {
      const statuses = await this.#batch(op, loc, chunk, [404, 409, 412], 'replaceMessages');
      if (!statuses.every(ok)) return false;
    }
    return true;
  }

  /** Deletes items by id in batches; resolves to how many existed. */
  async #deleteAll(op: Operation, loc: Location, ids: readonly string[]): Promise<number> {
    return (await this.#deleteOwn(op, loc, ids)).size;
  }

  async #existingIds(op: Operation, loc: Location, ids: readonly string[]): Promise<Set<string>> {
    const filter = this.#partitionFilter(loc);
    const query = {
      query: `SELECT VALUE c.id FROM c WHERE ${filter.where} AND ARRAY_CONTAINS(@ids, c.id)`,
      parameters: [...filter.parameters, { name: '@ids', value: [...ids] }],
    };
    return new Set(
      await op.step((c, abortSignal) => fetchAll<string>(c, query, { partitionKey: loc.partitionKey, maxItemCount: 1000, abortSignal })),
    );
  }

  #decode(raw: RawItem, loc: Location): Message {
    const id = typeof raw === 'object' && raw !== null && typeof raw.id === 'string' ? raw.id : '?';
    const path = `cosmos:${this.#connection.where}[${JSON.stringify(id)}]`;
    if (typeof raw !== 'object' || raw === null) throw new SessionStateError(path, 'is not an item object');
    if (typeof raw.seq !== 'number' || !Number.isFinite(raw.seq))
      throw new SessionStateError(`${path}.seq`, `must be a number, got ${describeError(raw.seq)}; fix or delete the item`);
    // Message.parse also refuses nesting deeper than ctx stores: a message read can be saved again.
    const message = Message.parse(raw.message, `${path}.message`);
    if (id !== encodeItemId(...loc.parts, message.id)) {
      throw new SessionStateError(
        `${path}.message.id`,
        `${shortId(message.id)} does not match the item id (an item of another message, session or source); fix or delete the item`,
      );
    }
    return message;
  }

  #decodeSummary(raw: RawItem): CosmosSessionSummary {
    const path = `cosmos:${this.#connection.where}[${JSON.stringify(typeof raw?.id === 'string' ? raw.id : '?')}]`;
    const text = (key: string): string => {
      const value = (raw as Record<string, unknown>)[key];
      if (typeof value !== 'string')
        throw new SessionStateError(`${path}.${key}`, 'must be a string (a corrupt head item); fix or delete the item');
      return value;
    };
    const summary: CosmosSessionSummary = {
      sessionId: text('sessionId'),
      createdAt: text('createdAt'),
      updatedAt: text('updatedAt'),
      lastSeq: typeof raw.lastSeq === 'number' ? raw.lastSeq : 0,
    };
    if (this.#hierarchical) {
      summary.tenantId = text('tenantId');
      summary.userId = text('userId');
    }
    return summary;
  }
}

/** What a query of message items returns, before it is checked. */
type RawItem = { id?: unknown; seq?: unknown; message?: unknown; lastSeq?: unknown; [key: string]: unknown };

const ok = (status: number) => status >= 200 && status < 300;

/** A cursor argument as shown in an error message. */
function describeCursor(cursor: unknown): string {
  return typeof cursor === 'string' ? shortId(cursor) : typeof cursor;
}

/**
 * Validates messages as a later read would, and drops repeated ids (the first occurrence wins). A
 * message must be plain JSON all through (a NaN, a Map, a Date, `undefined` in an array, anything
 * `JSON.stringify` would change): what is stored must read back as what was saved.
 */
function checkMessages(messages: readonly Message[], conflict?: (index: number, messageId: string) => Error): Message[] {
  if (!Array.isArray(messages)) throw new SessionStateError('$.messages', 'must be an array');
  const seen = new Map<string, Message>();
  const unique: Message[] = [];
  messages.forEach((m, i) => {
    Message.parse(m, `$.messages[${i}]`);
    if (m.id === '') throw new SessionStateError(`$.messages[${i}].id`, 'must not be empty: message ids de-duplicate stored history');
    const tooLarge = itemTooLarge(`message ${shortId(m.id)}`, Buffer.byteLength(JSON.stringify(m), 'utf8'));
    if (tooLarge) throw new SessionStateError(`$.messages[${i}]`, tooLarge);
    // The item adds a level above the message: a message core accepts at its limit would be refused by Cosmos DB.
    const depth = nestingDepth(m, MAX_ITEM_DEPTH);
    if (depth >= MAX_ITEM_DEPTH)
      throw new SessionStateError(
        `$.messages[${i}]`,
        `(message ${shortId(m.id)}) nests ${depth} levels deep, ${depth + 1} in its Cosmos DB item, past Cosmos DB's limit of ${MAX_ITEM_DEPTH} levels; flatten it`,
      );
    const earlier = seen.get(m.id);
    if (earlier !== undefined) {
      if (conflict && !sameMessageContent(earlier, m)) throw conflict(i, m.id);
      return;
    }
    seen.set(m.id, m);
    unique.push(structuredClone(m));
  });
  return unique;
}

/** What `replaceMessages` does to the stored items, worked out from what it read. */
interface ReplacePlan {
  /** Messages to upsert (index into the wanted list) and their positions. */
  writes: { index: number; seq: number }[];
  /** Item ids of stored messages that are not wanted. */
  deletes: string[];
  /** The whole number at or above every position, stored or planned: where a new head starts counting. */
  top: number;
}

/**
 * Plans a replace: the longest run of wanted messages that are stored in the same relative order
 * keeps its positions (rewritten in place when its content changed); every other wanted message
 * gets a position between its kept neighbours; stored items not wanted are deleted.
 */
function planReplace(stored: readonly RawItem[], wanted: readonly { id: string; message: Message }[]): ReplacePlan {
  const byId = new Map<string, RawItem>();
  for (const item of stored) if (typeof item.id === 'string') byId.set(item.id, item);
  const old = wanted.map(({ id }) => {
    const seq = byId.get(id)?.seq;
    return typeof seq === 'number' && Number.isFinite(seq) ? seq : undefined;
  });
  const keep = longestIncreasing(old);
  const kept = old.map((seq, i) => (keep.has(i) ? seq : undefined));
  let top = 0;
  for (const item of stored) if (typeof item.seq === 'number' && Number.isFinite(item.seq)) top = Math.max(top, item.seq);
  const seqs = positions(kept, Math.floor(top));
  const plan: ReplacePlan = { writes: [], deletes: [], top: Math.ceil(seqs.reduce((a, b) => Math.max(a, b), top)) };
  wanted.forEach(({ id, message }, index) => {
    if (kept[index] === undefined || !sameJson(byId.get(id)?.message, message)) plan.writes.push({ index, seq: seqs[index]! });
  });
  const ids = new Set(wanted.map(({ id }) => id));
  for (const id of byId.keys()) if (!ids.has(id)) plan.deletes.push(id);
  return plan;
}

/** Indexes of a longest strictly increasing subsequence of `values`, skipping undefined entries. */
function longestIncreasing(values: readonly (number | undefined)[]): Set<number> {
  const tails: number[] = []; // tails[k]: index of the smallest last value of an increasing run of length k + 1
  const previous: number[] = [];
  values.forEach((value, i) => {
    previous[i] = -1;
    if (value === undefined) return;
    let lo = 0;
    let hi = tails.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (values[tails[mid]!]! < value) lo = mid + 1;
      else hi = mid;
    }
    if (lo > 0) previous[i] = tails[lo - 1]!;
    tails[lo] = i;
  });
  const run = new Set<number>();
  for (let i = tails.at(-1) ?? -1; i >= 0; i = previous[i]!) run.add(i);
  return run;
}

/**
 * Positions for a replaced list: kept entries (defined in `kept`) stay; each run of others is
 * spread evenly between its kept neighbours, before the first one within the unit below it, after
 * the last one within the unit above it, or, with nothing kept, just above `top` (the highest
 * stored position, rounded down). Positions a save hands out are whole numbers, so these never
 * collide with them. When floating point has no room left between two kept neighbours, the upper
 * one is moved too (it joins the run); with nothing kept and no room below the next whole number,
 * the run takes the whole numbers above `top`. Updates `kept`: an entry that had to move becomes undefined.
 */
function positions(kept: (number | undefined)[], top: number): number[] {
  for (;;) {
    const out: number[] = [];
    let stuck = -1;
    for (let i = 0; i < kept.length && stuck < 0; ) {
      if (kept[i] !== undefined) {
        out.push(kept[i]!);
        i++;
        continue;
      }
      let j = i;
      while (j < kept.length && kept[j] === undefined) j++;
      const lo = i > 0 ? kept[i - 1] : undefined;
      const hi = j < kept.length ? kept[j] : undefined;
      const count = j - i;
      const run =
        spread(lo ?? (hi === undefined ? top : Math.ceil(hi) - 1), hi ?? Math.floor(lo ?? top) + 1, count) ??
        (lo === undefined && hi === undefined ? Array.from({ length: count }, (_, k) => top + 1 + k) : undefined);
      if (run === undefined) stuck = hi !== undefined ? j : i - 1;
      else out.push(...run);
      i = j;
    }
    if (stuck < 0) return out;
    kept[stuck] = undefined;
  }
}

/** `count` evenly spaced numbers strictly between `lo` and `hi`, or undefined when floating point has no room for them. */
function spread(lo: number, hi: number, count: number): number[] | undefined {
  const out: number[] = [];
  let last = lo;
  for (let k = 1; k <= count; k++) {
    const next = lo + ((hi - lo) * k) / (count + 1);
    if (!(next > last && next < hi)) return undefined;
    out.push(next);
    last = next;
  }
  return out;
}

/** Whether two JSON values are equal (objects compared by their keys, in any order). */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === (b as unknown[]).length && a.every((x, i) => sameJson(x, (b as unknown[])[i]));
  const keys = Object.keys(a);
  return (
    keys.length === Object.keys(b).length &&
    keys.every((k) => Object.hasOwn(b, k) && sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
  );
}

/** Splits operations into transactional batches within Cosmos DB's limits (100 operations, 2 MB). */
function chunkBySize<T>(items: readonly T[]): T[][] {
  const chunks: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = Buffer.byteLength(JSON.stringify(item), 'utf8') + 64;
    if (current.length > 0 && (current.length >= MAX_BATCH_OPERATIONS || bytes + size > MAX_BATCH_BYTES)) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/** Every result of a query, following continuation tokens. */
async function fetchAll<T = RawItem>(
  container: Container,
  query: { query: string; parameters: SqlParameter[] },
  options: { partitionKey: PartitionKey; maxItemCount?: number; abortSignal: AbortSignal },
): Promise<T[]> {
  const iterator = container.items.query<T>(query, options);
  const out: T[] = [];
  while (iterator.hasMoreResults()) {
    const page = await iterator.fetchNext();
    out.push(...page.resources);
    if (options.maxItemCount !== undefined && query.query.includes('TOP ') && out.length >= options.maxItemCount) break;
  }
  return out;
}
