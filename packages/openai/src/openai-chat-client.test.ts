import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  BackendUnavailableError,
  ConfigurationError,
  ContextWindowExceededError,
  createAgent,
  defineTool,
  Message,
  type ChatResponseUpdate,
} from '@ctx/core';
import { recordedBody, startOpenAITestServer, type OpenAITestServer, type ScriptedFailure } from '@ctx/openai-test-server';
import { OpenAIChatClient } from './openai-chat-client.js';

let server: OpenAITestServer;
beforeAll(async () => {
  server = await startOpenAITestServer({ apiKey: 'sk-test-secret-key' });
});
afterAll(() => server.close());
beforeEach(() => server.reset());

const chat = (extra: Partial<ConstructorParameters<typeof OpenAIChatClient>[0]> = {}) =>
  new OpenAIChatClient({ baseURL: server.url, apiKey: 'sk-test-secret-key', model: 'gpt-4o-mini', maxRetries: 0, ...extra });
type Body = { messages: Array<Record<string, unknown>>; [key: string]: unknown };
const bodies = () => server.requests.filter((r) => r.path.endsWith('/chat/completions')).map((r) => r.body as Body);

describe('OpenAIChatClient', () => {
  it('holds a two-turn conversation remembered locally', async () => {
    server.enqueue({ text: 'Hi Ann.' }, { text: 'Your name is Ann.' });
    const agent = createAgent({ client: chat(), instructions: 'Be brief.' });
    const session = agent.createSession();
    expect((await agent.run('I am Ann', { session })).text).toBe('Hi Ann.');
    const second = await agent.run('What is my name?', { session });
    expect(second.text).toBe('Your name is Ann.');
    expect(second.usage?.inputTokens).toBeGreaterThan(0);
    expect(second.finishReason).toBe('stop');
    expect(bodies()[1]!.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'I am Ann' },
      { role: 'assistant', content: 'Hi Ann.' },
      { role: 'user', content: 'What is my name?' },
    ]);
    expect(bodies()[1]!.model).toBe('gpt-4o-mini');
  });

  it('runs a tool loop: tool_calls out, tool messages back', async () => {
    server.enqueue(
      {
        toolCalls: [
          { name: 'get_weather', arguments: { city: 'Oslo' }, id: 'call_a' },
          { name: 'get_weather', arguments: { city: 'Rome' }, id: 'call_b' },
        ],
      },
      { text: 'Oslo -3, Rome 18.' },
    );
    const weather = defineTool({
      name: 'get_weather',
      description: 'Weather for a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      execute: ({ city }: { city: string }) => ({ city, celsius: city === 'Oslo' ? -3 : 18 }),
    });
    const res = await createAgent({ client: chat(), tools: [weather] }).run('Weather in Oslo and Rome?');
    expect(res.text).toBe('Oslo -3, Rome 18.');
    const [first, second] = bodies();
    expect(first!.tools).toEqual([
      { type: 'function', function: { name: 'get_weather', description: 'Weather for a city', parameters: weather.parameters } },
    ]);
    expect(second!.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
          { id: 'call_b', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_a', content: '{"city":"Oslo","celsius":-3}' },
      { role: 'tool', tool_call_id: 'call_b', content: '{"city":"Rome","celsius":18}' },
    ]);
  });

  it('streams text and tool-call argument deltas, assembled by the agent', async () => {
    server.enqueue(
      { toolCalls: [{ name: 'lookup', arguments: { query: 'a fairly long query string to split' }, id: 'call_s' }] },
      { text: 'The answer, streamed in many small pieces.' },
    );
    const lookup = defineTool({ name: 'lookup', parameters: { type: 'object' }, execute: ({ query }: { query: string }) => query.length });
    const stream = createAgent({ client: chat(), tools: [lookup] }).runStream('go');
    const updates: ChatResponseUpdate[] = [];
    for await (const u of stream) updates.push(u);
    const res = await stream.response;
    const argPieces = updates.flatMap((u) => u.contents).filter((c) => c.type === 'function-call');
    expect(argPieces.length).toBeGreaterThan(1);
    expect(Message.functionCalls(res.messages[0]!)).toEqual([
      { type: 'function-call', callId: 'call_s', name: 'lookup', arguments: '{"query":"a fairly long query string to split"}' },
    ]);
    expect(res.messages[1]!.contents[0]).toMatchObject({ type: 'function-result', callId: 'call_s', result: 35 });
    expect(updates.filter((u) => u.contents.some((c) => c.type === 'text')).length).toBeGreaterThan(2);
    expect(res.text).toBe('The answer, streamed in many small pieces.');
    expect(res.usage?.outputTokens).toBeGreaterThan(0);
    expect(bodies()[0]).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it('maps every content kind to the wire format', async () => {
    server.enqueue({ text: 'ok' });
    const messages = [
      Message.system('sys'),
      Message.user(
        [
          { type: 'text', text: 'look: ' },
          { type: 'data', mediaType: 'image/png', data: 'iVBORw0KGgo=' },
          { type: 'data', mediaType: 'image/jpeg', uri: 'https://example.com/cat.jpg' },
          { type: 'data', mediaType: 'application/pdf', data: 'JVBERi0=', name: 'a.pdf' },
        ],
        { authorName: 'Ann Lee' },
      ),
      Message.assistant([
        { type: 'reasoning', text: 'hidden' },
        { type: 'text', text: 'calling' },
        { type: 'function-call', callId: 'c1', name: 'f', arguments: '{}' },
      ]),
      Message.tool([{ type: 'function-result', callId: 'c1', result: 'plain text' }]),
    ];
    await chat({ systemRole: 'developer' }).getResponse(messages, {
      instructions: 'inst',
      temperature: 0.2,
      maxOutputTokens: 50,
      toolChoice: { type: 'tool', name: 'f' },
      responseFormat: { type: 'json', name: 'answer', schema: { type: 'object' } },
    });
    const body = bodies()[0]!;
    expect(body.messages).toEqual([
      { role: 'developer', content: 'inst' },
      { role: 'developer', content: 'sys' },
      {
        role: 'user',
        name: 'Ann_Lee',
        content: [
          { type: 'text', text: 'look: ' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
          { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0=', filename: 'a.pdf' } },
        ],
      },
      { role: 'assistant', content: 'calling', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'plain text' },
    ]);
    expect(body).toMatchObject({
      temperature: 0.2,
      max_completion_tokens: 50,
      tool_choice: { type: 'function', function: { name: 'f' } },
      response_format: { type: 'json_schema', json_schema: { name: 'answer', schema: { type: 'object' }, strict: true } },
    });
  });

  it('a wrong key is a ConfigurationError that never shows the key', async () => {
    const client = new OpenAIChatClient({ baseURL: server.url, apiKey: 'sk-wrong-but-secret-123', model: 'm', maxRetries: 0 });
    const error = await client.getResponse([Message.user('hi')], {}).catch((e: unknown) => e);
    expect(ConfigurationError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/401/);
    expect(JSON.stringify(error) + String(error) + (error as Error).stack).not.toContain('sk-wrong-but-secret-123');
    expect((error as Error).cause).toBeUndefined();
  });

  it('429 and 5xx are retried by the SDK, then BackendUnavailableError', async () => {
    server.enqueue(...Array(3).fill({ error: { status: 500, message: 'boom' } }));
    const error = await chat({ maxRetries: 2 })
      .getResponse([Message.user('hi')], {})
      .catch((e: unknown) => e);
    expect(BackendUnavailableError.isInstance(error)).toBe(true);
    expect(bodies()).toHaveLength(3);
    server.enqueue({ error: { status: 429, message: 'slow down' }, headers: { 'retry-after-ms': '1' } }, { text: 'recovered' });
    expect((await chat({ maxRetries: 1 }).getResponse([Message.user('hi')], {})).messages[0]!.contents).toEqual([
      { type: 'text', text: 'recovered' },
    ]);
    server.enqueue({ error: { status: 429, message: 'slow down' } });
    await expect(chat().getResponse([Message.user('hi')], {})).rejects.toSatisfy((e) => BackendUnavailableError.isInstance(e));
  });

  it('a context-length error is a ContextWindowExceededError', async () => {
    server.enqueue({
      error: {
        status: 400,
        code: 'context_length_exceeded',
        param: 'messages',
        message: "This model's maximum context length is 128000 tokens.",
      },
    });
    await expect(chat().getResponse([Message.user('hi')], {})).rejects.toSatisfy((e) => ContextWindowExceededError.isInstance(e));
  });

  it.each(['truncated', 'garbage'] as const)('a %s stream is a typed error, not a hang', async (kind) => {
    server.enqueue({ malformedStream: kind });
    const agent = createAgent({ client: chat() });
    const stream = agent.runStream('hi');
    const drained = (async () => {
      for await (const _ of stream);
    })();
    await expect(drained).rejects.toSatisfy((e) => BackendUnavailableError.isInstance(e));
  });

  it('honours AbortSignal', async () => {
    const controller = new AbortController();
    // The server has the request and would answer in 5 s: the abort ends the call before that.
    server.respondWith(() => {
      controller.abort(new Error('cancelled by user'));
      return { delayMs: 5_000, reply: { text: 'late' } };
    });
    try {
      await expect(chat().getResponse([Message.user('hi')], { signal: controller.signal })).rejects.toThrow('cancelled by user');
    } finally {
      server.respondWith(undefined);
    }
  });

  it('talks to Azure OpenAI deployments with an api-key header', async () => {
    server.enqueue({ text: 'from azure' });
    const client = new OpenAIChatClient({
      azure: { endpoint: server.origin, deployment: 'gpt-4o-prod', apiVersion: '2024-10-21', apiKey: 'sk-test-secret-key' },
      maxRetries: 0,
    });
    expect(client.modelId).toBe('gpt-4o-prod');
    expect(client.provider).toBe('azure-openai');
    const res = await client.getResponse([Message.user('hi')], {});
    expect(Message.text(res.messages[0]!)).toBe('from azure');
    // By deployment: on a loaded machine the aborted request of an earlier test can arrive late.
    const req = server.requests.find((r) => r.deployment === 'gpt-4o-prod')!;
    expect(req.path).toBe('/openai/deployments/gpt-4o-prod/chat/completions');
    expect(req.query['api-version']).toBe('2024-10-21');
    expect(req.headers['api-key']).toBe('sk-test-secret-key');
  });

  it('authenticates to Azure with an Entra ID token provider instead of a key', async () => {
    server.enqueue({ text: 'token ok' });
    let asked = 0;
    const client = new OpenAIChatClient({
      azure: {
        endpoint: server.origin,
        deployment: 'gpt-4o-prod',
        apiVersion: '2024-10-21',
        azureADTokenProvider: async () => {
          asked++;
          return 'sk-test-secret-key';
        },
      },
      maxRetries: 0,
    });
    expect(Message.text((await client.getResponse([Message.user('hi')], {})).messages[0]!)).toBe('token ok');
    expect(asked).toBe(1);
    const req = server.requests.at(-1)!;
    expect(req.headers.authorization).toBe('Bearer sk-test-secret-key');
    expect(req.headers['api-key']).toBeUndefined();
  });

  it('needs a model', () => {
    expect(() => new OpenAIChatClient({ apiKey: 'x' })).toThrow(ConfigurationError);
  });
});

describe('failures the service reports after a chat stream started', () => {
  async function drain(stream: AsyncIterable<ChatResponseUpdate>): Promise<{ text: string; error: unknown }> {
    let text = '';
    try {
      for await (const update of stream) for (const c of update.contents) if (c.type === 'text') text += c.text;
    } catch (error) {
      return { text, error };
    }
    return { text, error: undefined };
  }

  const cases: [ScriptedFailure['failure'], { isInstance: (e: unknown) => boolean }, string][] = [
    [{ code: null, message: 'The server had an error while processing your request.' }, BackendUnavailableError, 'Retry the run later.'],
    [{ code: 'rate_limit_exceeded', message: 'Rate limit reached.' }, BackendUnavailableError, 'Retry later, or lower the rate'],
    [{ code: 'insufficient_quota', message: 'Out of quota.' }, BackendUnavailableError, 'Check the plan and billing'],
    [{ code: null, type: 'overloaded_error', message: 'Overloaded.' }, BackendUnavailableError, 'Retry the run later.'],
    [{ code: 'context_length_exceeded', message: 'Too long.' }, ContextWindowExceededError, 'Compact the conversation'],
    [
      { code: null, type: 'invalid_request_error', message: 'Invalid content.' },
      ConfigurationError,
      'Check the model, the options and the input',
    ],
  ];

  it.each(cases)('a {"error": %o} frame after partial text is a %O naming the completion', async (failure, type, todo) => {
    server.enqueue({ failure: { ...failure, textBefore: 'Partial answer' } });
    const { text, error } = await drain(chat().getStreamingResponse([Message.user('hi')], {}));
    expect(text).toBe('Partial answer');
    expect(type.isInstance(error), String(error)).toBe(true);
    expect((error as Error).message).toMatch(/^The OpenAI chat completion chatcmpl-\w+ failed/);
    expect((error as Error).message).toContain(todo);
    expect((error as Error).message).not.toMatch(/rejected the request \(0/);
  });

  it.each(cases)('%o on a plain call arrives as an HTTP error and is a %O too', async (failure, type, todo) => {
    server.enqueue({ failure });
    const error = await chat()
      .getResponse([Message.user('hi')], {})
      .catch((e: unknown) => e);
    expect(type.isInstance(error), String(error)).toBe(true);
    expect((error as Error).message).toContain(todo);
  });

  it('the recorded unsupported_parameter body (400) is a ConfigurationError that says what to check', async () => {
    server.enqueue({ replay: { status: 400, body: recordedBody('chat-error-unsupported-parameter.json') } });
    const error = await chat()
      .getResponse([Message.user('hi')], {})
      .catch((e: unknown) => e);
    expect(ConfigurationError.isInstance(error)).toBe(true);
    expect((error as Error).message).toBe(
      "The OpenAI service rejected the request (400 unsupported_parameter): Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead. Check the model, the options and the input; the same request fails again.",
    );
  });
});

describe('a server that answers every completion with one id', () => {
  let reusing: OpenAITestServer;
  beforeAll(async () => {
    reusing = await startOpenAITestServer({ apiKey: 'sk-test-secret-key', reuseIds: true });
  });
  afterAll(() => reusing.close());

  for (const streaming of [false, true]) {
    it(`three turns store every reply, each under a fresh id, the service's id in metadata${streaming ? ' (streamed)' : ''}`, async () => {
      const client = new OpenAIChatClient({ baseURL: reusing.url, apiKey: 'sk-test-secret-key', model: 'gpt-4o-mini', maxRetries: 0 });
      const agent = createAgent({ client });
      const session = agent.createSession();
      const replies: Message[] = [];
      for (const text of ['one', 'two', 'three']) {
        if (streaming) {
          const stream = agent.runStream(text, { session });
          const ids = new Set<string | undefined>();
          for await (const update of stream) ids.add(update.messageId);
          const response = await stream.response;
          // The ids streamed to the caller are the ids stored.
          expect([...ids]).toEqual([response.messages[0]!.id]);
          replies.push(...response.messages);
        } else replies.push(...(await agent.run(text, { session })).messages);
      }
      const stored = session.state.memory!.messages as Message[];
      expect(stored.map((m) => `${m.role}:${Message.text(m)}`)).toEqual([
        'user:one',
        'assistant:You said: one',
        'user:two',
        'assistant:You said: two',
        'user:three',
        'assistant:You said: three',
      ]);
      expect(stored.filter((m) => m.role === 'assistant').map((m) => m.id)).toEqual(replies.map((m) => m.id));
      expect(new Set(replies.map((m) => m.id)).size).toBe(3);
      for (const m of replies) expect(m.metadata?.serviceMessageId).toBe('chatcmpl-reused');
    });
  }
});
