import { ConfigurationError } from '@ctx/core';
import { describe, expect, it } from 'vitest';
import { OpenAIChatClient } from './openai-chat-client.js';
import { OpenAIEmbeddings } from './openai-embeddings.js';
import { OpenAIResponsesClient } from './openai-responses-client.js';

// No backend: these only construct clients.
const base = { baseURL: 'http://127.0.0.1:9/v1', apiKey: 'k' };

describe('option checks', () => {
  it.each([
    [
      () => new OpenAIChatClient({ ...base, model: 'm', maxRetries: -1 }),
      /^OpenAIChatClient: maxRetries must be a non-negative integer, got -1\.$/,
    ],
    [
      () => new OpenAIResponsesClient({ ...base, model: 'm', timeout: 0 }),
      /^OpenAIResponsesClient: timeout must be a positive number, got 0\.$/,
    ],
    [() => new OpenAIEmbeddings({ ...base, batchSize: 0 }), /^OpenAIEmbeddings: batchSize must be a positive integer, got 0\.$/],
    [() => new OpenAIEmbeddings({ ...base, concurrency: 0 }), /^OpenAIEmbeddings: concurrency must be a positive integer, got 0\.$/],
    [() => new OpenAIEmbeddings({ ...base, dimensions: 1.5 }), /^OpenAIEmbeddings: dimensions must be a positive integer, got 1\.5\.$/],
    [() => new OpenAIResponsesClient({ ...base }), /^OpenAIResponsesClient needs a model: pass `model`/],
  ])('%#: a ConfigurationError naming the class and the option', (create, message) => {
    expect(create).toThrow(message);
    expect(create).toThrow(ConfigurationError);
  });

  it('maxRetries 0 and fractional timeouts are fine', () => {
    expect(new OpenAIChatClient({ ...base, model: 'm', maxRetries: 0, timeout: 1500.5 }).client.maxRetries).toBe(0);
  });
});
