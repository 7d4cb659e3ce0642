export { OpenAIChatClient } from './openai-chat-client.js';
export type { OpenAIChatClientOptions } from './openai-chat-client.js';
export { OpenAIResponsesClient } from './openai-responses-client.js';
export type { OpenAIResponsesClientOptions, ResponsesCompactOptions } from './openai-responses-client.js';
export { serviceCompaction } from './responses-compaction.js';
export type { ResponsesCompaction, ResponsesCompactor, ServiceCompactionOptions } from './responses-compaction.js';
export { OpenAIEmbeddings } from './openai-embeddings.js';
export type { OpenAIEmbeddingsOptions } from './openai-embeddings.js';
export type { AzureOpenAIOptions, OpenAIConnectionOptions } from './openai-connection.js';
