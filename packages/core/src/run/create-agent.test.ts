import { describe, expect, it } from 'vitest';
import { ConfigurationError, ProviderError } from '../errors.js';
import { InMemoryHistoryProvider } from '../history/in-memory-history-provider.js';
import { Message } from '../messages/message.js';
import type { AgentEvent } from '../contracts/events.js';
import type { AgentView, ContextProvider, SessionContext, SessionView } from '../contracts/run-view.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { defineTool } from '../tools/define-tool.js';
import { createAgent } from './create-agent.js';

function recorder(sourceId: string, log: string[], extra: Partial<ContextProvider> = {}): ContextProvider {
  return {
    sourceId,
    beforeRun: ({ context }) => {
      log.push(`before:${sourceId}`);
      context.extendMessages(sourceId, [Message.system(`from ${sourceId}`)]);
    },
    afterRun: ({ context }) => {
      log.push(`after:${sourceId}:${context.error ? 'error' : 'ok'}`);
    },
    ...extra,
  };
}

describe('the pipeline', () => {
  it('runs beforeRun in list order, afterRun in reverse, wrap around what is inside it', async () => {
    const log: string[] = [];
    const wrapper: ContextProvider = {
      sourceId: 'wrapper',
      async wrap({ context }, next) {
        log.push('wrap:enter');
        context.extendInstructions('wrapper', 'be brief');
        await next();
        log.push(`wrap:exit:${context.response?.text}`);
      },
    };
    const client = new ScriptedChatClient({ replies: ['done'] });
    const agent = createAgent({ client, instructions: 'You help.', contextProviders: [recorder('a', log), wrapper, recorder('b', log)] });
    const res = await agent.run('hi', { session: agent.createSession() });
    expect(res.text).toBe('done');
    expect(log).toEqual(['before:a', 'wrap:enter', 'before:b', 'after:b:ok', 'wrap:exit:done', 'after:a:ok']);
    const call = client.calls[0]!;
    expect(call.options.instructions).toBe('You help.\n\nbe brief');
    // provider messages in provider order, then the input
    expect(call.messages.map((m) => Message.text(m))).toEqual(['from a', 'from b', 'hi']);
    expect(call.messages.map((m) => Message.source(m)?.sourceType)).toEqual(['context', 'context', 'input']);
  });

  it('gives each provider its own state slot, created as {} and kept on the session', async () => {
    const counter: ContextProvider<{ runs?: number }> = {
      sourceId: 'counter',
      beforeRun: ({ state }) => {
        state.runs = (state.runs ?? 0) + 1;
      },
    };
    const agent = createAgent({ client: new ScriptedChatClient({ replies: ['1', '2'] }), contextProviders: [counter] });
    const session = agent.createSession();
    await agent.run('a', { session });
    await agent.run('b', { session });
    expect(session.state.counter).toEqual({ runs: 2 });
    expect(agent.restoreSession(JSON.stringify(session)).state.counter).toEqual({ runs: 2 });
  });

  it('rejects duplicate and reserved source ids when the agent is created', () => {
    const client = new ScriptedChatClient({ replies: [] });
    expect(() => createAgent({ client, contextProviders: [{ sourceId: 'x' }, { sourceId: 'x' }] })).toThrow(ConfigurationError);
    expect(() => createAgent({ client, contextProviders: [{ sourceId: 'input' }] })).toThrow(/reserved/);
    expect(() => createAgent({ client, contextProviders: [{ sourceId: 'memory' }] })).toThrow(/default history/);
    expect(() => createAgent({ client, maxToolRoundtrips: -1 })).toThrow(ConfigurationError);
  });

  it('fails the run with a ProviderError when a provider throws, and stores nothing', async () => {
    const log: string[] = [];
    const failing: ContextProvider = {
      sourceId: 'flaky',
      beforeRun: () => {
        throw new Error('index offline');
      },
    };
    const history = new InMemoryHistoryProvider();
    const client = new ScriptedChatClient({ replies: ['never'] });
    const agent = createAgent({ client, contextProviders: [history, recorder('outer', log), failing] });
    const session = agent.createSession();
    const error = await agent.run('hi', { session }).catch((e: unknown) => e);
    expect(ProviderError.isInstance(error)).toBe(true);
    expect((error as ProviderError).sourceId).toBe('flaky');
    expect((error as Error).message).toContain('index offline');
    expect(client.calls).toHaveLength(0);
    expect(log).toEqual(['before:outer', 'after:outer:error']);
    expect(session.state.memory?.messages ?? []).toEqual([]);
  });

  it("onError: 'skip' leaves the failing provider out of the run and says so in a diagnostic", async () => {
    const events: AgentEvent[] = [];
    const half: ContextProvider = {
      sourceId: 'half',
      onError: 'skip',
      beforeRun: ({ context }) => {
        context.extendMessages('half', [Message.system('partial')]);
        context.extendInstructions('half', 'partial instructions');
        throw new Error('gave up halfway');
      },
      afterRun: () => {
        throw new Error('must not run after a skipped beforeRun');
      },
    };
    const client = new ScriptedChatClient({ replies: ['fine'] });
    const agent = createAgent({ client, contextProviders: [half], onEvent: (e) => events.push(e) });
    const session = agent.createSession();
    const res = await agent.run('hi', { session });
    expect(res.text).toBe('fine');
    expect(client.calls[0]!.messages.map((m) => Message.text(m))).toEqual(['hi']);
    expect(client.calls[0]!.options.instructions).toBeUndefined();
    const skipped = events.find((e) => e.type === 'provider-skipped');
    expect(skipped).toMatchObject({ sourceId: 'half', phase: 'beforeRun' });
    expect(String((skipped as { error: Error }).error.message)).toBe('gave up halfway');
    expect(session.state.memory!.messages).toHaveLength(2);
    expect(res.added).toEqual({ memory: { messages: 0, instructions: 0, tools: 0 }, half: { messages: 0, instructions: 0, tools: 0 } });
  });

  it('a skipped wrap provider that never called next() does not stop the run', async () => {
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: ['ok'] }),
      contextProviders: [
        {
          sourceId: 'w',
          onError: 'skip',
          wrap: async () => {
            throw new Error('no');
          },
        },
      ],
    });
    expect((await agent.run('hi')).text).toBe('ok');
  });

  it('reports per-provider timing and contributions, never message text', async () => {
    const events: AgentEvent[] = [];
    const tools: ContextProvider = {
      sourceId: 'toolbox',
      beforeRun: ({ context }) =>
        context.extendTools('toolbox', [defineTool({ name: 'noop', parameters: { type: 'object' }, execute: () => 'ok' })]),
    };
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: ['secret answer', 'another'] }),
      contextProviders: [tools],
      onEvent: (e) => events.push(e),
    });
    const session = agent.createSession();
    await agent.run('secret question', { session });
    const ends = events.filter((e) => e.type === 'provider-end');
    expect(ends.map((e) => [e.sourceId, e.phase, e.added])).toEqual([
      ['memory', 'beforeRun', { messages: 0, instructions: 0, tools: 0 }],
      ['toolbox', 'beforeRun', { messages: 0, instructions: 0, tools: 1 }],
      ['memory', 'afterRun', { messages: 0, instructions: 0, tools: 0 }],
    ]);
    expect(events.map((e) => e.type)).toEqual([
      'run-start',
      'provider-end',
      'provider-end',
      'model-call',
      'model-response',
      'provider-end',
      'run-end',
    ]);
    expect(JSON.stringify(events)).not.toMatch(/secret/);
    // the response says the same without events: the second run loads the first turn
    const second = await agent.run('again', { session });
    expect(second.added).toEqual({
      memory: { messages: 2, instructions: 0, tools: 0 },
      toolbox: { messages: 0, instructions: 0, tools: 1 },
    });
  });

  it('a throwing event handler does not break the run', async () => {
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: ['ok'] }),
      onEvent: () => {
        throw new Error('observer bug');
      },
    });
    const warn = console.warn;
    console.warn = () => {};
    try {
      expect((await agent.run('hi')).text).toBe('ok');
    } finally {
      console.warn = warn;
    }
  });

  it('rejects malformed input messages with a clear error', async () => {
    const agent = createAgent({ client: new ScriptedChatClient({ replies: ['x'] }) });
    await expect(agent.run({ id: 'a', role: 'robot', contents: [] } as never)).rejects.toThrow(/\$\.input\[0\]\.role/);
  });
});

describe('the default history rule', () => {
  const run = async (opts: {
    storesByDefault?: boolean;
    providers?: ContextProvider[];
    store?: boolean;
    serviceSessionId?: string;
    session?: boolean;
  }) => {
    const client = new ScriptedChatClient({ replies: ['one', 'two'], storesByDefault: opts.storesByDefault ?? false });
    const agent = createAgent({ client, contextProviders: opts.providers ?? [] });
    const session =
      opts.session === false ? undefined : agent.createSession(opts.serviceSessionId ? { serviceSessionId: opts.serviceSessionId } : {});
    const options = opts.store === undefined ? {} : { store: opts.store };
    await agent.run('first', { session, options });
    await agent.run('second', { session, options });
    return { second: client.calls[1]!.messages.map((m) => Message.text(m)), session };
  };

  it('adds in-memory history when a session has no history provider', async () => {
    const { second, session } = await run({});
    expect(second).toEqual(['first', 'one', 'second']);
    expect(session!.state.memory!.messages).toHaveLength(4);
  });

  it('adds it even when the pipeline has only non-history providers', async () => {
    const { second } = await run({ providers: [{ sourceId: 'rag', beforeRun: () => {} }] });
    expect(second).toEqual(['first', 'one', 'second']);
  });

  it('adds it when the only history provider is store-only', async () => {
    const audit = new InMemoryHistoryProvider({ sourceId: 'audit', loadMessages: false });
    const { second, session } = await run({ providers: [audit] });
    expect(second).toEqual(['first', 'one', 'second']);
    expect(session!.state.audit!.messages).toHaveLength(4);
  });

  it('does not add it without a session, with a service session, or when the service stores', async () => {
    expect((await run({ session: false })).second).toEqual(['second']);
    expect((await run({ serviceSessionId: 'conv_1' })).second).toEqual(['second']);
    expect((await run({ store: true })).second).toEqual(['second']);
    expect((await run({ storesByDefault: true })).second).toEqual(['second']);
    expect((await run({ storesByDefault: true, store: false })).second).toEqual(['first', 'one', 'second']);
  });

  it('does not add it when a provider loads history, and warns about two loaders', async () => {
    const events: AgentEvent[] = [];
    const client = new ScriptedChatClient({ replies: ['one'] });
    const agent = createAgent({
      client,
      contextProviders: [new InMemoryHistoryProvider({ sourceId: 'h1' }), new InMemoryHistoryProvider({ sourceId: 'h2' })],
      onEvent: (e) => events.push(e),
    });
    const session = agent.createSession();
    await agent.run('first', { session });
    expect(session.state.memory).toBeUndefined();
    expect(events.find((e) => e.type === 'warning')).toMatchObject({ code: 'multiple-history-loaders' });
  });
});

describe('service-managed conversations', () => {
  it('puts the response conversation id on the session and passes it back', async () => {
    const client = new ScriptedChatClient({
      replies: [
        { text: 'a', conversationId: 'resp_1' },
        { text: 'b', conversationId: 'resp_2' },
      ],
    });
    const audit = new InMemoryHistoryProvider({ sourceId: 'audit', loadMessages: false });
    const agent = createAgent({ client, contextProviders: [audit] });
    const session = agent.createSession();
    const first = await agent.run('one', { session, options: { store: true } });
    expect(first.conversationId).toBe('resp_1');
    expect(session.serviceSessionId).toBe('resp_1');
    await agent.run('two', { session });
    expect(client.calls[1]!.options.conversationId).toBe('resp_1');
    expect(client.calls[1]!.messages.map((m) => Message.text(m))).toEqual(['two']);
    expect(session.serviceSessionId).toBe('resp_2');
    // the store-only audit log still has the whole conversation
    expect((session.state.audit!.messages as unknown as Message[]).map((m) => Message.text(m))).toEqual(['one', 'a', 'two', 'b']);
  });

  it('refuses a service-kept conversation on a client that cannot continue one, before calling the model', async () => {
    const client = Object.assign(new ScriptedChatClient({ replies: ['never'] }), { continuesConversations: false });
    const agent = createAgent({ client });
    const session = agent.createSession({ serviceSessionId: 'resp_1' });
    await expect(agent.run('hi', { session })).rejects.toThrow(ConfigurationError);
    await expect(agent.run('hi', { session })).rejects.toThrow(/cannot continue one, so the model would see no history/);
    await expect(agent.run('hi', { session })).rejects.toThrow(
      `Session ${JSON.stringify(session.sessionId)} continues a conversation the service keeps (serviceSessionId "resp_1")`,
    );
    expect(client.calls).toHaveLength(0);
    // a new session on the same client runs, with the default history
    await agent.run('hi', { session: agent.createSession() });
    expect(client.calls).toHaveLength(1);
  });

  it("drops the default history's local copy once the service hands over a conversation id", async () => {
    const client = new ScriptedChatClient({ replies: ['a', { text: 'b', conversationId: 'conv_1' }, 'c'] });
    const agent = createAgent({ client });
    const session = agent.createSession();
    await agent.run('one', { session });
    expect(session.state.memory).toBeDefined(); // no service conversation yet: kept locally
    await agent.run('two', { session });
    expect(client.calls[1]!.messages.map((m) => Message.text(m))).toEqual(['one', 'a', 'two']);
    expect(session.serviceSessionId).toBe('conv_1');
    expect(session.state.memory).toBeUndefined(); // the service has the conversation; no stale copy
    await agent.run('three', { session });
    expect(client.calls[2]!.options.conversationId).toBe('conv_1');
    expect(client.calls[2]!.messages.map((m) => Message.text(m))).toEqual(['three']);
  });
});

describe('a pipeline for one run', () => {
  it("replaces the agent's providers for that run, checked like createAgent, with the default-history rule", async () => {
    const client = new ScriptedChatClient({ replies: (_m, _o, i) => `answer ${i}` });
    const tagged = (sourceId: string): ContextProvider => ({
      sourceId,
      beforeRun: ({ context }) => context.extendInstructions(sourceId, `from ${sourceId}`),
    });
    const agent = createAgent({ client, contextProviders: [tagged('agent-rag')] });
    const tenantHistory = new InMemoryHistoryProvider({ sourceId: 'tenant-history' });
    const session = agent.createSession();
    await agent.run('one', { session, contextProviders: [tenantHistory, tagged('tenant-rag')] });
    expect(client.calls[0]!.options.instructions).toBe('from tenant-rag');
    expect(session.state['tenant-history']).toBeDefined();
    expect(session.state.memory).toBeUndefined();
    // without a history of its own, the run gets the default history, like the agent's pipeline
    await agent.run('two', { session, contextProviders: [tagged('tenant-rag')] });
    expect(session.state.memory).toBeDefined();
    // the agent's own pipeline is untouched
    await agent.run('three', { session });
    expect(client.calls[2]!.options.instructions).toBe('from agent-rag');
    await expect(agent.run('x', { session, contextProviders: [tagged('a'), tagged('a')] })).rejects.toThrow(/share the sourceId "a"/);
    await expect(agent.run('x', { session, contextProviders: [tagged('input')] })).rejects.toThrow(/reserved/);
    await expect(agent.run('x', { session, contextProviders: 'nope' as never })).rejects.toThrow(ConfigurationError);
    expect(client.calls).toHaveLength(3);
  });
});

describe('abort', () => {
  it('rejects with the abort reason and stores nothing', async () => {
    const client = new ScriptedChatClient({ replies: [{ text: 'slow', delayMs: 5_000 }] });
    const agent = createAgent({ client });
    const session = agent.createSession();
    const controller = new AbortController();
    const pending = agent.run('hi', { session, signal: controller.signal });
    setTimeout(() => controller.abort(new Error('user cancelled')), 10);
    await expect(pending).rejects.toThrow('user cancelled');
    expect(session.state.memory?.messages ?? []).toEqual([]);
  });

  it('an already aborted signal stops the run before any provider', async () => {
    const log: string[] = [];
    const agent = createAgent({ client: new ScriptedChatClient({ replies: ['x'] }), contextProviders: [recorder('a', log)] });
    await expect(agent.run('hi', { signal: AbortSignal.abort(new Error('early')) })).rejects.toThrow('early');
    expect(log).toEqual([]);
  });

  it("a run nothing can abort gives providers and tools a signal that never aborts, and the model none; the caller's signal reaches them all", async () => {
    const seen: Array<[string, AbortSignal | undefined]> = [];
    const client = new ScriptedChatClient({ replies: [{ toolCalls: [{ name: 'probe' }] }, 'done'] });
    const probe = defineTool({
      name: 'probe',
      parameters: { type: 'object' },
      execute: (_args, { signal }) => void seen.push(['tool', signal]),
    });
    const provider: ContextProvider = { sourceId: 'probe', beforeRun: ({ signal }) => void seen.push(['provider', signal]) };
    const agent = createAgent({ client, tools: [probe], contextProviders: [provider] });
    await agent.run('hi');
    expect(seen.map(([who, signal]) => [who, signal instanceof AbortSignal && !signal.aborted])).toEqual([
      ['provider', true],
      ['tool', true],
    ]);
    expect(client.calls.map((c) => c.options.signal)).toEqual([undefined, undefined]);

    const controller = new AbortController();
    const slow = new ScriptedChatClient({ replies: [{ text: 'slow', delayMs: 5_000 }] });
    const aborting = createAgent({ client: slow, contextProviders: [provider] }).run('hi', { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('stop')), 10);
    await expect(aborting).rejects.toThrow('stop');
    expect(seen.at(-1)![1]?.aborted).toBe(true);
    expect(slow.calls[0]!.options.signal?.aborted).toBe(true);
  });
});

describe('runStream', () => {
  it('yields updates, then the assembled response; afterRun sees it once', async () => {
    const seen: string[] = [];
    const probe: ContextProvider = {
      sourceId: 'probe',
      afterRun: ({ context }) => {
        seen.push(context.response!.text);
      },
    };
    const client = new ScriptedChatClient({ replies: ['Hello streaming world'], chunkSize: 5 });
    const agent = createAgent({ client, contextProviders: [probe] });
    const session = agent.createSession();
    const stream = agent.runStream('hi', { session });
    const chunks: string[] = [];
    for await (const update of stream) for (const c of update.contents) if (c.type === 'text') chunks.push(c.text);
    expect(chunks.length).toBeGreaterThan(2);
    expect(chunks.join('')).toBe('Hello streaming world');
    expect((await stream.response).text).toBe('Hello streaming world');
    expect(seen).toEqual(['Hello streaming world']);
    expect(client.calls[0]!.streaming).toBe(true);
    expect((session.state.memory!.messages as unknown as Message[]).map((m) => Message.text(m))).toEqual(['hi', 'Hello streaming world']);
  });

  it('streams tool calls and tool results across roundtrips', async () => {
    const weather = defineTool({
      name: 'weather',
      parameters: { type: 'object' },
      execute: ({ city }: { city: string }) => ({ city, temp: 21 }),
    });
    const client = new ScriptedChatClient({
      replies: [{ toolCalls: [{ name: 'weather', arguments: { city: 'Lisbon' }, callId: 'c1' }] }, 'It is 21 in Lisbon.'],
    });
    const agent = createAgent({ client, tools: [weather] });
    const stream = agent.runStream('weather?');
    const roles: string[] = [];
    for await (const update of stream) if (update.contents.length) roles.push(update.role ?? '?');
    expect(roles).toContain('tool');
    const res = await stream.response;
    expect(res.messages.map((m) => m.role)).toEqual(['assistant', 'tool', 'assistant']);
    expect(Message.functionCalls(res.messages[0]!)).toEqual([
      { type: 'function-call', callId: 'c1', name: 'weather', arguments: '{"city":"Lisbon"}' },
    ]);
    expect(res.messages[1]!.contents[0]).toMatchObject({ result: { city: 'Lisbon', temp: 21 } });
  });

  it('breaking out of the loop aborts the run and stores nothing', async () => {
    const client = new ScriptedChatClient({ replies: ['a long answer that streams in many small pieces'], chunkSize: 2 });
    const agent = createAgent({ client });
    const session = agent.createSession();
    const stream = agent.runStream('hi', { session });
    for await (const _ of stream) break;
    await expect(stream.response).rejects.toThrow(/stopped reading/);
    expect(session.state.memory?.messages ?? []).toEqual([]);
  });

  it('surfaces a model failure through iteration and response', async () => {
    const agent = createAgent({ client: new ScriptedChatClient({ replies: [{ error: new Error('model down') }] }) });
    const stream = agent.runStream('hi');
    await expect(
      (async () => {
        for await (const _ of stream);
      })(),
    ).rejects.toThrow('model down');
    await expect(stream.response).rejects.toThrow('model down');
  });
});

describe('abort with a client that ignores the signal', () => {
  it('still fails the run and stores nothing', async () => {
    const client = new ScriptedChatClient({ replies: ['late'] });
    const controller = new AbortController();
    // The run is aborted while the model works; the model ignores it and answers a turn later.
    const ignoring = {
      specificationVersion: 'v1' as const,
      provider: 'deaf',
      modelId: 'deaf',
      getResponse: async (messages: Message[]) => {
        controller.abort(new Error('too late'));
        await new Promise((r) => setImmediate(r));
        return client.getResponse(messages, {});
      },
      getStreamingResponse: client.getStreamingResponse.bind(client),
    };
    const agent = createAgent({ client: ignoring });
    const session = agent.createSession();
    const pending = agent.run('hi', { session, signal: controller.signal });
    await expect(pending).rejects.toThrow('too late');
    expect(session.state.memory?.messages ?? []).toEqual([]);
  });
});

describe('provider diagnostics and state slots', () => {
  it('report() reaches onEvent attributed to the provider; untouched state leaves no slot', async () => {
    const events: AgentEvent[] = [];
    const quiet: ContextProvider = { sourceId: 'quiet', beforeRun: () => {} };
    const talker: ContextProvider = {
      sourceId: 'talker',
      beforeRun: ({ report }) => report({ code: 'cache-miss', message: 'looked it up', data: { keys: 2 } }),
    };
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: ['ok'] }),
      contextProviders: [quiet, talker],
      onEvent: (e) => events.push(e),
    });
    const session = agent.createSession();
    await agent.run('hi', { session });
    expect(events.find((e) => e.type === 'provider-diagnostic')).toMatchObject({
      sourceId: 'talker',
      code: 'cache-miss',
      message: 'looked it up',
      data: { keys: 2 },
    });
    expect(Object.keys(session.state)).toEqual(['memory']);
  });
});

describe('flush and backend timeouts', () => {
  it('agent.flush() waits for every provider, wrapped ones too', async () => {
    let flushed = 0;
    const background: ContextProvider = { sourceId: 'bg', flush: async () => void flushed++ };
    const { withPolicies } = await import('../policies/with-policies.js');
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: [] }),
      contextProviders: [background, withPolicies({ sourceId: 'bg2', flush: async () => void flushed++ }, { when: () => true })],
    });
    await agent.flush();
    expect(flushed).toBe(2);
  });

  it('agent.flush({ signal }) rejects with the reason when the signal aborts, while providers still flush', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const stuck: ContextProvider = { sourceId: 'stuck', flush: () => gate };
    const agent = createAgent({ client: new ScriptedChatClient({ replies: [] }), contextProviders: [stuck] });
    const controller = new AbortController();
    const flushing = agent.flush({ signal: controller.signal });
    controller.abort(new Error('shutting down'));
    await expect(flushing).rejects.toThrow('shutting down');
    await expect(agent.flush({ signal: AbortSignal.abort(new Error('already')) })).rejects.toThrow('already');
    release();
    await expect(agent.flush({ signal: new AbortController().signal })).resolves.toBeUndefined();
  });

  it("a backend's own TimeoutError is a provider failure (skippable), not an abort", async () => {
    const events: AgentEvent[] = [];
    const slow: ContextProvider = {
      sourceId: 'slow',
      onError: 'skip',
      beforeRun: () => {
        throw new DOMException('backend timed out', 'TimeoutError');
      },
    };
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: ['still fine'] }),
      contextProviders: [slow],
      onEvent: (e) => events.push(e),
    });
    expect((await agent.run('hi')).text).toBe('still fine');
    expect(events.some((e) => e.type === 'provider-skipped' && e.sourceId === 'slow')).toBe(true);
  });

  it("providers and tools see a narrow view of the run: the name, the client and the run's providers, never the agent itself", async () => {
    const seen: { provider?: AgentView; tool?: { agent: AgentView; session: SessionView; context: SessionContext } } = {};
    const probe: ContextProvider = {
      sourceId: 'probe',
      beforeRun({ agent }) {
        seen.provider = agent;
      },
    };
    const echo = defineTool({
      name: 'echo',
      parameters: { type: 'object' },
      execute: (_args, { agent, session, context }) => {
        seen.tool = { agent, session, context };
        return 'ok';
      },
    });
    const client = new ScriptedChatClient({ replies: [{ toolCalls: [{ name: 'echo', arguments: {} }] }, 'done'] });
    const agent = createAgent({ name: 'narrow', client, tools: [echo], contextProviders: [probe] });
    const session = agent.createSession();
    await agent.run('hi', { session });
    expect(Object.keys(seen.provider!).sort()).toEqual(['client', 'contextProviders', 'name']);
    expect(seen.provider).toMatchObject({ name: 'narrow', client });
    expect(seen.provider!.contextProviders.map((p) => p.sourceId)).toEqual(['memory', 'probe']);
    expect('run' in seen.provider!).toBe(false);
    expect(seen.tool!.agent).toBe(seen.provider);
    expect(seen.tool!.session).toBe(session);
    expect(seen.tool!.context.inputMessages.map((m) => Message.text(m))).toEqual(['hi']);
  });
});

describe('choices where other agent frameworks differ', () => {
  it('the response is final once the model has answered: a provider cannot replace it, so history stores what the caller gets', async () => {
    const replacer: ContextProvider = {
      sourceId: 'replacer',
      afterRun: ({ context }) => {
        context.response = { ...context.response!, text: 'replaced' };
      },
    };
    const wrapper: ContextProvider = {
      sourceId: 'wrapper',
      async wrap({ context }, next) {
        await next();
        context.response = undefined;
      },
    };
    for (const provider of [replacer, wrapper]) {
      const agent = createAgent({ client: new ScriptedChatClient({ replies: ['original'] }), contextProviders: [provider] });
      const session = agent.createSession();
      const error = await agent.run('hi', { session }).catch((e: unknown) => e);
      expect(ProviderError.isInstance(error)).toBe(true);
      expect((error as Error).message).toMatch(/context.response is read-only once the model has answered/);
    }
    // reading it, and setting it before the model answers (a wrap that answers itself), still work
    const answers: ContextProvider = {
      sourceId: 'cache',
      async wrap({ context }) {
        context.response = { messages: [Message.assistant('cached')], text: 'cached' };
      },
    };
    const agent = createAgent({ client: new ScriptedChatClient({ replies: [] }), contextProviders: [answers] });
    expect((await agent.run('hi')).text).toBe('cached');
  });

  it('the same tool object given to the agent, to a run and by a provider is offered once; another tool of that name is refused', async () => {
    const clock = defineTool({ name: 'clock', description: 'now', parameters: { type: 'object' }, execute: () => 'noon' });
    const provider: ContextProvider = { sourceId: 'tools', beforeRun: ({ context }) => context.extendTools('tools', [clock]) };
    const client = new ScriptedChatClient({ replies: ['ok'] });
    const agent = createAgent({ client, tools: [clock], contextProviders: [provider] });
    await agent.run('hi', { options: { tools: [clock] } });
    expect(client.calls[0]!.options.tools!.map((t) => t.name)).toEqual(['clock']);
    const other = defineTool({ name: 'clock', description: 'another', parameters: { type: 'object' }, execute: () => 'midnight' });
    await expect(agent.run('hi', { options: { tools: [other] } })).rejects.toThrow(ConfigurationError);
  });

  it('an agent given a name signs its response messages with it (authorName), stored and sent back alike; without a name, none', async () => {
    const call = { callId: 'c1', name: 'clock', arguments: '{}' };
    const clock = defineTool({ name: 'clock', description: 'now', parameters: { type: 'object' }, execute: () => 'noon' });
    const client = new ScriptedChatClient({ replies: [{ toolCalls: [call] }, 'It is noon.', 'Bye.'] });
    const agent = createAgent({ client, name: 'planner', tools: [clock] });
    const session = agent.createSession();
    const res = await agent.run('time?', { session });
    expect(res.messages.filter((m) => m.role === 'assistant').map((m) => m.authorName)).toEqual(['planner', 'planner']);
    expect(res.messages.filter((m) => m.role === 'tool').map((m) => m.authorName)).toEqual([undefined]);
    // the second model call of the run is sent the signed call, as the next run loads it from history
    expect(client.calls[1]!.messages.find((m) => m.role === 'assistant')!.authorName).toBe('planner');
    await agent.run('bye', { session });
    expect(client.calls[2]!.messages.filter((m) => m.role === 'assistant').map((m) => m.authorName)).toEqual(['planner', 'planner']);

    const unnamed = createAgent({ client: new ScriptedChatClient({ replies: ['hi'] }) });
    expect((await unnamed.run('hi')).messages[0]!.authorName).toBeUndefined();
  });

  it('warns when a session continues a service-kept conversation and the response carries no conversation id', async () => {
    const events: AgentEvent[] = [];
    const client = new ScriptedChatClient({ replies: ['no id', { text: 'with id', conversationId: 'resp_2' }] });
    const agent = createAgent({ client, onEvent: (e) => events.push(e) });
    const session = agent.createSession({ serviceSessionId: 'resp_1' });
    await agent.run('one', { session });
    const warning = events.find((e) => e.type === 'warning' && e.code === 'conversation-id-missing');
    expect(warning).toMatchObject({ message: expect.stringContaining('"resp_1"') });
    expect(session.serviceSessionId).toBe('resp_1');
    events.length = 0;
    await agent.run('two', { session });
    expect(events.some((e) => e.type === 'warning' && e.code === 'conversation-id-missing')).toBe(false);
    expect(session.serviceSessionId).toBe('resp_2');
  });
});
