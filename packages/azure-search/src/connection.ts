import type { KeyCredential, TokenCredential } from '@azure/core-auth';
import { AzureKeyCredential, SearchClient, type SearchClientOptions } from '@azure/search-documents';
import { BackendUnavailableError, ConfigurationError, CtxError } from '@ctx/core';
import { shortId } from '@ctx/core/backend';

/** How to reach the index: an injected `SearchClient`, or an endpoint, index name and credential. */
export interface AzureSearchConnectionOptions {
  /** A `SearchClient` to share with your app; its own retry and transport settings apply. */
  client?: SearchClient<object>;
  /** `https://<service>.search.windows.net`. With `indexName` and a credential, the package creates the client. */
  endpoint?: string;
  indexName?: string;
  /** An admin or query key. */
  apiKey?: string;
  /** An `AzureKeyCredential`, or a `TokenCredential` (for example `DefaultAzureCredential` from `@azure/identity`). */
  credential?: KeyCredential | TokenCredential;
  /**
   * Options of a client the package creates, merged over its defaults
   * (`retryOptions: { maxRetries: 2, retryDelayInMs: 200, maxRetryDelayInMs: 2000 }`).
   * Plain `http://` endpoints need `allowInsecureConnection: true`.
   */
  clientOptions?: SearchClientOptions;
}

/** The names of `AzureSearchConnectionOptions`, for the option checks of every class that connects. Internal. */
export const CONNECTION_OPTION_NAMES = {
  client: true,
  endpoint: true,
  indexName: true,
  apiKey: true,
  credential: true,
  clientOptions: true,
} as const satisfies { readonly [K in keyof Required<AzureSearchConnectionOptions>]: true };

/** Retry settings of a client the package creates: a retrieval step should fail fast, not hold the turn. */
export const DEFAULT_RETRY_OPTIONS = { maxRetries: 2, retryDelayInMs: 200, maxRetryDelayInMs: 2000 } as const;

type PipelinePolicy = NonNullable<SearchClientOptions['additionalPolicies']>[number]['policy'];
type PipelineResponse = Awaited<ReturnType<PipelinePolicy['sendRequest']>>;

/**
 * How long a 429 or 503 asks the client to wait, in milliseconds: `retry-after-ms`,
 * `x-ms-retry-after-ms`, or `Retry-After` in seconds or as a date (what the SDK's retry honours).
 */
export function retryAfterMs(headers: { get(name: string): string | undefined } | undefined): number | undefined {
  if (!headers) return undefined;
  for (const [name, factor] of [
    ['retry-after-ms', 1],
    ['x-ms-retry-after-ms', 1],
    ['retry-after', 1000],
  ] as const) {
    const value = headers.get(name);
    if (value === undefined || value.trim() === '') continue;
    const number = Number(value);
    if (Number.isFinite(number) && number >= 0) return number * factor;
    const date = Date.parse(value);
    if (factor === 1000 && Number.isFinite(date)) return Math.max(0, date - Date.now());
  }
  return undefined;
}

/**
 * A policy of the clients the package creates, run on every attempt: a 429 or 503 that asks for a
 * longer wait than the whole search may take (`timeoutMs`) ends the search at once with a
 * `BackendUnavailableError`, instead of waiting until the deadline. Shorter waits are left to the
 * SDK's retry, which honours `Retry-After` and `retry-after-ms` as the service asks.
 */
function retryAfterLimit(indexName: string, timeoutMs: number): PipelinePolicy {
  return {
    name: 'ctxRetryAfterLimit',
    async sendRequest(request, next): Promise<PipelineResponse> {
      const response = await next(request);
      if (response.status !== 429 && response.status !== 503) return response;
      const wait = retryAfterMs(response.headers);
      if (wait === undefined || wait <= timeoutMs) return response;
      const what = response.status === 429 ? 'is throttling requests' : 'is unavailable';
      throw new BackendUnavailableError(
        'azure-search',
        `Azure AI Search index ${shortId(indexName)} ${what} (${response.status}) and asks to retry after ${wait} ms, longer than timeoutMs (${timeoutMs} ms), so the search was not retried. Retry later or lower the request rate.`,
      );
    },
  };
}

/**
 * The `SearchClient` for `options`: the injected one, or a new one.
 * @throws ConfigurationError unless exactly one of `client` and `endpoint` is given, with an index
 *   name and one credential for an endpoint.
 */
export function connect(owner: string, options: AzureSearchConnectionOptions, timeoutMs: number): SearchClient<object> {
  const { client, endpoint, indexName, apiKey, credential } = options;
  if (client) {
    if (endpoint !== undefined || apiKey !== undefined || credential !== undefined) {
      throw new ConfigurationError(`${owner}: give either \`client\` or \`endpoint\` with a credential, not both.`);
    }
    if (typeof client.search !== 'function')
      throw new ConfigurationError(`${owner}: \`client\` must be a SearchClient from @azure/search-documents.`);
    if (indexName !== undefined && indexName !== client.indexName) {
      throw new ConfigurationError(
        `${owner}: \`indexName\` "${indexName}" differs from the injected client's index "${client.indexName}"; leave it out.`,
      );
    }
    return client;
  }
  if (typeof endpoint !== 'string' || endpoint === '')
    throw new ConfigurationError(
      `${owner}: give \`client\` (a SearchClient) or \`endpoint\`, \`indexName\` and \`apiKey\` or \`credential\`.`,
    );
  try {
    new URL(endpoint);
  } catch {
    throw new ConfigurationError(
      `${owner}: endpoint ${JSON.stringify(endpoint)} is not a URL; expected https://<service>.search.windows.net.`,
    );
  }
  if (typeof indexName !== 'string' || indexName === '')
    throw new ConfigurationError(`${owner}: \`indexName\` is required with \`endpoint\`.`);
  if ((apiKey === undefined) === (credential === undefined))
    throw new ConfigurationError(`${owner}: give exactly one of \`apiKey\` and \`credential\` with \`endpoint\`.`);
  if (apiKey !== undefined && (typeof apiKey !== 'string' || apiKey === ''))
    throw new ConfigurationError(`${owner}: \`apiKey\` must be a non-empty string.`);
  const clientOptions = options.clientOptions ?? {};
  return new SearchClient<object>(endpoint, indexName, apiKey !== undefined ? new AzureKeyCredential(apiKey) : credential!, {
    ...clientOptions,
    retryOptions: { ...DEFAULT_RETRY_OPTIONS, ...clientOptions.retryOptions },
    additionalPolicies: [
      ...(clientOptions.additionalPolicies ?? []),
      { policy: retryAfterLimit(indexName, timeoutMs), position: 'perRetry' },
    ],
  });
}

/** The HTTP status and service error code of an SDK error, when it has them. */
export function statusOf(error: unknown): { status?: number; code?: string } {
  if (typeof error !== 'object' || error === null) return {};
  const { statusCode, code } = error as { statusCode?: unknown; code?: unknown };
  return {
    ...(typeof statusCode === 'number' ? { status: statusCode } : {}),
    ...(typeof code === 'string' && code !== '' ? { code } : {}),
  };
}

/** Statuses after which a later try can succeed (the service, or something behind it, is busy, throttled or failing for now): what happened, and what to do. */
const PASSING: Record<number, [string, string]> = {
  408: ['timed out', 'Retry later.'],
  409: [
    'reported a conflicting write',
    'Another process changed the same index definition or document at the same time; retry the operation.',
  ],
  422: ['is temporarily unavailable', 'The index is being updated (e.g. with allowIndexDowntime); retry shortly.'],
  424: [
    'failed in a resource it depends on',
    'Retry later; if it persists, check what the index depends on, e.g. the embedding deployment of its vectorizer.',
  ],
  429: [
    'is throttling requests',
    'Retry later or lower the request rate. When creating an index, a 429 means the tier allows no more indexes: delete one or move to a higher tier.',
  ],
};

const SEMANTIC_QUOTA = 'ctx.error.azure-search.semantic-quota';
const semanticQuotaSymbol = Symbol.for(SEMANTIC_QUOTA);

/**
 * The service answered 402: the free semantic ranker queries of the month are used up. A
 * `ConfigurationError` (retrying will not help until billing is enabled or the month ends); catch
 * it to fall back to a `queryMode` other than `'semantic'`. `SemanticQuotaError.isInstance(e)`
 * works across duplicate installs.
 */
export class SemanticQuotaError extends ConfigurationError {
  private readonly [semanticQuotaSymbol] = true;
  /** The index that was searched. */
  readonly indexName: string;
  constructor(indexName: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SemanticQuotaError';
    this.indexName = indexName;
  }
  /** Whether `error` is a `SemanticQuotaError` from any copy of this package. */
  static override isInstance(error: unknown): error is SemanticQuotaError {
    try {
      return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[semanticQuotaSymbol] === true;
    } catch {
      return false;
    }
  }
}

/** Statuses that need a change by whoever runs the app or the service, since the same request fails again: what happened, and what to do. */
const FIXED_BY_OPERATOR: Record<number, [string, string]> = {
  402: [
    'refused the request for billing',
    "The free semantic ranker queries of the month are used up: enable semantic ranker billing on the search service, or use a queryMode other than 'semantic'. Retrying will not help until then.",
  ],
  413: [
    'refused the request as too large',
    'Upload fewer or smaller documents per request (`batchSize`), or shorten the query and the filter.',
  ],
  415: ['refused the content type', 'Check that `endpoint` is the Azure AI Search service itself, not a proxy that rewrites requests.'],
  451: ['refuses the request for legal reasons', 'Check the region and terms of the search service; retrying will not help.'],
};

/**
 * A ctx error for a failed call to the service, naming the index (or the knowledge base, with
 * `target`) and what to do. Never includes the key; ctx errors pass through.
 * - `BackendUnavailableError` (retry later): network failures, 408, 409 (conflicting writes), 422
 *   (index briefly unavailable), 424 (a dependency failed), 429 (throttling), 5xx and statuses
 *   below 400.
 * - `ConfigurationError` (change something first): 400 (the filter, select or field mapping),
 *   401/403 (credentials), 402 (`SemanticQuotaError`: the free semantic ranker quota; enable
 *   billing or leave semantic mode), 404 (the index name), 413 (too large), 415, 451 and any
 *   other 4xx.
 */
export function toSearchError(error: unknown, indexName: string, target: 'index' | 'knowledge base' = 'index'): CtxError {
  const where = `Azure AI Search ${target} ${shortId(indexName)}`;
  if (CtxError.isInstance(error)) return error;
  const { status, code } = statusOf(error);
  const detail = sentence(error instanceof Error ? error.message : String(error));
  if (status === undefined) {
    const what = code ?? (error as Error)?.name ?? 'network error';
    return new BackendUnavailableError('azure-search', `${where} could not be reached (${what}): ${detail} Retry later.`, { cause: error });
  }
  const label = `${status}${code ? ` ${code}` : ''}`;
  const passing = PASSING[status] ?? (status >= 500 ? ['is unavailable', 'Retry later.'] : undefined);
  if (passing) {
    const wait =
      status === 429 || status === 503
        ? retryAfterMs((error as { response?: { headers?: { get(name: string): string | undefined } } }).response?.headers)
        : undefined;
    const asked = wait === undefined ? '' : ` The service asked to wait ${wait} ms before retrying.`;
    return new BackendUnavailableError('azure-search', `${where} ${passing[0]} (${label}): ${detail}${asked} ${passing[1]}`, {
      cause: error,
    });
  }
  const operator = FIXED_BY_OPERATOR[status];
  if (status === 402)
    return new SemanticQuotaError(indexName, `${where} ${operator![0]} (${label}): ${detail} ${operator![1]}`, { cause: error });
  if (operator) return new ConfigurationError(`${where} ${operator[0]} (${label}): ${detail} ${operator[1]}`, { cause: error });
  if (status === 400)
    return new ConfigurationError(
      `${where} rejected the query (400): ${detail} Check the filter or scope, \`select\` and the field mapping against the index.`,
      { cause: error },
    );
  if (status === 401 || status === 403)
    return new ConfigurationError(
      `${where} refused the credentials (${status}): check the api key or the role assignment (Search Index Data Reader) of the token credential.`,
      { cause: error },
    );
  if (status === 404)
    return new ConfigurationError(
      target === 'index'
        ? `${where} was not found (404) at this endpoint: check \`indexName\`, or create the index first (see createSearchIndex).`
        : `${where} was not found (404) at this endpoint: check \`knowledgeBaseName\` and \`apiVersion\` (knowledge bases need 2026-04-01 or later), or create the knowledge base first.`,
      { cause: error },
    );
  if (status >= 400)
    return new ConfigurationError(
      `${where} rejected the request (${status}${code ? ` ${code}` : ''}): ${detail} Check the request against the index definition.`,
      { cause: error },
    );
  return new BackendUnavailableError('azure-search', `${where} answered with an unexpected status (${status}): ${detail} Retry later.`, {
    cause: error,
  });
}

/** The service's message as a sentence (it may lack the final full stop). */
function sentence(text: string): string {
  const trimmed = text.trim();
  return trimmed === '' || /[.!?]$/.test(trimmed) ? trimmed : `${trimmed}.`;
}
