export { OpenAIChatClient } from './openai-chat-client.js';
export type { OpenAIChatClientOptions } from './openai-chat-client.js';
export { OpenAIResponsesClient } from './openai-responses-client.js';
export type { OpenAIResponsesClientOptions } from './openai-responses-client.js';
export { OpenAIEmbeddings } from './openai-embeddings.js';
export type { OpenAIEmbeddingsOptions } from './openai-embeddings.js';
export type { AzureOpenAIOptions, OpenAIConnectionOptions } from './openai-connection.js';
