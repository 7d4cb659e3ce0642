import type { KeyCredential, TokenCredential } from '@azure/core-auth';
import {
  ConfigurationError,
  CtxError,
  Message,
  type ContextProvider,
  type JsonObject,
  type JsonValue,
  type ProviderRunArgs,
  type Tool,
} from '@ctx/core';
import { checkOptionNames, checkPositiveNumber, optionNames, withDeadline } from '@ctx/core/backend';
import { defineTool } from '@ctx/core';
import type { SearchScopeResolver } from './azure-search-context-provider.js';
import { statusOf } from './connection.js';
import {
  KNOWLEDGE_BASE_GA_API_VERSION,
  KNOWLEDGE_BASE_PREVIEW_API_VERSION,
  knowledgeBaseTransport,
  type KnowledgeBaseClientOptions,
  type KnowledgeBaseTransport,
  type KnowledgeRetrievalClientLike,
} from './knowledge-base-client.js';
import { andFilters, scopeToFilter, type SearchScope } from './odata.js';

/** Runtime parameters of one knowledge source of the base (`knowledgeSourceParams`). */
export interface KnowledgeSourceOptions {
  /** The knowledge source's name. */
  name: string;
  /** Its kind. Default `searchIndex` (the only kind a `filterAddOn` or `scope` applies to). */
  kind?: 'searchIndex' | 'azureBlob' | 'indexedOneLake' | 'web';
  /** A fixed OData filter on the source's index, joined with the run's `scope` by `and`. */
  filterAddOn?: string;
  /** References for what this source returned. Default `true` (citations come from them). */
  includeReferences?: boolean;
  /** Each reference carries the document's fields (`sourceData`). Default `true` (`citationFields` read them). */
  includeReferenceSourceData?: boolean;
  /** Documents below this reranker score (0 to 4) are left out by the service. Default: the knowledge base's. */
  rerankerThreshold?: number;
  /** Preview api-version only: query this source even when source selection would skip it. */
  alwaysQuerySource?: boolean;
  /** Preview api-version only: fail the whole retrieval when this source fails. */
  failOnError?: boolean;
}

/** Options of `AzureAISearchKnowledgeBaseProvider`. */
export interface AzureAISearchKnowledgeBaseProviderOptions {
  /** A `KnowledgeRetrievalClient` of `@azure/search-documents` 13 to share; its api-version must be `apiVersion`. */
  client?: KnowledgeRetrievalClientLike;
  /** `https://<service>.search.windows.net`. With `knowledgeBaseName` and a credential, the package connects. */
  endpoint?: string;
  /** The knowledge base to retrieve from. */
  knowledgeBaseName?: string;
  /** An admin or query key. */
  apiKey?: string;
  /** An `AzureKeyCredential`, or a `TokenCredential` (for example `DefaultAzureCredential`). */
  credential?: KeyCredential | TokenCredential;
  /** Options of a client the package creates (`allowInsecureConnection`, `retryOptions`, `audience`). */
  clientOptions?: KnowledgeBaseClientOptions;
  /**
   * Default `2026-04-01` (GA: the recent user turns go as `intents`, through the SDK's
   * `KnowledgeRetrievalClient` when `@azure/search-documents` 13 is installed). `2026-05-01-preview`
   * sends `messages` and `retrievalReasoningEffort` (REST: the SDK does not write them).
   */
  apiVersion?: typeof KNOWLEDGE_BASE_GA_API_VERSION | typeof KNOWLEDGE_BASE_PREVIEW_API_VERSION;
  /** Default `azure-search-knowledge-base`. */
  sourceId?: string;
  /** `before` (default): retrieve before each run and add the grounding text. `tool`: give the model a `retrieve` tool. */
  mode?: 'before' | 'tool';
  /** Default `'skip'`: a failed retrieval leaves the run without grounding, with a diagnostic. */
  onError?: 'throw' | 'skip';
  /** Bounds each hook (see `ContextProvider.timeoutMs`). Default: the agent's. */
  timeoutMs?: number;
  /** How long one retrieve may take, retries included, in milliseconds. Default `maxRuntimeInSeconds` × 1000 + 5000, else 30000. */
  requestTimeoutMs?: number;
  /** The knowledge sources' runtime parameters. Required with `scope` (the filter goes on each listed `searchIndex` source). */
  knowledgeSources?: readonly KnowledgeSourceOptions[];
  /**
   * Per-run filter (a session's or a user's documents), the same resolver as `AzureAISearchContextProvider`'s:
   * field conditions are quoted safely. Joined with each `searchIndex` source's `filterAddOn`.
   * Returning `undefined`/`null` refuses the retrieval (fail closed); `{}` is no restriction.
   */
  scope?: SearchScopeResolver;
  /** How many recent user and assistant messages (loaded history plus the input) are sent. Default 6. */
  recentMessages?: number;
  /** Preview only: `minimal`, `low` or `medium`. Default: the knowledge base's. */
  reasoningEffort?: 'minimal' | 'low' | 'medium';
  /** Preview only: `extractiveData` or `answerSynthesis`. Default: the knowledge base's. */
  outputMode?: 'extractiveData' | 'answerSynthesis';
  /** Preview only: the most documents in the output. */
  maxOutputDocuments?: number;
  /** The service's time limit for one retrieval, in seconds. */
  maxRuntimeInSeconds?: number;
  /** The most tokens of grounding the service returns (sent as `maxOutputSize` on the preview). */
  maxOutputSizeInTokens?: number;
  /** Ask for the activity log (query planning, searches, tokens). Default `true`; it becomes the `azure-search-knowledge-activity` diagnostic. */
  includeActivity?: boolean;
  /** `x-ms-query-source-authorization`: the end user's token (or a function of the run giving it), for sources that check the user's permissions. */
  querySourceAuthorization?: string | ((args: ProviderRunArgs) => string | undefined | Promise<string | undefined>);
  /** Fields of each reference's `sourceData` copied into its citation's `metadata`. Default: none. */
  citationFields?: readonly string[];
  /** The `sourceData` fields a citation's `title` and `url` come from. Default `{ title: 'title', url: 'url' }`. */
  referenceFields?: { title?: string; url?: string };
  /** Role of the added message. Default `user`, so retrieved text never speaks with system authority. */
  role?: 'user' | 'system';
  /** First line of the added message. */
  header?: string;
  /** `tool` mode: the tool's name. Default `retrieve`. */
  toolName?: string;
  /** `tool` mode: the tool's description. */
  toolDescription?: string;
}

/** One reference of a retrieval, as ctx cites it. */
export interface KnowledgeBaseCitation {
  /** The number the text cites it by, `[n]` (1-based, in the service's order). */
  n: number;
  /** The document key (`docKey`), or the reference's id when the source has no key. */
  id: string;
  /** The reference's id in the service's answer (`ref_id` in the text). */
  referenceId: string;
  /** `searchIndex`, `web`, ... */
  type: string;
  /** The knowledge source it came from, when the activity names it. */
  knowledgeSourceName?: string;
  title?: string;
  url?: string;
  /** The reranker score (0 to 4). */
  score?: number;
  /** The `citationFields` of its source data. */
  metadata?: JsonObject;
}

/** A knowledge source that failed in a partial (206) answer. */
export interface FailedKnowledgeSource extends JsonObject {
  knowledgeSourceName: string | null;
  /** The activity record's type (`searchIndex`, `web`, ...). */
  type: string | null;
  code: string | null;
  message: string | null;
}

/** What one retrieval returned. */
export interface KnowledgeBaseRetrieval {
  /** 200, or 206 when a knowledge source failed (the rest is still here). */
  status: number;
  /** The grounding text (every text part of the response, in order). */
  text: string;
  citations: KnowledgeBaseCitation[];
  /** The service's activity records as it sent them (query planning, searches, reasoning, synthesis). */
  activity: JsonObject[];
  /** The sources whose activity record carries an error. */
  failedSources: FailedKnowledgeSource[];
  /** `sdk` (the SDK's KnowledgeRetrievalClient) or `rest`. */
  via: 'sdk' | 'rest';
}

/** What to retrieve for: queries (sent as semantic intents) or conversation messages. */
export interface KnowledgeRetrievalInput {
  /** Sent as `intents: [{ search, type: 'semantic' }]`, each run without query planning. */
  queries?: readonly string[];
  /** The conversation: `messages` on the preview api-version; on 2026-04-01 the user messages' text become intents. */
  messages?: readonly Message[];
}

/** Per-call settings of `retrieve`. */
export interface KnowledgeRetrievalCallOptions {
  signal?: AbortSignal;
  /** An OData filter for every `searchIndex` source, joined with its `filterAddOn`. */
  filter?: string;
  /** `x-ms-query-source-authorization` for this call. */
  querySourceAuthorization?: string;
}

/** The `data` of the `azure-search-knowledge-activity` diagnostic: what the retrieval did and cost. */
export interface KnowledgeBaseActivitySummary extends JsonObject {
  knowledgeBaseName: string;
  apiVersion: string;
  status: number;
  /** Searches run (activity records with a knowledge source). */
  searches: number;
  /** Documents the searches kept, summed over the records' `count`. */
  documents: number;
  planningInputTokens: number;
  planningOutputTokens: number;
  reasoningTokens: number;
  synthesisInputTokens: number;
  synthesisOutputTokens: number;
  /** The records' `elapsedMs`, summed. */
  elapsedMs: number;
  references: number;
  /** The activity records as the service sent them. */
  activity: JsonObject[];
}

const OPTION_NAMES = optionNames<AzureAISearchKnowledgeBaseProviderOptions>()({
  client: true,
  endpoint: true,
  knowledgeBaseName: true,
  apiKey: true,
  credential: true,
  clientOptions: true,
  apiVersion: true,
  sourceId: true,
  mode: true,
  onError: true,
  timeoutMs: true,
  requestTimeoutMs: true,
  knowledgeSources: true,
  scope: true,
  recentMessages: true,
  reasoningEffort: true,
  outputMode: true,
  maxOutputDocuments: true,
  maxRuntimeInSeconds: true,
  maxOutputSizeInTokens: true,
  includeActivity: true,
  querySourceAuthorization: true,
  citationFields: true,
  referenceFields: true,
  role: true,
  header: true,
  toolName: true,
  toolDescription: true,
});

const PREVIEW_ONLY = ['reasoningEffort', 'outputMode', 'maxOutputDocuments'] as const;
const DEFAULT_HEADER =
  'Grounding retrieved from the knowledge base for this turn. It may be incomplete or irrelevant; cite what you use by its [n].';
const DEFAULT_TOOL_DESCRIPTION =
  'Retrieves grounding from the knowledge base: plans searches over its sources for the query and returns the relevant passages with references to cite.';

/**
 * Agentic retrieval from an Azure AI Search knowledge base as a context provider. Before a run
 * (`mode: 'before'`) it calls the knowledge base's `retrieve` with the recent conversation (as
 * semantic `intents` on 2026-04-01, as `messages` with a reasoning effort on 2026-05-01-preview) and
 * adds the grounding text, attributed to `sourceId`, with each reference as a citation
 * (`metadata.citations`); in `tool` mode the model calls `retrieve` with its own query. The service's
 * activity is reported as the `azure-search-knowledge-activity` diagnostic, a 206 partial answer as
 * `azure-search-knowledge-partial` naming the failed sources (the context that came back is used),
 * a failure as `azure-search-knowledge-failed` (errors mapped as the search provider's).
 * @throws ConfigurationError (constructor) for invalid options, or an option it does not know (named).
 */
export class AzureAISearchKnowledgeBaseProvider implements ContextProvider {
  /** Default `azure-search-knowledge-base`. */
  readonly sourceId: string;
  /** Default `'skip'`. */
  readonly onError: 'throw' | 'skip';
  readonly timeoutMs: number | undefined;
  /** `before` or `tool`. */
  readonly mode: 'before' | 'tool';
  /** The api-version every call sends. */
  readonly apiVersion: string;
  /** The knowledge base. */
  readonly knowledgeBaseName: string;
  /** `sdk`: through `KnowledgeRetrievalClient` of `@azure/search-documents`; `rest`: ctx sends the REST call. */
  readonly via: 'sdk' | 'rest';
  readonly #transport: KnowledgeBaseTransport;
  readonly #options: AzureAISearchKnowledgeBaseProviderOptions;
  readonly #sources: readonly KnowledgeSourceOptions[];
  readonly #recent: number;
  readonly #requestTimeoutMs: number;
  readonly #owner: string;

  constructor(options: AzureAISearchKnowledgeBaseProviderOptions) {
    this.sourceId = options?.sourceId ?? 'azure-search-knowledge-base';
    const owner = `AzureAISearchKnowledgeBaseProvider("${this.sourceId}")`;
    this.#owner = owner;
    checkOptionNames(owner, options, OPTION_NAMES);
    this.#options = options;
    this.onError = options.onError ?? 'skip';
    this.timeoutMs = options.timeoutMs;
    this.mode = options.mode ?? 'before';
    if (this.mode !== 'before' && this.mode !== 'tool')
      throw new ConfigurationError(`${owner}: mode must be "before" or "tool", got ${JSON.stringify(this.mode)}.`);
    this.apiVersion = options.apiVersion ?? KNOWLEDGE_BASE_GA_API_VERSION;
    const preview = this.apiVersion === KNOWLEDGE_BASE_PREVIEW_API_VERSION;
    if (this.apiVersion !== KNOWLEDGE_BASE_GA_API_VERSION && !preview)
      throw new ConfigurationError(
        `${owner}: apiVersion must be "${KNOWLEDGE_BASE_GA_API_VERSION}" or "${KNOWLEDGE_BASE_PREVIEW_API_VERSION}", got ${JSON.stringify(options.apiVersion)}.`,
      );
    if (!preview)
      for (const name of PREVIEW_ONLY)
        if (options[name] !== undefined)
          throw new ConfigurationError(
            `${owner}: ${name} needs apiVersion "${KNOWLEDGE_BASE_PREVIEW_API_VERSION}"; api-version ${this.apiVersion} has no such field.`,
          );
    if (options.scope !== undefined && typeof options.scope !== 'function')
      throw new ConfigurationError(`${owner}: scope must be a function of the run returning field conditions or an OData filter.`);
    this.#sources = checkSources(owner, options.knowledgeSources, preview, options.scope !== undefined);
    this.#recent = options.recentMessages ?? 6;
    if (!Number.isInteger(this.#recent) || this.#recent <= 0)
      throw new ConfigurationError(`${owner}: recentMessages must be a positive integer, got ${String(options.recentMessages)}.`);
    for (const name of ['maxRuntimeInSeconds', 'maxOutputSizeInTokens', 'maxOutputDocuments'] as const) {
      const value = options[name];
      if (value !== undefined && !(Number.isInteger(value) && value > 0))
        throw new ConfigurationError(`${owner}: ${name} must be a positive integer, got ${String(value)}.`);
    }
    if (options.reasoningEffort !== undefined && !['minimal', 'low', 'medium'].includes(options.reasoningEffort))
      throw new ConfigurationError(`${owner}: reasoningEffort must be "minimal", "low" or "medium".`);
    if (options.outputMode !== undefined && !['extractiveData', 'answerSynthesis'].includes(options.outputMode))
      throw new ConfigurationError(`${owner}: outputMode must be "extractiveData" or "answerSynthesis".`);
    this.#requestTimeoutMs =
      options.requestTimeoutMs === undefined
        ? options.maxRuntimeInSeconds !== undefined
          ? options.maxRuntimeInSeconds * 1000 + 5000
          : 30_000
        : checkPositiveNumber(owner, 'requestTimeoutMs', options.requestTimeoutMs);
    this.#transport = knowledgeBaseTransport({
      owner,
      client: options.client,
      endpoint: options.endpoint,
      knowledgeBaseName: options.knowledgeBaseName,
      apiKey: options.apiKey,
      credential: options.credential,
      clientOptions: options.clientOptions,
      apiVersion: this.apiVersion,
      timeoutMs: this.#requestTimeoutMs,
    });
    this.knowledgeBaseName = this.#transport.knowledgeBaseName;
    this.via = this.#transport.via;
  }

  /** Retrieves and adds the grounding (`before`), or advertises the `retrieve` tool (`tool`). */
  async beforeRun(args: ProviderRunArgs): Promise<void> {
    const { context } = args;
    if (this.mode === 'tool') {
      context.extendTools(this.sourceId, [this.#tool(args)]);
      return;
    }
    const messages = recentConversation(args, this.#recent);
    if (!messages.some((m) => m.role === 'user' && Message.text(m).trim() !== '')) return;
    const retrieval = await this.#retrieveForRun(args, { messages });
    if (retrieval.text.trim() === '' && retrieval.citations.length === 0) return;
    context.extendMessages(this.sourceId, [this.#message(retrieval)]);
  }

  /**
   * One `retrieve` call: the request built from `input` and the options, sent, the answer read.
   * @throws ConfigurationError for a bad request, credentials or name (4xx), BackendUnavailableError
   *   when the service cannot answer now (network, 408, 429, 5xx, the deadline `requestTimeoutMs`).
   */
  async retrieve(input: KnowledgeRetrievalInput, options: KnowledgeRetrievalCallOptions = {}): Promise<KnowledgeBaseRetrieval> {
    const body = this.buildRequest(input, options.filter);
    const reply = await withDeadline(
      (signal) =>
        this.#transport.retrieve({
          body,
          signal,
          ...(options.querySourceAuthorization === undefined ? {} : { querySourceAuthorization: options.querySourceAuthorization }),
        }),
      {
        timeoutMs: this.#requestTimeoutMs,
        signal: options.signal,
        backend: 'azure-search',
        operation: `Azure AI Search knowledge base "${this.knowledgeBaseName}" retrieve`,
        hint: 'The retrieval was abandoned: raise requestTimeoutMs (or maxRuntimeInSeconds), or check that the service is reachable.',
        mapError: (error) => (options.signal?.aborted ? options.signal.reason : error),
      },
    );
    return readRetrieval(reply.status, reply.body, this.#options, this.#transport.via);
  }

  /**
   * The request body `retrieve` sends for `input` (keys in the order of the service's examples).
   * @throws ConfigurationError when `filter` is given but no `searchIndex` knowledge source is listed to carry it.
   */
  buildRequest(input: KnowledgeRetrievalInput, filter?: string): JsonObject {
    const o = this.#options;
    const preview = this.apiVersion === KNOWLEDGE_BASE_PREVIEW_API_VERSION;
    const body: JsonObject = {};
    const queries = [...(input.queries ?? [])].map((q) => q.trim()).filter((q) => q !== '');
    if (preview && input.messages?.length) body.messages = input.messages.map(toKnowledgeMessage).filter((m) => m !== undefined);
    if (!preview && input.messages)
      for (const m of input.messages) if (m.role === 'user' && Message.text(m).trim() !== '') queries.push(Message.text(m).trim());
    if (queries.length) body.intents = [...new Set(queries)].map((search) => ({ search, type: 'semantic' }));
    if (o.maxRuntimeInSeconds !== undefined) body.maxRuntimeInSeconds = o.maxRuntimeInSeconds;
    if (o.maxOutputSizeInTokens !== undefined) body[preview ? 'maxOutputSize' : 'maxOutputSizeInTokens'] = o.maxOutputSizeInTokens;
    if (o.maxOutputDocuments !== undefined) body.maxOutputDocuments = o.maxOutputDocuments;
    if (o.reasoningEffort !== undefined) body.retrievalReasoningEffort = { kind: o.reasoningEffort };
    body.includeActivity = o.includeActivity ?? true;
    if (o.outputMode !== undefined) body.outputMode = o.outputMode;
    if (filter !== undefined && !this.#sources.some((s) => (s.kind ?? 'searchIndex') === 'searchIndex'))
      throw new ConfigurationError(`${this.#owner}: a filter needs a searchIndex knowledge source in \`knowledgeSources\` to carry it.`);
    if (this.#sources.length) body.knowledgeSourceParams = this.#sources.map((s) => sourceParams(s, filter));
    return body;
  }

  async #retrieveForRun(args: ProviderRunArgs, input: KnowledgeRetrievalInput): Promise<KnowledgeBaseRetrieval> {
    try {
      const filter = await this.#resolveScope(args);
      const querySourceAuthorization = await this.#querySourceAuthorization(args);
      const retrieval = await this.retrieve(input, {
        signal: args.signal,
        ...(filter === undefined ? {} : { filter }),
        ...(querySourceAuthorization === undefined ? {} : { querySourceAuthorization }),
      });
      this.#reportActivity(args, retrieval);
      return retrieval;
    } catch (error) {
      if (!args.signal.aborted) this.#reportFailure(args, error);
      throw error;
    }
  }

  async #resolveScope(args: ProviderRunArgs): Promise<string | undefined> {
    const resolver = this.#options.scope;
    if (!resolver) return undefined;
    let scope: SearchScope | undefined | null;
    try {
      scope = await resolver(args);
    } catch (error) {
      throw new ConfigurationError(`${this.#owner}: scope threw, so nothing was retrieved: ${(error as Error)?.message ?? String(error)}`, {
        cause: error,
      });
    }
    if (scope === undefined || scope === null)
      throw new ConfigurationError(
        `${this.#owner}: scope returned ${String(scope)}, so nothing was retrieved (fail closed). Return {} to retrieve without restriction.`,
      );
    return scopeToFilter(scope);
  }

  async #querySourceAuthorization(args: ProviderRunArgs): Promise<string | undefined> {
    const given = this.#options.querySourceAuthorization;
    const value = typeof given === 'function' ? await given(args) : given;
    if (value !== undefined && (typeof value !== 'string' || value === ''))
      throw new ConfigurationError(`${this.#owner}: querySourceAuthorization must be a non-empty string (the user's token).`);
    return value;
  }

  #reportActivity(args: ProviderRunArgs, retrieval: KnowledgeBaseRetrieval): void {
    const summary = summarize(this.knowledgeBaseName, this.apiVersion, retrieval);
    args.report({
      code: 'azure-search-knowledge-activity',
      message: `Knowledge base "${this.knowledgeBaseName}" retrieved ${summary.references} reference(s) with ${summary.searches} search(es) (${summary.documents} document(s)); planning ${summary.planningInputTokens}+${summary.planningOutputTokens} tokens, reasoning ${summary.reasoningTokens}, synthesis ${summary.synthesisInputTokens}+${summary.synthesisOutputTokens}; ${summary.elapsedMs} ms in the service.`,
      data: summary,
    });
    if (retrieval.status !== 206 && retrieval.failedSources.length === 0) return;
    const failed = retrieval.failedSources;
    const named = failed.length
      ? failed
          .map(
            (f) =>
              `knowledge source "${f.knowledgeSourceName ?? 'unnamed'}" failed (${[f.code, f.message].filter(Boolean).join(' ') || 'no detail'})`,
          )
          .join('; ')
      : 'the service did not say which knowledge source failed';
    args.report({
      code: 'azure-search-knowledge-partial',
      message: `Knowledge base "${this.knowledgeBaseName}" answered partially (${retrieval.status}): ${named}. The context from the other sources is used.`,
      data: {
        knowledgeBaseName: this.knowledgeBaseName,
        status: retrieval.status,
        failedSources: failed,
        references: retrieval.citations.length,
      },
    });
  }

  #reportFailure(args: ProviderRunArgs, error: unknown): void {
    const message = CtxError.isInstance(error) || error instanceof Error ? error.message : String(error);
    args.report({
      code: 'azure-search-knowledge-failed',
      message,
      data: {
        knowledgeBaseName: this.knowledgeBaseName,
        apiVersion: this.apiVersion,
        phase: this.mode,
        status: statusOf((error as { cause?: unknown })?.cause ?? error).status ?? null,
        error: error instanceof Error ? error.name : typeof error,
      },
      error,
    });
  }

  #message(retrieval: KnowledgeBaseRetrieval): Message {
    const header = this.#options.header ?? DEFAULT_HEADER;
    const sources = retrieval.citations.map((c) =>
      [`[${c.n}]`, c.title, c.url && `(${c.url})`, `ref_id ${c.referenceId}`].filter(Boolean).join(' '),
    );
    const parts = [header, retrieval.text, ...(sources.length ? [`References:\n${sources.join('\n')}`] : [])];
    const init = { metadata: { citations: retrieval.citations as unknown as JsonObject[] } };
    return this.#options.role === 'system' ? Message.system(parts.join('\n\n'), init) : Message.user(parts.join('\n\n'), init);
  }

  #tool(args: ProviderRunArgs): Tool {
    return defineTool<{ query: string }>({
      name: this.#options.toolName ?? 'retrieve',
      description: this.#options.toolDescription ?? DEFAULT_TOOL_DESCRIPTION,
      parameters: {
        type: 'object',
        properties: { query: { type: 'string', description: 'What to retrieve, as a question or a few keywords.' } },
        required: ['query'],
        additionalProperties: false,
      },
      execute: async ({ query }, { signal }) => {
        if (typeof query !== 'string' || !query.trim()) throw new Error('retrieve needs a non-empty "query" string.');
        const retrieval = await this.#retrieveForRun({ ...args, signal }, { queries: [query] });
        return {
          text: retrieval.text,
          references: retrieval.citations as unknown as JsonObject[],
          ...(retrieval.failedSources.length ? { failedSources: retrieval.failedSources } : {}),
        };
      },
    });
  }
}

function checkSources(
  owner: string,
  sources: readonly KnowledgeSourceOptions[] | undefined,
  preview: boolean,
  scoped: boolean,
): KnowledgeSourceOptions[] {
  if (sources === undefined) {
    if (scoped)
      throw new ConfigurationError(
        `${owner}: scope needs \`knowledgeSources\`: the filter is sent as each listed searchIndex source's filterAddOn. List every knowledge source of the base.`,
      );
    return [];
  }
  if (!Array.isArray(sources)) throw new ConfigurationError(`${owner}: knowledgeSources must be an array.`);
  const names = new Set<string>();
  for (const [i, s] of sources.entries()) {
    if (typeof s?.name !== 'string' || s.name === '') throw new ConfigurationError(`${owner}: knowledgeSources[${i}] needs a name.`);
    if (names.has(s.name)) throw new ConfigurationError(`${owner}: knowledge source "${s.name}" is listed twice.`);
    names.add(s.name);
    const kind = s.kind ?? 'searchIndex';
    if (!['searchIndex', 'azureBlob', 'indexedOneLake', 'web'].includes(kind))
      throw new ConfigurationError(`${owner}: knowledge source "${s.name}" has an unknown kind ${JSON.stringify(kind)}.`);
    if (kind !== 'searchIndex' && s.filterAddOn !== undefined)
      throw new ConfigurationError(`${owner}: filterAddOn applies to searchIndex knowledge sources only, not "${s.name}" (${kind}).`);
    if (scoped && kind !== 'searchIndex')
      throw new ConfigurationError(
        `${owner}: scope cannot filter knowledge source "${s.name}" (${kind}); only searchIndex sources take a filter. Leave it out of this provider, or drop scope.`,
      );
    if (!preview && (s.alwaysQuerySource !== undefined || s.failOnError !== undefined))
      throw new ConfigurationError(
        `${owner}: alwaysQuerySource and failOnError of "${s.name}" need apiVersion "${KNOWLEDGE_BASE_PREVIEW_API_VERSION}".`,
      );
    if (s.rerankerThreshold !== undefined && !(typeof s.rerankerThreshold === 'number' && Number.isFinite(s.rerankerThreshold)))
      throw new ConfigurationError(`${owner}: rerankerThreshold of "${s.name}" must be a number (0 to 4).`);
  }
  return sources.map((s) => ({ ...s }));
}

/** `knowledgeSourceParams` of one source, keys in the examples' order. */
function sourceParams(source: KnowledgeSourceOptions, filter: string | undefined): JsonObject {
  const kind = source.kind ?? 'searchIndex';
  const out: JsonObject = {};
  const filterAddOn = kind === 'searchIndex' ? andFilters(source.filterAddOn, filter) : undefined;
  if (filterAddOn !== undefined) out.filterAddOn = filterAddOn;
  out.knowledgeSourceName = source.name;
  out.includeReferences = source.includeReferences ?? true;
  out.includeReferenceSourceData = source.includeReferenceSourceData ?? true;
  if (source.alwaysQuerySource !== undefined) out.alwaysQuerySource = source.alwaysQuerySource;
  if (source.failOnError !== undefined) out.failOnError = source.failOnError;
  if (source.rerankerThreshold !== undefined) out.rerankerThreshold = source.rerankerThreshold;
  out.kind = kind;
  return out;
}

/** A ctx message as a knowledge base message (`{ role, content: [{ text, type: 'text' }] }`), or undefined without text. */
function toKnowledgeMessage(message: Message): JsonObject | undefined {
  const text = Message.text(message).trim();
  if (text === '' || (message.role !== 'user' && message.role !== 'assistant')) return undefined;
  return { role: message.role, content: [{ text, type: 'text' }] };
}

/** The last `count` user and assistant messages of loaded history plus the input (other providers' messages left out). */
function recentConversation(args: ProviderRunArgs, count: number): Message[] {
  return args.context
    .getMessages({ includeInput: true })
    .filter((m) => {
      const type = Message.source(m)?.sourceType;
      return (type === 'history' || type === 'input') && (m.role === 'user' || m.role === 'assistant');
    })
    .slice(-count);
}

function readRetrieval(
  status: number,
  body: JsonObject,
  options: AzureAISearchKnowledgeBaseProviderOptions,
  via: 'sdk' | 'rest',
): KnowledgeBaseRetrieval {
  const activity = arrayOfObjects(body.activity);
  const sourceOf = new Map<number, string>();
  for (const a of activity)
    if (typeof a.id === 'number' && typeof a.knowledgeSourceName === 'string') sourceOf.set(a.id, a.knowledgeSourceName);
  const text = arrayOfObjects(body.response)
    .flatMap((m) => arrayOfObjects(m.content))
    .filter((c) => c.type === 'text' && typeof c.text === 'string')
    .map((c) => c.text as string)
    .join('\n');
  const titleField = options.referenceFields?.title ?? 'title';
  const urlField = options.referenceFields?.url ?? 'url';
  const citations = arrayOfObjects(body.references).map((r, i): KnowledgeBaseCitation => {
    const data =
      typeof r.sourceData === 'object' && r.sourceData !== null && !Array.isArray(r.sourceData) ? (r.sourceData as JsonObject) : {};
    const referenceId = String(r.id ?? i);
    const c: KnowledgeBaseCitation = {
      n: i + 1,
      id: typeof r.docKey === 'string' ? r.docKey : typeof r.blobUrl === 'string' ? r.blobUrl : referenceId,
      referenceId,
      type: typeof r.type === 'string' ? r.type : 'unknown',
    };
    const source = typeof r.activitySource === 'number' ? sourceOf.get(r.activitySource) : undefined;
    if (source !== undefined) c.knowledgeSourceName = source;
    const title = data[titleField] ?? r.title;
    if (typeof title === 'string') c.title = title;
    const url = data[urlField] ?? r.url;
    if (typeof url === 'string') c.url = url;
    if (typeof r.rerankerScore === 'number' && Number.isFinite(r.rerankerScore)) c.score = r.rerankerScore;
    const picked: JsonObject = {};
    for (const field of options.citationFields ?? []) if (data[field] !== undefined) picked[field] = data[field] as JsonValue;
    if (Object.keys(picked).length) c.metadata = picked;
    return c;
  });
  const failedSources = activity
    .filter((a) => typeof a.error === 'object' && a.error !== null)
    .map((a): FailedKnowledgeSource => {
      const error = a.error as JsonObject;
      return {
        knowledgeSourceName: typeof a.knowledgeSourceName === 'string' ? a.knowledgeSourceName : null,
        type: typeof a.type === 'string' ? a.type : null,
        code: typeof error.code === 'string' ? error.code : null,
        message: typeof error.message === 'string' ? error.message : null,
      };
    });
  return { status, text, citations, activity, failedSources, via };
}

function summarize(knowledgeBaseName: string, apiVersion: string, retrieval: KnowledgeBaseRetrieval): KnowledgeBaseActivitySummary {
  const sum = (type: string | undefined, field: string) =>
    retrieval.activity
      .filter((a) => type === undefined || a.type === type)
      .reduce((total, a) => total + (typeof a[field] === 'number' ? (a[field] as number) : 0), 0);
  const searches = retrieval.activity.filter((a) => typeof a.knowledgeSourceName === 'string');
  return {
    knowledgeBaseName,
    apiVersion,
    status: retrieval.status,
    searches: searches.length,
    documents: searches.reduce((total, a) => total + (typeof a.count === 'number' ? a.count : 0), 0),
    planningInputTokens: sum('modelQueryPlanning', 'inputTokens'),
    planningOutputTokens: sum('modelQueryPlanning', 'outputTokens'),
    reasoningTokens: sum('agenticReasoning', 'reasoningTokens'),
    synthesisInputTokens: sum('modelAnswerSynthesis', 'inputTokens'),
    synthesisOutputTokens: sum('modelAnswerSynthesis', 'outputTokens'),
    elapsedMs: sum(undefined, 'elapsedMs'),
    references: retrieval.citations.length,
    activity: retrieval.activity,
  };
}

function arrayOfObjects(value: JsonValue | undefined): JsonObject[] {
  return Array.isArray(value) ? (value.filter((v) => typeof v === 'object' && v !== null && !Array.isArray(v)) as JsonObject[]) : [];
}
