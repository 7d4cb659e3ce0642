import { AzureKeyCredential, SearchClient } from '@azure/search-documents';
import { SemanticRecallProvider, TextSearchProvider, type ContextProvider, type Retriever, type VectorIndex } from '@ctx/core';
import { describe, expectTypeOf, it } from 'vitest';
import {
  AzureAISearchContextProvider,
  AzureAISearchKnowledgeBaseProvider,
  AzureAISearchRetriever,
  AzureSearchVectorIndex,
  odata,
  type AzureAISearchContextProviderOptions,
  type AzureAISearchKnowledgeBaseProviderOptions,
  type KnowledgeBaseCitation,
  type KnowledgeBaseRetrieval,
  type SearchScope,
} from './index.js';

const client = new SearchClient<object>('https://x.search.windows.net', 'docs', new AzureKeyCredential('k'));

describe('public types', () => {
  it('the provider is a ContextProvider and the retriever a core Retriever (usable with TextSearchProvider)', () => {
    expectTypeOf(new AzureAISearchContextProvider({ client })).toMatchTypeOf<ContextProvider>();
    expectTypeOf(new AzureAISearchRetriever({ client })).toMatchTypeOf<Retriever>();
    expectTypeOf(new TextSearchProvider({ retriever: new AzureAISearchRetriever({ client }) })).toMatchTypeOf<ContextProvider>();
  });

  it('AzureSearchVectorIndex is a core VectorIndex, usable as the index of SemanticRecallProvider', () => {
    const index = new AzureSearchVectorIndex({ client, dimensions: 8 });
    expectTypeOf(index).toMatchTypeOf<VectorIndex>();
    expectTypeOf(new SemanticRecallProvider({ embeddings: { embed: async () => [] }, index })).toMatchTypeOf<ContextProvider>();
  });

  it('scope returns field conditions or a filter, sync or async, from the run', () => {
    expectTypeOf<AzureAISearchContextProviderOptions['scope']>().toEqualTypeOf<
      | ((
          args: Parameters<NonNullable<ContextProvider['beforeRun']>>[0],
        ) => SearchScope | undefined | null | Promise<SearchScope | undefined | null>)
      | undefined
    >();
    new AzureAISearchContextProvider({
      client,
      scope: async ({ session }) => ({ tenantId: String(session.state.profile?.tenantId), groups: { any: ['a'] } }),
    });
    // @ts-expect-error numbers are not allowed in one-of lists
    new AzureAISearchContextProvider({ client, scope: () => ({ tenantId: [1, 2] }) });
  });

  it('odata only interpolates literal values', () => {
    expectTypeOf(odata`a eq ${'x'} and b eq ${1} and c eq ${null} and d ge ${new Date()}`).toEqualTypeOf<string>();
    // @ts-expect-error arrays are not literals
    odata`a eq ${['x']}`;
    // @ts-expect-error objects are not literals
    odata`a eq ${{ toString: () => 'x' }}`;
  });

  it('query modes and the two behaviours are string unions', () => {
    // @ts-expect-error unknown query mode
    new AzureAISearchContextProvider({ client, queryMode: 'fuzzy' });
    // @ts-expect-error unknown behaviour
    new AzureAISearchContextProvider({ client, mode: 'after' });
  });

  it("the knowledge base provider is a ContextProvider; its scope is the search provider's; versions and kinds are unions", () => {
    const kb = { endpoint: 'https://x.search.windows.net', knowledgeBaseName: 'kb', apiKey: 'k' } as const;
    expectTypeOf(new AzureAISearchKnowledgeBaseProvider(kb)).toMatchTypeOf<ContextProvider>();
    expectTypeOf<AzureAISearchKnowledgeBaseProviderOptions['scope']>().toEqualTypeOf<AzureAISearchContextProviderOptions['scope']>();
    expectTypeOf(new AzureAISearchKnowledgeBaseProvider(kb).retrieve({ queries: ['q'] })).resolves.toEqualTypeOf<KnowledgeBaseRetrieval>();
    expectTypeOf<KnowledgeBaseRetrieval['citations'][number]>().toEqualTypeOf<KnowledgeBaseCitation>();
    // @ts-expect-error only the GA and the preview api-version
    new AzureAISearchKnowledgeBaseProvider({ ...kb, apiVersion: '2025-09-01' });
    // @ts-expect-error unknown knowledge source kind
    new AzureAISearchKnowledgeBaseProvider({ ...kb, knowledgeSources: [{ name: 'ks', kind: 'sharepoint' }] });
    // @ts-expect-error unknown reasoning effort
    new AzureAISearchKnowledgeBaseProvider({ ...kb, reasoningEffort: 'high' });
  });
});
