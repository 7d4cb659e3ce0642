// The contracts of ctx: types only, importing nothing outside this folder. Third parties implement
// them; the rest of @ctx/core is one implementation of the engine around them.
export type { AgentResponse, Contribution, PendingApproval } from './agent-response.js';
export type {
  ChatClient,
  ChatOptions,
  ChatResponse,
  ChatResponseUpdate,
  FinishReason,
  ResponseFormat,
  ToolChoice,
  Usage,
} from './chat-client.js';
export type { CompactionArchive, CompactOptions, CompactionStrategy } from './compaction-strategy.js';
export type { EmbeddingGenerator } from './embedding-generator.js';
export type { AgentEvent, EventHandler, ProviderPhase, WarningCode } from './events.js';
export type { ClearHistoryArgs, ForkHistoryArgs, GetHistoryArgs, HistoryTurn, PopHistoryArgs, SaveHistoryArgs } from './history.js';
export type { JsonObject, JsonPrimitive, JsonValue } from './json.js';
export type {
  Annotation,
  Content,
  DataContent,
  FileCitation,
  FunctionCallContent,
  FunctionResultContent,
  HostedToolContent,
  Message,
  MessageSource,
  ReasoningContent,
  RefusalContent,
  Role,
  SourceType,
  TextContent,
  UrlCitation,
} from './message.js';
export type { RetrievalResult, Retriever, RetrieverSearchOptions } from './retriever.js';
export type {
  AgentView,
  ContextProvider,
  GetMessagesOptions,
  MergeStateArgs,
  ProviderDiagnostic,
  ProviderRunArgs,
  RewindArgs,
  SessionContext,
  SessionForkedArgs,
  SessionHookArgs,
  SessionView,
  SourcedInstructions,
  Tool,
  ToolApprovalCheck,
  ToolExecuteOptions,
  ToolValidation,
  UserDataArgs,
} from './run-view.js';
export type { PendingToolCalls, SessionJson, SessionMetadata } from './session.js';
export type {
  GetSessionOptions,
  ListSessionsOptions,
  SessionPage,
  SessionStore,
  SessionSummary,
  SetSessionOptions,
  StoredSession,
  TurnLease,
} from './session-store.js';
export type {
  OpenStreamOptions,
  OpenStreamResult,
  ReadStreamOptions,
  StreamCallOptions,
  StreamInfo,
  StreamLimit,
  StreamOutcome,
  StreamReadItem,
  StreamRef,
  StreamStatus,
  StreamStore,
  StreamWriter,
} from './stream-store.js';
export type { Tokenizer } from './tokenizer.js';
export type { ToolDefinition } from './tool-definition.js';
export type { ToolArgumentsCheck, ToolValidator } from './tool-validator.js';
export type {
  PutWorkingMemoryOptions,
  StoredWorkingMemory,
  WorkingMemoryCallOptions,
  WorkingMemoryEntry,
  WorkingMemoryKey,
  WorkingMemoryStore,
} from './working-memory-store.js';
export type {
  IndexedMessage,
  VectorDeleteTarget,
  VectorIndex,
  VectorIndexCallOptions,
  VectorMatch,
  VectorQuery,
  VectorRange,
  VectorRecord,
  VectorScope,
} from './vector-index.js';
