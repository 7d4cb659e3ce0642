// @ctx/core for apps: the agent, sessions and stores, history, compaction, the built-in providers
// and policies, errors, and the contracts as types. Helpers for people who write backends are in
// `@ctx/core/backend`; test doubles in `@ctx/core/testing`.
export { CompactionProvider } from './compaction/compaction-provider.js';
export type { CompactionProviderOptions } from './compaction/compaction-provider.js';
export { contextWindow, pruneReasoning, slidingWindow, tokenBudget, toolResultCollapse, truncation } from './compaction/strategies.js';
export type {
  ContextWindowOptions,
  SlidingWindowOptions,
  StrategyOptions,
  TokenBudgetOptions,
  ToolResultCollapseOptions,
  TruncationOptions,
} from './compaction/strategies.js';
export { summarization, summaryInfo } from './compaction/summarization.js';
export type { SummarizationOptions, SummaryInfo } from './compaction/summarization.js';
export { COMPACTION_WINDOW, isCompactionItem, withoutCompacted } from './compaction/service-compaction.js';
export { compactWhen } from './compaction/triggers.js';
export type { CompactionTrigger } from './compaction/triggers.js';
export {
  BackendUnavailableError,
  ConcurrencyError,
  ConfigurationError,
  ContextWindowExceededError,
  CtxError,
  InvalidInputError,
  ProviderError,
  SessionStateError,
  ToolExecutionError,
} from './errors.js';
export { errorBody, httpStatusOf } from './http-status.js';
export type { ErrorBody } from './http-status.js';
export { HistoryProvider } from './history/history-provider.js';
export type { HistoryProviderOptions } from './history/history-provider.js';
export { InMemoryHistoryProvider } from './history/in-memory-history-provider.js';
export { generateId } from './messages/id.js';
export { Message } from './messages/message.js';
// The contracts, as types (the `Message` type comes with the helpers above).
export type * from './contracts/index.js';
export type { MessageInit } from './messages/message.js';
export { auditContext, createAuditProvider } from './policies/context-audit.js';
export type { AuditProviderOptions, ContextAudit, PrefixAudit, SourceAudit } from './policies/context-audit.js';
export { budgetReportOf } from './policies/budget.js';
export type { BudgetItem, BudgetPolicy, BudgetReport } from './policies/budget.js';
export { DecayingList } from './policies/decay.js';
export type { AgedEntry, DecayingListOptions, DecayPolicy } from './policies/decay.js';
export type { ProviderGate } from './policies/gate.js';
export { withPolicies } from './policies/with-policies.js';
export type { ProviderPolicies } from './policies/with-policies.js';
export { findProvider, unwrapProvider, wrapProvider } from './policies/wrap-provider.js';
export { ContextualToolsProvider } from './providers/contextual-tools-provider.js';
export type { ContextualToolsProviderOptions, ToolCatalog } from './providers/contextual-tools-provider.js';
export { TextSearchProvider } from './providers/text-search-provider.js';
export { TitleProvider } from './providers/title-provider.js';
export type { TitleProviderOptions } from './providers/title-provider.js';
export type { RetrievalCitation, TextSearchProviderOptions } from './providers/text-search-provider.js';
export { WhiteboardProvider, whiteboardUpdateSchema } from './providers/whiteboard-provider.js';
export type { WhiteboardEntry, WhiteboardKind, WhiteboardProviderOptions, WhiteboardUpdate } from './providers/whiteboard-provider.js';
export { SemanticRecallProvider } from './recall/semantic-recall-provider.js';
export type { RecalledPassage, SemanticRecallProviderOptions } from './recall/semantic-recall-provider.js';
export { createHashEmbedding } from './retrieval/hash-embedding.js';
export type { HashEmbeddingOptions } from './retrieval/hash-embedding.js';
export { InMemoryRetriever } from './retrieval/in-memory-retriever.js';
export { InMemoryVectorIndex } from './retrieval/in-memory-vector-index.js';
export type { InMemoryVectorIndexOptions } from './retrieval/in-memory-vector-index.js';
export type { InMemoryRetrieverOptions, InMemoryScoring, RetrievalDocument } from './retrieval/in-memory-retriever.js';
export type {
  Agent,
  AgentInput,
  AgentOptions,
  AgentRunOptions,
  AgentRunStream,
  ForkSessionOptions,
  RedactInfo,
  Redactor,
  ToolApproval,
  UserDataExport,
} from './run/agent.js';
export { createAgent } from './run/create-agent.js';
export { DEFAULT_LIMITS } from './run/limits.js';
export type { RunningTurnsOptions } from './run/running-turns.js';
export type { AgentLimits } from './run/limits.js';
export { AgentSession } from './session/agent-session.js';
export type { AgentSessionInit } from './session/agent-session.js';
export { FileSessionStore } from './session/file-session-store.js';
export type { FileSessionStoreEvent, FileSessionStoreOptions } from './session/file-session-store.js';
export { InMemorySessionStore } from './session/in-memory-session-store.js';
export { InMemoryWorkingMemoryStore } from './working-memory/in-memory-working-memory-store.js';
export { DEFAULT_WORKING_MEMORY_BYTES, WORKING_MEMORY_TOOL, WorkingMemoryProvider } from './working-memory/working-memory-provider.js';
export type { WorkingMemoryProviderOptions, WorkingMemoryUpdate } from './working-memory/working-memory-provider.js';
export { InMemoryStreamStore } from './streams/in-memory-stream-store.js';
export type { InMemoryStreamStoreOptions } from './streams/in-memory-stream-store.js';
export {
  DEFAULT_MAX_STREAM_BYTES,
  DEFAULT_MAX_STREAM_CHUNKS,
  DEFAULT_STREAM_LEASE_MS,
  DEFAULT_STREAM_TTL_MS,
} from './streams/stream-store-options.js';
export type { StreamStoreOptions } from './streams/stream-store-options.js';
export { createCharacterTokenizer } from './tokens/character-tokenizer.js';
export type { CharacterTokenizerOptions } from './tokens/character-tokenizer.js';
export { defineTool } from './tools/define-tool.js';
export type {
  InferOutput,
  JsonSchemaToolDefinition,
  StandardResult,
  StandardSchemaToolDefinition,
  StandardSchemaV1,
} from './tools/define-tool.js';
