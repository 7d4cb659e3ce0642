// @ctx/core/backend: for people who write backends (chat clients, history providers, session
// stores, retrievers, tokenizers, compaction strategies). Everything a backend imports: the helpers
// every backend needs, so none re-writes them; the contracts (the types of contracts/, and
// `HistoryProvider`, the one contract that is a class to extend); `Message` and `generateId`; the
// errors a backend throws. The same classes as `@ctx/core` exports, not copies. Apps import from
// `@ctx/core`.
export { createAgentResponse } from '../run/agent-response.js';
export { addUsage, assembleResponse } from '../run/assemble-response.js';
export { flattenGroups, groupMessages, hasOrphans, isSummary, sentMessagesOf, splitProtected } from '../compaction/message-groups.js';
export { holdsCompaction, keptBeforeCompaction, newestCompactionIndex } from '../compaction/service-compaction.js';
export type { MessageGroup, MessageGroupKind } from '../compaction/message-groups.js';
export { isTriggered } from '../compaction/triggers.js';
export { describe as describeError, isAbortError, truncate } from '../errors.js';
export { findNonJson, isPlainObject } from '../messages/json.js';
export { formatBytes, jsonByteLength } from '../messages/json-bytes.js';
export { countToolTokens, fitPrefix, fitToBudget, priorityOf, recordBudget } from '../policies/budget.js';
export type { BudgetFit, FitToBudgetOptions } from '../policies/budget.js';
export { cosineSimilarity } from '../retrieval/vectors.js';
export { checkSessionForWrite, parseSessionJson, SESSION_VERSION } from '../session/agent-session.js';
export { countContentTokens } from '../tokens/character-tokenizer.js';
export type * from '../contracts/index.js';
export { HISTORY_PROVIDER_OPTIONS, HistoryProvider } from '../history/history-provider.js';
export type { HistoryProviderOptions } from '../history/history-provider.js';
export { Message } from '../messages/message.js';
export { generateId } from '../messages/id.js';
export {
  BackendUnavailableError,
  ConcurrencyError,
  ConfigurationError,
  CtxError,
  InvalidInputError,
  SessionStateError,
} from '../errors.js';
export { findRetriedTurn } from '../history/retried-turn.js';
export type { StoredTurn } from '../history/retried-turn.js';
export { messageIdConflict, sameMessageContent } from '../history/message-conflict.js';
export type { MessageIdConflict } from '../history/message-conflict.js';
export { checkIfMatch } from './check-if-match.js';
export { checkId, checkInteger, checkOptionNames, checkPositiveNumber, checkSessionId, optionNames, shortId } from './checks.js';
export type { OptionFlags } from './checks.js';
export { abortable, pause, withDeadline } from './deadline.js';
export type { DeadlineOptions } from './deadline.js';
export { encodeIdSegment } from './id-segment.js';
export { checkHistoryBatch } from './history-batch.js';
export type { CheckedHistoryBatch, CheckHistoryBatchOptions } from './history-batch.js';
export { sessionOfUser } from './session-owner.js';
export { checkTurnLease, MAX_TURN_LEASE_MS } from './turn-lease.js';
export { startRenewal } from '../streams/lease-renewal.js';
export {
  checkFromIndex,
  checkOutcome,
  checkStreamRef,
  checkStreamStoreOptions,
  DEFAULT_MAX_STREAM_BYTES,
  DEFAULT_MAX_STREAM_CHUNKS,
  DEFAULT_STREAM_LEASE_MS,
  DEFAULT_STREAM_TTL_MS,
  describeStream,
  encodeChunks,
  measureJsonChunks,
  streamClosedError,
  streamLimitError,
} from '../streams/stream-store-options.js';
export type { CheckedStreamStoreOptions, StreamStoreOptions } from '../streams/stream-store-options.js';
export { checkVectorRange, checkVectorRecord, compareBySessionAndSequence } from './vector-record.js';
export type { CheckVectorRecordOptions } from './vector-record.js';
export { checkWorkingMemoryEtag, checkWorkingMemoryKey, describeWorkingMemoryKey } from './working-memory-key.js';
export type { IdSegmentOptions } from './id-segment.js';
export {
  checkListOptions,
  compareSessions,
  DEFAULT_LIST_LIMIT,
  decodeSessionCursor,
  encodeSessionCursor,
  isAfterCursor,
  MAX_LIST_LIMIT,
  pageOfSessions,
} from './session-cursor.js';
export type { CheckedListOptions, SessionCursor } from './session-cursor.js';
