import { APICallError, LoadAPIKeyError } from '@ai-sdk/provider';
import {
  BackendUnavailableError,
  ConfigurationError,
  ContextWindowExceededError,
  createAgent,
  defineTool,
  Message,
  type ChatResponseUpdate,
  type ReasoningContent,
} from '@ctx/core';
import { describe, expect, it } from 'vitest';
import { aiSdkChatClient } from './ai-sdk-chat-client.js';
import { endlessModel, promptLines, scriptedModel, VERSIONS } from './test-helpers.js';

const apiError = (statusCode: number, message: string, extra: Partial<ConstructorParameters<typeof APICallError>[0]> = {}) =>
  new APICallError({ message, url: 'http://127.0.0.1/v1/chat', requestBodyValues: {}, statusCode, ...extra });

const weather = defineTool({
  name: 'get_weather',
  description: 'Weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  execute: ({ city }: { city: string }) => ({ city, celsius: city === 'Oslo' ? -3 : 18 }),
});

describe.each(VERSIONS)('aiSdkChatClient on a %s model', (version) => {
  it('holds a conversation: instructions, history, usage with cached and reasoning tokens, finish reason', async () => {
    const { model, calls } = scriptedModel(version, [
      { text: 'Hi Ann.' },
      { text: 'Your name is Ann.', usage: { input: 40, output: 12, cached: 30, reasoning: 4 } },
    ]);
    const agent = createAgent({ client: aiSdkChatClient(model), instructions: 'Be brief.' });
    const session = agent.createSession();
    expect((await agent.run('I am Ann', { session })).text).toBe('Hi Ann.');
    const second = await agent.run('What is my name?', { session });
    expect(second.text).toBe('Your name is Ann.');
    expect(second.usage).toEqual({ inputTokens: 40, outputTokens: 12, totalTokens: 52, cachedInputTokens: 30, reasoningTokens: 4 });
    expect(second.finishReason).toBe('stop');
    expect(promptLines(calls[1])).toEqual(['system: Be brief.', 'user: I am Ann', 'assistant: Hi Ann.', 'user: What is my name?']);
  });

  it('runs a tool loop: tool calls out, results back as tool messages', async () => {
    const { model, calls } = scriptedModel(version, [
      {
        toolCalls: [
          { id: 'call_a', name: 'get_weather', input: { city: 'Oslo' } },
          { id: 'call_b', name: 'get_weather', input: { city: 'Rome' } },
        ],
      },
      { text: 'Oslo -3, Rome 18.' },
    ]);
    const res = await createAgent({ client: aiSdkChatClient(model), tools: [weather] }).run('Weather in Oslo and Rome?');
    expect(res.text).toBe('Oslo -3, Rome 18.');
    expect(calls[0]!.tools).toEqual([
      { type: 'function', name: 'get_weather', description: 'Weather for a city', inputSchema: weather.parameters },
    ]);
    const [assistant, tool] = calls[1]!.prompt.slice(1);
    expect(assistant).toEqual({
      role: 'assistant',
      content: [
        { type: 'tool-call', toolCallId: 'call_a', toolName: 'get_weather', input: { city: 'Oslo' } },
        { type: 'tool-call', toolCallId: 'call_b', toolName: 'get_weather', input: { city: 'Rome' } },
      ],
    });
    expect(tool).toEqual({
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: 'call_a',
          toolName: 'get_weather',
          output: { type: 'json', value: { city: 'Oslo', celsius: -3 } },
        },
        {
          type: 'tool-result',
          toolCallId: 'call_b',
          toolName: 'get_weather',
          output: { type: 'json', value: { city: 'Rome', celsius: 18 } },
        },
      ],
    });
    expect(res.finishReason).toBe('stop');
  });

  it('streams text and tool calls, and assembles the same conversation', async () => {
    const { model, calls } = scriptedModel(version, [
      { toolCalls: [{ id: 'call_a', name: 'get_weather', input: { city: 'Oslo' } }] },
      { text: 'It is -3 in Oslo.', usage: { input: 20, output: 6 } },
    ]);
    const agent = createAgent({ client: aiSdkChatClient(model), tools: [weather] });
    const session = agent.createSession();
    const updates: ChatResponseUpdate[] = [];
    const run = agent.runStream('Weather in Oslo?', { session });
    for await (const u of run) updates.push(u);
    const res = await run.response;
    expect(res.text).toBe('It is -3 in Oslo.');
    expect(updates.flatMap((u) => u.contents.flatMap((c) => (c.type === 'text' ? [c.text] : [])))).toEqual([
      'It ',
      'is ',
      '-3 ',
      'in ',
      'Oslo.',
    ]);
    expect(res.usage).toEqual({ inputTokens: 30, outputTokens: 11, totalTokens: 41 });
    expect(promptLines(calls[1])).toEqual([
      'user: Weather in Oslo?',
      'assistant: call get_weather',
      'tool: result get_weather {"city":"Oslo","celsius":-3}',
    ]);
    // The stored turn: input, the call, its result, the answer; the streamed message has a fresh id
    // (the one streamed to the caller), the response id in its metadata.
    const stored = session.state.memory!.messages as unknown as Message[];
    expect(stored.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(stored[1]!.id).not.toBe('resp-1');
    expect(stored[1]!.metadata?.serviceMessageId).toBe('resp-1');
    expect(new Set(updates.filter((u) => u.contents.length > 0 && u.role === 'assistant').map((u) => u.messageId))).toEqual(
      new Set([stored[1]!.id, stored[3]!.id]),
    );
  });

  it('a model that answers every call with one response id: three turns store every reply, each under a fresh id', async () => {
    for (const stream of [false, true]) {
      const { model } = scriptedModel(version, [{ text: 'A.' }, { text: 'B.' }, { text: 'C.' }], { responseId: 'resp-same' });
      const agent = createAgent({ client: aiSdkChatClient(model) });
      const session = agent.createSession();
      const replies: Message[] = [];
      for (const text of ['one', 'two', 'three'])
        replies.push(...(stream ? await agent.runStream(text, { session }).response : await agent.run(text, { session })).messages);
      const stored = session.state.memory!.messages as unknown as Message[];
      expect(stored.map((m) => Message.text(m))).toEqual(['one', 'A.', 'two', 'B.', 'three', 'C.']);
      expect(new Set(replies.map((m) => m.id)).size).toBe(3);
      for (const m of replies) expect(m.metadata?.serviceMessageId).toBe('resp-same');
    }
  });

  it('keeps reasoning and its provider metadata, and sends them back on the next call', async () => {
    const metadata = { anthropic: { signature: 'sig-123' } };
    for (const stream of [false, true]) {
      const { model, calls } = scriptedModel(version, [
        { reasoning: { text: 'Think first.', metadata }, toolCalls: [{ id: 'c1', name: 'get_weather', input: { city: 'Rome' } }] },
        { text: 'Rome is 18.' },
      ]);
      const agent = createAgent({ client: aiSdkChatClient(model), tools: [weather] });
      const res = stream ? await agent.runStream('Rome?').response : await agent.run('Rome?');
      const reasoning = res.messages[0]!.contents[0] as ReasoningContent;
      expect(reasoning.type).toBe('reasoning');
      expect(reasoning.text).toBe('Think first.');
      expect(calls[1]!.prompt[1]).toMatchObject({
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'Think first.', providerOptions: metadata },
          { type: 'tool-call', toolName: 'get_weather' },
        ],
      });
    }
  });

  it('passes options: temperature, output limit, tool choice, response format, additional call options', async () => {
    const { model, calls } = scriptedModel(version, [{ text: '{"ok":true}' }]);
    const client = aiSdkChatClient(model);
    await client.getResponse([Message.user('JSON please')], {
      temperature: 0.2,
      maxOutputTokens: 50,
      toolChoice: { type: 'tool', name: 'get_weather' },
      tools: [weather],
      responseFormat: { type: 'json', schema: { type: 'object' }, name: 'answer' },
      additional: { topP: 0.9, providerOptions: { openai: { user: 'u1' } } },
    });
    expect(calls[0]).toMatchObject({
      temperature: 0.2,
      maxOutputTokens: 50,
      toolChoice: { type: 'tool', toolName: 'get_weather' },
      responseFormat: { type: 'json', schema: { type: 'object' }, name: 'answer' },
      topP: 0.9,
      providerOptions: { openai: { user: 'u1' } },
    });
  });

  it('answers a function call left without a result, so the prompt stays valid', async () => {
    const { model, calls } = scriptedModel(version, [{ text: 'ok' }]);
    const orphan = Message.assistant([{ type: 'function-call', callId: 'c9', name: 'lookup', arguments: '{}' }]);
    await aiSdkChatClient(model).getResponse([Message.user('a'), orphan, Message.user('b')], {});
    expect(promptLines(calls[0])).toEqual([
      'user: a',
      'assistant: call lookup',
      'tool: result lookup "Not run: no result was given for this call. Call the tool again if it is still needed."',
      'user: b',
    ]);
  });

  it('maps the AI SDK errors to ctx errors', async () => {
    const cases: [unknown, new (...args: never[]) => Error, RegExp][] = [
      [apiError(429, 'Rate limit reached', { isRetryable: true }), BackendUnavailableError, /rate limiting.*Retry later/],
      [apiError(503, 'Overloaded', { isRetryable: true }), BackendUnavailableError, /failed \(503\)/],
      [apiError(400, 'Invalid schema for function'), ConfigurationError, /rejected the request \(400\)/],
      [apiError(401, 'Incorrect API key provided: sk-secret'), ConfigurationError, /refused the credentials/],
      [
        apiError(400, "This model's maximum context length is 128000 tokens", {
          responseBody: '{"error":{"code":"context_length_exceeded"}}',
        }),
        ContextWindowExceededError,
        /context window of mock-provider mock-model/,
      ],
      [new LoadAPIKeyError({ message: 'OpenAI API key is missing.' }), ConfigurationError, /not configured/],
      [new TypeError('fetch failed'), BackendUnavailableError, /The call to mock-provider mock-model failed: TypeError: fetch failed/],
    ];
    for (const [error, type, message] of cases) {
      const { model } = scriptedModel(version, [{ error }]);
      const failure = await aiSdkChatClient(model, { maxRetries: 0 })
        .getResponse([Message.user('hi')], {})
        .catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(type);
      expect((failure as Error).message).toMatch(message);
      expect((failure as Error).message).not.toContain('sk-secret');
    }
  });

  it('retries what the AI SDK marks retryable, after the retry-after the service gave', async () => {
    const busy = apiError(429, 'Rate limit reached', { isRetryable: true, responseHeaders: { 'retry-after-ms': '5' } });
    const { model, calls } = scriptedModel(version, [{ error: busy }, { error: busy }, { text: 'Finally.' }]);
    expect(Message.text((await aiSdkChatClient(model).getResponse([Message.user('hi')], {})).messages[0]!)).toBe('Finally.');
    expect(calls).toHaveLength(3);
    const { model: bad, calls: once } = scriptedModel(version, [{ error: apiError(400, 'Bad request') }, { text: 'never' }]);
    await expect(aiSdkChatClient(bad).getResponse([Message.user('hi')], {})).rejects.toBeInstanceOf(ConfigurationError);
    expect(once).toHaveLength(1);
  });

  it('fails a stream that sends an error part or ends before finishing', async () => {
    const { model } = scriptedModel(version, [
      { text: 'Half an', streamError: apiError(500, 'Internal error', { isRetryable: true }) },
      { text: 'Half an', truncate: true },
    ]);
    const agent = createAgent({ client: aiSdkChatClient(model) });
    await expect(agent.runStream('hi').response).rejects.toThrow(BackendUnavailableError);
    await expect(agent.runStream('hi').response).rejects.toThrow(/ended before it finished/);
  });

  it('stops at once when the caller aborts, before or during the stream', async () => {
    const { model, calls } = scriptedModel(version, [{ text: 'one two three four five six seven eight nine ten' }], { streamDelayMs: 20 });
    const agent = createAgent({ client: aiSdkChatClient(model) });
    const controller = new AbortController();
    const seen: string[] = [];
    const failure = (async () => {
      for await (const u of agent.runStream('count', { signal: controller.signal })) {
        for (const c of u.contents) if (c.type === 'text') seen.push(c.text);
        if (seen.length === 2) controller.abort(new Error('user left'));
      }
    })();
    await expect(failure).rejects.toThrow('user left');
    expect(seen).toHaveLength(2);
    expect(calls[0]!.abortSignal?.aborted).toBe(true);
    const aborted = AbortSignal.abort(new Error('gone'));
    await expect(aiSdkChatClient(model).getResponse([Message.user('x')], { signal: aborted })).rejects.toThrow('gone');
  });

  it('cancels the model stream when the reader stops early, and refuses an aborted signal before calling', async () => {
    const { model, stats } = endlessModel(version);
    const client = aiSdkChatClient(model);
    const texts: string[] = [];
    for await (const u of client.getStreamingResponse([Message.user('count')], {})) {
      for (const c of u.contents) if (c.type === 'text') texts.push(c.text);
      if (texts.length === 3) break;
    }
    expect(texts).toEqual(['2 ', '3 ', '4 ']);
    expect(stats.cancelled).toBe(1);
    const updates = client.getStreamingResponse([Message.user('count')], { signal: AbortSignal.abort(new Error('gone')) });
    await expect(updates[Symbol.asyncIterator]().next()).rejects.toThrow('gone');
    const iterator = client.getStreamingResponse([Message.user('count')], {})[Symbol.asyncIterator]();
    await iterator.return?.();
    await expect(iterator.next()).resolves.toEqual({ done: true, value: undefined });
    expect(stats.streams).toBe(1);
  });

  it("sends files in the model's own shape: bytes and URLs as v2 and v3 take them, wrapped as v4 takes them", async () => {
    const { model, calls } = scriptedModel(version, [{ text: 'A cat.' }]);
    const bytes = 'iVBORw0KGgo=';
    const input = Message.user([
      { type: 'text', text: 'What is on these?' },
      { type: 'data', mediaType: 'image/png', data: bytes, name: 'cat.png' },
      { type: 'data', mediaType: 'image/png', uri: 'https://example.com/dog.png' },
    ]);
    expect((await createAgent({ client: aiSdkChatClient(model) }).run([input])).text).toBe('A cat.');
    const files = (calls[0]!.prompt[0]!.content as { type: string }[]).filter((p) => p.type === 'file');
    const url = new URL('https://example.com/dog.png');
    expect(files).toEqual(
      version === 'v4'
        ? [
            { type: 'file', mediaType: 'image/png', filename: 'cat.png', data: { type: 'data', data: bytes } },
            { type: 'file', mediaType: 'image/png', data: { type: 'url', url } },
          ]
        : [
            { type: 'file', mediaType: 'image/png', filename: 'cat.png', data: bytes },
            { type: 'file', mediaType: 'image/png', data: url },
          ],
    );
  });

  it('refuses what is not an AI SDK language model', () => {
    expect(() => aiSdkChatClient({ specificationVersion: 'v1' } as never)).toThrow(ConfigurationError);
    expect(() => aiSdkChatClient(undefined as never)).toThrow(
      /specification v2 \(ai 5\), v3 \(ai 6\), v4 \(ai 7\); got undefined, not a model/,
    );
    expect(() => aiSdkChatClient(scriptedModel(version).model, { maxRetries: -1 })).toThrow(ConfigurationError);
  });
});
