import {
  ConfigurationError,
  CtxError,
  TextSearchProvider,
  type ContextProvider,
  type JsonObject,
  type ProviderRunArgs,
  type RetrievalResult,
  type Retriever,
  type TextSearchProviderOptions,
} from '@ctx/core';
import { checkOptionNames, optionNames } from '@ctx/core/backend';
import {
  AzureAISearchRetriever,
  RETRIEVER_OPTIONS,
  type AzureAISearchRetrieverOptions,
  type AzureSearchResponse,
} from './azure-search-retriever.js';
import { statusOf } from './connection.js';
import { scopeToFilter, type SearchScope } from './odata.js';

/**
 * Picks the documents a run may see, from the run (its session, state, options): for example
 * `({ session }) => ({ tenantId: session.state.profile.tenantId })`. Return field conditions (values
 * are escaped for you) or an OData filter built with `odata`. Return `{}` (or `''`) for no
 * restriction; `undefined`/`null` is treated as a mistake and the search is refused (fail closed).
 */
export type SearchScopeResolver = (args: ProviderRunArgs) => SearchScope | undefined | null | Promise<SearchScope | undefined | null>;

/**
 * Options of `AzureAISearchContextProvider`: the retriever's (its `minScore` keeps the score
 * scales apart), `TextSearchProvider`'s, and `scope`.
 */
export interface AzureAISearchContextProviderOptions
  extends AzureAISearchRetrieverOptions,
    Omit<TextSearchProviderOptions, 'retriever' | 'minScore'> {
  /**
   * Per-run scoping, joined to the static `filter` with `and`. Resolved once per run, only when a
   * search actually happens (before the call, or when the model calls the tool).
   */
  scope?: SearchScopeResolver;
}

/** The `data` of the `azure-search-failed` diagnostic. */
export interface AzureSearchFailure extends JsonObject {
  indexName: string;
  queryMode: string;
  /** `before` (search before the model call) or `tool` (the model's search call). */
  phase: 'before' | 'tool';
  /** HTTP status, when the service answered. */
  status: number | null;
  /** The error's class, e.g. `BackendUnavailableError`. */
  error: string;
}

/**
 * The `data` of the `azure-search-partial` diagnostic: the service answered, but not fully: the
 * semantic ranker gave only base results (206), or the search reached less than the whole index.
 */
export interface AzureSearchPartial extends JsonObject {
  indexName: string;
  /** `@search.semanticPartialResponseType` (`baseResults`), or null when the ranking was complete. */
  semanticResultsType: string | null;
  /** `@search.semanticPartialResponseReason`: `capacityOverloaded`, `maxWaitExceeded`, `transient`, or null. */
  semanticReason: string | null;
  /** `@search.coverage` (0-100) when `minimumCoverage` is set, else null. */
  coverage: number | null;
  /** Results kept after `minScore`. */
  results: number;
  /** Results `minScore` left out. */
  belowMinScore: number;
}

const OPTION_NAMES = optionNames<AzureAISearchContextProviderOptions>()({
  ...RETRIEVER_OPTIONS,
  sourceId: true,
  mode: true,
  topK: true,
  queryFromHistory: true,
  budget: true,
  when: true,
  onError: true,
  timeoutMs: true,
  role: true,
  header: true,
  formatResult: true,
  toolName: true,
  toolDescription: true,
  scope: true,
});

const DEFAULT_TOOL_DESCRIPTION =
  'Searches the knowledge base (Azure AI Search) for passages that help answer the user. Returns passages with ids, titles and urls to cite.';

/**
 * Retrieval-augmented context from Azure AI Search, as a ctx `ContextProvider`. In `before` mode
 * (default) it searches with the input (or the last `queryFromHistory` messages) before every run
 * and injects the results as one attributed context message (`metadata.citations` lists them),
 * trimmed to `budget` lowest-ranked first; in `tool` mode it adds a `search` tool instead.
 *
 * It composes core's `TextSearchProvider` (query building, `minScore`, budget, citations, the tool,
 * gating) over an `AzureAISearchRetriever` bound to the run, so each run's `scope` filter is
 * applied to every search of that run. `onError` defaults to `'skip'`: a failed search leaves the
 * run without results, and the provider reports an `azure-search-failed` diagnostic (plus the
 * agent's `provider-skipped` event).
 * @throws ConfigurationError (constructor) for invalid options, or an option it does not know (named).
 */
export class AzureAISearchContextProvider implements ContextProvider {
  /** Default `azure-search`. */
  readonly sourceId: string;
  /** Default `'skip'`. */
  readonly onError: 'throw' | 'skip';
  /** `before`: inject results before each run; `tool`: advertise a search tool. */
  readonly mode: 'before' | 'tool';
  /** The retriever every search goes through. */
  readonly retriever: AzureAISearchRetriever;
  readonly #searchOptions: Omit<TextSearchProviderOptions, 'retriever'>;
  readonly #scope: SearchScopeResolver | undefined;

  constructor(options: AzureAISearchContextProviderOptions) {
    this.sourceId = options?.sourceId ?? 'azure-search';
    checkOptionNames(`AzureAISearchContextProvider("${this.sourceId}")`, options, OPTION_NAMES);
    this.onError = options.onError ?? 'skip';
    this.mode = options.mode ?? 'before';
    if (options.scope !== undefined && typeof options.scope !== 'function') {
      throw new ConfigurationError(
        `AzureAISearchContextProvider("${this.sourceId}"): scope must be a function of the run returning field conditions or an OData filter.`,
      );
    }
    this.#scope = options.scope;
    this.retriever = new AzureAISearchRetriever(pick(options, Object.keys(RETRIEVER_OPTIONS) as (keyof AzureAISearchRetrieverOptions)[]));
    const answers = options.queryMode === 'semantic' && options.semantic?.answers !== undefined && options.semantic.answers !== false;
    this.#searchOptions = {
      sourceId: this.sourceId,
      mode: this.mode,
      onError: this.onError,
      toolDescription: DEFAULT_TOOL_DESCRIPTION,
      ...pick(options, ['topK', 'queryFromHistory', 'budget', 'when', 'role', 'header', 'toolName', 'toolDescription']),
      ...(options.formatResult ? { formatResult: options.formatResult } : answers ? { formatResult: formatWithAnswers } : {}),
    };
    // Checks the shared options now, so a mistake fails at construction rather than on the first run.
    new TextSearchProvider({ ...this.#searchOptions, retriever: this.retriever });
  }

  /** Searches and injects the results (`before`), or advertises the search tool (`tool`), unless gated off. */
  async beforeRun(args: ProviderRunArgs): Promise<void> {
    const inner = new TextSearchProvider({ ...this.#searchOptions, retriever: this.#bind(args) });
    await inner.beforeRun(args);
  }

  /** A retriever for this run: its scope applied to every search, failures reported as diagnostics. */
  #bind(args: ProviderRunArgs): Retriever {
    let filter: Promise<string | undefined> | undefined;
    return {
      search: async (query, options): Promise<RetrievalResult[]> => {
        try {
          filter ??= this.#resolveScope(args);
          const response = await this.retriever.searchResponse(query, { ...options, filter: await filter });
          this.#reportPartial(args, response);
          return response.results;
        } catch (error) {
          if (!args.signal.aborted) this.#report(args, error);
          throw error;
        }
      },
    };
  }

  async #resolveScope(args: ProviderRunArgs): Promise<string | undefined> {
    if (!this.#scope) return undefined;
    let scope: SearchScope | undefined | null;
    try {
      scope = await this.#scope(args);
    } catch (error) {
      throw new ConfigurationError(
        `AzureAISearchContextProvider("${this.sourceId}"): scope threw, so nothing was searched: ${(error as Error)?.message ?? String(error)}`,
        { cause: error },
      );
    }
    if (scope === undefined || scope === null) {
      throw new ConfigurationError(
        `AzureAISearchContextProvider("${this.sourceId}"): scope returned ${String(scope)}, so nothing was searched (fail closed). Return {} to search without restriction.`,
      );
    }
    return scopeToFilter(scope);
  }

  /** Reports a 206 partial semantic answer or a coverage below 100%, so nobody mistakes base results for reranked ones. */
  #reportPartial(args: ProviderRunArgs, response: AzureSearchResponse): void {
    const { semanticPartial, coverage } = response;
    if (!semanticPartial && (coverage === undefined || coverage >= 100)) return;
    const data: AzureSearchPartial = {
      indexName: this.retriever.indexName,
      semanticResultsType: semanticPartial?.resultsType ?? null,
      semanticReason: semanticPartial?.reason ?? null,
      coverage: coverage ?? null,
      results: response.results.length,
      belowMinScore: response.belowMinScore,
    };
    const parts = [
      semanticPartial &&
        `the semantic ranker returned ${semanticPartial.resultsType} (${semanticPartial.reason ?? 'no reason given'}): the results are in the base ranking, without reranker scores`,
      coverage !== undefined && coverage < 100 && `the search reached ${coverage}% of the index`,
    ].filter(Boolean);
    args.report({
      code: 'azure-search-partial',
      message: `Azure AI Search index "${data.indexName}" answered partially: ${parts.join('; ')}.`,
      data,
    });
  }

  #report(args: ProviderRunArgs, error: unknown): void {
    const data: AzureSearchFailure = {
      indexName: this.retriever.indexName,
      queryMode: this.retriever.queryMode,
      phase: this.mode,
      status: statusOf((error as { cause?: unknown })?.cause ?? error).status ?? null,
      error: error instanceof Error ? error.name : typeof error,
    };
    const message = CtxError.isInstance(error) || error instanceof Error ? error.message : String(error);
    args.report({ code: 'azure-search-failed', message, data, error });
  }
}

function pick<T extends object, K extends keyof T>(source: T, keys: readonly K[]): Pick<T, K> {
  const out = {} as Pick<T, K>;
  for (const key of keys) if (source[key] !== undefined) out[key] = source[key];
  return out;
}

/** Core's result format (`[n] title (url)` then the content) with the semantic answer first, when the result has one. */
function formatWithAnswers(r: RetrievalResult, n: number): string {
  const head = [`[${n}]`, r.title, r.url && `(${r.url})`].filter(Boolean).join(' ');
  const answers = r.metadata?.['@search.answers'];
  const answer = Array.isArray(answers) ? (answers[0] as { text?: unknown } | undefined)?.text : undefined;
  return typeof answer === 'string' ? `${head}\nAnswer: ${answer}\n${r.content}` : `${head}\n${r.content}`;
}
