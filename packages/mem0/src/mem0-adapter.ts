import { BackendUnavailableError, ConfigurationError, type JsonObject } from '@ctx/core';
import { MEM0_FIELD, MEM0_SCOPE_KEYS, type Mem0Scope } from './scope.js';

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

/**
 * The small contract the provider needs from mem0: search one scope, add messages under one scope.
 * `createPlatformAdapter` and `createOssAdapter` implement it for the two `mem0ai` clients; implement
 * it yourself to put something else behind the provider. Throw what the backend threw: the provider
 * turns failures into typed ctx errors.
 */
export interface Mem0Adapter {
  /** Names the backend in errors, e.g. `'platform'` or `'oss'`. */
  readonly kind: string;
  search(request: Mem0SearchRequest): Promise<Mem0Memory[]>;
  add(request: Mem0AddRequest): Promise<void>;
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
}

/** What the adapter uses of the open-source `Memory` from `mem0ai/oss` (a real one fits). */
export interface OssMemoryLike {
  search(
    query: string,
    config: { filters: Record<string, unknown>; topK?: number; threshold?: number },
  ): Promise<{ results: Mem0ClientMemory[] } | unknown>;
  add(messages: Mem0AddMessage[], config: Record<string, unknown>): Promise<unknown>;
  getAll(config: { filters: Record<string, unknown> }): Promise<unknown>;
  reset(): Promise<unknown>;
}

const str = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

/**
 * The result list of a search reply.
 * @throws BackendUnavailableError when the reply has none (a client or server that does not speak mem0 3.x).
 */
function resultsOf(reply: unknown, kind: string): Mem0ClientMemory[] {
  const list = Array.isArray(reply)
    ? reply
    : typeof reply === 'object' && reply !== null
      ? (reply as { results?: unknown }).results
      : undefined;
  if (!Array.isArray(list)) {
    const got = reply === null ? 'null' : typeof reply === 'object' ? 'an object without a results list' : typeof reply;
    throw new BackendUnavailableError(
      'mem0',
      `mem0 (${kind}) answered a search with ${got} instead of { results: [...] }; check that the client is a mem0ai 3.x MemoryClient or Memory and that its host speaks the mem0 v3 API.`,
    );
  }
  return list.map((r) => (typeof r === 'object' && r !== null ? (r as Mem0ClientMemory) : {}));
}

function toMemory(raw: Mem0ClientMemory, field: (name: 'userId' | 'agentId' | 'appId' | 'runId' | 'createdAt') => unknown): Mem0Memory {
  const memory: Mem0Memory = { id: typeof raw.id === 'string' ? raw.id : '', text: typeof raw.memory === 'string' ? raw.memory : '' };
  if (typeof raw.score === 'number' && Number.isFinite(raw.score)) memory.score = raw.score;
  for (const key of MEM0_SCOPE_KEYS) {
    const value = str(field(key));
    if (value !== undefined) memory[key] = value;
  }
  const created = field('createdAt');
  if (typeof created === 'string') memory.createdAt = created;
  else if (created instanceof Date) memory.createdAt = created.toISOString();
  return memory;
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

/**
 * An adapter over the platform `MemoryClient` (`mem0ai`): `search` sends the scope as `filters`
 * (`POST /v3/memories/search/`), `add` sends it as top-level `user_id` / `agent_id` / `app_id` /
 * `run_id` (`POST /v3/memories/add/`).
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
      return resultsOf(reply, 'platform').map((raw) =>
        toMemory(raw, (name) => raw[name] ?? raw[name === 'createdAt' ? 'created_at' : MEM0_FIELD[name]]),
      );
    },
    async add({ messages, scope, metadata, infer }) {
      await client.add(messages, { ...scope, ...(metadata !== undefined ? { metadata } : {}), ...(infer !== undefined ? { infer } : {}) });
    },
  };
}

/**
 * An adapter over the open-source `Memory` (`mem0ai/oss`). It has no `appId`: the adapter stores
 * it as the metadata field `app_id` and filters on that field, which the OSS vector stores match
 * like the entity ids.
 */
export function createOssAdapter(memory: OssMemoryLike): Mem0Adapter {
  return {
    kind: 'oss',
    async search({ query, scope, topK, threshold }) {
      const filters: Record<string, unknown> = {};
      for (const key of MEM0_SCOPE_KEYS) if (scope[key] !== undefined) filters[MEM0_FIELD[key]] = scope[key];
      if (scope.userId === undefined && scope.agentId === undefined && scope.runId === undefined) {
        throw new ConfigurationError(
          'mem0 OSS searches need a userId, agentId or runId in the scope; appId alone is only supported by the platform.',
        );
      }
      const reply = await memory.search(query, { filters, topK, ...(threshold !== undefined ? { threshold } : {}) });
      return resultsOf(reply, 'oss').map((raw) => {
        const meta = typeof raw.metadata === 'object' && raw.metadata !== null ? (raw.metadata as Record<string, unknown>) : {};
        return toMemory(raw, (name) => (name === 'appId' ? meta.app_id : name === 'createdAt' ? raw.createdAt : raw[MEM0_FIELD[name]]));
      });
    },
    async add({ messages, scope, metadata, infer }) {
      if (scope.userId === undefined && scope.agentId === undefined && scope.runId === undefined) {
        throw new ConfigurationError(
          'mem0 OSS stores memories under a userId, agentId or runId; a store scope of appId alone is only supported by the platform.',
        );
      }
      const meta: JsonObject = { ...metadata };
      if (scope.appId !== undefined) meta.app_id = scope.appId;
      const config: Record<string, unknown> = { metadata: meta };
      if (scope.userId !== undefined) config.userId = scope.userId;
      if (scope.agentId !== undefined) config.agentId = scope.agentId;
      if (scope.runId !== undefined) config.runId = scope.runId;
      if (infer !== undefined) config.infer = infer;
      await memory.add(messages, config);
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
