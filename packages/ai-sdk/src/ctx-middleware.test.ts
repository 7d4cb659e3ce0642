import { APICallError } from '@ai-sdk/provider';
import {
  AgentSession,
  ConfigurationError,
  type ContextProvider,
  defineTool,
  InMemoryRetriever,
  InMemorySessionStore,
  type Message,
  ProviderError,
  SessionStateError,
  slidingWindow,
  TextSearchProvider,
} from '@ctx/core';
import * as ai6 from 'ai';
import * as ai5 from 'ai-v5';
import * as ai7 from 'ai-v7';
import { describe, expect, it } from 'vitest';
import { type CtxCallMetadata, ctxMiddleware, type CtxMiddlewareOptions } from './ctx-middleware.js';
import { endlessModel, promptLines, type ScriptedTurn, scriptedModel, type Version } from './test-helpers.js';

// Each major of the AI SDK, with the mock model of its own specification version.
const SDKS: { name: string; version: Version; ai: typeof ai6 }[] = [
  { name: 'ai 5', version: 'v2', ai: ai5 as unknown as typeof ai6 },
  { name: 'ai 6', version: 'v3', ai: ai6 },
  { name: 'ai 7', version: 'v4', ai: ai7 as unknown as typeof ai6 },
];

const weatherSchema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] as string[] } as const;

describe.each(SDKS)('ctxMiddleware with $name', ({ version, ai }) => {
  const setup = (turns: ScriptedTurn[], options: CtxMiddlewareOptions = {}, streamDelayMs?: number) => {
    const scripted = scriptedModel(version, turns, { streamDelayMs });
    const model = ai.wrapLanguageModel({ model: scripted.model as never, middleware: ctxMiddleware(options) });
    return { ...scripted, wrapped: model };
  };
  const stored = (session: AgentSession) =>
    ((session.state.memory?.messages ?? []) as unknown as Message[]).map((m) => `${m.role}: ${summary(m)}`);
  const summary = (m: Message) =>
    m.contents
      .map((c) =>
        c.type === 'text'
          ? c.text
          : c.type === 'function-call'
            ? `call ${c.name}`
            : c.type === 'function-result'
              ? `result ${c.name}`
              : c.type,
      )
      .join(' | ');
  const weather = (calls: string[]) =>
    ai.tool({
      description: 'Weather for a city',
      inputSchema: ai.jsonSchema<{ city: string }>(weatherSchema),
      execute: async ({ city }: { city: string }) => {
        calls.push(city);
        return { city, celsius: city === 'Oslo' ? -3 : 18 };
      },
    });

  it("stores the app's files and sends them back on the next call in the model's own shape", async () => {
    const session = new AgentSession();
    const { wrapped, calls } = setup([{ text: 'A cat.' }, { text: 'Still a cat.' }], { session });
    const bytes = new Uint8Array([137, 80, 78, 71]);
    const content = [
      { type: 'text' as const, text: 'What is on it?' },
      { type: 'file' as const, data: bytes, mediaType: 'image/png' },
    ];
    expect((await ai.generateText({ model: wrapped, messages: [{ role: 'user', content }] })).text).toBe('A cat.');
    const [user] = (session.state.memory?.messages ?? []) as unknown as Message[];
    expect(user!.contents).toEqual([
      { type: 'text', text: 'What is on it?' },
      { type: 'data', mediaType: 'image/png', data: 'iVBORw==' },
    ]);
    await ai.generateText({ model: wrapped, prompt: 'And now?' });
    const file = (calls[1]!.prompt[0]!.content as { type: string; data?: unknown }[]).find((p) => p.type === 'file');
    expect(file?.data).toEqual(version === 'v4' ? { type: 'data', data: 'iVBORw==' } : 'iVBORw==');
  });

  it('keeps the conversation of a generateText loop: history loaded before each call, each turn stored once', async () => {
    const session = new AgentSession();
    const { wrapped, calls } = setup([{ text: 'Hi Ann.' }, { text: 'Your name is Ann.' }], { session });
    const first = await ai.generateText({ model: wrapped, system: 'Be brief.', prompt: 'I am Ann' });
    expect(first.text).toBe('Hi Ann.');
    const second = await ai.generateText({ model: wrapped, system: 'Be brief.', prompt: 'What is my name?' });
    expect(second.text).toBe('Your name is Ann.');
    expect(promptLines(calls[1])).toEqual(['system: Be brief.', 'user: I am Ann', 'assistant: Hi Ann.', 'user: What is my name?']);
    // The system prompt is sent every call and never stored.
    expect(stored(session)).toEqual(['user: I am Ann', 'assistant: Hi Ann.', 'user: What is my name?', 'assistant: Your name is Ann.']);
    expect(second.providerMetadata?.ctx).toEqual({
      sessionId: session.sessionId,
      added: { memory: { messages: 2, instructions: 0, tools: 0 } },
      modelCalls: 1,
    } satisfies CtxCallMetadata);
  });

  it('keeps concurrent calls apart: each its own session, prompt, tools and metadata', async () => {
    const store = new InMemorySessionStore();
    const notes: ContextProvider = { sourceId: 'notes', beforeRun: ({ context }) => context.extendInstructions('notes', 'Note.') };
    const { wrapped, calls } = setup(
      [{ text: 'One.' }, { text: 'Two.' }, { text: 'Three.' }],
      { sessionStore: store, contextProviders: [notes] },
      2,
    );
    const ask = (prompt: string, sessionId?: string) =>
      ai.generateText({ model: wrapped, prompt, ...(sessionId ? { providerOptions: { ctx: { sessionId } } } : {}) });
    const streamed = ai.streamText({ model: wrapped, prompt: 'c', providerOptions: { ctx: { sessionId: 'bob' } } });
    const [a, b] = await Promise.all([ask('a', 'ann'), ask('b'), streamed.consumeStream()]);
    const metadata = [
      a.providerMetadata?.ctx,
      b.providerMetadata?.ctx,
      (await streamed.providerMetadata)?.ctx,
    ] as unknown as CtxCallMetadata[];
    expect(metadata.map((m) => [m.sessionId, m.modelCalls, m.added.notes?.instructions, m.added.memory?.messages ?? 0])).toEqual([
      ['ann', 1, 1, 0],
      [null, 1, 1, 0],
      ['bob', 1, 1, 0],
    ]);
    expect(
      calls
        .map((c) =>
          promptLines(c)
            .filter((l) => l.startsWith('user'))
            .join(),
        )
        .sort(),
    ).toEqual(['user: a', 'user: b', 'user: c']);
    expect(new Set([a.text, b.text, await streamed.text])).toEqual(new Set(['One.', 'Two.', 'Three.']));
  });

  it('stores a tool loop of the AI SDK once: the steps continue the stored turn', async () => {
    const session = new AgentSession();
    const executed: string[] = [];
    const { wrapped, calls } = setup(
      [
        { toolCalls: [{ id: 'call_1', name: 'weather', input: { city: 'Oslo' } }] },
        { text: 'It is -3 in Oslo.' },
        { text: 'You asked about Oslo.' },
      ],
      { session },
    );
    const tools = { weather: weather(executed) };
    const res = await ai.generateText({ model: wrapped, prompt: 'Weather in Oslo?', tools, stopWhen: ai.stepCountIs(3) });
    expect(res.text).toBe('It is -3 in Oslo.');
    expect(res.steps).toHaveLength(2);
    expect(executed).toEqual(['Oslo']);
    // Step 2: the stored call from history, the result as the new input; nothing twice.
    expect(promptLines(calls[1])).toEqual([
      'user: Weather in Oslo?',
      'assistant: call weather',
      'tool: result weather {"city":"Oslo","celsius":-3}',
    ]);
    expect(stored(session)).toEqual([
      'user: Weather in Oslo?',
      'assistant: call weather',
      'tool: result weather',
      'assistant: It is -3 in Oslo.',
    ]);
    // The next turn carries the whole previous turn once.
    await ai.generateText({ model: wrapped, prompt: 'Which city did I ask about?', tools });
    expect(promptLines(calls[2])).toEqual([
      'user: Weather in Oslo?',
      'assistant: call weather',
      'tool: result weather {"city":"Oslo","celsius":-3}',
      'assistant: It is -3 in Oslo.',
      'user: Which city did I ask about?',
    ]);
    expect(stored(session)).toHaveLength(6);
  });

  it('stores nothing twice when the app also keeps its own message list', async () => {
    const session = new AgentSession();
    const { wrapped, calls } = setup([{ text: 'Hi Ann.' }, { text: 'Ann.' }], { session });
    const first = await ai.generateText({ model: wrapped, prompt: 'I am Ann' });
    const messages = [
      { role: 'user' as const, content: 'I am Ann' },
      ...first.response.messages,
      { role: 'user' as const, content: 'My name?' },
    ];
    await ai.generateText({ model: wrapped, messages });
    expect(promptLines(calls[1])).toEqual(['user: I am Ann', 'assistant: Hi Ann.', 'user: My name?']);
    expect(stored(session)).toEqual(['user: I am Ann', 'assistant: Hi Ann.', 'user: My name?', 'assistant: Ann.']);
  });

  it('streams through streamText and stores the assembled answer once the stream has finished', async () => {
    const session = new AgentSession();
    const executed: string[] = [];
    const { wrapped, calls } = setup(
      [
        { toolCalls: [{ id: 'call_1', name: 'weather', input: { city: 'Rome' } }], usage: { input: 10, output: 3 } },
        { text: 'Rome is 18 degrees.', usage: { input: 30, output: 5, cached: 8 } },
      ],
      { session },
    );
    const result = ai.streamText({
      model: wrapped,
      prompt: 'Weather in Rome?',
      tools: { weather: weather(executed) },
      stopWhen: ai.stepCountIs(3),
    });
    const deltas: string[] = [];
    for await (const delta of result.textStream) deltas.push(delta);
    expect(deltas).toEqual(['Rome ', 'is ', '18 ', 'degrees.']);
    expect(executed).toEqual(['Rome']);
    expect((await result.totalUsage).inputTokens).toBe(40);
    expect(promptLines(calls[1])).toEqual([
      'user: Weather in Rome?',
      'assistant: call weather',
      'tool: result weather {"city":"Rome","celsius":18}',
    ]);
    expect(stored(session)).toEqual([
      'user: Weather in Rome?',
      'assistant: call weather',
      'tool: result weather',
      'assistant: Rome is 18 degrees.',
    ]);
    const metadata = (await result.providerMetadata)?.ctx as unknown as CtxCallMetadata;
    expect(metadata.added.memory?.messages).toBe(2);
  });

  it('injects retrieved documents attributed to their provider, and runs the tools providers contribute inside the call', async () => {
    const retriever = new InMemoryRetriever({
      documents: [
        { id: 'd1', title: 'Returns', content: 'Items can be returned within 30 days with a receipt.' },
        { id: 'd2', title: 'Shipping', content: 'Shipping to Norway takes 5 days.' },
      ],
    });
    const lookups: string[] = [];
    const orders: ContextProvider = {
      sourceId: 'orders',
      beforeRun({ context }) {
        context.extendInstructions('orders', 'Look orders up before answering about them.');
        context.extendTools('orders', [
          defineTool({
            name: 'get_order',
            description: 'An order by id',
            parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
            execute: ({ id }: { id: string }) => {
              lookups.push(id);
              return { id, status: 'shipped' };
            },
          }),
        ]);
      },
    };
    for (const stream of [false, true]) {
      lookups.length = 0;
      const session = new AgentSession();
      const { wrapped, calls } = setup(
        [{ toolCalls: [{ id: 'c1', name: 'get_order', input: { id: 'A7' } }] }, { text: 'Order A7 has shipped; returns take 30 days.' }],
        { session, contextProviders: [new TextSearchProvider({ retriever, sourceId: 'docs', topK: 1 }), orders] },
      );
      const args = { model: wrapped, system: 'You are a shop assistant.', prompt: 'Where is order A7, and can it be returned?' };
      const res = stream ? ai.streamText(args) : await ai.generateText(args);
      expect(await res.text).toBe('Order A7 has shipped; returns take 30 days.');
      // The AI SDK saw one step and no call of the provider's tool; ctx ran it between two model calls.
      expect((await res.steps).length).toBe(1);
      expect((await res.toolCalls).length).toBe(0);
      expect(lookups).toEqual(['A7']);
      expect(calls).toHaveLength(2);
      const prompt = promptLines(calls[0]);
      expect(prompt[0]).toBe('system: You are a shop assistant.\n\nLook orders up before answering about them.');
      expect(prompt[1]).toContain('Items can be returned within 30 days');
      expect(prompt[2]).toBe('user: Where is order A7, and can it be returned?');
      expect(calls[0]!.tools?.map((t) => t.name)).toEqual(['get_order']);
      expect(promptLines(calls[1]).slice(3)).toEqual([
        'assistant: call get_order',
        'tool: result get_order {"id":"A7","status":"shipped"}',
      ]);
      const metadata = (await res.providerMetadata)?.ctx as unknown as CtxCallMetadata;
      expect(metadata.added).toMatchObject({ docs: { messages: 1 }, orders: { instructions: 1, tools: 1 } });
      expect(metadata.modelCalls).toBe(2);
      // The retrieved document was context for this call, not part of the conversation.
      expect(stored(session)).toEqual([
        'user: Where is order A7, and can it be returned?',
        'assistant: call get_order',
        'tool: result get_order',
        'assistant: Order A7 has shipped; returns take 30 days.',
      ]);
    }
  });

  it('compacts the conversation before every model call', async () => {
    const session = new AgentSession();
    const { wrapped, calls } = setup([{ text: 'a1' }, { text: 'a2' }, { text: 'a3' }], {
      session,
      compaction: slidingWindow({ maxGroups: 3 }),
    });
    for (const prompt of ['q1', 'q2', 'q3']) await ai.generateText({ model: wrapped, prompt });
    expect(promptLines(calls[2])).toEqual(['user: q2', 'assistant: a2', 'user: q3']);
    expect(stored(session)).toHaveLength(6);
  });

  it('takes the session from providerOptions.ctx.sessionId and the session store, and strips it from the call', async () => {
    const sessionStore = new InMemorySessionStore();
    const { wrapped, calls } = setup([{ text: 'Hi Ann.' }, { text: 'Hi Bo.' }, { text: 'You are Ann.' }], { sessionStore });
    const ask = (sessionId: string, prompt: string) => ai.generateText({ model: wrapped, prompt, providerOptions: { ctx: { sessionId } } });
    await ask('ann', 'I am Ann');
    await ask('bo', 'I am Bo');
    await ask('ann', 'Who am I?');
    expect(promptLines(calls[2])).toEqual(['user: I am Ann', 'assistant: Hi Ann.', 'user: Who am I?']);
    expect(calls.every((c) => c.providerOptions?.ctx === undefined)).toBe(true);
    const saved = await sessionStore.get('ann');
    expect((saved!.session.state.memory!.messages as unknown[]).length).toBe(4);
    // Without a session the call is stateless: the providers run, nothing is kept.
    await ai.generateText({ model: wrapped, prompt: 'hello' });
    expect(promptLines(calls[3])).toEqual(['user: hello']);
  });

  it('passes the AI SDK errors through unchanged, and stores nothing for a failed call', async () => {
    const session = new AgentSession();
    const refused = new APICallError({ message: 'Invalid tool schema', url: 'http://x', requestBodyValues: {}, statusCode: 400 });
    const { wrapped } = setup([{ error: refused }], { session });
    const failure = await ai.generateText({ model: wrapped, prompt: 'hi' }).catch((e: unknown) => e);
    expect(APICallError.isInstance(failure)).toBe(true);
    expect(stored(session)).toEqual([]);
    const busy = new APICallError({ message: 'Overloaded', url: 'http://x', requestBodyValues: {}, statusCode: 529, isRetryable: true });
    const retried = setup([{ error: busy }, { text: 'Back.' }], { session });
    expect((await ai.generateText({ model: retried.wrapped, prompt: 'hi', maxRetries: 1 })).text).toBe('Back.');
    expect(stored(session)).toEqual(['user: hi', 'assistant: Back.']);
  });

  it('fails the call with a ProviderError when a provider fails, before the model is called', async () => {
    const failing: ContextProvider = {
      sourceId: 'flaky',
      beforeRun() {
        throw new Error('index offline');
      },
    };
    for (const stream of [false, true]) {
      const { wrapped, calls } = setup([{ text: 'never' }], { contextProviders: [failing] });
      const args = { model: wrapped, prompt: 'hi', maxRetries: 0 };
      const failure = stream
        ? await (async () => {
            let error: unknown;
            const res = ai.streamText({ ...args, onError: ({ error: e }) => void (error = e) });
            for await (const _ of res.fullStream);
            return error;
          })()
        : await ai.generateText(args).catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(ProviderError);
      expect(calls).toHaveLength(0);
    }
  });

  it('frees the session after a failed call, streamed or not: the next call on it runs at once', async () => {
    for (const stream of [false, true]) {
      let failures = 1;
      const flaky: ContextProvider = {
        sourceId: 'flaky',
        beforeRun() {
          if (failures-- > 0) throw new Error('index offline');
        },
      };
      const { wrapped } = setup([{ text: 'Back.' }], { contextProviders: [flaky], runningTurns: { waitMs: 0 } });
      const args = { model: wrapped, prompt: 'hi', maxRetries: 0, providerOptions: { ctx: { sessionId: 's1' } } };
      const ask = async () => {
        if (!stream) return (await ai.generateText(args)).text;
        let error: unknown;
        const res = ai.streamText({ ...args, onError: ({ error: e }) => void (error = e) });
        for await (const _ of res.fullStream);
        if (error) throw error;
        return res.text;
      };
      await expect(ask()).rejects.toBeInstanceOf(ProviderError);
      expect(await ask()).toBe('Back.');
    }
  });

  it('aborts with the caller: a stream stops mid-answer and nothing is stored', async () => {
    const session = new AgentSession();
    const { wrapped, calls } = setup([{ text: 'one two three four five six seven eight' }], { session }, 15);
    const controller = new AbortController();
    const res = ai.streamText({ model: wrapped, prompt: 'count', abortSignal: controller.signal, onError: () => {} });
    const seen: string[] = [];
    for await (const delta of res.textStream) {
      seen.push(delta);
      if (seen.length === 2) controller.abort();
    }
    expect(seen).toHaveLength(2);
    expect(calls[0]!.abortSignal?.aborted).toBe(true);
    expect(stored(session)).toEqual([]);
    const gone = setup([{ text: 'never' }], { session });
    await expect(ai.generateText({ model: gone.wrapped, prompt: 'x', abortSignal: AbortSignal.abort() })).rejects.toThrow();
    expect(gone.calls).toHaveLength(0);
    expect(stored(session)).toEqual([]);
  });

  it('keeps the tool result of a loop aborted in its second step in the default history, and no partial answer', async () => {
    const session = new AgentSession();
    const executed: string[] = [];
    const { wrapped } = setup(
      [{ toolCalls: [{ id: 'call_1', name: 'weather', input: { city: 'Oslo' } }] }, { text: 'It is minus three in Oslo today.' }],
      { session },
      2,
    );
    const controller = new AbortController();
    const res = ai.streamText({
      model: wrapped,
      prompt: 'Weather in Oslo?',
      tools: { weather: weather(executed) },
      stopWhen: ai.stepCountIs(3),
      abortSignal: controller.signal,
      onError: () => {},
    });
    let deltas = 0;
    for await (const part of res.fullStream) if (part.type === 'text-delta' && ++deltas === 2) controller.abort();
    expect(executed).toEqual(['Oslo']);
    expect(stored(session)).toEqual(['user: Weather in Oslo?', 'assistant: call weather', 'tool: result weather']);
  });

  it("reads the model's stream no faster than the AI SDK reads, and cancels it when the AI SDK stops", async () => {
    const { model, stats } = endlessModel(version);
    const wrapped = ai.wrapLanguageModel({ model, middleware: ctxMiddleware() });
    const { stream } = await wrapped.doStream({ prompt: [{ role: 'user', content: [{ type: 'text', text: 'count' }] }] } as never);
    const reader = (stream as ReadableStream<{ type: string }>).getReader();
    for (let i = 0; i < 3; i++) await reader.read();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(stats.pulled).toBeLessThan(10);
    await reader.cancel();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(stats.cancelled).toBe(1);
    expect(stats.pulled).toBeLessThan(12);
  });

  it('refuses a bad configuration with ConfigurationError', async () => {
    expect(() => ctxMiddleware({ contextProviders: [{ sourceId: 'ai-sdk' }] })).toThrow(ConfigurationError);
    expect(() => ctxMiddleware({ contextProviders: [{ sourceId: 'x' }, { sourceId: 'x' }] })).toThrow(/share the sourceId "x"/);
    for (const stepGapMs of [-1, 1.5, 3_600_001]) expect(() => ctxMiddleware({ stepGapMs })).toThrow(/stepGapMs must be an integer/);
    const fixed = setup([], { session: new AgentSession() });
    const named = { model: fixed.wrapped, prompt: 'hi', maxRetries: 0, providerOptions: { ctx: { sessionId: 's1' } } };
    await expect(ai.generateText(named)).rejects.toThrow(/fixed `session`/);
    const free = setup([]);
    const extra = { model: free.wrapped, prompt: 'hi', maxRetries: 0, providerOptions: { ctx: { session: 's1' } } };
    await expect(ai.generateText(extra)).rejects.toThrow(ConfigurationError);
  });

  it('refuses a session whose turn slot was changed outside ctx', async () => {
    const session = new AgentSession({ state: { 'ai-sdk': { turn: 'garbage' } } });
    const { wrapped } = setup([{ text: 'x' }], { session });
    await expect(ai.generateText({ model: wrapped, prompt: 'hi', maxRetries: 0 })).rejects.toThrow(SessionStateError);
  });
});
