export { extractUserMessages, startMem0TestServer } from './mem0-test-server.js';
export { compileFilter, FilterError, hasEntityCondition } from './filters.js';
export type { Predicate } from './filters.js';
export type {
  AddMessage,
  AddScope,
  Extractor,
  JsonObject,
  Mem0TestServer,
  Mem0TestServerOptions,
  RecordedRequest,
  ScriptedFailure,
  StoredMemory,
} from './types.js';
