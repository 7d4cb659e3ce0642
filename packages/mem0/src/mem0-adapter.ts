import { BackendUnavailableError, ConfigurationError, type JsonObject } from '@ctx/core';
import { MEM0_FIELD, MEM0_SCOPE_KEYS, type Mem0Scope, type Mem0ScopeKey } from './scope.js';

/** One memory as the provider sees it, whichever client found it. */
export interface Mem0Memory {
  /** mem0's memory id (used to de-duplicate across scopes). */
  id: string;
  /** The memory text. */
  text: string;
  /** Relevance as the backend scored it (higher is better), when it gave one. */
  score?: number;
  userId?: string;
  agentId?: string;
  appId?: string;
  runId?: string;
  /** ISO 8601, when the backend gave one. */
  createdAt?: string;
  /** ISO 8601, when the backend gave one (listed memories). */
  updatedAt?: string;
  /** What was stored with the memory (listed memories; for mem0 OSS without the `app_id` field). */
  metadata?: JsonObject;
}

/** One message handed to mem0 for extraction. */
export interface Mem0AddMessage {
  role: 'user' | 'assistant';
  content: string;
}

/** A search in one scope. */
export interface Mem0SearchRequest {
  query: string;
  /** The ids to filter on, each as an equality; never empty. */
  scope: Mem0Scope;
  topK: number;
  /** Minimum score the backend should return, in [0, 1]. */
  threshold?: number;
}

/** An add under one scope. */
export interface Mem0AddRequest {
  messages: Mem0AddMessage[];
  /** The ids the memories are stored under. */
  scope: Mem0Scope;
  metadata?: JsonObject;
  /** mem0's `infer` (extract facts with its LLM); omitted means mem0's default (true). */
  infer?: boolean;
}

/** A page of the memories stored under a scope. */
export interface Mem0ListRequest {
  /** The ids the memories carry (each an equality; other ids of a memory do not matter); never empty. */
  scope: Mem0Scope;
  /** Where to go on: the `cursor` of the previous page; absent for the first. */
  cursor?: string;
}

/** One page of `Mem0Adapter.list`. */
export interface Mem0ListPage {
  /** The memories of this page. */
  memories: Mem0Memory[];
  /** Pass it back for the next page; absent on the last. */
  cursor?: string;
}

/** A delete of every memory stored under a scope. */
export interface Mem0DeleteRequest {
  /** The ids the memories carry (each an equality; other ids of a memory do not matter); never empty. */
  scope: Mem0Scope;
}

/**
 * The small contract the provider needs from mem0: search one scope, add messages under one scope,
 * and, for deletes and exports, list and delete what a scope holds. `createPlatformAdapter` and
 * `createOssAdapter` implement it for the two `mem0ai` clients; implement it yourself to put
 * something else behind the provider. Throw what the backend threw: the provider turns failures
 * into typed ctx errors.
 */
export interface Mem0Adapter {
  /** Names the backend in errors, e.g. `'platform'` or `'oss'`. */
  readonly kind: string;
  /** The memories most relevant to `query` in one scope, best first. */
  search(request: Mem0SearchRequest): Promise<Mem0Memory[]>;
  /** Hands messages to mem0 to store under one scope. */
  add(request: Mem0AddRequest): Promise<void>;
  /** A page of every memory stored under a scope (`exportUserData` needs it). */
  list?(request: Mem0ListRequest): Promise<Mem0ListPage>;
  /** Deletes every memory stored under a scope; nothing stored is not an error (`deleteUserData`, `forgetOnSessionDelete`). */
  deleteAll?(request: Mem0DeleteRequest): Promise<void>;
}

/** A memory as the `mem0ai` clients return it (fields the adapters read; everything is checked). */
export interface Mem0ClientMemory {
  id?: unknown;
  memory?: unknown;
  score?: unknown;
  [field: string]: unknown;
}

/** What the adapter uses of the platform `MemoryClient` from `mem0ai` (a real one fits). */
export interface MemoryClientLike {
  ping(): Promise<unknown>;
  search(
    query: string,
    options: { filters: Record<string, unknown>; topK?: number; threshold?: number },
  ): Promise<{ results: Mem0ClientMemory[] } | unknown>;
  add(messages: Mem0AddMessage[], options: Record<string, unknown>): Promise<unknown>;
  /** `POST /v3/memories/?page=&page_size=`: a page of the memories matching `filters`. */
  getAll?(options: { filters: Record<string, unknown>; page?: number; pageSize?: number }): Promise<unknown>;
  /** `DELETE /v1/memories/?user_id=...`: every memory carrying all the ids given. */
  deleteAll?(options: { userId?: string; agentId?: string; appId?: string; runId?: string }): Promise<unknown>;
}

/** What the adapter uses of the open-source `Memory` from `mem0ai/oss` (a real one fits). */
export interface OssMemoryLike {
  search(
    query: string,
    config: { filters: Record<string, unknown>; topK?: number; threshold?: number },
  ): Promise<{ results: Mem0ClientMemory[] } | unknown>;
  add(messages: Mem0AddMessage[], config: Record<string, unknown>): Promise<unknown>;
  getAll(config: { filters: Record<string, unknown>; topK?: number }): Promise<unknown>;
  reset(): Promise<unknown>;
  /** Deletes one memory. */
  delete?(memoryId: string): Promise<unknown>;
  /** Deletes every memory carrying all the ids given (no `appId` in mem0 OSS). */
  deleteAll?(config: { userId?: string; agentId?: string; runId?: string }): Promise<unknown>;
}

const str = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

/**
 * The result list of a search or list reply.
 * @throws BackendUnavailableError when the reply has none (a client or server that does not speak mem0 3.x).
 */
function resultsOf(reply: unknown, kind: string, operation: 'search' | 'list' = 'search'): Mem0ClientMemory[] {
  const list = Array.isArray(reply)
    ? reply
    : typeof reply === 'object' && reply !== null
      ? (reply as { results?: unknown }).results
      : undefined;
  if (!Array.isArray(list)) {
    const got = reply === null ? 'null' : typeof reply === 'object' ? 'an object without a results list' : typeof reply;
    throw new BackendUnavailableError(
      'mem0',
      `mem0 (${kind}) answered a ${operation} with ${got} instead of { results: [...] }; check that the client is a mem0ai 3.x MemoryClient or Memory and that its host speaks the mem0 v3 API.`,
    );
  }
  return list.map((r) => (typeof r === 'object' && r !== null ? (r as Mem0ClientMemory) : {}));
}

/** A time as ISO 8601, from a string or a `Date`. */
function isoTime(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  return value instanceof Date ? value.toISOString() : undefined;
}

/** Plain JSON of a metadata object (what does not survive JSON is left out), or undefined when empty. */
function jsonMetadata(value: unknown, omit?: string): JsonObject | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const copy = JSON.parse(JSON.stringify(value)) as JsonObject;
  if (omit !== undefined) delete copy[omit];
  return Object.keys(copy).length > 0 ? copy : undefined;
}

/** The fields of a memory the adapters read, by name, from either client's shape. */
type MemoryField = Mem0ScopeKey | 'createdAt' | 'updatedAt' | 'metadata';

function toMemory(raw: Mem0ClientMemory, field: (name: MemoryField) => unknown): Mem0Memory {
  const memory: Mem0Memory = { id: typeof raw.id === 'string' ? raw.id : '', text: typeof raw.memory === 'string' ? raw.memory : '' };
  if (typeof raw.score === 'number' && Number.isFinite(raw.score)) memory.score = raw.score;
  for (const key of MEM0_SCOPE_KEYS) {
    const value = str(field(key));
    if (value !== undefined) memory[key] = value;
  }
  const created = isoTime(field('createdAt'));
  if (created !== undefined) memory.createdAt = created;
  const updated = isoTime(field('updatedAt'));
  if (updated !== undefined) memory.updatedAt = updated;
  const metadata = field('metadata') as JsonObject | undefined;
  if (metadata !== undefined) memory.metadata = metadata;
  return memory;
}

/** A memory of the platform client (it camelCases the service's snake_case; both are read). */
function platformMemory(raw: Mem0ClientMemory): Mem0Memory {
  return toMemory(raw, (name) => {
    if (name === 'metadata') return jsonMetadata(raw.metadata);
    const snake = name === 'createdAt' ? 'created_at' : name === 'updatedAt' ? 'updated_at' : MEM0_FIELD[name];
    return raw[name] ?? raw[snake];
  });
}

/** A memory of mem0 OSS: `app_id` comes from its metadata, where the adapter stores it. */
function ossMemory(raw: Mem0ClientMemory): Mem0Memory {
  const meta = typeof raw.metadata === 'object' && raw.metadata !== null ? (raw.metadata as Record<string, unknown>) : {};
  return toMemory(raw, (name) => {
    if (name === 'appId') return meta.app_id;
    if (name === 'metadata') return jsonMetadata(meta, 'app_id');
    return name === 'createdAt' || name === 'updatedAt' ? raw[name] : raw[MEM0_FIELD[name]];
  });
}

/**
 * The platform filter for a scope: `{ user_id }` for one id, `{ AND: [{ user_id }, { agent_id }] }`
 * for several. Every value is a plain string equality (the provider has checked each id).
 */
export function platformFilters(scope: Mem0Scope): Record<string, unknown> {
  const conditions = MEM0_SCOPE_KEYS.filter((k) => scope[k] !== undefined).map((k) => ({ [MEM0_FIELD[k]]: scope[k] }));
  if (conditions.length === 0) throw new ConfigurationError('A mem0 search needs at least one id in its scope.');
  return conditions.length === 1 ? conditions[0]! : { AND: conditions };
}

/** The page size of the platform's list (`POST /v3/memories/`). */
const PLATFORM_PAGE_SIZE = 100;

/** Refuses a client that lacks a method the provider was asked to use. */
function needs<T>(method: T | undefined, what: string, kind: string): T {
  if (method === undefined)
    throw new ConfigurationError(`The mem0 ${kind} client has no ${what}; it needs mem0ai 3.x (or an adapter that implements it).`);
  return method;
}

/**
 * An adapter over the platform `MemoryClient` (`mem0ai`): `search` sends the scope as `filters`
 * (`POST /v3/memories/search/`), `add` sends it as top-level `user_id` / `agent_id` / `app_id` /
 * `run_id` (`POST /v3/memories/add/`), `list` pages `getAll` (`POST /v3/memories/?page=&page_size=100`
 * with the scope as `filters`), `deleteAll` sends the scope as query parameters
 * (`DELETE /v1/memories/?user_id=...`).
 */
export function createPlatformAdapter(client: MemoryClientLike): Mem0Adapter {
  return {
    kind: 'platform',
    async search({ query, scope, topK, threshold }) {
      const reply = await client.search(query, {
        filters: platformFilters(scope),
        topK,
        ...(threshold !== undefined ? { threshold } : {}),
      });
      return resultsOf(reply, 'platform').map(platformMemory);
    },
    async add({ messages, scope, metadata, infer }) {
      await client.add(messages, { ...scope, ...(metadata !== undefined ? { metadata } : {}), ...(infer !== undefined ? { infer } : {}) });
    },
    async list({ scope, cursor }) {
      const getAll = needs(client.getAll, 'getAll', 'platform');
      const page = cursor === undefined ? 1 : Number(cursor);
      if (!Number.isSafeInteger(page) || page < 1)
        throw new ConfigurationError(`Not a cursor of the mem0 platform list: ${JSON.stringify(cursor)}.`);
      const reply = await getAll.call(client, { filters: platformFilters(scope), page, pageSize: PLATFORM_PAGE_SIZE });
      const results = resultsOf(reply, 'platform', 'list');
      const next = (reply as { next?: unknown }).next;
      const more = typeof next === 'string' && next !== '' && results.length > 0;
      return { memories: results.map(platformMemory), ...(more ? { cursor: String(page + 1) } : {}) };
    },
    async deleteAll({ scope }) {
      await needs(client.deleteAll, 'deleteAll', 'platform').call(client, { ...scope });
    },
  };
}

/** mem0 OSS's `getAll` has no pages: it is asked for this many, then for twice as many while full. */
const OSS_FIRST_LIST = 1000;

/** The filters of mem0 OSS for a scope (`app_id` is a metadata field there). */
function ossFilters(scope: Mem0Scope, operation: string): Record<string, unknown> {
  if (scope.userId === undefined && scope.agentId === undefined && scope.runId === undefined) {
    throw new ConfigurationError(
      `A mem0 OSS ${operation} needs a userId, agentId or runId in its scope; appId alone is only supported by the platform.`,
    );
  }
  const filters: Record<string, unknown> = {};
  for (const key of MEM0_SCOPE_KEYS) if (scope[key] !== undefined) filters[MEM0_FIELD[key]] = scope[key];
  return filters;
}

/**
 * An adapter over the open-source `Memory` (`mem0ai/oss`). It has no `appId`: the adapter stores
 * it as the metadata field `app_id` and filters on that field, which the OSS vector stores match
 * like the entity ids. `list` is one page (`getAll` has none); `deleteAll` uses the client's
 * `deleteAll`, or, for a scope with an `appId` (which that method cannot filter on), deletes each
 * listed memory.
 */
export function createOssAdapter(memory: OssMemoryLike): Mem0Adapter {
  const listAll = async (scope: Mem0Scope): Promise<Mem0ClientMemory[]> => {
    const filters = ossFilters(scope, 'list');
    for (let topK = OSS_FIRST_LIST; ; topK *= 2) {
      const results = resultsOf(await memory.getAll({ filters, topK }), 'oss', 'list');
      if (results.length < topK) return results;
    }
  };
  return {
    kind: 'oss',
    async search({ query, scope, topK, threshold }) {
      const filters = ossFilters(scope, 'search');
      const reply = await memory.search(query, { filters, topK, ...(threshold !== undefined ? { threshold } : {}) });
      return resultsOf(reply, 'oss').map(ossMemory);
    },
    async add({ messages, scope, metadata, infer }) {
      ossFilters(scope, 'add');
      const meta: JsonObject = { ...metadata };
      if (scope.appId !== undefined) meta.app_id = scope.appId;
      const config: Record<string, unknown> = { metadata: meta };
      if (scope.userId !== undefined) config.userId = scope.userId;
      if (scope.agentId !== undefined) config.agentId = scope.agentId;
      if (scope.runId !== undefined) config.runId = scope.runId;
      if (infer !== undefined) config.infer = infer;
      await memory.add(messages, config);
    },
    async list({ scope }) {
      return { memories: (await listAll(scope)).map(ossMemory) };
    },
    async deleteAll({ scope }) {
      ossFilters(scope, 'delete');
      if (scope.appId === undefined) {
        const { userId, agentId, runId } = scope;
        await needs(memory.deleteAll, 'deleteAll', 'oss').call(memory, { userId, agentId, runId });
        return;
      }
      const remove = needs(memory.delete, 'delete', 'oss');
      for (const raw of await listAll(scope)) if (typeof raw.id === 'string') await remove.call(memory, raw.id);
    },
  };
}

const isFn = (value: unknown, name: string) => typeof (value as Record<string, unknown> | null)?.[name] === 'function';

/** Whether `value` is a `Mem0Adapter` (has a string `kind`, `search` and `add`). */
export function isMem0Adapter(value: unknown): value is Mem0Adapter {
  return typeof (value as { kind?: unknown } | null)?.kind === 'string' && isFn(value, 'search') && isFn(value, 'add');
}

/**
 * The adapter for a client: an adapter as is, a platform `MemoryClient` (it has `ping`) or an OSS
 * `Memory` (it has `reset` and `getAll`).
 * @throws ConfigurationError for anything else.
 */
export function toMem0Adapter(client: MemoryClientLike | OssMemoryLike | Mem0Adapter): Mem0Adapter {
  if (isMem0Adapter(client)) return client;
  if (isFn(client, 'search') && isFn(client, 'add')) {
    if (isFn(client, 'ping')) return createPlatformAdapter(client as MemoryClientLike);
    if (isFn(client, 'reset') && isFn(client, 'getAll')) return createOssAdapter(client as OssMemoryLike);
  }
  throw new ConfigurationError(
    'Mem0ContextProvider: `client` must be a MemoryClient from "mem0ai", a Memory from "mem0ai/oss", or a Mem0Adapter.',
  );
}
