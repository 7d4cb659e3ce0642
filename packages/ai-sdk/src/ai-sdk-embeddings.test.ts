import { createOpenAI as createOpenAIV3 } from '@ai-sdk/openai';
import { createOpenAI as createOpenAIV2 } from '@ai-sdk/openai-v2';
import { createOpenAI as createOpenAIV4 } from '@ai-sdk/openai-v4';
import type { EmbeddingModelV3 } from '@ai-sdk/provider';
import { BackendUnavailableError, ConfigurationError, createAgent, InMemoryVectorIndex, Message, SemanticRecallProvider } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { describe, expect, it } from 'vitest';
import { aiSdkEmbeddings } from './ai-sdk-embeddings.js';

/** A vector per text: counts of a few letters, so equal texts embed alike and the order is checkable. */
const letters = (text: string) => ['a', 'e', 'o', 'r'].map((l) => text.split(l).length - 1 + 0.01);

/** An OpenAI embeddings endpoint answered in process: records each request body. */
function embeddingsFetch() {
  const bodies: { input: string[]; model: string }[] = [];
  const fetch = async (_url: unknown, init?: { body?: unknown }) => {
    const body = JSON.parse(String(init?.body)) as { input: string[]; model: string };
    bodies.push(body);
    const data = body.input.map((text, index) => ({ object: 'embedding', index, embedding: letters(text) }));
    return new Response(JSON.stringify({ object: 'list', data, model: body.model, usage: { prompt_tokens: 3, total_tokens: 3 } }), {
      status: 200,
      headers: { 'content-type': 'application/json' },
    });
  };
  return { bodies, fetch: fetch as typeof globalThis.fetch };
}

describe.each([
  [
    'ai 7 (embedding model v4)',
    (fetch: typeof globalThis.fetch) => createOpenAIV4({ apiKey: 'sk-test', fetch }).textEmbeddingModel('text-embedding-3-small'),
  ],
  [
    'ai 6 (embedding model v3)',
    (fetch: typeof globalThis.fetch) => createOpenAIV3({ apiKey: 'sk-test', fetch }).textEmbeddingModel('text-embedding-3-small'),
  ],
  [
    'ai 5 (embedding model v2)',
    (fetch: typeof globalThis.fetch) => createOpenAIV2({ apiKey: 'sk-test', fetch }).textEmbeddingModel('text-embedding-3-small'),
  ],
])('aiSdkEmbeddings with %s', (_name, make) => {
  it('embeds the texts in order, one vector each, through the provider', async () => {
    const { bodies, fetch } = embeddingsFetch();
    const embeddings = aiSdkEmbeddings(make(fetch));
    const vectors = await embeddings.embed(['a road', 'orange', 'ee']);
    expect(vectors).toEqual([letters('a road'), letters('orange'), letters('ee')]);
    expect(bodies).toEqual([expect.objectContaining({ input: ['a road', 'orange', 'ee'], model: 'text-embedding-3-small' })]);
  });

  it('drives SemanticRecallProvider: turns indexed, a later question recalls them', async () => {
    const { fetch } = embeddingsFetch();
    const index = new InMemoryVectorIndex();
    const client = new ScriptedChatClient({ replies: () => ({ text: 'ok' }) });
    const agent = createAgent({
      client,
      contextProviders: [new SemanticRecallProvider({ embeddings: aiSdkEmbeddings(make(fetch)), index, messageRange: 0 })],
    });
    await agent.run('aaaa aaaa', { session: agent.createSession({ userId: 'u' }) });
    expect(index.size).toBe(2);
    await agent.run('aaaa?', { session: agent.createSession({ userId: 'u' }) });
    const recalled = client.calls[1]!.messages.filter((m) => Message.source(m)?.sourceId === 'recall');
    expect(Message.text(recalled[0]!)).toContain('user: aaaa aaaa');
  });
});

describe('aiSdkEmbeddings', () => {
  /** A v3 model that records its calls; `fail` makes a call throw. */
  function model(init: { maxEmbeddingsPerCall?: number; answer?: (values: string[]) => number[][]; hang?: boolean } = {}) {
    const calls: { values: string[]; signal: boolean }[] = [];
    const m: EmbeddingModelV3 = {
      specificationVersion: 'v3',
      provider: 'mock',
      modelId: 'embed-1',
      maxEmbeddingsPerCall: init.maxEmbeddingsPerCall,
      supportsParallelCalls: false,
      doEmbed: async ({ values, abortSignal }) => {
        calls.push({ values, signal: abortSignal !== undefined });
        if (init.hang) return new Promise(() => {});
        return { embeddings: (init.answer ?? ((v) => v.map(letters)))(values), warnings: [] };
      },
    };
    return { m, calls };
  }

  it("sends batches of the model's maxEmbeddingsPerCall, or of the option, and keeps the order", async () => {
    const texts = ['a', 'ee', 'ooo', 'rrrr', 'ae'];
    const { m, calls } = model({ maxEmbeddingsPerCall: 2 });
    expect(await aiSdkEmbeddings(m).embed(texts)).toEqual(texts.map(letters));
    expect(calls.map((c) => c.values)).toEqual([['a', 'ee'], ['ooo', 'rrrr'], ['ae']]);
    const other = model({ maxEmbeddingsPerCall: 2 });
    await aiSdkEmbeddings(other.m, { maxEmbeddingsPerCall: 4 }).embed(texts);
    expect(other.calls.map((c) => c.values.length)).toEqual([4, 1]);
  });

  it('a model that returns the wrong number of vectors is a BackendUnavailableError naming it', async () => {
    const { m } = model({ answer: (v) => v.slice(1).map(letters) });
    await expect(aiSdkEmbeddings(m).embed(['a', 'b'])).rejects.toSatisfy(
      (e: unknown) => BackendUnavailableError.isInstance(e) && /mock embed-1 returned 1 embeddings for 2 texts/.test(String(e)),
    );
  });

  it('an abort rejects at once with the reason, even when the model ignores its signal', async () => {
    const { m, calls } = model({ hang: true });
    const controller = new AbortController();
    const pending = aiSdkEmbeddings(m).embed(['a'], { signal: controller.signal });
    const reason = new Error('stop');
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    expect(calls[0]!.signal).toBe(true);
  });

  it('refuses what is not an embedding model, and bad options', () => {
    expect(() => aiSdkEmbeddings({} as never)).toThrow(ConfigurationError);
    expect(() => aiSdkEmbeddings(model().m, { maxEmbeddingsPerCall: 0 })).toThrow(/maxEmbeddingsPerCall must be a positive integer/);
  });
});
