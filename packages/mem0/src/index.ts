export { Mem0ContextProvider, mem0ReportOf, turnMessages } from './mem0-context-provider.js';
export type {
  Mem0ContextProviderOptions,
  Mem0FlushResult,
  Mem0RunReport,
  Mem0UserDataExport,
  Mem0WriteFailure,
} from './mem0-context-provider.js';
export { createOssAdapter, createPlatformAdapter, isMem0Adapter, platformFilters, toMem0Adapter } from './mem0-adapter.js';
export type {
  Mem0Adapter,
  Mem0AddMessage,
  Mem0AddRequest,
  Mem0ClientMemory,
  Mem0DeleteRequest,
  Mem0ListPage,
  Mem0ListRequest,
  Mem0Memory,
  Mem0SearchRequest,
  MemoryClientLike,
  OssMemoryLike,
} from './mem0-adapter.js';
export { createMemoryMessage, DEFAULT_MEMORY_HEADER, fitMemories, isMemoryMessage, renderMemories } from './memory-message.js';
export type { Mem0Render, MemoryFit } from './memory-message.js';
export { checkMem0Id, isValidMem0Id, MAX_MEM0_ID_LENGTH, MEM0_SCOPE_KEYS } from './scope.js';
export type { Mem0Scope, Mem0ScopeKey, Mem0SessionState } from './scope.js';
export { toCtxError } from './errors.js';
export type { Mem0CallSite } from './errors.js';
