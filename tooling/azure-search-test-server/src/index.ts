export { startAzureSearchTestServer, testCertificate } from './azure-search-test-server.js';
export { parseFilter } from './odata-filter.js';
export type { FieldLookup, Predicate } from './odata-filter.js';
export type { FieldDefinition } from './index-definition.js';
export { RRF_K, SEMANTIC_WINDOW, similarityScore } from './search.js';
export type {
  AzureSearchTestServer,
  AzureSearchTestServerOptions,
  JsonObject,
  JsonValue,
  RecordedRequest,
  SearchOperation,
  ServerFault,
} from './types.js';
