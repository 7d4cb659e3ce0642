import type { SearchClient, SearchOptions, VectorQuery } from '@azure/search-documents';
import {
  ConfigurationError,
  type EmbeddingGenerator,
  type JsonObject,
  type JsonValue,
  type RetrievalResult,
  type Retriever,
  type RetrieverSearchOptions,
} from '@ctx/core';
import { checkInteger, checkOptionNames, checkPositiveNumber, optionNames, shortId, withDeadline } from '@ctx/core/backend';
import { CONNECTION_OPTION_NAMES, connect, toSearchError, type AzureSearchConnectionOptions } from './connection.js';
import { andFilters, checkFieldPath } from './odata.js';

/**
 * How the query is run:
 * - `keyword`: full-text search (BM25) over the searchable fields.
 * - `vector`: k-nearest-neighbour search over the vector field(s).
 * - `hybrid`: both, merged by the service with reciprocal rank fusion.
 * - `semantic`: the semantic ranker reranks the keyword (or, with a `vectorizer`, hybrid) results;
 *   scores are `@search.rerankerScore` (0-4), with captions and answers when asked.
 */
export type AzureSearchQueryMode = 'keyword' | 'vector' | 'hybrid' | 'semantic';

/** Which index fields make up a result. */
export interface AzureSearchFieldMapping {
  /** The document id shown and cited. Default `id`. */
  id?: string;
  /** The text given to the model; several fields are joined with a line break. Default `content`. */
  content?: string | readonly string[];
  /** Optional title, shown and cited. */
  title?: string;
  /** Optional link, shown and cited. */
  url?: string;
  /** Vector field(s) searched in `vector` and `hybrid` modes (and `semantic` with a vectorizer). */
  vector?: string | readonly string[];
}

/** Semantic ranking settings (`queryMode: 'semantic'`). */
export interface AzureSemanticOptions {
  /** The semantic configuration to use. Default: the index's default configuration. */
  configuration?: string;
  /** Ask for extractive captions (kept in `metadata['@search.captions']`). Default false. */
  captions?: boolean;
  /** Ask for extractive answers: `true` for one, or how many (kept on the result they come from, `metadata['@search.answers']`). Default none. */
  answers?: boolean | number;
  /** Answers below this confidence (0-1) are left out by the service. Default: the service's (0.7). */
  answerThreshold?: number;
  /** Give the model each result's caption instead of its whole content (fewer tokens); needs `captions`. Default false. */
  captionsAsContent?: boolean;
  /**
   * What the service does when the semantic ranker fails or is overloaded: `'partial'` answers
   * with the base results (HTTP 206, no reranker scores, see `minScore`), `'fail'` fails the search
   * (a `BackendUnavailableError`). Default `'partial'`.
   */
  errorMode?: 'partial' | 'fail';
  /** Milliseconds the service may spend on semantic ranking before it answers with base results (at least 700). Default: the service's. */
  maxWaitMs?: number;
}

/**
 * Score thresholds per scale. A result is compared only with the threshold of the scale its
 * score is on, so a reranker threshold (0-4) is never compared with a base `@search.score`.
 */
export interface AzureSearchMinScore {
  /** `@search.rerankerScore` (0-4), for results the semantic ranker scored (`queryMode: 'semantic'`). */
  reranker?: number;
  /**
   * `@search.score` of the base query (BM25, cosine or RRF, as the mode gives), for results of the
   * other modes and for semantic results the ranker did not score (a 206 partial response).
   */
  search?: number;
}

/** Highlighted matches (`@search.highlights`, kept in each result's `metadata`). */
export interface AzureSearchHighlight {
  /** Searchable fields to highlight. */
  fields: readonly string[];
  /** Default: the service's `<em>`. */
  preTag?: string;
  /** Default: the service's `</em>`. */
  postTag?: string;
}

/** Options of `AzureAISearchRetriever`. */
export interface AzureAISearchRetrieverOptions extends AzureSearchConnectionOptions {
  /** Default `'hybrid'` when a `vectorizer` is given, else `'keyword'`. */
  queryMode?: AzureSearchQueryMode;
  /** Default `{ id: 'id', content: 'content' }`. */
  fields?: AzureSearchFieldMapping;
  /** More fields to fetch; they are copied into each result's `metadata` (and so into its citation). */
  select?: readonly string[];
  /**
   * Where query vectors come from: an `EmbeddingGenerator` embeds the query in this process
   * (`kind: 'vector'` queries); `'index'` sends the text and lets the index's vectorizer embed it
   * (`kind: 'text'` queries). Required for `vector` and `hybrid`.
   */
  vectorizer?: EmbeddingGenerator | 'index';
  /** Neighbours per vector query. Default: `topK` for `vector`, max(`topK`, 50) for `hybrid` and semantic hybrid. */
  kNearestNeighbors?: number;
  /** Semantic ranking settings; only for `queryMode: 'semantic'`. */
  semantic?: AzureSemanticOptions;
  /** Restricts keyword matching to these searchable fields. Default: every searchable field. */
  searchFields?: readonly string[];
  /** A static OData filter applied to every search (a trusted string from your configuration). */
  filter?: string;
  /** Milliseconds a search (embedding included) may take before it is abandoned. Default 5000. */
  timeoutMs?: number;
  /** Longer query texts keep only their last this many characters (the most recent turns). Default 1000. */
  maxQueryLength?: number;
  /**
   * Leaves out results below a score. A number is on the mode's scale: `@search.rerankerScore` in
   * `semantic` mode, `@search.score` otherwise; an object sets each scale apart. Semantic results
   * the ranker did not score (206 partial response) are compared with `search` when it is set,
   * and kept otherwise. Default: none left out.
   */
  minScore?: number | AzureSearchMinScore;
  /** Ask the service to highlight matches in these fields (`metadata['@search.highlights']`). Default none. */
  highlight?: AzureSearchHighlight;
  /** The share of the index (0-100) a search must reach, else the service answers 503; the reached share is reported. Default: not asked. */
  minimumCoverage?: number;
}

/** One search: the results, and what the service said about them. */
export interface AzureSearchResponse {
  /** Best first, at most `topK`, after `minScore`. */
  results: RetrievalResult[];
  /**
   * Set when the semantic ranker did not rerank (HTTP 206, `@search.semanticPartialResponseType:
   * 'baseResults'`): the results are the base ranking and carry no reranker score.
   */
  semanticPartial?: { resultsType: string; reason: string | undefined };
  /** `@search.coverage`: the share of the index the search reached (only when `minimumCoverage` is set). */
  coverage?: number;
  /** How many results the service returned that `minScore` left out. */
  belowMinScore: number;
}

/** What `AzureAISearchRetriever.search` takes besides the query. */
export interface AzureSearchOptions extends RetrieverSearchOptions {
  /** A filter for this search, joined to the static `filter` with `and`. */
  filter?: string;
}

/** The names of `AzureAISearchRetrieverOptions`, for the retriever's and the context provider's option checks. Internal. */
export const RETRIEVER_OPTIONS = {
  ...CONNECTION_OPTION_NAMES,
  queryMode: true,
  fields: true,
  select: true,
  vectorizer: true,
  kNearestNeighbors: true,
  semantic: true,
  searchFields: true,
  filter: true,
  timeoutMs: true,
  maxQueryLength: true,
  minScore: true,
  highlight: true,
  minimumCoverage: true,
} as const satisfies { readonly [K in keyof Required<AzureAISearchRetrieverOptions>]: true };
const RETRIEVER_OPTION_NAMES = optionNames<AzureAISearchRetrieverOptions>()(RETRIEVER_OPTIONS);

/** Characters with a meaning in the simple query syntax; escaped so the user's text is searched as words. */
const SIMPLE_SYNTAX = /[+\-&|!(){}[\]^"~*?:\\/]/g;
const RESERVED_METADATA = new Set([
  '@search.score',
  '@search.rerankerScore',
  '@search.rerankerBoostedScore',
  '@search.highlights',
  '@search.captions',
  '@search.answers',
]);

/**
 * A core `Retriever` over an Azure AI Search index: keyword, vector, hybrid or semantic search,
 * results mapped through a field mapping to `RetrievalResult`s (best first), with the service's
 * scores, captions, answers and selected fields in `metadata`. Use it with `TextSearchProvider`,
 * or through `AzureAISearchContextProvider`, which adds per-session scoping.
 * @throws ConfigurationError (constructor) for invalid options, or an option it does not know (named).
 */
export class AzureAISearchRetriever implements Retriever {
  /** The SDK client searches go through. */
  readonly client: SearchClient<object>;
  readonly queryMode: AzureSearchQueryMode;
  readonly #fields: { id: string; content: string[]; title: string | undefined; url: string | undefined; vector: string[] };
  readonly #select: string[];
  readonly #extra: string[];
  readonly #vectorizer: EmbeddingGenerator | 'index' | undefined;
  readonly #k: number | undefined;
  readonly #semantic: AzureSemanticOptions | undefined;
  readonly #searchFields: string[] | undefined;
  readonly #filter: string | undefined;
  readonly #timeoutMs: number;
  readonly #maxQueryLength: number;
  readonly #minScore: AzureSearchMinScore;
  readonly #highlight: AzureSearchHighlight | undefined;
  readonly #minimumCoverage: number | undefined;

  constructor(options: AzureAISearchRetrieverOptions) {
    const owner = 'AzureAISearchRetriever';
    checkOptionNames(owner, options, RETRIEVER_OPTION_NAMES);
    this.#timeoutMs = options.timeoutMs === undefined ? 5000 : checkPositiveNumber(owner, 'timeoutMs', options.timeoutMs);
    this.client = connect(owner, options, this.#timeoutMs);
    this.#vectorizer = options.vectorizer;
    if (this.#vectorizer !== undefined && this.#vectorizer !== 'index' && typeof this.#vectorizer.embed !== 'function') {
      throw new ConfigurationError(`${owner}: \`vectorizer\` must be an EmbeddingGenerator or 'index'.`);
    }
    this.queryMode = options.queryMode ?? (this.#vectorizer ? 'hybrid' : 'keyword');
    if (!['keyword', 'vector', 'hybrid', 'semantic'].includes(this.queryMode)) {
      throw new ConfigurationError(
        `${owner}: queryMode must be keyword, vector, hybrid or semantic, got ${JSON.stringify(this.queryMode)}.`,
      );
    }
    const mapping = options.fields ?? {};
    const list = (value: string | readonly string[] | undefined, fallback: string[]): string[] =>
      value === undefined ? fallback : typeof value === 'string' ? [value] : [...value];
    this.#fields = {
      id: checkFieldPath(mapping.id ?? 'id', `${owner} fields.id`),
      content: list(mapping.content, ['content']).map((f) => checkFieldPath(f, `${owner} fields.content`)),
      title: mapping.title === undefined ? undefined : checkFieldPath(mapping.title, `${owner} fields.title`),
      url: mapping.url === undefined ? undefined : checkFieldPath(mapping.url, `${owner} fields.url`),
      vector: list(mapping.vector, []).map((f) => checkFieldPath(f, `${owner} fields.vector`)),
    };
    if (this.#fields.content.length === 0) throw new ConfigurationError(`${owner}: fields.content needs at least one field.`);
    this.#extra = (options.select ?? []).map((f) => checkFieldPath(f, `${owner} select`));
    const mapped = [this.#fields.id, ...this.#fields.content, this.#fields.title, this.#fields.url].filter(
      (f): f is string => f !== undefined,
    );
    this.#select = [...new Set([...mapped, ...this.#extra])];
    const usesVectors =
      this.queryMode === 'vector' || this.queryMode === 'hybrid' || (this.queryMode === 'semantic' && this.#vectorizer !== undefined);
    if ((this.queryMode === 'vector' || this.queryMode === 'hybrid') && this.#vectorizer === undefined) {
      throw new ConfigurationError(
        `${owner}: queryMode "${this.queryMode}" needs a \`vectorizer\` (an EmbeddingGenerator, or 'index' to use the index's vectorizer).`,
      );
    }
    if (usesVectors && this.#fields.vector.length === 0)
      throw new ConfigurationError(`${owner}: queryMode "${this.queryMode}" needs the vector field(s) in fields.vector.`);
    this.#k = options.kNearestNeighbors === undefined ? undefined : checkInteger(owner, 'kNearestNeighbors', options.kNearestNeighbors);
    if (options.semantic !== undefined && this.queryMode !== 'semantic')
      throw new ConfigurationError(`${owner}: \`semantic\` options need queryMode "semantic".`);
    const semantic = options.semantic;
    if (semantic?.captionsAsContent && !semantic.captions)
      throw new ConfigurationError(`${owner}: semantic.captionsAsContent needs semantic.captions.`);
    if (
      semantic?.answers !== undefined &&
      typeof semantic.answers === 'number' &&
      !(Number.isInteger(semantic.answers) && semantic.answers > 0 && semantic.answers <= 10)
    ) {
      throw new ConfigurationError(`${owner}: semantic.answers must be true or an integer from 1 to 10, got ${semantic.answers}.`);
    }
    if (semantic?.errorMode !== undefined && semantic.errorMode !== 'partial' && semantic.errorMode !== 'fail')
      throw new ConfigurationError(`${owner}: semantic.errorMode must be 'partial' or 'fail', got ${JSON.stringify(semantic.errorMode)}.`);
    if (semantic?.maxWaitMs !== undefined) checkInteger(owner, 'semantic.maxWaitMs', semantic.maxWaitMs, 700);
    this.#semantic = this.queryMode === 'semantic' ? (semantic ?? {}) : undefined;
    this.#minScore = minScoreOf(owner, options.minScore, this.queryMode);
    if (options.highlight !== undefined) {
      const fields = options.highlight?.fields;
      if (!Array.isArray(fields) || fields.length === 0)
        throw new ConfigurationError(`${owner}: highlight.fields needs at least one searchable field.`);
      fields.forEach((f) => checkFieldPath(f, `${owner} highlight.fields`));
      this.#highlight = options.highlight;
    }
    if (
      options.minimumCoverage !== undefined &&
      !(typeof options.minimumCoverage === 'number' && options.minimumCoverage >= 0 && options.minimumCoverage <= 100)
    )
      throw new ConfigurationError(`${owner}: minimumCoverage must be a percentage from 0 to 100, got ${String(options.minimumCoverage)}.`);
    this.#minimumCoverage = options.minimumCoverage;
    this.#searchFields = options.searchFields?.map((f) => checkFieldPath(f, `${owner} searchFields`));
    this.#filter = options.filter;
    this.#maxQueryLength = options.maxQueryLength === undefined ? 1000 : checkInteger(owner, 'maxQueryLength', options.maxQueryLength);
  }

  /** The name of the index searched. */
  get indexName(): string {
    return this.client.indexName;
  }

  /**
   * The best `topK` results for `query`, best first, above `minScore`.
   * @throws BackendUnavailableError when the service cannot be reached, does not answer within `timeoutMs`
   *   (core's `withDeadline`) or answers 408, 429 or 5xx; SemanticQuotaError (a ConfigurationError) on 402;
   *   ConfigurationError when it rejects the query (400 or another 4xx), the credentials (401/403) or does not
   *   know the index (404), or when a result lacks the id field or the vectorizer returns no vector; the abort
   *   reason when `signal` aborts.
   */
  async search(query: string, options: AzureSearchOptions): Promise<RetrievalResult[]> {
    return (await this.searchResponse(query, options)).results;
  }

  /**
   * `search`, with what the service said about the results: whether the semantic ranker gave only
   * base results (206), the coverage, how many results `minScore` left out.
   * @throws the errors of `search`.
   */
  async searchResponse(query: string, options: AzureSearchOptions): Promise<AzureSearchResponse> {
    const { topK, signal } = options;
    signal?.throwIfAborted();
    const text = query.length > this.#maxQueryLength ? query.slice(-this.#maxQueryLength) : query;
    if (text.trim() === '') return { results: [], belowMinScore: 0 };
    const indexName = this.indexName;
    return withDeadline(
      async (abortSignal) => {
        const request = await this.#request(text, topK, options.filter, abortSignal);
        const response = await this.client.search(request.searchText, request.options);
        const all: RetrievalResult[] = [];
        for await (const hit of response.results) {
          all.push(this.#toResult(hit as Hit));
          if (all.length >= topK) break;
        }
        this.#attachAnswers(all, response.answers as Answer[] | undefined);
        const results = all.filter((r) => this.#passes(r));
        const out: AzureSearchResponse = { results, belowMinScore: all.length - results.length };
        const resultsType = response.semanticSearchResultsType;
        if (resultsType !== undefined && resultsType !== 'rerankedResults')
          out.semanticPartial = { resultsType, reason: response.semanticErrorReason ?? undefined };
        if (typeof response.coverage === 'number') out.coverage = response.coverage;
        return out;
      },
      {
        timeoutMs: this.#timeoutMs,
        signal,
        backend: 'azure-search',
        operation: `Azure AI Search index ${shortId(indexName)}`,
        hint: 'The search was abandoned: check that the service is reachable, or raise timeoutMs if it is just slow.',
        // An abort the SDK reports as its own error still ends the search with the caller's reason.
        mapError: (error) => (signal?.aborted ? signal.reason : toSearchError(error, indexName)),
      },
    );
  }

  /** Whether `result` reaches the threshold of its own scale (a result without a score on a thresholded scale does not). */
  #passes(result: RetrievalResult): boolean {
    const reranked = typeof result.metadata?.['@search.rerankerScore'] === 'number';
    if (this.queryMode === 'semantic' && reranked) return this.#minScore.reranker === undefined || result.score! >= this.#minScore.reranker;
    const base = result.metadata?.['@search.score'];
    return this.#minScore.search === undefined || (typeof base === 'number' && base >= this.#minScore.search);
  }

  async #request(
    text: string,
    topK: number,
    filter: string | undefined,
    abortSignal: AbortSignal,
  ): Promise<{ searchText: string | undefined; options: SearchOptions<object> }> {
    const mode = this.queryMode;
    const vectorQueries: VectorQuery<object>[] = [];
    if (mode === 'vector' || mode === 'hybrid' || (mode === 'semantic' && this.#vectorizer !== undefined)) {
      const k = this.#k ?? (mode === 'vector' ? topK : Math.max(topK, 50));
      const fields = this.#fields.vector as never[];
      if (this.#vectorizer === 'index') {
        vectorQueries.push({ kind: 'text', text, kNearestNeighborsCount: k, fields });
      } else {
        const [vector] = await this.#vectorizer!.embed([text], { signal: abortSignal });
        if (!Array.isArray(vector) || vector.length === 0) {
          throw new ConfigurationError(
            `The vectorizer returned no embedding for the query of Azure AI Search index "${this.indexName}"; check that the EmbeddingGenerator given as \`vectorizer\` returns one vector per text.`,
          );
        }
        vectorQueries.push({ kind: 'vector', vector, kNearestNeighborsCount: k, fields });
      }
    }
    const options: Record<string, unknown> = {
      top: topK,
      select: this.#select,
      abortSignal,
    };
    if (this.#minimumCoverage !== undefined) options.minimumCoverage = this.#minimumCoverage;
    if (this.#highlight && mode !== 'vector') {
      options.highlightFields = this.#highlight.fields.join(',');
      if (this.#highlight.preTag !== undefined) options.highlightPreTag = this.#highlight.preTag;
      if (this.#highlight.postTag !== undefined) options.highlightPostTag = this.#highlight.postTag;
    }
    const combined = andFilters(this.#filter, filter);
    if (combined !== undefined) options.filter = combined;
    if (vectorQueries.length) options.vectorSearchOptions = { queries: vectorQueries };
    if (this.#searchFields && mode !== 'vector') options.searchFields = this.#searchFields;
    if (mode === 'semantic') {
      const semantic = this.#semantic!;
      const answers =
        semantic.answers === undefined || semantic.answers === false
          ? undefined
          : {
              answerType: 'extractive',
              count: semantic.answers === true ? 1 : semantic.answers,
              ...(semantic.answerThreshold !== undefined ? { threshold: semantic.answerThreshold } : {}),
            };
      options.queryType = 'semantic';
      // SDK 13.0.0 drops `semanticSearchOptions.maxWaitInMilliseconds`; the wire name at the top level is sent.
      if (semantic.maxWaitMs !== undefined) options.semanticMaxWaitInMilliseconds = semantic.maxWaitMs;
      options.semanticSearchOptions = {
        // The ranker reads the question as the user wrote it; the keyword stage gets the escaped text.
        semanticQuery: text,
        errorMode: semantic.errorMode ?? 'partial',
        ...(semantic.configuration !== undefined ? { configurationName: semantic.configuration } : {}),
        ...(semantic.captions ? { captions: { captionType: 'extractive', highlight: true } } : {}),
        ...(answers ? { answers } : {}),
      };
    }
    const searchText = mode === 'vector' ? undefined : escapeSimpleQuery(text);
    return { searchText, options: options as SearchOptions<object> };
  }

  #toResult(hit: Hit): RetrievalResult {
    const doc = hit.document;
    const idValue = doc[this.#fields.id];
    if (typeof idValue !== 'string' && typeof idValue !== 'number') {
      throw new ConfigurationError(
        `Azure AI Search index "${this.indexName}" returned a result without the id field "${this.#fields.id}"; check fields.id and that the field is retrievable.`,
      );
    }
    const captions = hit.captions?.map((c) => ({ text: c.text ?? '', ...(c.highlights ? { highlights: c.highlights } : {}) }));
    const caption = captions?.[0]?.text;
    const content =
      this.#semantic?.captionsAsContent && caption
        ? caption
        : this.#fields.content
            .map((f) => textOf(doc[f]))
            .filter((t) => t !== '')
            .join('\n');
    // In semantic mode the score is the reranker's (0-4) and absent when the ranker did not score the result (206).
    const score = this.queryMode === 'semantic' ? (typeof hit.rerankerScore === 'number' ? hit.rerankerScore : undefined) : hit.score;
    const metadata: JsonObject = {};
    for (const field of this.#extra) if (!RESERVED_METADATA.has(field)) metadata[field] = toJson(doc[field]);
    metadata['@search.score'] = hit.score;
    if (typeof hit.rerankerScore === 'number') metadata['@search.rerankerScore'] = hit.rerankerScore;
    if (typeof hit.rerankerBoostedScore === 'number') metadata['@search.rerankerBoostedScore'] = hit.rerankerBoostedScore;
    if (hit.highlights && Object.keys(hit.highlights).length) metadata['@search.highlights'] = toJson(hit.highlights);
    if (captions?.length) metadata['@search.captions'] = captions;
    const result: RetrievalResult = { id: String(idValue), content, metadata };
    if (score !== undefined) result.score = score;
    const title = this.#fields.title === undefined ? undefined : doc[this.#fields.title];
    const url = this.#fields.url === undefined ? undefined : doc[this.#fields.url];
    if (typeof title === 'string' && title !== '') result.title = title;
    if (typeof url === 'string' && url !== '') result.url = url;
    return result;
  }

  /** Puts each answer on the result of the document it was extracted from. */
  #attachAnswers(results: RetrievalResult[], answers: Answer[] | undefined): void {
    if (!answers?.length) return;
    for (const answer of answers) {
      const target = results.find((r) => r.id === answer.key);
      if (!target || typeof answer.text !== 'string') continue;
      const list = ((target.metadata!['@search.answers'] as JsonObject[] | undefined) ??= []);
      list.push({
        text: answer.text,
        ...(answer.highlights ? { highlights: answer.highlights } : {}),
        ...(typeof answer.score === 'number' ? { score: answer.score } : {}),
      });
    }
  }
}

interface Hit {
  score: number;
  rerankerScore?: number;
  rerankerBoostedScore?: number;
  highlights?: Record<string, string[]>;
  captions?: { text?: string; highlights?: string }[];
  document: Record<string, unknown>;
}

interface Answer {
  key: string;
  text?: string;
  highlights?: string;
  score?: number;
}

/** `text` with the simple query syntax's operators escaped, so `what's "x-y"?` is searched as words. */
export function escapeSimpleQuery(text: string): string {
  return text.replace(SIMPLE_SYNTAX, (ch) => `\\${ch}`);
}

function textOf(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === 'string').join('\n');
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return '';
}

/** A JSON form of a field value (the SDK turns ISO date strings into `Date`s). */
function toJson(value: unknown): JsonValue {
  if (value === undefined) return null;
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  try {
    return JSON.parse(JSON.stringify(value)) as JsonValue;
  } catch {
    return null;
  }
}

/** `minScore` as per-scale thresholds: a number is the mode's own scale. */
function minScoreOf(owner: string, value: number | AzureSearchMinScore | undefined, mode: AzureSearchQueryMode): AzureSearchMinScore {
  if (value === undefined) return {};
  const finite = (name: string, x: unknown): number => {
    if (typeof x !== 'number' || !Number.isFinite(x))
      throw new ConfigurationError(`${owner}: ${name} must be a finite number, got ${String(x)}.`);
    return x;
  };
  if (typeof value === 'number')
    return mode === 'semantic' ? { reranker: finite('minScore', value) } : { search: finite('minScore', value) };
  if (typeof value !== 'object' || value === null)
    throw new ConfigurationError(`${owner}: minScore must be a number or { reranker?, search? }, got ${String(value)}.`);
  if (value.reranker !== undefined && mode !== 'semantic')
    throw new ConfigurationError(
      `${owner}: minScore.reranker needs queryMode "semantic" (only the semantic ranker gives reranker scores).`,
    );
  return {
    ...(value.reranker !== undefined ? { reranker: finite('minScore.reranker', value.reranker) } : {}),
    ...(value.search !== undefined ? { search: finite('minScore.search', value.search) } : {}),
  };
}
