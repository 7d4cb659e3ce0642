import type { SearchClient, SearchField, SearchIndex, SearchIndexClient } from '@azure/search-documents';
import { BackendUnavailableError, ConfigurationError, type EmbeddingGenerator, type JsonValue } from '@ctx/core';
import { checkOptionNames, optionNames, shortId } from '@ctx/core/backend';
import { toSearchError } from './connection.js';
import { checkFieldPath } from './odata.js';

/** Field names of the example index; pass it as `fields` to the provider to map results. */
export const EXAMPLE_INDEX_FIELDS = { id: 'id', content: 'content', title: 'title', url: 'url', vector: 'contentVector' } as const;

/** Options of `defineSearchIndex` / `createSearchIndex`. */
export interface SearchIndexDefinitionOptions {
  /** Lower-case letters, digits and dashes. */
  name: string;
  /** Field names. Default `EXAMPLE_INDEX_FIELDS`. */
  fields?: { id?: string; content?: string; title?: string; url?: string; vector?: string };
  /** Length of the embeddings; gives the index a vector field (HNSW, cosine). Default: no vector field. */
  dimensions?: number;
  /** Extra filterable `Edm.String` fields for scoping, e.g. `['tenantId']`. */
  filterableFields?: readonly string[];
  /** Extra filterable `Collection(Edm.String)` fields, e.g. `['groups']` (scope with `{ groups: { any: [...] } }`). */
  filterableCollections?: readonly string[];
  /** An Azure OpenAI vectorizer, so `vectorizer: 'index'` (server-side query embedding) works. Needs `dimensions`. */
  vectorizer?: { resourceUrl: string; deploymentId: string; modelName?: string; apiKey?: string };
  /** Name of the semantic configuration (title + content), or false for none. Default `default`. */
  semanticConfiguration?: string | false;
}

const DEFINITION_OPTIONS = {
  name: true,
  fields: true,
  dimensions: true,
  filterableFields: true,
  filterableCollections: true,
  vectorizer: true,
  semanticConfiguration: true,
} as const satisfies { readonly [K in keyof Required<SearchIndexDefinitionOptions>]: true };
const DEFINITION_OPTION_NAMES = optionNames<SearchIndexDefinitionOptions>()(DEFINITION_OPTIONS);
const CREATE_OPTION_NAMES = optionNames<SearchIndexDefinitionOptions & { signal?: AbortSignal }>()({ ...DEFINITION_OPTIONS, signal: true });

/**
 * The definition of a small RAG index: a key, searchable content and title, retrievable url,
 * your filterable scoping fields, and optionally a vector field (HNSW, cosine, hidden from results)
 * with an Azure OpenAI vectorizer, plus a semantic configuration over title and content.
 * @throws ConfigurationError for invalid names or dimensions, or an option it does not know (named).
 */
export function defineSearchIndex(options: SearchIndexDefinitionOptions): SearchIndex {
  checkOptionNames('defineSearchIndex', options, DEFINITION_OPTION_NAMES);
  return searchIndexDefinition(options);
}

function searchIndexDefinition(options: SearchIndexDefinitionOptions): SearchIndex {
  const names = { ...EXAMPLE_INDEX_FIELDS, ...options.fields };
  for (const name of Object.values(names)) checkFieldPath(name, 'defineSearchIndex fields');
  if (!/^[a-z0-9](?:[a-z0-9-]{0,126}[a-z0-9])?$/.test(options.name ?? '')) {
    throw new ConfigurationError(
      `defineSearchIndex: index name ${JSON.stringify(options.name)} must be lower-case letters, digits and dashes (not at either end), at most 128 characters.`,
    );
  }
  const { dimensions } = options;
  if (dimensions !== undefined && !(Number.isInteger(dimensions) && dimensions >= 2 && dimensions <= 4096)) {
    throw new ConfigurationError(`defineSearchIndex: dimensions must be an integer from 2 to 4096, got ${String(dimensions)}.`);
  }
  if (options.vectorizer && dimensions === undefined) throw new ConfigurationError('defineSearchIndex: a vectorizer needs `dimensions`.');
  const fields: SearchField[] = [
    { name: names.id, type: 'Edm.String', key: true, filterable: true },
    { name: names.title, type: 'Edm.String', searchable: true },
    { name: names.content, type: 'Edm.String', searchable: true },
    { name: names.url, type: 'Edm.String' },
    ...(options.filterableFields ?? []).map(
      (name): SearchField => ({ name: checkFieldPath(name, 'defineSearchIndex filterableFields'), type: 'Edm.String', filterable: true }),
    ),
    ...(options.filterableCollections ?? []).map(
      (name): SearchField => ({
        name: checkFieldPath(name, 'defineSearchIndex filterableCollections'),
        type: 'Collection(Edm.String)',
        filterable: true,
      }),
    ),
  ];
  const index: SearchIndex = { name: options.name, fields };
  if (dimensions !== undefined) {
    fields.push({
      name: names.vector,
      type: 'Collection(Edm.Single)',
      searchable: true,
      hidden: true,
      vectorSearchDimensions: dimensions,
      vectorSearchProfileName: 'ctx-vector-profile',
    });
    const v = options.vectorizer;
    index.vectorSearch = {
      algorithms: [{ name: 'ctx-hnsw', kind: 'hnsw', parameters: { metric: 'cosine' } }],
      profiles: [
        { name: 'ctx-vector-profile', algorithmConfigurationName: 'ctx-hnsw', ...(v ? { vectorizerName: 'ctx-vectorizer' } : {}) },
      ],
      ...(v
        ? {
            vectorizers: [
              {
                vectorizerName: 'ctx-vectorizer',
                kind: 'azureOpenAI' as const,
                parameters: {
                  resourceUrl: v.resourceUrl,
                  deploymentId: v.deploymentId,
                  modelName: (v.modelName ?? 'text-embedding-3-small') as 'text-embedding-3-small',
                  ...(v.apiKey ? { apiKey: v.apiKey } : {}),
                },
              },
            ],
          }
        : {}),
    };
  }
  if (options.semanticConfiguration !== false) {
    const name = options.semanticConfiguration ?? 'default';
    index.semanticSearch = {
      defaultConfigurationName: name,
      configurations: [{ name, prioritizedFields: { titleField: { name: names.title }, contentFields: [{ name: names.content }] } }],
    };
  }
  return index;
}

/**
 * Creates the index `defineSearchIndex(options)` describes, or updates it (fields may be added,
 * not changed). Returns the definition the service stored.
 * @throws ConfigurationError for invalid or unknown options (as `defineSearchIndex`); ConfigurationError /
 *   BackendUnavailableError as the service answers.
 */
export async function createSearchIndex(
  client: SearchIndexClient,
  options: SearchIndexDefinitionOptions & { signal?: AbortSignal },
): Promise<SearchIndex> {
  checkOptionNames('createSearchIndex', options, CREATE_OPTION_NAMES);
  const definition = searchIndexDefinition(options);
  try {
    return await client.createOrUpdateIndex(definition, options.signal ? { abortSignal: options.signal } : {});
  } catch (error) {
    throw toSearchError(error, options.name);
  }
}

/** A document for `uploadSearchDocuments`: id, content, optional title and url, and any other index fields. */
export interface SearchDocumentInput {
  id: string;
  content: string;
  title?: string;
  url?: string;
  [field: string]: JsonValue | undefined;
}

/** Options of `uploadSearchDocuments`. */
export interface UploadSearchDocumentsOptions {
  /** Embeds each document (see `embedText`) into the vector field. Leave out for an index without vectors. */
  embeddings?: EmbeddingGenerator;
  /** Field names, as given to `defineSearchIndex`. Default `EXAMPLE_INDEX_FIELDS`. */
  fields?: { id?: string; content?: string; title?: string; url?: string; vector?: string };
  /** The text embedded for a document. Default: its title and content, one per line. */
  embedText?: (document: SearchDocumentInput) => string;
  /** Documents per request (the service allows 1,000). Default 500. */
  batchSize?: number;
  signal?: AbortSignal;
}

const UPLOAD_OPTION_NAMES = optionNames<UploadSearchDocumentsOptions>()({
  embeddings: true,
  fields: true,
  embedText: true,
  batchSize: true,
  signal: true,
});
const KEY = /^[A-Za-z0-9_\-=]+$/;

/**
 * Uploads documents (merge-or-upload, so running it again updates instead of duplicating), with
 * their embeddings when `embeddings` is given. Ids must be valid document keys (letters, digits,
 * `_`, `-`, `=`); use `toDocumentKey` for anything else.
 * @throws ConfigurationError for an option it does not know (named), invalid keys, an `embeddings` generator that returns the wrong number
 *   of vectors, or documents the service refused for good (named); BackendUnavailableError when the
 *   service cannot be reached or refused documents only for the moment (409, 422, 429, 5xx: upload again).
 *   Batches sent before the failure stay uploaded.
 */
export async function uploadSearchDocuments(
  client: SearchClient<object>,
  documents: readonly SearchDocumentInput[],
  options: UploadSearchDocumentsOptions = {},
): Promise<{ uploaded: number }> {
  checkOptionNames('uploadSearchDocuments', options, UPLOAD_OPTION_NAMES);
  const names = { ...EXAMPLE_INDEX_FIELDS, ...options.fields };
  const invalid = documents.filter((d) => typeof d.id !== 'string' || !KEY.test(d.id)).map((d) => JSON.stringify(d.id));
  if (invalid.length) {
    throw new ConfigurationError(
      `uploadSearchDocuments: ${invalid.length} document id(s) are not valid Azure AI Search keys (letters, digits, _, - and = only): ${invalid.slice(0, 5).join(', ')}. Map them with toDocumentKey(id).`,
    );
  }
  const batchSize = options.batchSize ?? 500;
  if (!(Number.isInteger(batchSize) && batchSize > 0 && batchSize <= 1000))
    throw new ConfigurationError(`uploadSearchDocuments: batchSize must be an integer from 1 to 1000, got ${String(batchSize)}.`);
  const embedText = options.embedText ?? ((d: SearchDocumentInput) => [d.title, d.content].filter(Boolean).join('\n'));
  let uploaded = 0;
  for (let i = 0; i < documents.length; i += batchSize) {
    const batch = documents.slice(i, i + batchSize);
    const vectors = options.embeddings
      ? await options.embeddings.embed(batch.map(embedText), options.signal ? { signal: options.signal } : {})
      : undefined;
    if (vectors && vectors.length !== batch.length) {
      throw new ConfigurationError(
        `uploadSearchDocuments: the embeddings returned ${vectors.length} vectors for ${batch.length} documents; check that the EmbeddingGenerator given as \`embeddings\` returns one vector per text.`,
      );
    }
    const rows = batch.map((d, j) => {
      const row: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(d)) {
        if (value === undefined) continue;
        const field =
          key === 'id' ? names.id : key === 'content' ? names.content : key === 'title' ? names.title : key === 'url' ? names.url : key;
        row[field] = value;
      }
      if (vectors) row[names.vector] = vectors[j];
      return row;
    });
    let result: Awaited<ReturnType<typeof client.mergeOrUploadDocuments>>;
    try {
      result = await client.mergeOrUploadDocuments(rows, options.signal ? { abortSignal: options.signal } : {});
    } catch (error) {
      throw toSearchError(error, client.indexName);
    }
    const failed = result.results.filter((r) => !r.succeeded);
    if (failed.length) throw refused(client.indexName, failed, uploaded);
    uploaded += batch.length;
  }
  return { uploaded };
}

/** Service statuses of a refused document that pass: a version conflict, an index briefly unavailable, throttling, a server error. */
const TRANSIENT = (status: number) => status === 409 || status === 422 || status === 429 || status >= 500;

/** The error for documents a batch left out: transient refusals are worth uploading again, the others need fixing. */
function refused(
  indexName: string,
  failed: readonly { key: string; statusCode: number; errorMessage?: string | undefined }[],
  uploaded: number,
): BackendUnavailableError | ConfigurationError {
  const which = failed
    .slice(0, 5)
    .map((f) => `${f.key} (${f.statusCode}: ${f.errorMessage ?? 'no message'})`)
    .join('; ');
  const what = `uploadSearchDocuments: index ${shortId(indexName)} refused ${failed.length} document(s): ${which}.`;
  const before = uploaded > 0 ? ` The ${uploaded} document(s) of earlier batches were uploaded.` : '';
  if (failed.every((f) => TRANSIENT(f.statusCode))) {
    return new BackendUnavailableError(
      'azure-search',
      `${what} The service refused them for the moment: upload them again (merge-or-upload is safe to repeat).${before}`,
    );
  }
  return new ConfigurationError(`${what} Check those documents' fields and values against the index definition.${before}`);
}

/**
 * A valid document key for any id: the URL-safe base64 of its UTF-8 bytes (the service's own
 * `base64Encode` mapping), so ids with `/`, spaces or quotes can be stored and looked up.
 */
export function toDocumentKey(id: string): string {
  return Buffer.from(id, 'utf8').toString('base64url');
}
