import { readFileSync } from 'node:fs';
import { type ChatResponseUpdate, Message } from '@ctx/core';
import { assembleResponse } from '@ctx/core/backend';
import { recordedBody, recordedEvents, recordedSse, startOpenAITestServer, type OpenAITestServer } from '@ctx/openai-test-server';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { OpenAIChatClient } from './openai-chat-client.js';

// Chat Completions traffic recorded from the real service (tooling/openai-test-server/fixtures/SOURCES.md),
// served byte for byte by the local server to the real SDK.

let server: OpenAITestServer;
beforeAll(async () => {
  server = await startOpenAITestServer();
});
afterAll(() => server.close());
beforeEach(() => server.reset());

const client = () => new OpenAIChatClient({ baseURL: server.url, apiKey: 'test-key', model: 'gpt-4o', maxRetries: 0 });
const ask = [Message.user('Hi')];

async function streamed(): Promise<{ updates: ChatResponseUpdate[]; response: ReturnType<typeof assembleResponse> }> {
  const updates: ChatResponseUpdate[] = [];
  for await (const update of client().getStreamingResponse(ask, {})) updates.push(update);
  let n = 0;
  return { updates, response: assembleResponse(updates, () => `gen-${++n}`) };
}

/** The chunks of a raw `.sse` recording, read here independently of the client. */
function sseChunks(name: string): Array<{ id: string; choices: Array<{ index: number; delta: Record<string, unknown> }> }> {
  const path = new URL(`../../../tooling/openai-test-server/fixtures/${name}`, import.meta.url);
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('data: {'))
    .map((line) => JSON.parse(line.slice(6)));
}

/** The concatenated `delta[field]` of each choice index in recorded chunks. */
function joinedDeltas(chunks: ReturnType<typeof sseChunks>, field: 'content' | 'refusal'): string[] {
  const out: string[] = [];
  for (const chunk of chunks) for (const c of chunk.choices) out[c.index] = (out[c.index] ?? '') + String(c.delta[field] ?? '');
  return out;
}

/** A fresh ctx message id. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('recorded Chat Completions traffic, replayed through the SDK', () => {
  it('chat-text.json: the text, and usage with its token details', async () => {
    const body = recordedBody('chat-text.json') as { id: string; choices: Array<{ message: { content: string } }> };
    server.enqueue({ replay: { status: 200, body } });
    const res = await client().getResponse(ask, {});
    expect(res.messages).toHaveLength(1);
    expect(res.messages[0]).toMatchObject({
      metadata: { serviceMessageId: body.id },
      contents: [{ type: 'text', text: body.choices[0]!.message.content }],
    });
    expect(res.messages[0]!.id).toMatch(UUID);
    expect(res.usage).toEqual({ inputTokens: 16, outputTokens: 363, totalTokens: 379, cachedInputTokens: 0, reasoningTokens: 0 });
    expect(res.finishReason).toBe('stop');
  });

  it('chat-text-stream: chunks with obfuscation and usage: null, then a choices: [] usage chunk', async () => {
    const events = recordedEvents('chat-text-stream.chunks.txt');
    server.enqueue({ replay: { events } });
    const { response } = await streamed();
    const text = events.map((e) => (e.choices as Array<{ delta: { content?: string } }>)[0]?.delta.content ?? '').join('');
    expect(text.length).toBeGreaterThan(1000);
    expect(response.messages.map((m) => [m.metadata?.serviceMessageId, Message.text(m)])).toEqual([[events[0]!.id, text]]);
    expect(response.messages[0]!.id).toMatch(UUID);
    expect(response.usage).toEqual({ inputTokens: 16, outputTokens: 300, totalTokens: 316, cachedInputTokens: 0, reasoningTokens: 0 });
    expect(response.finishReason).toBe('stop');
  });

  it("chat-azure-model-router-stream: Azure's first chunk (id '', choices: [], prompt_filter_results) adds no message", async () => {
    const events = recordedEvents('chat-azure-model-router-stream.chunks.txt');
    expect(events[0]).toMatchObject({ id: '', choices: [] });
    server.enqueue({ replay: { events } });
    const { response } = await streamed();
    expect(response.messages.map((m) => [m.metadata?.serviceMessageId, Message.text(m)])).toEqual([
      ['chatcmpl-CYPS1lijGoK8gd9lYzY3r9Sx50nbt', 'Capital of Denmark.'],
    ]);
    expect(response.finishReason).toBe('stop');
  });

  it('chat-n3-choices-stream: n = 3, interleaved chunks, one message per choice in index order', async () => {
    const chunks = sseChunks('chat-n3-choices-stream.sse');
    const texts = joinedDeltas(chunks, 'content');
    expect(texts).toHaveLength(3);
    server.enqueue({ replay: { sse: recordedSse('chat-n3-choices-stream.sse') } });
    const { response } = await streamed();
    const id = chunks[0]!.id;
    expect(response.messages.map((m) => [m.metadata?.serviceMessageId, Message.text(m)])).toEqual([
      [id, texts[0]],
      [`${id}:1`, texts[1]],
      [`${id}:2`, texts[2]],
    ]);
    // Each choice is its own message, under a fresh id of its own.
    expect(new Set(response.messages.map((m) => m.id)).size).toBe(3);
    for (const m of response.messages) expect(m.id).toMatch(UUID);
    expect(new Set(texts).size).toBe(3);
    expect(response.finishReason).toBe('stop');
  });

  it('chat-refusal-stream: a refusal content, not text, as the service starts it (content: null, refusal: "")', async () => {
    const refusal = joinedDeltas(sseChunks('chat-refusal-stream.sse'), 'refusal')[0]!;
    expect(refusal).toMatch(/^I'm sorry/);
    server.enqueue({ replay: { sse: recordedSse('chat-refusal-stream.sse') } });
    const { response } = await streamed();
    expect(response.messages[0]!.contents).toEqual([{ type: 'refusal', refusal }]);
    expect(Message.text(response.messages[0]!)).toBe('');
  });

  it('chat-refusal.json: content null and a refusal', async () => {
    server.enqueue({ replay: { status: 200, body: recordedBody('chat-refusal.json') } });
    const res = await client().getResponse(ask, {});
    expect(res.messages[0]!.contents).toEqual([{ type: 'refusal', refusal: "I'm very sorry, but I can't assist with that." }]);
    expect(res.usage).toEqual({ inputTokens: 79, outputTokens: 12, totalTokens: 91, reasoningTokens: 0 });
  });

  it("a refusal goes back to the service as the assistant message's refusal, not as its content", async () => {
    server.enqueue({ replay: { status: 200, body: recordedBody('chat-refusal.json') } }, { text: 'OK.' });
    const first = await client().getResponse(ask, {});
    await client().getResponse([...ask, ...first.messages, Message.user('Then something else.')], {});
    const sent = server.requests.at(-1)!.body as { messages: unknown[] };
    expect(sent.messages[1]).toEqual({ role: 'assistant', content: null, refusal: "I'm very sorry, but I can't assist with that." });
  });

  it.each([
    ['chat-tool-call-stream.sse', 1],
    ['chat-parallel-tool-calls-stream.sse', 2],
  ])('%s: the tool calls with their whole arguments', async (name, count) => {
    const chunks = sseChunks(name);
    server.enqueue({ replay: { sse: recordedSse(name) } });
    const { response } = await streamed();
    const calls = Message.functionCalls(response.messages[0]!);
    const pieces = chunks.flatMap(
      (c) =>
        (c.choices[0]?.delta.tool_calls as Array<{ index: number; id?: string; function: { name?: string; arguments?: string } }>) ?? [],
    );
    const expected = pieces.filter((p) => p.id).map((p) => ({ callId: p.id, name: p.function.name }));
    expect(expected).toHaveLength(count);
    expect(calls.map((c) => ({ callId: c.callId, name: c.name }))).toEqual(expected);
    calls.forEach((call, index) => {
      const args = pieces.filter((p) => p.index === index).map((p) => p.function.arguments ?? '');
      expect(call.arguments).toBe(args.join(''));
      expect(() => JSON.parse(call.arguments)).not.toThrow();
    });
    expect(response.finishReason).toBe('tool-calls');
  });

  it.each([
    ['chat-tool-call.json', ['GetWeatherArgs']],
    ['chat-parallel-tool-calls.json', ['GetWeatherArgs', 'get_stock_price']],
  ])('%s: the tool calls, non-streamed', async (name, names) => {
    const body = recordedBody(name) as {
      choices: Array<{ message: { tool_calls: Array<{ id: string; function: { arguments: string } }> } }>;
    };
    server.enqueue({ replay: { status: 200, body } });
    const res = await client().getResponse(ask, {});
    expect(Message.functionCalls(res.messages[0]!)).toEqual(
      body.choices[0]!.message.tool_calls.map((c, i) => ({
        type: 'function-call',
        callId: c.id,
        name: names[i],
        arguments: c.function.arguments,
      })),
    );
    expect(res.finishReason).toBe('tool-calls');
  });

  it('chat-length-stream: finish reason length', async () => {
    server.enqueue({ replay: { sse: recordedSse('chat-length-stream.sse') } });
    const { response } = await streamed();
    expect(response.finishReason).toBe('length');
    expect(Message.text(response.messages[0]!)).toBe(joinedDeltas(sseChunks('chat-length-stream.sse'), 'content')[0]);
  });
});
