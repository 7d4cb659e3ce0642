import type { SearchField, SearchIndex, SearchIndexClient } from '@azure/search-documents';
import {
  BackendUnavailableError,
  ConfigurationError,
  InvalidInputError,
  type IndexedMessage,
  type Role,
  type VectorDeleteTarget,
  type VectorIndex,
  type VectorIndexCallOptions,
  type VectorMatch,
  type VectorQuery,
  type VectorRange,
  type VectorRecord,
  type VectorScope,
} from '@ctx/core';
import {
  checkOptionNames,
  checkVectorRange,
  checkVectorRecord,
  compareBySessionAndSequence,
  optionNames,
  shortId,
} from '@ctx/core/backend';
import { CONNECTION_OPTION_NAMES, connect, toSearchError, type AzureSearchConnectionOptions } from './connection.js';
import { andFilters, odataLiteral, scopeToFilter } from './odata.js';
import { toDocumentKey } from './search-index.js';

/** Field names of the index `defineVectorIndex` describes; `AzureSearchVectorIndex` reads and writes these. */
export const VECTOR_INDEX_FIELDS = {
  key: 'key',
  id: 'recordId',
  text: 'text',
  userId: 'userId',
  sessionId: 'sessionId',
  messageId: 'messageId',
  role: 'role',
  sequence: 'sequence',
  createdAt: 'createdAt',
  kind: 'kind',
  vector: 'vector',
} as const;

/** Options of `defineVectorIndex` / `createVectorIndex`. */
export interface VectorIndexDefinitionOptions {
  /** Lower-case letters, digits and dashes. */
  name: string;
  /** Length of the embeddings, from 2 to 4096. */
  dimensions: number;
  /**
   * The vector search algorithm, both with the cosine metric: `'hnsw'` (approximate, the service's
   * default; `AzureSearchVectorIndex` still asks for exact k-NN at query time unless `exhaustive: false`)
   * or `'exhaustiveKnn'` (always exact). Default `'hnsw'`.
   */
  algorithm?: 'hnsw' | 'exhaustiveKnn';
}

const DEFINITION_OPTIONS = { name: true, dimensions: true, algorithm: true } as const satisfies {
  readonly [K in keyof Required<VectorIndexDefinitionOptions>]: true;
};
const DEFINITION_OPTION_NAMES = optionNames<VectorIndexDefinitionOptions>()(DEFINITION_OPTIONS);
const CREATE_OPTION_NAMES = optionNames<VectorIndexDefinitionOptions & { signal?: AbortSignal }>()({ ...DEFINITION_OPTIONS, signal: true });
const NAME = /^[a-z0-9](?:[a-z0-9-]{0,126}[a-z0-9])?$/;
const F = VECTOR_INDEX_FIELDS;
/** Documents per indexing request, and results per page of a scan (the service's limits). */
const BATCH = 1000;
/** The most records one filtered scan pages through (the service's `skip` stops at 100,000). */
const MAX_SCAN = 100_000;
/** The most `k` a vector query may ask for. */
const MAX_TOP_K = 1000;

/**
 * The definition of an index for `AzureSearchVectorIndex`: a key (the URL-safe base64 of the
 * record id), the record id, text, filterable `userId`, `sessionId`, `messageId`, `kind`, a
 * filterable and sortable `sequence` (`Edm.Int64`), `role`, `createdAt`, and a hidden vector field
 * searched by cosine similarity.
 * @throws ConfigurationError for an invalid name, dimensions or algorithm, or an option it does not know (named).
 */
export function defineVectorIndex(options: VectorIndexDefinitionOptions): SearchIndex {
  checkOptionNames('defineVectorIndex', options, DEFINITION_OPTION_NAMES);
  return vectorIndexDefinition(options);
}

function vectorIndexDefinition(options: VectorIndexDefinitionOptions): SearchIndex {
  if (!NAME.test(options?.name ?? '')) {
    throw new ConfigurationError(
      `defineVectorIndex: index name ${JSON.stringify(options?.name)} must be lower-case letters, digits and dashes (not at either end), at most 128 characters.`,
    );
  }
  checkDimensions('defineVectorIndex', options.dimensions);
  const algorithm = options.algorithm ?? 'hnsw';
  if (algorithm !== 'hnsw' && algorithm !== 'exhaustiveKnn')
    throw new ConfigurationError(`defineVectorIndex: algorithm must be 'hnsw' or 'exhaustiveKnn', got ${JSON.stringify(algorithm)}.`);
  const text = (name: string, filterable = false): SearchField => ({ name, type: 'Edm.String', filterable });
  const fields: SearchField[] = [
    { name: F.key, type: 'Edm.String', key: true, filterable: true },
    text(F.id),
    { name: F.text, type: 'Edm.String', searchable: true },
    text(F.userId, true),
    text(F.sessionId, true),
    text(F.messageId, true),
    text(F.role),
    { name: F.sequence, type: 'Edm.Int64', filterable: true, sortable: true },
    text(F.createdAt),
    text(F.kind, true),
    {
      name: F.vector,
      type: 'Collection(Edm.Single)',
      searchable: true,
      hidden: true,
      vectorSearchDimensions: options.dimensions,
      vectorSearchProfileName: 'ctx-recall-profile',
    },
  ];
  return {
    name: options.name,
    fields,
    vectorSearch: {
      algorithms: [
        algorithm === 'hnsw'
          ? { name: 'ctx-recall-algorithm', kind: 'hnsw', parameters: { metric: 'cosine' } }
          : { name: 'ctx-recall-algorithm', kind: 'exhaustiveKnn', parameters: { metric: 'cosine' } },
      ],
      profiles: [{ name: 'ctx-recall-profile', algorithmConfigurationName: 'ctx-recall-algorithm' }],
    },
  };
}

/**
 * Creates the index `defineVectorIndex(options)` describes, or updates it. Returns the definition
 * the service stored.
 * @throws ConfigurationError for invalid or unknown options (as `defineVectorIndex`); ConfigurationError /
 *   BackendUnavailableError as the service answers.
 */
export async function createVectorIndex(
  client: SearchIndexClient,
  options: VectorIndexDefinitionOptions & { signal?: AbortSignal },
): Promise<SearchIndex> {
  checkOptionNames('createVectorIndex', options, CREATE_OPTION_NAMES);
  const definition = vectorIndexDefinition(options);
  try {
    return await client.createOrUpdateIndex(definition, options.signal ? { abortSignal: options.signal } : {});
  } catch (error) {
    throw options.signal?.aborted ? options.signal.reason : toSearchError(error, options.name);
  }
}

/** Options of `AzureSearchVectorIndex`: the connection (a `SearchClient`, or endpoint, index name and credential) and the vector length. */
export interface AzureSearchVectorIndexOptions extends AzureSearchConnectionOptions {
  /** Vector length of the index (its vector field's `vectorSearchDimensions`), from 2 to 4096. */
  dimensions: number;
  /**
   * Ask the service for exact k-NN over the filtered records (`exhaustive: true` on every vector
   * query), so recall does not depend on the HNSW graph. Default true; set false on large indexes
   * where approximate search is good enough.
   */
  exhaustive?: boolean;
  /** Time limit of the retry-after check of a client the package creates, in ms. Default 10,000. */
  timeoutMs?: number;
}

const OPTION_NAMES = optionNames<AzureSearchVectorIndexOptions>()({
  ...CONNECTION_OPTION_NAMES,
  dimensions: true,
  exhaustive: true,
  timeoutMs: true,
});

type Document = Record<string, unknown>;

/**
 * A `VectorIndex` on Azure AI Search, for `SemanticRecallProvider` and compaction's `archive`:
 * each record a document of an index made by `createVectorIndex` (or `defineVectorIndex`), searched
 * by cosine k-NN pre-filtered to a user or a session. Record ids of any form are stored under
 * `toDocumentKey(id)`; filters escape every value. Scores are the cosine similarity (the service's
 * `@search.score` for cosine, `1 / (2 - cosine)`, turned back).
 * @throws ConfigurationError (constructor) for a bad connection or `dimensions`, or an option it does not know (named).
 */
export class AzureSearchVectorIndex implements VectorIndex {
  readonly specificationVersion = 'v1';
  /** Vector length of the index. */
  readonly dimensions: number;
  /** The index name. */
  readonly indexName: string;
  readonly #client;
  readonly #exhaustive: boolean;

  constructor(options: AzureSearchVectorIndexOptions) {
    checkOptionNames('AzureSearchVectorIndex', options, OPTION_NAMES);
    checkDimensions('AzureSearchVectorIndex', options?.dimensions);
    this.#client = connect('AzureSearchVectorIndex', options, options.timeoutMs ?? 10_000);
    this.dimensions = options.dimensions;
    this.indexName = this.#client.indexName;
    this.#exhaustive = options.exhaustive ?? true;
  }

  /**
   * Stores the records (`upload`: a record with a stored id replaces it), in requests of 1,000.
   * @throws InvalidInputError naming the record for a malformed one (nothing of the batch is sent);
   *   BackendUnavailableError / ConfigurationError as the service answers (batches sent before stay stored:
   *   upsert again, it is idempotent).
   */
  async upsert(records: readonly VectorRecord[], options?: VectorIndexCallOptions): Promise<void> {
    const signal = options?.signal;
    signal?.throwIfAborted();
    if (!Array.isArray(records)) throw new InvalidInputError('AzureSearchVectorIndex.upsert: records must be an array of vector records.');
    const documents = records.map((record, i) => this.#document(record, i));
    for (let i = 0; i < documents.length; i += BATCH) {
      const batch = documents.slice(i, i + BATCH);
      const result = await this.#call(signal, (abortSignal) => this.#client.uploadDocuments(batch, { abortSignal }));
      const failed = result.results.filter((r) => !r.succeeded);
      if (failed.length) {
        const which = failed
          .slice(0, 5)
          .map((f) => `${f.key} (${f.statusCode}: ${f.errorMessage ?? 'no message'})`)
          .join('; ');
        throw new BackendUnavailableError(
          'azure-search',
          `AzureSearchVectorIndex.upsert: index ${shortId(this.indexName)} refused ${failed.length} record(s): ${which}. Upsert them again; it is idempotent.`,
        );
      }
    }
  }

  /**
   * The `topK` closest records of the scope, best first, with their cosine similarity.
   * @throws InvalidInputError for an empty scope, a `topK` that is not an integer from 1 to 1,000, or a vector of the wrong length.
   */
  async query(query: VectorQuery, options?: VectorIndexCallOptions): Promise<VectorMatch[]> {
    const signal = options?.signal;
    signal?.throwIfAborted();
    const { vector, topK, filter, minScore } = query ?? ({} as VectorQuery);
    const scope = scopeFilter('query', filter);
    if (!Number.isInteger(topK) || topK <= 0 || topK > MAX_TOP_K)
      throw new InvalidInputError(
        `AzureSearchVectorIndex.query: topK must be an integer from 1 to ${MAX_TOP_K} (the service's largest k), got ${String(topK)}.`,
        { limit: 'topK' },
      );
    if (!Array.isArray(vector) || !vector.every(Number.isFinite))
      throw new InvalidInputError('AzureSearchVectorIndex.query: vector must be an array of finite numbers.');
    if (vector.length !== this.dimensions)
      throw new InvalidInputError(
        `AzureSearchVectorIndex.query: the query vector has ${vector.length} dimensions, index ${shortId(this.indexName)} ${this.dimensions}; embed queries with the model that embedded the records.`,
      );
    if (minScore !== undefined && !Number.isFinite(minScore))
      throw new InvalidInputError(`AzureSearchVectorIndex.query: minScore must be a finite number, got ${String(minScore)}.`);
    if (vector.every((x) => x === 0)) return [];
    const exclude = filter.excludeMessageIds?.length
      ? `not (${scopeToFilter({ [F.messageId]: [...filter.excludeMessageIds] })})`
      : undefined;
    const matches: VectorMatch[] = [];
    await this.#call(signal, async (abortSignal) => {
      const response = await this.#client.search(undefined, {
        filter: andFilters(scope, exclude)!,
        top: topK,
        select: SELECT as never[],
        vectorSearchOptions: {
          queries: [
            {
              kind: 'vector',
              vector: [...vector],
              kNearestNeighborsCount: topK,
              fields: [F.vector] as never[],
              exhaustive: this.#exhaustive,
            },
          ],
          filterMode: 'preFilter',
        },
        abortSignal,
      });
      for await (const result of response.results) {
        const score = Math.max(-1, Math.min(1, 2 - 1 / result.score));
        if (minScore !== undefined && score < minScore) continue;
        matches.push({ ...fromDocument(result.document as Document), score });
        if (matches.length === topK) break;
      }
    });
    return matches.sort((a, b) => b.score - a.score);
  }

  /**
   * The records of one session within the sequence range, by sequence.
   * @throws InvalidInputError for a missing session id or a range that is not two integers.
   */
  async getRange(range: VectorRange, options?: VectorIndexCallOptions): Promise<IndexedMessage[]> {
    const signal = options?.signal;
    signal?.throwIfAborted();
    const { sessionId, userId, fromSequence, toSequence } = checkVectorRange('AzureSearchVectorIndex', range);
    if (toSequence < fromSequence) return [];
    const filter = andFilters(
      scopeToFilter(userId === undefined ? { [F.sessionId]: sessionId } : { [F.sessionId]: sessionId, [F.userId]: userId }),
      `${F.sequence} ge ${odataLiteral(fromSequence)} and ${F.sequence} le ${odataLiteral(toSequence)}`,
    )!;
    const documents = await this.#scan('getRange', filter, SELECT, signal, [`${F.sequence} asc`]);
    return documents.map(fromDocument).sort((a, b) => a.sequence - b.sequence);
  }

  /**
   * Every record of the scope, without vectors, by session id and then sequence (a filtered scan).
   * @throws InvalidInputError for an empty scope.
   */
  async list(scope: VectorScope, options?: VectorIndexCallOptions): Promise<IndexedMessage[]> {
    const signal = options?.signal;
    signal?.throwIfAborted();
    const filter = scopeFilter('list', scope);
    const documents = await this.#scan('list', filter, SELECT, signal);
    return documents.map(fromDocument).sort(compareBySessionAndSequence);
  }

  /**
   * Removes records by id, or every record of a scope (found by a filtered scan, deleted in requests of 1,000).
   * @throws InvalidInputError for an empty scope or ids that are not strings.
   */
  async delete(target: VectorDeleteTarget, options?: VectorIndexCallOptions): Promise<void> {
    const signal = options?.signal;
    signal?.throwIfAborted();
    let keys: string[];
    if (target && 'ids' in target) {
      if (!Array.isArray(target.ids) || !target.ids.every((id) => typeof id === 'string'))
        throw new InvalidInputError('AzureSearchVectorIndex.delete: ids must be an array of strings.');
      keys = target.ids.filter((id) => id !== '').map(toDocumentKey);
    } else {
      const filter = scopeFilter('delete', target as VectorScope);
      keys = (await this.#scan('delete', filter, [F.key], signal)).map((d) => d[F.key] as string);
    }
    for (let i = 0; i < keys.length; i += BATCH) {
      const batch = keys.slice(i, i + BATCH);
      await this.#call(signal, (abortSignal) => this.#client.deleteDocuments(F.key as never, batch, { abortSignal }));
    }
  }

  /**
   * Every document matching `filter`, page by page. The service pages a search by `skip`, which
   * stops at 100,000: a filter that matches more is refused (the first page's count says so) before
   * anything is read, rather than cut short.
   * @throws InvalidInputError (`limit: 'scanRecords'`) naming the index, the count and the limit.
   */
  async #scan(
    operation: string,
    filter: string,
    select: readonly string[],
    signal: AbortSignal | undefined,
    orderBy?: string[],
  ): Promise<Document[]> {
    const out: Document[] = [];
    await this.#call(signal, async (abortSignal) => {
      const response = await this.#client.search('*', {
        filter,
        select: select as never[],
        top: MAX_SCAN,
        includeTotalCount: true,
        ...(orderBy ? { orderBy } : {}),
        abortSignal,
      });
      if (response.count !== undefined && response.count > MAX_SCAN) {
        throw new InvalidInputError(
          `AzureSearchVectorIndex.${operation}: ${response.count} records of index ${shortId(this.indexName)} match (${filter}), more than the ${MAX_SCAN} one filtered scan can page through; nothing was ${operation === 'delete' ? 'deleted' : 'read'}. Narrow it: one session at a time, or delete records by id.`,
          { limit: 'scanRecords' },
        );
      }
      for await (const result of response.results) out.push(result.document as Document);
    });
    return out;
  }

  /** Runs a service call with the caller's signal; errors become ctx errors, an abort its reason. */
  async #call<T>(signal: AbortSignal | undefined, run: (abortSignal: AbortSignal | undefined) => Promise<T>): Promise<T> {
    try {
      return await run(signal);
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      throw toSearchError(error, this.indexName);
    }
  }

  /** The document of a record, after checking every field. */
  #document(record: VectorRecord, i: number): Document {
    checkVectorRecord(record, i, { owner: 'AzureSearchVectorIndex', dimensions: this.dimensions, indexName: this.indexName });
    return {
      [F.key]: toDocumentKey(record.id),
      [F.id]: record.id,
      [F.text]: record.text,
      [F.userId]: record.userId ?? null,
      [F.sessionId]: record.sessionId,
      [F.messageId]: record.messageId,
      [F.role]: record.role,
      [F.sequence]: record.sequence,
      [F.createdAt]: record.createdAt ?? null,
      [F.kind]: record.kind ?? null,
      [F.vector]: [...record.vector],
    };
  }
}

const SELECT = [F.id, F.text, F.userId, F.sessionId, F.messageId, F.role, F.sequence, F.createdAt, F.kind];

function checkDimensions(owner: string, dimensions: unknown): void {
  if (!(Number.isInteger(dimensions) && (dimensions as number) >= 2 && (dimensions as number) <= 4096))
    throw new ConfigurationError(`${owner}: dimensions must be an integer from 2 to 4096, got ${String(dimensions)}.`);
}

/** The OData filter of a scope, checked: at least a user or a session, each a non-empty string. */
function scopeFilter(operation: string, scope: VectorScope | undefined): string {
  const ok = (v: unknown) => v === undefined || (typeof v === 'string' && v.length > 0);
  if (!scope || typeof scope !== 'object' || !ok(scope.userId) || !ok(scope.sessionId))
    throw new InvalidInputError(
      `AzureSearchVectorIndex.${operation}: the filter's userId and sessionId must be non-empty strings when set.`,
    );
  if (scope.userId === undefined && scope.sessionId === undefined)
    throw new InvalidInputError(
      `AzureSearchVectorIndex.${operation}: the filter needs a userId or a sessionId; an index is never searched or cleared across users.`,
    );
  const fields: Record<string, string> = {};
  if (scope.userId !== undefined) fields[F.userId] = scope.userId;
  if (scope.sessionId !== undefined) fields[F.sessionId] = scope.sessionId;
  return scopeToFilter(fields)!;
}

function fromDocument(document: Document): IndexedMessage {
  const out: IndexedMessage = {
    id: document[F.id] as string,
    text: document[F.text] as string,
    sessionId: document[F.sessionId] as string,
    messageId: document[F.messageId] as string,
    role: document[F.role] as Role,
    sequence: Number(document[F.sequence]),
  };
  if (typeof document[F.userId] === 'string') out.userId = document[F.userId] as string;
  const createdAt = document[F.createdAt];
  // The SDK turns ISO 8601 strings of a result into Dates; a record's createdAt is ISO 8601 UTC, so this gives it back.
  if (typeof createdAt === 'string') out.createdAt = createdAt;
  else if (createdAt instanceof Date) out.createdAt = createdAt.toISOString();
  if (document[F.kind] === 'archive') out.kind = 'archive';
  return out;
}
