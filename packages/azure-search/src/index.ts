export { AzureAISearchContextProvider } from './azure-search-context-provider.js';
export type {
  AzureAISearchContextProviderOptions,
  AzureSearchFailure,
  AzureSearchPartial,
  SearchScopeResolver,
} from './azure-search-context-provider.js';
export { AzureAISearchKnowledgeBaseProvider } from './azure-search-knowledge-base-provider.js';
export type {
  AzureAISearchKnowledgeBaseProviderOptions,
  FailedKnowledgeSource,
  KnowledgeBaseActivitySummary,
  KnowledgeBaseCitation,
  KnowledgeBaseRetrieval,
  KnowledgeRetrievalCallOptions,
  KnowledgeRetrievalInput,
  KnowledgeSourceOptions,
} from './azure-search-knowledge-base-provider.js';
export { KNOWLEDGE_BASE_GA_API_VERSION, KNOWLEDGE_BASE_PREVIEW_API_VERSION } from './knowledge-base-client.js';
export type { KnowledgeBaseClientOptions, KnowledgeRetrievalClientLike } from './knowledge-base-client.js';
export { AzureAISearchRetriever, escapeSimpleQuery } from './azure-search-retriever.js';
export type {
  AzureAISearchRetrieverOptions,
  AzureSearchFieldMapping,
  AzureSearchHighlight,
  AzureSearchMinScore,
  AzureSearchOptions,
  AzureSearchResponse,
  AzureSearchQueryMode,
  AzureSemanticOptions,
} from './azure-search-retriever.js';
export {
  AzureSearchVectorIndex,
  createVectorIndex,
  defineVectorIndex,
  VECTOR_INDEX_FIELDS,
} from './azure-search-vector-index.js';
export type { AzureSearchVectorIndexOptions, VectorIndexDefinitionOptions } from './azure-search-vector-index.js';
export { DEFAULT_RETRY_OPTIONS, SemanticQuotaError } from './connection.js';
export type { AzureSearchConnectionOptions } from './connection.js';
export { andFilters, odata, odataLiteral, scopeToFilter } from './odata.js';
export type { ODataValue, ScopeFields, SearchScope } from './odata.js';
export { createSearchIndex, defineSearchIndex, EXAMPLE_INDEX_FIELDS, toDocumentKey, uploadSearchDocuments } from './search-index.js';
export type { SearchDocumentInput, SearchIndexDefinitionOptions, UploadSearchDocumentsOptions } from './search-index.js';
