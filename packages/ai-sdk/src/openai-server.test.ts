// The real AI SDK OpenAI providers (@ai-sdk/openai 2 for ai 5, 3 for ai 6, 4 for ai 7) against the local
// OpenAI-protocol server: what goes over the wire, and what comes back through ctx.
import { createOpenAI as createOpenAIV3 } from '@ai-sdk/openai';
import { createOpenAI as createOpenAIV2 } from '@ai-sdk/openai-v2';
import { createOpenAI as createOpenAIV4 } from '@ai-sdk/openai-v4';
import {
  AgentSession,
  BackendUnavailableError,
  ConfigurationError,
  ContextWindowExceededError,
  createAgent,
  defineTool,
  InMemorySessionStore,
  type Message,
} from '@ctx/core';
import { contextLengthExceeded, type OpenAITestServer, startOpenAITestServer } from '@ctx/openai-test-server';
import * as ai6 from 'ai';
import * as ai5 from 'ai-v5';
import * as ai7 from 'ai-v7';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { aiSdkChatClient } from './ai-sdk-chat-client.js';
import { ctxMiddleware } from './ctx-middleware.js';
import type { AiSdkLanguageModel } from './language-model.js';

let server: OpenAITestServer;
beforeAll(async () => {
  server = await startOpenAITestServer({ apiKey: 'sk-test-secret-key' });
});
afterAll(() => server.close());
beforeEach(() => server.reset());

type Body = { messages: { role: string; content: unknown; tool_calls?: unknown[]; tool_call_id?: string }[]; [key: string]: unknown };
const bodies = () => server.requests.filter((r) => r.route === '/chat/completions').map((r) => r.body as Body);
const roles = (body: Body | undefined) => body?.messages.map((m) => m.role);

const SDKS = [
  {
    name: 'ai 5 + @ai-sdk/openai 2',
    ai: ai5 as unknown as typeof ai6,
    provider: () => createOpenAIV2({ baseURL: server.url, apiKey: 'sk-test-secret-key' }),
  },
  { name: 'ai 6 + @ai-sdk/openai 3', ai: ai6, provider: () => createOpenAIV3({ baseURL: server.url, apiKey: 'sk-test-secret-key' }) },
  {
    name: 'ai 7 + @ai-sdk/openai 4',
    ai: ai7 as unknown as typeof ai6,
    provider: () => createOpenAIV4({ baseURL: server.url, apiKey: 'sk-test-secret-key' }) as unknown as ReturnType<typeof createOpenAIV3>,
  },
];

const weather = defineTool({
  name: 'get_weather',
  description: 'Weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  execute: ({ city }: { city: string }) => ({ city, celsius: city === 'Oslo' ? -3 : 18 }),
});

describe.each(SDKS)('$name against the local OpenAI-protocol server', ({ ai, provider }) => {
  const chatModel = () => provider().chat('gpt-4o-mini') as AiSdkLanguageModel;

  describe('aiSdkChatClient', () => {
    it('holds a conversation, streams, and runs a tool loop over Chat Completions', async () => {
      server.enqueue(
        { text: 'Hi Ann.' },
        { toolCalls: [{ name: 'get_weather', arguments: { city: 'Oslo' }, id: 'call_a' }] },
        { text: 'Ann, it is -3 in Oslo.', usage: { input: 50, output: 9 } },
      );
      const agent = createAgent({ client: aiSdkChatClient(chatModel()), instructions: 'Be brief.', tools: [weather] });
      const session = agent.createSession();
      expect((await agent.run('I am Ann', { session })).text).toBe('Hi Ann.');
      const run = agent.runStream('Weather in Oslo?', { session });
      let streamed = '';
      for await (const u of run) for (const c of u.contents) if (c.type === 'text') streamed += c.text;
      const res = await run.response;
      expect(streamed).toBe('Ann, it is -3 in Oslo.');
      expect(res.text).toBe('Ann, it is -3 in Oslo.');
      expect(res.usage).toMatchObject({ inputTokens: expect.any(Number), outputTokens: expect.any(Number) });
      expect(res.usage!.inputTokens! + res.usage!.outputTokens!).toBe(res.usage!.totalTokens);
      const [, second, third] = bodies();
      expect(second!.stream).toBe(true);
      expect(second!.tools).toMatchObject([
        { type: 'function', function: { name: 'get_weather', description: 'Weather for a city', parameters: weather.parameters } },
      ]);
      expect(roles(third)).toEqual(['system', 'user', 'assistant', 'user', 'assistant', 'tool']);
      expect(third!.messages[5]).toEqual({ role: 'tool', tool_call_id: 'call_a', content: '{"city":"Oslo","celsius":-3}' });
    });

    it('runs over the Responses API too', async () => {
      server.enqueue({ text: 'Hello from responses.' });
      const client = aiSdkChatClient(provider().responses('gpt-4o-mini') as AiSdkLanguageModel);
      const res = await createAgent({ client }).run('hi');
      expect(res.text).toBe('Hello from responses.');
      expect(server.requests.at(-1)?.route).toBe('/responses');
    });

    it('maps the service errors: 429 and 500 after retries, 400, 401, context length', async () => {
      const busy = {
        error: { status: 429, message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' },
        headers: { 'retry-after-ms': '1' },
      };
      server.enqueue(busy, busy);
      const client = aiSdkChatClient(chatModel(), { maxRetries: 1 });
      const failure = await createAgent({ client })
        .run('hi')
        .catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(BackendUnavailableError);
      expect((failure as Error).message).toMatch(/openai\.chat gpt-4o-mini is rate limiting this key \(429\)/);
      expect(bodies()).toHaveLength(2);

      server.enqueue(
        { error: { status: 500, message: 'The server had an error' }, headers: { 'retry-after-ms': '1' } },
        { text: 'Recovered.' },
      );
      expect((await createAgent({ client }).run('hi')).text).toBe('Recovered.');

      server.enqueue({ error: { status: 400, message: "Invalid value for 'temperature'", type: 'invalid_request_error' } });
      await expect(createAgent({ client }).run('hi')).rejects.toThrow(ConfigurationError);
      server.enqueue(contextLengthExceeded());
      await expect(createAgent({ client }).run('hi')).rejects.toThrow(ContextWindowExceededError);

      const wrongKey = aiSdkChatClient(createOpenAIV3({ baseURL: server.url, apiKey: 'sk-wrong-key-1234' }).chat('gpt-4o-mini'));
      const refused = await createAgent({ client: wrongKey })
        .run('hi')
        .catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(ConfigurationError);
      expect((refused as Error).message).not.toContain('sk-wrong-key-1234');
    });

    it('aborts a stream in the middle: the request is dropped at once', async () => {
      server.enqueue({ text: 'one two three four five six seven eight nine ten', streamDelayMs: 30 });
      const controller = new AbortController();
      const seen: string[] = [];
      const run = createAgent({ client: aiSdkChatClient(chatModel()) }).runStream('count', { signal: controller.signal });
      const done = (async () => {
        for await (const u of run) {
          for (const c of u.contents) if (c.type === 'text') seen.push(c.text);
          if (seen.length === 2) controller.abort(new Error('user left'));
        }
      })();
      await expect(done).rejects.toThrow('user left');
      expect(seen).toHaveLength(2);
      await expect.poll(() => server.requests.at(-1)?.aborted).toBe(true);
    });
  });

  describe('ctxMiddleware', () => {
    const stored = (session: AgentSession) => (session.state.memory?.messages ?? []) as unknown as Message[];

    it('generateText tool loop: each message over the wire once, the turn stored once', async () => {
      server.enqueue(
        { toolCalls: [{ name: 'weather', arguments: { city: 'Rome' }, id: 'call_r' }] },
        { text: 'Rome is 18.' },
        { text: 'You asked about Rome.' },
      );
      const session = new AgentSession();
      const model = ai.wrapLanguageModel({ model: chatModel() as never, middleware: ctxMiddleware({ session }) });
      const tools = {
        weather: ai.tool({
          description: 'Weather for a city',
          inputSchema: ai.jsonSchema<{ city: string }>({ type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }),
          execute: async ({ city }: { city: string }) => ({ city, celsius: 18 }),
        }),
      };
      const res = await ai.generateText({ model, system: 'Be brief.', prompt: 'Weather in Rome?', tools, stopWhen: ai.stepCountIs(3) });
      expect(res.text).toBe('Rome is 18.');
      await ai.generateText({ model, system: 'Be brief.', prompt: 'Which city?' });
      const [, second, third] = bodies();
      expect(roles(second)).toEqual(['system', 'user', 'assistant', 'tool']);
      expect(second!.messages[3]).toEqual({ role: 'tool', tool_call_id: 'call_r', content: '{"city":"Rome","celsius":18}' });
      expect(roles(third)).toEqual(['system', 'user', 'assistant', 'tool', 'assistant', 'user']);
      expect(stored(session).map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'user', 'assistant']);
    });

    it('streamText: streamed to the app, stored once the stream has finished', async () => {
      server.enqueue({ text: 'Streaming works fine.' }, { text: 'Again.' });
      const sessionStore = new InMemorySessionStore();
      const model = ai.wrapLanguageModel({ model: chatModel() as never, middleware: ctxMiddleware({ sessionStore }) });
      const res = ai.streamText({ model, prompt: 'Stream please', providerOptions: { ctx: { sessionId: 'web-1' } } });
      let text = '';
      for await (const delta of res.textStream) text += delta;
      expect(text).toBe('Streaming works fine.');
      const saved = await sessionStore.get('web-1');
      expect((saved!.session.state.memory!.messages as unknown as Message[]).map((m) => m.role)).toEqual(['user', 'assistant']);
      await ai.generateText({ model, prompt: 'Again', providerOptions: { ctx: { sessionId: 'web-1' } } });
      expect(roles(bodies()[1])).toEqual(['user', 'assistant', 'user']);
      expect(bodies()[1]!.messages[1]!.content).toBe('Streaming works fine.');
    });

    it('passes the service error through as the AI SDK reports it, and stores nothing', async () => {
      server.enqueue({ error: { status: 400, message: "Invalid value for 'temperature'", type: 'invalid_request_error' } });
      const session = new AgentSession();
      const model = ai.wrapLanguageModel({ model: chatModel() as never, middleware: ctxMiddleware({ session }) });
      const failure = await ai.generateText({ model, prompt: 'hi', maxRetries: 0 }).catch((e: unknown) => e);
      expect((failure as { statusCode?: number }).statusCode).toBe(400);
      expect(stored(session)).toEqual([]);
    });
  });
});

describe('ai 7 + @ai-sdk/openai 4 without casts', () => {
  it("type-checks ctxMiddleware against ai 7's middleware type and takes the v4 model as a ChatClient", async () => {
    const model = createOpenAIV4({ baseURL: server.url, apiKey: 'sk-test-secret-key' }).chat('gpt-4o-mini');
    expect(model.specificationVersion).toBe('v4');
    server.enqueue({ text: 'From the client.' }, { text: 'From the middleware.' });
    expect((await createAgent({ client: aiSdkChatClient(model) }).run('hi')).text).toBe('From the client.');
    const wrapped = ai7.wrapLanguageModel({ model, middleware: ctxMiddleware() });
    expect((await ai7.generateText({ model: wrapped, prompt: 'hi' })).text).toBe('From the middleware.');
  });
});
