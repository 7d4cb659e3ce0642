export { AzureAISearchContextProvider } from './azure-search-context-provider.js';
export type { AzureAISearchContextProviderOptions, AzureSearchFailure, SearchScopeResolver } from './azure-search-context-provider.js';
export { AzureAISearchRetriever, escapeSimpleQuery } from './azure-search-retriever.js';
export type {
  AzureAISearchRetrieverOptions,
  AzureSearchFieldMapping,
  AzureSearchOptions,
  AzureSearchQueryMode,
  AzureSemanticOptions,
} from './azure-search-retriever.js';
export { DEFAULT_RETRY_OPTIONS } from './connection.js';
export type { AzureSearchConnectionOptions } from './connection.js';
export { andFilters, odata, odataLiteral, scopeToFilter } from './odata.js';
export type { ODataValue, ScopeFields, SearchScope } from './odata.js';
export { createSearchIndex, defineSearchIndex, EXAMPLE_INDEX_FIELDS, toDocumentKey, uploadSearchDocuments } from './search-index.js';
export type { SearchDocumentInput, SearchIndexDefinitionOptions, UploadSearchDocumentsOptions } from './search-index.js';
