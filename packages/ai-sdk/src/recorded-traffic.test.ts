// Chat Completions traffic recorded from the real service (tooling/openai-test-server/fixtures/SOURCES.md),
// served byte for byte by the local server to the real AI SDK OpenAI providers, then read through ctx:
// what the service sends, not what our server would write.
import { createOpenAI as createOpenAIV3 } from '@ai-sdk/openai';
import { createOpenAI as createOpenAIV2 } from '@ai-sdk/openai-v2';
import { createOpenAI as createOpenAIV4 } from '@ai-sdk/openai-v4';
import { createAgent, Message } from '@ctx/core';
import { type OpenAITestServer, recordedEvents, recordedSse, startOpenAITestServer } from '@ctx/openai-test-server';
import * as ai6 from 'ai';
import * as ai5 from 'ai-v5';
import * as ai7 from 'ai-v7';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { aiSdkChatClient } from './ai-sdk-chat-client.js';
import { ctxMiddleware } from './ctx-middleware.js';
import type { AiSdkLanguageModel } from './language-model.js';

let server: OpenAITestServer;
beforeAll(async () => {
  server = await startOpenAITestServer();
});
afterAll(() => server.close());
beforeEach(() => server.reset());

const SDKS = [
  {
    name: 'ai 5 + @ai-sdk/openai 2',
    ai: ai5 as unknown as typeof ai6,
    provider: () => createOpenAIV2({ baseURL: server.url, apiKey: 'test-key' }),
  },
  { name: 'ai 6 + @ai-sdk/openai 3', ai: ai6, provider: () => createOpenAIV3({ baseURL: server.url, apiKey: 'test-key' }) },
  {
    name: 'ai 7 + @ai-sdk/openai 4',
    ai: ai7 as unknown as typeof ai6,
    provider: () => createOpenAIV4({ baseURL: server.url, apiKey: 'test-key' }) as unknown as ReturnType<typeof createOpenAIV3>,
  },
];

/** The recorded text stream: its chunks, their joined text deltas and the usage of its last chunk. */
function textStream() {
  const events = recordedEvents('chat-text-stream.chunks.txt');
  const text = events.map((e) => (e.choices as { delta: { content?: string } }[])[0]?.delta.content ?? '').join('');
  const usage = events.at(-1)!.usage as { prompt_tokens: number; completion_tokens: number };
  return { events, text, usage };
}

describe.each(SDKS)('$name on recorded Chat Completions streams', ({ ai, provider }) => {
  const model = () => provider().chat('gpt-4o-mini') as AiSdkLanguageModel;

  it('aiSdkChatClient: the 300 recorded deltas stream and assemble into the recorded text and usage', async () => {
    const { events, text, usage } = textStream();
    server.enqueue({ replay: { events } });
    const stream = createAgent({ client: aiSdkChatClient(model()) }).runStream('Invent a holiday.');
    let deltas = 0;
    for await (const update of stream) if (update.contents.some((c) => c.type === 'text')) deltas++;
    const response = await stream.response;
    expect(text.length).toBeGreaterThan(1000);
    expect(response.text).toBe(text);
    expect(deltas).toBeGreaterThan(250);
    expect(response.usage).toMatchObject({ inputTokens: usage.prompt_tokens, outputTokens: usage.completion_tokens });
    expect(response.finishReason).toBe('stop');
  });

  it('aiSdkChatClient: the recorded tool-call stream becomes one call with its whole arguments', async () => {
    const sse = recordedSse('chat-tool-call-stream.sse');
    const recorded = sse
      .split('\n')
      .filter((line) => line.startsWith('data: {'))
      .map(
        (line) =>
          JSON.parse(line.slice(6)) as { choices: { delta: { tool_calls?: { function: { name?: string; arguments?: string } }[] } }[] },
      );
    const args = recorded.map((c) => c.choices[0]?.delta.tool_calls?.[0]?.function.arguments ?? '').join('');
    server.enqueue({ replay: { sse } });
    const updates = aiSdkChatClient(model()).getStreamingResponse([Message.user('Weather in Seattle?')], {});
    const calls: { name: string; arguments: string }[] = [];
    for await (const update of updates) for (const c of update.contents) if (c.type === 'function-call') calls.push(c);
    expect(calls).toEqual([expect.objectContaining({ name: 'GetWeatherArgs', arguments: args })]);
    expect(JSON.parse(args)).toBeTypeOf('object');
  });

  it('ctxMiddleware: streamText over the recorded stream gives the app the recorded text and stores the turn', async () => {
    const { events, text } = textStream();
    server.enqueue({ replay: { events } });
    const session = createAgent({ client: aiSdkChatClient(model()) }).createSession();
    const wrapped = ai.wrapLanguageModel({ model: model() as never, middleware: ctxMiddleware({ session }) as never });
    const result = ai.streamText({ model: wrapped, prompt: 'Invent a holiday.' });
    let parts = 0;
    for await (const part of result.fullStream) if (part.type === 'text-delta') parts++;
    expect(await result.text).toBe(text);
    expect(parts).toBeGreaterThan(250);
    const stored = (session.state.memory as { messages: Message[] }).messages;
    expect(stored.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(Message.text(stored[1]!)).toBe(text);
  });
});
