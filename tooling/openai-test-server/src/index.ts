export { startOpenAITestServer } from './openai-test-server.js';
export { contextLengthExceeded } from './scripted-errors.js';
export { deterministicEmbedding, encodeBase64Embedding } from './embeddings.js';
export { recordedBody, recordedEvents } from './fixtures.js';
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
  ScriptedReplay,
  ScriptedReply,
  ScriptedToolCall,
} from './types.js';
