import { AzureKeyCredential, SearchClient } from '@azure/search-documents';
import { describe, expect, it } from 'vitest';
import { AzureAISearchContextProvider } from './azure-search-context-provider.js';

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
