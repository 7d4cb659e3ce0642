export { aiSdkChatClient } from './ai-sdk-chat-client.js';
export type { AiSdkChatClient, AiSdkChatClientOptions } from './ai-sdk-chat-client.js';
export { ctxMiddleware } from './ctx-middleware.js';
export type { CtxCallMetadata, CtxMiddleware, CtxMiddlewareOptions } from './ctx-middleware.js';
export { toCtxError } from './errors.js';
export type { AiSdkLanguageModel } from './language-model.js';
export { aiSdkEmbeddings } from './ai-sdk-embeddings.js';
export type { AiSdkEmbeddingModel, AiSdkEmbeddingsOptions } from './ai-sdk-embeddings.js';
