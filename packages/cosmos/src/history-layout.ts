import { PartitionKeyDefinitionVersion, PartitionKeyKind, type IndexingPolicy, type PartitionKeyDefinition } from '@azure/cosmos';
import type { JsonObject, Message } from '@ctx/core';
import { SESSION_LIST_COMPOSITE_INDEXES } from './indexing.js';

/** The tenant and user of a session, for hierarchical partitioning (`/tenantId`, `/userId`, `/sessionKey`). */
export interface CosmosScope {
  tenantId: string;
  userId: string;
}

/**
 * Works out the tenant and user of a session from its id and the provider's state slot of that
 * session (`{}` in maintenance calls unless one is passed). Called before every operation; it
 * must give the same answer for the same session every time.
 */
export type CosmosScopeResolver = (args: { sessionId: string; state: Readonly<JsonObject> }) => CosmosScope | Promise<CosmosScope>;

/** One stored message: one item per message. */
export interface MessageItem {
  /** `<session>:<sourceId>:<message id>`, each part encoded by `encodeIdPart`. */
  id: string;
  kind: 'message';
  /** The partition key value of the session (`sessionPartitionValue`). */
  sessionKey: string;
  /** Hierarchical partitioning only. */
  tenantId?: string;
  /** Hierarchical partitioning only. */
  userId?: string;
  /** The provider's `sourceId`: providers with different source ids keep apart in one container. */
  sourceId: string;
  /**
   * Position in the conversation, unique per (session, sourceId): whole numbers a save reserves from the
   * head, in the order of saving; fractions between its neighbours for a message `replaceMessages` placed.
   */
  seq: number;
  /** The ctx message, exactly as saved. */
  message: Message;
  /** Seconds to live (only with `ttlSeconds`). */
  ttl?: number;
}

/** The per-(session, sourceId) head: the sequence counter, and what `listSessions` lists. */
export interface HeadItem {
  /** `<session>:<sourceId>`, each part encoded by `encodeIdPart`. */
  id: string;
  kind: 'head';
  sessionKey: string;
  tenantId?: string;
  userId?: string;
  /** The session id as given (the only item that keeps it verbatim). */
  sessionId: string;
  sourceId: string;
  /** The last sequence number handed out. */
  lastSeq: number;
  /** ISO 8601: when the head was created. */
  createdAt: string;
  /** ISO 8601: the last save. */
  updatedAt: string;
  ttl?: number;
  /**
   * Set by `forkMessages` on the head it creates: a random id of that fork, so a batch retried
   * after its answer was lost recognises its own head instead of reporting a conflict.
   */
  forkId?: string;
}

/** The partition key of a history container: one logical partition per session. */
export const SESSION_PARTITION_KEY: PartitionKeyDefinition = { paths: ['/sessionKey'], version: PartitionKeyDefinitionVersion.V2 };

/** The hierarchical partition key: tenant, then user, then session. */
export const HIERARCHICAL_PARTITION_KEY: PartitionKeyDefinition = {
  paths: ['/tenantId', '/userId', '/sessionKey'],
  kind: PartitionKeyKind.MultiHash,
  version: PartitionKeyDefinitionVersion.V2,
};

/**
 * The indexing policy the history provider creates: only the properties its queries filter and
 * sort on are indexed (message contents are not, which keeps every write cheap).
 */
export const HISTORY_INDEXING_POLICY: IndexingPolicy = {
  indexingMode: 'consistent',
  automatic: true,
  includedPaths: [
    { path: '/kind/?' },
    { path: '/sourceId/?' },
    { path: '/seq/?' },
    { path: '/sessionKey/?' },
    { path: '/tenantId/?' },
    { path: '/userId/?' },
    { path: '/updatedAt/?' },
  ],
  excludedPaths: [{ path: '/*' }],
};

/**
 * The indexing policy the session store creates: only what `list` filters and sorts on (the owner,
 * the time of the session's last update and its id), with the composite indexes its two ORDER BY
 * forms need; the sessions themselves are not indexed, so `get`, `set` and `delete` stay point
 * operations and writes stay cheap.
 */
export const SESSION_STORE_INDEXING_POLICY: IndexingPolicy = {
  indexingMode: 'consistent',
  automatic: true,
  includedPaths: [{ path: '/userId/?' }, { path: '/updatedAtMs/?' }, { path: '/sessionId/?' }],
  excludedPaths: [{ path: '/*' }],
  compositeIndexes: SESSION_LIST_COMPOSITE_INDEXES.map((need) => need.paths.map((p) => ({ ...p }))),
};

/** The session store's partition key: the item id (one logical partition per session). */
export const SESSION_STORE_PARTITION_KEY: PartitionKeyDefinition = { paths: ['/id'], version: PartitionKeyDefinitionVersion.V2 };
