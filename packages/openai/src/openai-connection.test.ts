import { ConfigurationError } from '@ctx/core';
import { describe, expect, it } from 'vitest';
import { OpenAIChatClient } from './openai-chat-client.js';
import { OpenAIEmbeddings } from './openai-embeddings.js';
import { OpenAIResponsesClient } from './openai-responses-client.js';
import { serviceCompaction } from './responses-compaction.js';
import { createOpenAITokenizer } from './tokenizer/openai-tokenizer.js';

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

  it.each([
    ['OpenAIChatClient', () => new OpenAIChatClient({ ...base, model: 'm', maxRetry: 1 } as never), 'maxRetry', undefined],
    [
      'OpenAIResponsesClient',
      () => new OpenAIResponsesClient({ ...base, model: 'm', compactThresold: 10 } as never),
      'compactThresold',
      undefined,
    ],
    ['OpenAIEmbeddings', () => new OpenAIEmbeddings({ ...base, dimension: 8 } as never), 'dimension', undefined],
    ['OpenAIEmbeddings', () => new OpenAIEmbeddings({ ...base, baseUrl: 'http://127.0.0.1:9/v1' } as never), 'baseUrl', 'baseURL'],
    [
      'OpenAIChatClient azure',
      () => new OpenAIChatClient({ azure: { endpoint: 'http://127.0.0.1:9', apiKey: 'k', deploymentName: 'd' } } as never),
      'deploymentName',
      undefined,
    ],
    ['createOpenAITokenizer', () => createOpenAITokenizer({ modle: 'gpt-4' } as never), 'modle', undefined],
    [
      'serviceCompaction',
      () => serviceCompaction({ client: { compact: async () => ({}) as never }, threshold: 5 } as never),
      'threshold',
      undefined,
    ],
  ])('%s: an option it does not know is a ConfigurationError naming it', (owner, create, name, near) => {
    expect(create).toThrow(ConfigurationError);
    expect(create).toThrow(`${owner}: unknown option "${name}"${near ? ` (did you mean "${near}"?)` : ''}`);
  });

  it('createOpenAITokenizer refuses an encoding it does not have', () => {
    expect(() => createOpenAITokenizer({ encoding: 'p50k_base' as never })).toThrow(ConfigurationError);
    expect(() => createOpenAITokenizer({ encoding: 'p50k_base' as never })).toThrow(
      /encoding must be 'o200k_base' or 'cl100k_base', got "p50k_base"/,
    );
  });

  it('maxRetries 0 and fractional timeouts are fine', () => {
    expect(new OpenAIChatClient({ ...base, model: 'm', maxRetries: 0, timeout: 1500.5 }).client.maxRetries).toBe(0);
  });
});
