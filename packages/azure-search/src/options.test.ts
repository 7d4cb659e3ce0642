import { AzureKeyCredential, SearchClient } from '@azure/search-documents';
import { ConfigurationError, createHashEmbedding } from '@ctx/core';
import { describe, expect, it } from 'vitest';
import { AzureAISearchContextProvider } from './azure-search-context-provider.js';
import { AzureAISearchRetriever } from './azure-search-retriever.js';
import { DEFAULT_RETRY_OPTIONS } from './connection.js';

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

describe('retriever options', () => {
  it('defaults to keyword, or hybrid when a vectorizer is given', () => {
    expect(new AzureAISearchRetriever({ client }).queryMode).toBe('keyword');
    expect(new AzureAISearchRetriever({ client, vectorizer: 'index', fields: { vector: 'v' } }).queryMode).toBe('hybrid');
  });

  it('refuses inconsistent modes, mappings and limits with a ConfigurationError naming the option', () => {
    const cases: [object, RegExp][] = [
      [{ queryMode: 'fuzzy' }, /queryMode must be keyword, vector, hybrid or semantic/],
      [{ queryMode: 'vector', fields: { vector: 'v' } }, /needs a `vectorizer`/],
      [{ queryMode: 'hybrid', vectorizer: 'index' }, /needs the vector field\(s\) in fields.vector/],
      [{ queryMode: 'semantic', vectorizer: createHashEmbedding() }, /needs the vector field/],
      [{ vectorizer: { nope: true } }, /must be an EmbeddingGenerator or 'index'/],
      [{ fields: { content: [] } }, /fields.content needs at least one field/],
      [{ fields: { id: "id eq 'x' or true" } }, /not a valid field name/],
      [{ select: ['ok', 'not ok'] }, /select: "not ok" is not a valid field name/],
      [{ semantic: { captions: true } }, /need queryMode "semantic"/],
      [{ queryMode: 'semantic', semantic: { captionsAsContent: true } }, /captionsAsContent needs semantic.captions/],
      [{ queryMode: 'semantic', semantic: { answers: 0 } }, /answers must be true or an integer from 1 to 10/],
      [{ kNearestNeighbors: 0 }, /kNearestNeighbors must be a positive integer/],
      [{ timeoutMs: -1 }, /timeoutMs must be a positive number/],
      [{ maxQueryLength: 1.5 }, /maxQueryLength must be a positive integer/],
    ];
    for (const [options, message] of cases) {
      expect(() => new AzureAISearchRetriever({ client, ...options } as never), JSON.stringify(options)).toThrow(message);
      expect(() => new AzureAISearchRetriever({ client, ...options } as never)).toThrow(ConfigurationError);
    }
  });
});

describe('provider options', () => {
  it('defaults: sourceId azure-search, before mode, onError skip', () => {
    const p = new AzureAISearchContextProvider({ client });
    expect([p.sourceId, p.mode, p.onError]).toEqual(['azure-search', 'before', 'skip']);
    expect(p.retriever.indexName).toBe('docs');
  });

  it("checks TextSearchProvider's options at construction, not on the first run", () => {
    expect(() => new AzureAISearchContextProvider({ client, topK: 0 })).toThrow(/topK must be a positive integer/);
    expect(() => new AzureAISearchContextProvider({ client, mode: 'later' as never })).toThrow(/mode must be "before" or "tool"/);
    expect(() => new AzureAISearchContextProvider({ client, queryFromHistory: -1 })).toThrow(/queryFromHistory must be a positive integer/);
    expect(() => new AzureAISearchContextProvider({ client, budget: { maxTokens: -5 } })).toThrow(/budget.maxTokens/);
    expect(() => new AzureAISearchContextProvider({ client, mode: 'tool', toolName: 'has space' })).toThrow(/Tool name/);
    expect(() => new AzureAISearchContextProvider({ client, scope: { tenantId: 'x' } as never })).toThrow(/scope must be a function/);
  });
});
