import { AzureKeyCredential, SearchClient, SearchIndexClient } from '@azure/search-documents';
import { ConfigurationError } from '@ctx/core';
import { describe, expect, it } from 'vitest';
import { AzureAISearchContextProvider } from './azure-search-context-provider.js';
import { AzureAISearchRetriever } from './azure-search-retriever.js';
import { AzureSearchVectorIndex, createVectorIndex, defineVectorIndex } from './azure-search-vector-index.js';
import { createSearchIndex, defineSearchIndex, uploadSearchDocuments } from './search-index.js';

describe('provider options', () => {
  // No backend: these only construct providers.
  const client = new SearchClient<object>('https://example.search.windows.net', 'docs', new AzureKeyCredential('k'));

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

describe('unknown options', () => {
  // No backend: every check runs before a request is sent.
  const client = new SearchClient<object>('https://example.search.windows.net', 'docs', new AzureKeyCredential('k'));
  const indexClient = new SearchIndexClient('https://example.search.windows.net', new AzureKeyCredential('k'));
  const refused = (owner: string, name: string, near?: string) =>
    `${owner}: unknown option "${name}"${near ? ` (did you mean "${near}"?)` : ''}`;

  it.each([
    ['AzureAISearchContextProvider("azure-search")', () => new AzureAISearchContextProvider({ client, topk: 3 } as never), 'topk', 'topK'],
    [
      'AzureAISearchContextProvider("kb")',
      () => new AzureAISearchContextProvider({ client, sourceId: 'kb', maxTokens: 5 } as never),
      'maxTokens',
      undefined,
    ],
    ['AzureAISearchRetriever', () => new AzureAISearchRetriever({ client, QueryMode: 'keyword' } as never), 'QueryMode', 'queryMode'],
    // A context provider's own option is not the retriever's.
    ['AzureAISearchRetriever', () => new AzureAISearchRetriever({ client, budget: { maxTokens: 5 } } as never), 'budget', undefined],
    [
      'AzureSearchVectorIndex',
      () => new AzureSearchVectorIndex({ client, dimensions: 8, exhaustiv: true } as never),
      'exhaustiv',
      undefined,
    ],
    ['defineVectorIndex', () => defineVectorIndex({ name: 'x', dimensions: 8, metric: 'cosine' } as never), 'metric', undefined],
    [
      'defineSearchIndex',
      () => defineSearchIndex({ name: 'x', filterablefields: ['tenantId'] } as never),
      'filterablefields',
      'filterableFields',
    ],
  ])('%s refuses an option it does not know', (owner, create, name, near) => {
    expect(create).toThrow(ConfigurationError);
    expect(create).toThrow(refused(owner, name as string, near));
  });

  it('the async helpers refuse before any request', async () => {
    await expect(createVectorIndex(indexClient, { name: 'x', dimensions: 8, algoritm: 'hnsw' } as never)).rejects.toThrow(
      refused('createVectorIndex', 'algoritm'),
    );
    await expect(createSearchIndex(indexClient, { name: 'x', dimension: 8 } as never)).rejects.toThrow(
      refused('createSearchIndex', 'dimension'),
    );
    await expect(uploadSearchDocuments(client, [], { batchsize: 10 } as never)).rejects.toThrow(
      refused('uploadSearchDocuments', 'batchsize', 'batchSize'),
    );
  });

  it('every option of the retriever and of the provider is known to the provider', () => {
    const p = new AzureAISearchContextProvider({
      client,
      sourceId: 'kb',
      mode: 'tool',
      topK: 2,
      queryFromHistory: 2,
      budget: { maxTokens: 100 },
      when: () => true,
      onError: 'throw',
      timeoutMs: 1000,
      role: 'system',
      header: 'h',
      formatResult: (r) => r.content,
      toolName: 'kb_search',
      toolDescription: 'd',
      scope: () => ({}),
      queryMode: 'semantic',
      fields: { id: 'id', content: 'content' },
      select: ['tenantId'],
      kNearestNeighbors: 5,
      semantic: { captions: true },
      searchFields: ['content'],
      filter: "tenantId eq 'acme'",
      maxQueryLength: 500,
      minScore: { reranker: 1 },
      highlight: { fields: ['content'] },
      minimumCoverage: 80,
    });
    expect([p.sourceId, p.mode, p.retriever.queryMode]).toEqual(['kb', 'tool', 'semantic']);
    expect(defineVectorIndex({ name: 'x', dimensions: 8, algorithm: 'exhaustiveKnn' }).name).toBe('x');
  });
});
