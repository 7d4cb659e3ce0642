export { startAzureSearchTestServer, testCertificate } from './azure-search-test-server.js';
export { parseFilter } from './odata-filter.js';
export type { FieldLookup, Predicate } from './odata-filter.js';
export type { FieldDefinition } from './index-definition.js';
export { PAGE_SIZE, RRF_K, SEMANTIC_WINDOW, similarityScore } from './search.js';
export { checkSearchRequest, SCHEMA_API_VERSION } from './api-version.js';
export { recordedExample, searchSchema } from './fixtures.js';
export type { RecordedExample, RecordedExampleName } from './fixtures.js';
export type {
  AzureSearchTestServer,
  AzureSearchTestServerOptions,
  JsonObject,
  JsonValue,
  RecordedRequest,
  SearchOperation,
  SemanticErrorReason,
  ServerFault,
} from './types.js';
