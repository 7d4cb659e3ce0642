export { startAzureSearchTestServer, testCertificate } from './azure-search-test-server.js';
export { parseFilter } from './odata-filter.js';
export type { FieldLookup, Predicate } from './odata-filter.js';
export type { FieldDefinition } from './index-definition.js';
export { PAGE_SIZE, RRF_K, SEMANTIC_WINDOW, similarityScore } from './search.js';
export { checkRetrieveRequest, checkSearchRequest, KNOWLEDGE_API_VERSIONS, SCHEMA_API_VERSION } from './api-version.js';
export { approximateTokens, KNOWLEDGE_SOURCE_TOP } from './knowledge-retrieval.js';
export { knowledgeRetrievalSchema, recordedExample, recordedRetrieveExample, searchSchema } from './fixtures.js';
export type { RecordedExample, RecordedExampleName, RecordedRetrieveExample, RecordedRetrieveExampleName } from './fixtures.js';
export type {
  AzureSearchTestServer,
  AzureSearchTestServerOptions,
  JsonObject,
  JsonValue,
  KnowledgeBaseDefinition,
  KnowledgeSourceDefinition,
  RecordedRequest,
  SearchOperation,
  SemanticErrorReason,
  ServerFault,
} from './types.js';
