import { AzureKeyCredential, SearchClient } from '@azure/search-documents';
import { BackendUnavailableError, ConfigurationError } from '@ctx/core';
import { describe, expect, it } from 'vitest';
import { AzureAISearchRetriever } from './azure-search-retriever.js';
import { DEFAULT_RETRY_OPTIONS, toSearchError } from './connection.js';

// No backend: these only construct objects.
const client = new SearchClient<object>('https://example.search.windows.net', 'docs', new AzureKeyCredential('k'));
const endpoint = { endpoint: 'https://example.search.windows.net', indexName: 'docs', apiKey: 'k' };

describe('connection options', () => {
  it('accepts an injected client or endpoint + index + one credential, and nothing in between', () => {
    expect(new AzureAISearchRetriever({ client }).client).toBe(client);
    const owned = new AzureAISearchRetriever(endpoint).client;
    expect(owned.indexName).toBe('docs');
    expect(owned.endpoint).toBe('https://example.search.windows.net');
    const bad: [object, RegExp][] = [
      [{}, /give `client` \(a SearchClient\) or `endpoint`/],
      [{ client, apiKey: 'k' }, /either `client` or `endpoint`/],
      [{ client, indexName: 'other' }, /differs from the injected client's index "docs"/],
      [{ endpoint: 'not a url', indexName: 'docs', apiKey: 'k' }, /is not a URL/],
      [{ endpoint: endpoint.endpoint, apiKey: 'k' }, /`indexName` is required/],
      [{ endpoint: endpoint.endpoint, indexName: 'docs' }, /exactly one of `apiKey` and `credential`/],
      [{ ...endpoint, credential: new AzureKeyCredential('k') }, /exactly one of `apiKey` and `credential`/],
      [{ client: { search: 1 } }, /must be a SearchClient/],
    ];
    for (const [options, message] of bad) expect(() => new AzureAISearchRetriever(options as never)).toThrow(message);
  });

  it('an owned client retries less than the SDK default, so a retrieval step fails fast', () => {
    expect(DEFAULT_RETRY_OPTIONS).toEqual({ maxRetries: 2, retryDelayInMs: 200, maxRetryDelayInMs: 2000 });
  });
});

describe('toSearchError', () => {
  it('a status without its own mapping: another 4xx is a ConfigurationError, anything else a BackendUnavailableError; ctx errors pass', () => {
    const notAllowed = Object.assign(new Error('The requested resource does not support http method PATCH.'), { statusCode: 405 });
    const odd = Object.assign(new Error('Moved.'), { statusCode: 302 });
    const a = toSearchError(notAllowed, 'docs');
    expect(ConfigurationError.isInstance(a)).toBe(true);
    expect(a.message).toBe(
      'Azure AI Search index "docs" rejected the request (405): The requested resource does not support http method PATCH. Check the request against the index definition.',
    );
    expect(a.cause).toBe(notAllowed);
    const b = toSearchError(odd, 'docs');
    expect(BackendUnavailableError.isInstance(b)).toBe(true);
    expect(b.message).toMatch(/^Azure AI Search index "docs" answered with an unexpected status \(302\)/);
    const ctx = new ConfigurationError('x');
    expect(toSearchError(ctx, 'docs')).toBe(ctx);
  });
});
