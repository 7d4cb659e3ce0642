export { createAgent } from './agent.js';
export type { Agent, AgentInput, AgentOptions, AgentRunOptions, AgentRunStream } from './agent.js';
export { createAgentResponse } from './agent-response.js';
export type { AgentResponse } from './agent-response.js';
export { AgentSession, parseSessionJson, SESSION_VERSION } from './agent-session.js';
export type { AgentSessionInit, SessionJson } from './agent-session.js';
export { addUsage, assembleResponse } from './chat-client.js';
export type { ChatClient, ChatOptions, ChatResponse, ChatResponseUpdate, FinishReason, ResponseFormat, ToolChoice, Usage } from './chat-client.js';
export { compactWhen, isTriggered } from './compaction.js';
export type { CompactionStrategy, CompactionTrigger } from './compaction.js';
export { CompactionProvider } from './compaction-provider.js';
export type { CompactionProviderOptions } from './compaction-provider.js';
export { contextWindow, slidingWindow, tokenBudget, toolResultCollapse, truncation } from './compaction-strategies.js';
export type { ContextWindowOptions, SlidingWindowOptions, StrategyOptions, TokenBudgetOptions, ToolResultCollapseOptions, TruncationOptions } from './compaction-strategies.js';
export type { ContextProvider, ProviderDiagnostic, ProviderRunArgs } from './context-provider.js';
export type { EmbeddingGenerator } from './embeddings.js';
export {
  BackendUnavailableError,
  ConcurrencyError,
  ConfigurationError,
  ContextWindowExceededError,
  CtxError,
  ProviderError,
  SessionStateError,
  ToolExecutionError,
} from './errors.js';
export type { AgentEvent, EventHandler, ProviderPhase, WarningCode } from './events.js';
export { FileSessionStore } from './file-session-store.js';
export type { FileSessionStoreOptions } from './file-session-store.js';
export { HistoryProvider } from './history-provider.js';
export type { GetHistoryArgs, HistoryProviderOptions, SaveHistoryArgs } from './history-provider.js';
export { generateId } from './id.js';
export { encodeIdSegment } from './id-segment.js';
export type { IdSegmentOptions } from './id-segment.js';
export { InMemoryHistoryProvider } from './in-memory-history-provider.js';
export { checkIfMatch, InMemorySessionStore } from './in-memory-session-store.js';
export type { JsonObject, JsonPrimitive, JsonValue } from './json.js';
export { Message } from './message.js';
export { flattenGroups, groupMessages, hasOrphans, isSummary, splitProtected } from './message-groups.js';
export type { MessageGroup, MessageGroupKind } from './message-groups.js';
export type {
  Content,
  DataContent,
  FunctionCallContent,
  FunctionResultContent,
  MessageInit,
  MessageSource,
  ReasoningContent,
  Role,
  SourceType,
  TextContent,
} from './message.js';
export { SessionContext } from './session-context.js';
export { summarization, summaryInfo } from './summarization.js';
export {
  auditContext,
  budgetReportOf,
  ContextualToolsProvider,
  cosineSimilarity,
  countToolTokens,
  createAuditProvider,
  createHashEmbedding,
  DecayingList,
  fitPrefix,
  fitToBudget,
  InMemoryRetriever,
  priorityOf,
  recordBudget,
  TextSearchProvider,
  WhiteboardProvider,
  whiteboardUpdateSchema,
  withPolicies,
} from './providers/index.js';
export type {
  AgedEntry,
  AuditProviderOptions,
  BudgetFit,
  BudgetItem,
  BudgetPolicy,
  BudgetReport,
  ContextAudit,
  ContextualToolsProviderOptions,
  DecayingListOptions,
  DecayPolicy,
  FitToBudgetOptions,
  HashEmbeddingOptions,
  InMemoryRetrieverOptions,
  InMemoryScoring,
  ProviderGate,
  ProviderPolicies,
  RetrievalCitation,
  RetrievalDocument,
  RetrievalResult,
  Retriever,
  RetrieverSearchOptions,
  SourceAudit,
  TextSearchProviderOptions,
  ToolCatalog,
  WhiteboardEntry,
  WhiteboardKind,
  WhiteboardProviderOptions,
  WhiteboardUpdate,
} from './providers/index.js';
export type { SummarizationOptions, SummaryInfo } from './summarization.js';
export type { Contribution, GetMessagesOptions, SessionContextInit, SourcedInstructions } from './session-context.js';
export type { SessionStore, SetSessionOptions, StoredSession } from './session-store.js';
export { defineTool } from './tool.js';
export type { JsonSchemaToolDefinition, StandardSchemaToolDefinition, StandardSchemaV1, Tool, ToolExecuteOptions, ToolValidation } from './tool.js';
export { countContentTokens, createCharacterTokenizer } from './tokenizer.js';
export type { CharacterTokenizerOptions, Tokenizer } from './tokenizer.js';
