import type { KeyCredential, TokenCredential } from '@azure/core-auth';
import * as searchSdk from '@azure/search-documents';
import { BackendUnavailableError, ConfigurationError, CtxError, type JsonObject } from '@ctx/core';
import { abortable, shortId } from '@ctx/core/backend';
import { DEFAULT_RETRY_OPTIONS, retryAfterMs, toSearchError } from './connection.js';

/** The GA api-version of knowledge base retrieval, the one `@azure/search-documents` 13 sends. */
export const KNOWLEDGE_BASE_GA_API_VERSION = '2026-04-01';
/** The preview api-version with `messages`, `retrievalReasoningEffort` and `outputMode`. */
export const KNOWLEDGE_BASE_PREVIEW_API_VERSION = '2026-05-01-preview';

/**
 * A `KnowledgeRetrievalClient` of `@azure/search-documents` 13 (or anything shaped like it): what
 * the provider needs of an injected client.
 */
export interface KnowledgeRetrievalClientLike {
  readonly knowledgeBaseName: string;
  readonly endpoint: string;
  readonly serviceVersion: string;
  retrieve(request: never, options?: object): Promise<unknown>;
}

/** Options of a client the package creates (`KnowledgeRetrievalClientOptions` of the SDK, the parts ctx sets). */
export interface KnowledgeBaseClientOptions {
  /** Plain `http://` endpoints (a local server) need `true`. */
  allowInsecureConnection?: boolean;
  /** Retries of throttled and failed calls. Default `{ maxRetries: 2, retryDelayInMs: 200, maxRetryDelayInMs: 2000 }`. */
  retryOptions?: { maxRetries?: number; retryDelayInMs?: number; maxRetryDelayInMs?: number };
  /** The token audience for a `TokenCredential` (sovereign clouds). Default `https://search.azure.com`. */
  audience?: string;
}

/** What one retrieve sends besides the body. */
export interface RetrieveCall {
  body: JsonObject;
  signal: AbortSignal;
  /** `x-ms-query-source-authorization`: the user's token, for sources that check the user's permissions. */
  querySourceAuthorization?: string;
}

/** The service's answer: its status (200, or 206 when a knowledge source failed) and the raw JSON body. */
export interface RetrieveReply {
  status: number;
  body: JsonObject;
}

/**
 * Sends `retrieve` calls for one knowledge base: through the SDK's `KnowledgeRetrievalClient` on the
 * GA api-version when the installed `@azure/search-documents` has it (13), else as REST with the
 * same authentication and retry rules (12, or a preview api-version, whose request fields the SDK's
 * serializer does not write). Either way the raw body is read: the 13.0.0 deserializer drops most
 * activity fields.
 */
export interface KnowledgeBaseTransport {
  /** `sdk` or `rest`: which way the calls go. */
  readonly via: 'sdk' | 'rest';
  readonly apiVersion: string;
  readonly knowledgeBaseName: string;
  retrieve(call: RetrieveCall): Promise<RetrieveReply>;
}

type SdkClientConstructor = new (
  endpoint: string,
  knowledgeBaseName: string,
  credential: KeyCredential | TokenCredential,
  options?: object,
) => KnowledgeRetrievalClientLike;

/** The SDK's `KnowledgeRetrievalClient`, when the installed version has one (13 does, 12 does not). */
function sdkClientClass(): SdkClientConstructor | undefined {
  const candidate = (searchSdk as unknown as { KnowledgeRetrievalClient?: unknown }).KnowledgeRetrievalClient;
  return typeof candidate === 'function' ? (candidate as SdkClientConstructor) : undefined;
}

/** Connection settings the transport is built from (checked by the provider). */
export interface KnowledgeBaseConnection {
  owner: string;
  client?: KnowledgeRetrievalClientLike;
  endpoint?: string;
  knowledgeBaseName?: string;
  apiKey?: string;
  credential?: KeyCredential | TokenCredential;
  clientOptions?: KnowledgeBaseClientOptions;
  apiVersion: string;
  timeoutMs: number;
}

/**
 * The transport for `connection`.
 * @throws ConfigurationError for a missing or doubled endpoint/client/credential, or an injected
 *   client used with another api-version than its own.
 */
export function knowledgeBaseTransport(connection: KnowledgeBaseConnection): KnowledgeBaseTransport {
  const { owner, client, apiVersion } = connection;
  if (client) {
    if (connection.endpoint !== undefined || connection.apiKey !== undefined || connection.credential !== undefined)
      throw new ConfigurationError(`${owner}: give either \`client\` or \`endpoint\` with a credential, not both.`);
    if (typeof client.retrieve !== 'function')
      throw new ConfigurationError(`${owner}: \`client\` must be a KnowledgeRetrievalClient from @azure/search-documents 13.`);
    if (connection.knowledgeBaseName !== undefined && connection.knowledgeBaseName !== client.knowledgeBaseName)
      throw new ConfigurationError(
        `${owner}: \`knowledgeBaseName\` "${connection.knowledgeBaseName}" differs from the injected client's "${client.knowledgeBaseName}"; leave it out.`,
      );
    if (client.serviceVersion !== apiVersion)
      throw new ConfigurationError(
        `${owner}: the injected client sends api-version ${client.serviceVersion}, not ${apiVersion}. Create the client with \`serviceVersion: '${apiVersion}'\`, or pass \`endpoint\` and a credential so ctx sends ${apiVersion} itself.`,
      );
    return sdkTransport(client, apiVersion);
  }
  const { endpoint, knowledgeBaseName, apiKey, credential } = connection;
  if (typeof endpoint !== 'string' || endpoint === '')
    throw new ConfigurationError(
      `${owner}: give \`client\` (a KnowledgeRetrievalClient) or \`endpoint\`, \`knowledgeBaseName\` and \`apiKey\` or \`credential\`.`,
    );
  try {
    new URL(endpoint);
  } catch {
    throw new ConfigurationError(
      `${owner}: endpoint ${JSON.stringify(endpoint)} is not a URL; expected https://<service>.search.windows.net.`,
    );
  }
  if (typeof knowledgeBaseName !== 'string' || knowledgeBaseName === '')
    throw new ConfigurationError(`${owner}: \`knowledgeBaseName\` is required with \`endpoint\`.`);
  if ((apiKey === undefined) === (credential === undefined))
    throw new ConfigurationError(`${owner}: give exactly one of \`apiKey\` and \`credential\` with \`endpoint\`.`);
  if (apiKey !== undefined && (typeof apiKey !== 'string' || apiKey === ''))
    throw new ConfigurationError(`${owner}: \`apiKey\` must be a non-empty string.`);
  const key: KeyCredential | TokenCredential = apiKey !== undefined ? new searchSdk.AzureKeyCredential(apiKey) : credential!;
  const clientOptions = connection.clientOptions ?? {};
  const retryOptions = { ...DEFAULT_RETRY_OPTIONS, ...clientOptions.retryOptions };
  if (new URL(endpoint).protocol !== 'https:' && clientOptions.allowInsecureConnection !== true)
    throw new ConfigurationError(
      `${owner}: endpoint ${JSON.stringify(endpoint)} is not https; the key or token would travel in clear text. Use https, or set \`clientOptions.allowInsecureConnection: true\` for a local server.`,
    );
  const Sdk = sdkClientClass();
  if (Sdk && apiVersion === KNOWLEDGE_BASE_GA_API_VERSION) {
    const created = new Sdk(endpoint, knowledgeBaseName, key, { ...clientOptions, retryOptions, serviceVersion: apiVersion });
    return sdkTransport(created, apiVersion);
  }
  return restTransport({
    endpoint,
    knowledgeBaseName,
    credential: key,
    apiVersion,
    retryOptions,
    audience: clientOptions.audience,
    timeoutMs: connection.timeoutMs,
  });
}

function sdkTransport(client: KnowledgeRetrievalClientLike, apiVersion: string): KnowledgeBaseTransport {
  return {
    via: 'sdk',
    apiVersion,
    knowledgeBaseName: client.knowledgeBaseName,
    async retrieve({ body, signal, querySourceAuthorization }) {
      let reply: RetrieveReply | undefined;
      try {
        await client.retrieve(body as never, {
          abortSignal: signal,
          ...(querySourceAuthorization === undefined
            ? {}
            : { requestOptions: { headers: { 'x-ms-query-source-authorization': querySourceAuthorization } } }),
          onResponse: (raw: { status: number; parsedBody?: unknown }) => {
            reply = { status: raw.status, body: isJsonObject(raw.parsedBody) ? raw.parsedBody : {} };
          },
        });
      } catch (error) {
        throw toSearchError(error, client.knowledgeBaseName, 'knowledge base');
      }
      if (!reply)
        throw new BackendUnavailableError(
          'azure-search',
          `Knowledge base ${shortId(client.knowledgeBaseName)}: no response was received. Retry later.`,
        );
      return reply;
    },
  };
}

interface RestSettings {
  endpoint: string;
  knowledgeBaseName: string;
  credential: KeyCredential | TokenCredential;
  apiVersion: string;
  retryOptions: { maxRetries: number; retryDelayInMs: number; maxRetryDelayInMs: number };
  audience: string | undefined;
  timeoutMs: number;
}

/** Statuses a REST call is retried after, as the SDK's retry policy does. */
const RETRIED = new Set([408, 429, 500, 502, 503, 504]);

function restTransport(settings: RestSettings): KnowledgeBaseTransport {
  const { knowledgeBaseName, apiVersion, retryOptions, credential } = settings;
  const url = `${settings.endpoint.replace(/\/+$/, '')}/knowledgebases('${encodeURIComponent(knowledgeBaseName.replace(/'/g, "''"))}')/retrieve?api-version=${encodeURIComponent(apiVersion)}`;
  const scope = `${settings.audience ?? 'https://search.azure.com'}/.default`;
  const authorization = async (signal: AbortSignal): Promise<Record<string, string>> => {
    if ('key' in credential) return { 'api-key': credential.key };
    const token = await credential.getToken(scope, { abortSignal: signal });
    if (!token)
      throw new ConfigurationError(`Knowledge base ${shortId(knowledgeBaseName)}: the token credential returned no token for ${scope}.`);
    return { authorization: `Bearer ${token.token}` };
  };
  return {
    via: 'rest',
    apiVersion,
    knowledgeBaseName,
    async retrieve({ body, signal, querySourceAuthorization }) {
      const text = JSON.stringify(body);
      for (let attempt = 0; ; attempt++) {
        let response: Response;
        try {
          response = await fetch(url, {
            method: 'POST',
            signal,
            headers: {
              'content-type': 'application/json',
              accept: 'application/json;odata.metadata=none',
              ...(await authorization(signal)),
              ...(querySourceAuthorization === undefined ? {} : { 'x-ms-query-source-authorization': querySourceAuthorization }),
            },
            body: text,
          });
        } catch (error) {
          if (signal.aborted || CtxError.isInstance(error)) throw error;
          if (attempt < retryOptions.maxRetries) {
            await abortable(delay(retryOptions, attempt, undefined), signal);
            continue;
          }
          throw toSearchError(error, knowledgeBaseName, 'knowledge base');
        }
        const parsed: unknown = await response.json().catch(() => undefined);
        if (response.status === 200 || response.status === 206)
          return { status: response.status, body: isJsonObject(parsed) ? parsed : {} };
        const headers = { get: (name: string) => response.headers.get(name) ?? undefined };
        const wait = retryAfterMs(headers);
        if (RETRIED.has(response.status) && attempt < retryOptions.maxRetries && (wait === undefined || wait <= settings.timeoutMs)) {
          await abortable(delay(retryOptions, attempt, wait), signal);
          continue;
        }
        const detail = (isJsonObject(parsed) && isJsonObject(parsed.error) ? parsed.error : {}) as { code?: unknown; message?: unknown };
        const failure = Object.assign(
          new Error(typeof detail.message === 'string' ? detail.message : `The service answered ${response.status}.`),
          {
            name: 'RestError',
            statusCode: response.status,
            code: typeof detail.code === 'string' && detail.code !== '' ? detail.code : undefined,
            response: { headers },
          },
        );
        throw toSearchError(failure, knowledgeBaseName, 'knowledge base');
      }
    },
  };
}

function delay(options: RestSettings['retryOptions'], attempt: number, asked: number | undefined): Promise<void> {
  const wait = asked ?? Math.min(options.maxRetryDelayInMs, options.retryDelayInMs * 2 ** attempt);
  return new Promise((resolve) => setTimeout(resolve, wait));
}

function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
