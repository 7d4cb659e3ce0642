export { createOpenAITokenizer, encodingForModel } from './openai-tokenizer.js';
export type { OpenAIEncoding, OpenAITokenizer, OpenAITokenizerOptions } from './openai-tokenizer.js';
