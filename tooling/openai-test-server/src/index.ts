export { startOpenAITestServer } from './openai-test-server.js';
export { contextLengthExceeded } from './scripted-errors.js';
export { deterministicEmbedding, encodeBase64Embedding } from './embeddings.js';
export { recordedBody, recordedEvents, recordedEventStreams, recordedSse } from './fixtures.js';
export type {
  ConversationItem,
  JsonObject,
  OpenAITestServer,
  OpenAITestServerOptions,
  RecordedRequest,
  Responder,
  ScriptedCompletion,
  ScriptedDelay,
  ScriptedError,
  ScriptedFailure,
  ScriptedMalformedStream,
  ScriptedOutputItem,
  ScriptedReplay,
  ScriptedReply,
  ScriptedToolCall,
} from './types.js';
