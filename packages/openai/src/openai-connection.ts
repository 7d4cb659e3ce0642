import OpenAI, { AzureOpenAI } from 'openai';
import { ConfigurationError } from '@ctx/core';
import { checkInteger, checkOptionNames, checkPositiveNumber, optionNames } from '@ctx/core/backend';

/** Azure OpenAI settings. Either `apiKey` or `azureADTokenProvider` (e.g. from `@azure/identity`). */
export interface AzureOpenAIOptions {
  /** e.g. `https://my-resource.openai.azure.com`. Default: `AZURE_OPENAI_ENDPOINT`. */
  endpoint?: string;
  /** The deployment name; also the `modelId` when `model` is not given. */
  deployment?: string;
  /** Default: `OPENAI_API_VERSION`. */
  apiVersion?: string;
  /** Default: `AZURE_OPENAI_API_KEY`. */
  apiKey?: string;
  /** Returns an Entra ID bearer token; used instead of a key. */
  azureADTokenProvider?: () => Promise<string>;
}

/** How an `@ctx/openai` class reaches the service: an injected SDK client, or settings to build one. */
export interface OpenAIConnectionOptions {
  /** An `OpenAI` or `AzureOpenAI` instance to share (its retries and timeouts apply). */
  client?: OpenAI;
  /** Default: `OPENAI_API_KEY`. */
  apiKey?: string;
  /** Default: `OPENAI_BASE_URL`, else the public API. */
  baseURL?: string;
  organization?: string;
  project?: string;
  /** Retries of 408, 409, 429 and 5xx by the SDK, with backoff. Default 2. */
  maxRetries?: number;
  /** Milliseconds per request. Default: the SDK's (10 minutes). */
  timeout?: number;
  /** Connect to Azure OpenAI instead. */
  azure?: AzureOpenAIOptions;
}

/** The names of `OpenAIConnectionOptions`, for the option checks of every class that connects. Internal. */
export const CONNECTION_OPTIONS = {
  client: true,
  apiKey: true,
  baseURL: true,
  organization: true,
  project: true,
  maxRetries: true,
  timeout: true,
  azure: true,
} as const satisfies { readonly [K in keyof Required<OpenAIConnectionOptions>]: true };

const AZURE_OPTION_NAMES = optionNames<AzureOpenAIOptions>()({
  endpoint: true,
  deployment: true,
  apiVersion: true,
  apiKey: true,
  azureADTokenProvider: true,
});

/**
 * The SDK client for `options`, and the key to redact from error messages. `owner` names the class
 * in error messages.
 * @throws ConfigurationError for a negative or fractional `maxRetries`, a `timeout` that is not a
 *   positive number, an `azure` setting it does not know, or settings the SDK refuses (e.g. no API key).
 */
export function connect(owner: string, options: OpenAIConnectionOptions): { client: OpenAI; secret: string | undefined } {
  checkOptionNames(`${owner} azure`, options.azure, AZURE_OPTION_NAMES);
  if (options.client) return { client: options.client, secret: options.client.apiKey ?? undefined };
  if (options.maxRetries !== undefined) checkInteger(owner, 'maxRetries', options.maxRetries, 0);
  if (options.timeout !== undefined) checkPositiveNumber(owner, 'timeout', options.timeout);
  const common = {
    ...(options.maxRetries !== undefined ? { maxRetries: options.maxRetries } : {}),
    ...(options.timeout !== undefined ? { timeout: options.timeout } : {}),
  };
  try {
    if (options.azure) {
      const { endpoint, deployment, apiVersion, apiKey, azureADTokenProvider } = options.azure;
      const client = new AzureOpenAI({
        ...common,
        ...(endpoint !== undefined ? { endpoint } : {}),
        ...(deployment !== undefined ? { deployment } : {}),
        ...(apiVersion !== undefined ? { apiVersion } : {}),
        ...(apiKey !== undefined ? { apiKey } : {}),
        ...(azureADTokenProvider ? { azureADTokenProvider } : {}),
      });
      return { client, secret: apiKey ?? process.env.AZURE_OPENAI_API_KEY };
    }
    const client = new OpenAI({
      ...common,
      ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}),
      ...(options.baseURL !== undefined ? { baseURL: options.baseURL } : {}),
      ...(options.organization !== undefined ? { organization: options.organization } : {}),
      ...(options.project !== undefined ? { project: options.project } : {}),
    });
    return { client, secret: client.apiKey ?? undefined };
  } catch (error) {
    throw new ConfigurationError(`${owner} could not set up the OpenAI client: ${(error as Error).message}`);
  }
}
