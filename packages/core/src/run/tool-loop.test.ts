import { describe, expect, it } from 'vitest';
import { ConfigurationError, ToolExecutionError } from '../errors.js';
import { jsonSchemaValidator } from '../json-schema/json-schema-validator.js';
import { Message } from '../messages/message.js';
import type { ChatResponseUpdate } from '../contracts/chat-client.js';
import type { AgentEvent } from '../contracts/events.js';
import type { JsonObject } from '../contracts/json.js';
import type { FunctionResultContent } from '../contracts/message.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { defineTool, type StandardSchemaV1 } from '../tools/define-tool.js';
import type { ToolValidator } from '../contracts/tool-validator.js';
import { createAgent } from './create-agent.js';

const resultsOf = (m: Message) => m.contents.filter((c): c is FunctionResultContent => c.type === 'function-result');

describe('the tool loop', () => {
  it('runs parallel calls concurrently, feeds results back and returns the final answer', async () => {
    let running = 0;
    let peak = 0;
    const slow = defineTool({
      name: 'slow_lookup',
      description: 'Looks something up.',
      parameters: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] },
      execute: async ({ key }: { key: string }) => {
        running++;
        peak = Math.max(peak, running);
        await new Promise((r) => setImmediate(r)); // a turn of the event loop: the others start meanwhile if they run concurrently
        running--;
        return { key, value: key.toUpperCase() };
      },
    });
    const client = new ScriptedChatClient({
      replies: [
        {
          toolCalls: [
            { name: 'slow_lookup', arguments: { key: 'a' }, callId: 'c1' },
            { name: 'slow_lookup', arguments: { key: 'b' }, callId: 'c2' },
            { name: 'slow_lookup', arguments: { key: 'c' }, callId: 'c3' },
          ],
        },
        'A, B and C.',
      ],
    });
    const agent = createAgent({ client, tools: [slow] });
    const res = await agent.run('look up a, b, c');
    expect(peak).toBe(3);
    expect(res.text).toBe('A, B and C.');
    expect(res.messages.map((m) => m.role)).toEqual(['assistant', 'tool', 'assistant']);
    expect(resultsOf(res.messages[1]!).map((r) => [r.callId, r.result])).toEqual([
      ['c1', { key: 'a', value: 'A' }],
      ['c2', { key: 'b', value: 'B' }],
      ['c3', { key: 'c', value: 'C' }],
    ]);
    // the second call saw the input, the calls and their results
    expect(client.calls[1]!.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(client.calls[0]!.options.tools?.map((t) => t.name)).toEqual(['slow_lookup']);
    expect(res.usage?.totalTokens).toBeGreaterThan(0);
  });

  it('reports each tool call with tool-start and tool-end, and message content only to a handler that asks for it', async () => {
    const echo = defineTool({ name: 'echo', parameters: { type: 'object' }, execute: (args: unknown) => args });
    const script = () =>
      new ScriptedChatClient({
        modelId: 'm-1',
        replies: [
          {
            toolCalls: [
              { name: 'echo', arguments: { say: 'secret-args' }, callId: 'c1' },
              { name: 'nope', callId: 'c2' },
            ],
          },
          'secret-answer',
        ],
      });
    const plain: AgentEvent[] = [];
    await createAgent({ client: script(), tools: [echo], instructions: 'secret-rules', onEvent: (e) => plain.push(e) }).run('secret-input');
    expect(plain.filter((e) => e.type.startsWith('tool-')).map((e) => [e.type, 'callId' in e && e.callId])).toEqual([
      ['tool-start', 'c1'],
      ['tool-start', 'c2'],
      ['tool-end', 'c2'],
      ['tool-end', 'c1'],
    ]);
    expect(plain[0]).toMatchObject({ type: 'run-start', provider: 'scripted', modelId: 'm-1' });
    expect(plain.filter((e) => e.type === 'model-response').map((e) => 'finishReason' in e && e.finishReason)).toEqual([
      'tool-calls',
      'stop',
    ]);
    expect(JSON.stringify(plain)).not.toMatch(/secret/);

    const withContent: AgentEvent[] = [];
    const handler = Object.assign((e: AgentEvent) => withContent.push(e), { includeContent: true });
    await createAgent({ client: script(), tools: [echo], instructions: 'secret-rules', onEvent: handler }).run('secret-input');
    const [firstCall] = withContent.filter((e) => e.type === 'model-call');
    expect(firstCall?.type === 'model-call' && firstCall.content).toMatchObject({ instructions: 'secret-rules' });
    expect(firstCall?.type === 'model-call' && firstCall.content?.messages.map(Message.text)).toEqual(['secret-input']);
    const start = withContent.find((e) => e.type === 'tool-start' && e.callId === 'c1');
    expect(start?.type === 'tool-start' && start.content).toEqual({ arguments: '{"say":"secret-args"}' });
    const end = withContent.find((e) => e.type === 'tool-end' && e.callId === 'c1');
    expect(end?.type === 'tool-end' && end.content).toEqual({ result: { say: 'secret-args' } });
    const last = withContent.filter((e) => e.type === 'model-response').at(-1);
    expect(last?.type === 'model-response' && last.content?.messages.map(Message.text)).toEqual(['secret-answer']);
  });

  it('tells a content handler which source added each instruction text and tool sent', async () => {
    const echo = defineTool({ name: 'echo', description: 'Echoes.', parameters: { type: 'object' }, execute: (args: unknown) => args });
    const lookup = defineTool({ name: 'lookup', parameters: { type: 'object' }, execute: () => 1 });
    const events: AgentEvent[] = [];
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: ['ok'] }),
      tools: [echo],
      instructions: 'Be brief.',
      contextProviders: [
        {
          sourceId: 'rules',
          beforeRun: ({ context }) => {
            context.extendInstructions('rules', 'Cite sources.');
            context.extendTools('rules', [lookup]);
          },
        },
        { sourceId: 'clock', stability: 'per-run', beforeRun: ({ context }) => context.extendInstructions('clock', 'Turn 3.') },
      ],
      onEvent: Object.assign((e: AgentEvent) => events.push(e), { includeContent: true }),
    });
    await agent.run('hi');
    const call = events.find((e) => e.type === 'model-call');
    const content = call?.type === 'model-call' ? call.content : undefined;
    expect(content?.instructionSources).toEqual([
      { sourceId: 'agent', text: 'Be brief.' },
      { sourceId: 'rules', text: 'Cite sources.' },
    ]);
    expect(content?.instructions).toBe('Be brief.\n\nCite sources.');
    expect(content?.tools?.map((t) => [t.name, (t.metadata?.ctx as { sourceId?: string } | undefined)?.sourceId, t.description])).toEqual([
      ['echo', undefined, 'Echoes.'],
      ['lookup', 'rules', undefined],
    ]);
    expect(content?.tools?.every((t) => !('execute' in t))).toBe(true);
  });

  it('sends a failing tool back to the model as an error result and reports it in diagnostics', async () => {
    const events: AgentEvent[] = [];
    const boom = defineTool({
      name: 'boom',
      parameters: { type: 'object' },
      execute: () => {
        throw new Error('disk full');
      },
    });
    const client = new ScriptedChatClient({ replies: [{ toolCalls: [{ name: 'boom', callId: 'c1' }] }, 'Sorry, that failed.'] });
    const agent = createAgent({ client, tools: [boom], onEvent: (e) => events.push(e) });
    const res = await agent.run('do it');
    expect(res.text).toBe('Sorry, that failed.');
    const [result] = resultsOf(client.calls[1]!.messages[2]!);
    expect(result).toMatchObject({ callId: 'c1', isError: true });
    expect(JSON.stringify(result!.result)).toContain('disk full');
    const end = events.find((e) => e.type === 'tool-end');
    expect(end && 'error' in end && ToolExecutionError.isInstance(end.error)).toBe(true);
    expect((end as { error: ToolExecutionError }).error.toolName).toBe('boom');
  });

  it.each([
    ['unknown tool', { name: 'nope', arguments: '{}' }, /Unknown tool \\"nope\\"/],
    ['invalid JSON arguments', { name: 'echo', arguments: '{"a":' }, /not valid JSON/],
  ])('answers a call with %s with an error result', async (_, call, message) => {
    const echo = defineTool({ name: 'echo', parameters: { type: 'object' }, execute: (args) => args });
    const client = new ScriptedChatClient({ replies: [{ toolCalls: [call] }, 'ok'] });
    const res = await createAgent({ client, tools: [echo] }).run('go');
    const [result] = resultsOf(res.messages[1]!);
    expect(result!.isError).toBe(true);
    expect(JSON.stringify(result!.result)).toMatch(message);
  });

  it('a tool that returns non-JSON gets an error result, not a crash', async () => {
    const bad = defineTool({ name: 'bad', parameters: { type: 'object' }, execute: () => ({ big: 10n }) });
    const fn = defineTool({ name: 'fn', parameters: { type: 'object' }, execute: () => () => 1 });
    const fine = defineTool({ name: 'fine', parameters: { type: 'object' }, execute: () => ({ at: new Date(0), nothing: undefined }) });
    const client = new ScriptedChatClient({ replies: [{ toolCalls: [{ name: 'bad' }, { name: 'fn' }, { name: 'fine' }] }, 'ok'] });
    const res = await createAgent({ client, tools: [bad, fn, fine] }).run('go');
    const [r1, r2, r3] = resultsOf(res.messages[1]!);
    expect(r1!.isError).toBe(true);
    expect(JSON.stringify(r1!.result)).toMatch(/not JSON/);
    expect(r2!.isError).toBe(true);
    expect(r3).toMatchObject({ result: { at: '1970-01-01T00:00:00.000Z' } });
    expect(r3!.isError).toBeUndefined();
  });

  it('a result nested too deep to be stored gets an error result, so storing the turn never fails the run', async () => {
    const nest = (levels: number): JsonObject => {
      let value: JsonObject = {};
      for (let i = 1; i < levels; i++) value = { d: value };
      return value;
    };
    const deep = defineTool({ name: 'deep', parameters: { type: 'object' }, execute: () => nest(127) });
    const shallow = defineTool({ name: 'shallow', parameters: { type: 'object' }, execute: () => nest(100) });
    const client = new ScriptedChatClient({ replies: [{ toolCalls: [{ name: 'deep' }, { name: 'shallow' }] }, 'ok'] });
    const agent = createAgent({ client, tools: [deep, shallow] });
    const session = agent.createSession();
    const res = await agent.run('go', { session });
    const [r1, r2] = resultsOf(res.messages[1]!);
    expect(r1!.isError).toBe(true);
    expect(JSON.stringify(r1!.result)).toMatch(/cannot be stored.*nested deeper than 128 levels/);
    expect(r2!.isError).toBeUndefined();
    expect(agent.restoreSession(JSON.stringify(session)).state.memory!.messages).toHaveLength(4);
  });

  it('stops at maxToolRoundtrips: the last call is made with toolChoice none, stray calls get error results', async () => {
    const events: AgentEvent[] = [];
    const ping = defineTool({ name: 'ping', parameters: { type: 'object' }, execute: () => 'pong' });
    const client = new ScriptedChatClient({ replies: () => ({ toolCalls: [{ name: 'ping' }] }) });
    const agent = createAgent({ client, tools: [ping], maxToolRoundtrips: 2, onEvent: (e) => events.push(e) });
    const res = await agent.run('loop forever');
    expect(client.calls).toHaveLength(3);
    expect(client.calls.map((c) => c.options.toolChoice)).toEqual([undefined, undefined, 'none']);
    const last = res.messages.at(-1)!;
    expect(last.role).toBe('tool');
    expect(resultsOf(last)[0]).toMatchObject({ isError: true });
    expect(events.some((e) => e.type === 'warning' && e.code === 'tool-roundtrip-limit')).toBe(true);
    // every call in the stored history has its result
    const calls = res.messages.flatMap((m) => Message.functionCalls(m)).map((c) => c.callId);
    const answered = res.messages.flatMap(resultsOf).map((r) => r.callId);
    expect(answered.sort()).toEqual(calls.sort());
  });

  it('hands calls to tools without execute back to the caller', async () => {
    const approve = defineTool({ name: 'approve_payment', parameters: { type: 'object' } });
    const client = new ScriptedChatClient({ replies: [{ toolCalls: [{ name: 'approve_payment', arguments: { amount: 5 } }] }] });
    const res = await createAgent({ client, tools: [approve] }).run('pay');
    expect(client.calls).toHaveLength(1);
    expect(res.finishReason).toBe('tool-calls');
    expect(Message.functionCalls(res.messages[0]!)[0]).toMatchObject({ name: 'approve_payment', arguments: '{"amount":5}' });
  });

  it('passes the abort signal and session to tools, and an abort during a tool fails the run', async () => {
    let sawSession = '';
    const wait = defineTool({
      name: 'wait',
      parameters: { type: 'object' },
      execute: (_args, { signal, session }) => {
        sawSession = session.sessionId;
        return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
      },
    });
    const client = new ScriptedChatClient({ replies: [{ toolCalls: [{ name: 'wait' }] }, 'never'] });
    const agent = createAgent({ client, tools: [wait] });
    const session = agent.createSession({ sessionId: 's-1' });
    const controller = new AbortController();
    const pending = agent.run('go', { session, signal: controller.signal });
    setTimeout(() => controller.abort(new Error('stop')), 10);
    await expect(pending).rejects.toThrow('stop');
    expect(sawSession).toBe('s-1');
    expect(session.state.memory?.messages ?? []).toEqual([]);
  });

  it('validates arguments with a Standard Schema and tells the model what was wrong', async () => {
    const schema: StandardSchemaV1<unknown, { n: number }> = {
      '~standard': {
        version: 1,
        vendor: 'test',
        validate: (value) =>
          typeof (value as { n?: unknown }).n === 'number'
            ? { value: value as { n: number } }
            : { issues: [{ message: 'Expected number', path: ['n'] }] },
        jsonSchema: { input: () => ({ type: 'object', properties: { n: { type: 'number' } } }) },
      },
    };
    const double = defineTool({ name: 'double', parameters: schema, execute: ({ n }) => n * 2 });
    expect(double.parameters).toEqual({ type: 'object', properties: { n: { type: 'number' } } });
    const client = new ScriptedChatClient({
      replies: [
        {
          toolCalls: [
            { name: 'double', arguments: { n: 'x' } },
            { name: 'double', arguments: { n: 4 } },
          ],
        },
        'ok',
      ],
    });
    const res = await createAgent({ client, tools: [double] }).run('go');
    const [bad, good] = resultsOf(res.messages[1]!);
    expect(bad).toMatchObject({ isError: true, result: { error: 'Invalid arguments for "double": n: Expected number' } });
    expect(good!.result).toBe(8);
  });

  it('defineTool rejects bad names and schemas without JSON Schema', () => {
    expect(() => defineTool({ name: 'has space', parameters: {} })).toThrow(/invalid/);
    const opaque = { '~standard': { version: 1 as const, vendor: 'x', validate: (v: unknown) => ({ value: v }) } };
    expect(() => defineTool({ name: 'ok', parameters: opaque })).toThrow(/jsonSchema/);
    expect(defineTool({ name: 'ok', parameters: opaque, jsonSchema: { type: 'object' } }).parameters).toEqual({ type: 'object' });
  });

  it('tools added by a provider carry its sourceId and are callable', async () => {
    const client = new ScriptedChatClient({ replies: [{ toolCalls: [{ name: 'search', arguments: { q: 'x' } }] }, 'found'] });
    const agent = createAgent({
      client,
      contextProviders: [
        {
          sourceId: 'rag',
          beforeRun: ({ context }) =>
            context.extendTools('rag', [
              defineTool({ name: 'search', parameters: { type: 'object' }, execute: ({ q }: { q: string }) => [`doc about ${q}`] }),
            ]),
        },
      ],
    });
    const res = await agent.run('find x');
    expect(client.calls[0]!.options.tools![0]!.metadata).toEqual({ ctx: { sourceId: 'rag' } });
    expect(resultsOf(res.messages[1]!)[0]!.result).toEqual(['doc about x']);
  });

  it('runs the compaction strategy before every model call', async () => {
    const ping = defineTool({ name: 'ping', parameters: { type: 'object' }, execute: () => 'pong' });
    const client = new ScriptedChatClient({ replies: [{ toolCalls: [{ name: 'ping' }] }, 'done'] });
    const seen: number[] = [];
    const agent = createAgent({
      client,
      tools: [ping],
      compaction: {
        compact: (messages) => {
          seen.push(messages.length);
          return messages.slice(-2);
        },
      },
    });
    await agent.run([Message.user('old'), Message.assistant('older reply'), Message.user('new')]);
    expect(seen).toEqual([3, 4]); // the second call builds on what the first sent, compacted
    expect(client.calls.map((c) => c.messages.length)).toEqual([2, 2]);
  });
});

describe('the tool loop with a toolValidator (plain JSON Schema tools)', () => {
  const weatherSchema: JsonObject = {
    type: 'object',
    properties: { city: { type: 'string' }, units: { type: 'string', enum: ['c', 'f'], default: 'c' } },
    required: ['city'],
    additionalProperties: false,
  };
  const weatherTool = (seen: unknown[], name = 'get_weather') =>
    defineTool({
      name,
      parameters: weatherSchema,
      execute: (args: { city: string }) => {
        seen.push(args);
        return { city: args.city, celsius: 21 };
      },
    });

  it('answers {"town": 42} with an error result naming city and town, then runs the retry with its arguments unchanged', async () => {
    const seen: unknown[] = [];
    const events: AgentEvent[] = [];
    const client = new ScriptedChatClient({
      replies: [
        {
          toolCalls: [
            { name: 'get_weather', arguments: '{"town": 42}', callId: 'c1' },
            { name: 'get_weather', arguments: { city: 42 }, callId: 'c2' },
          ],
        },
        { toolCalls: [{ name: 'get_weather', arguments: { city: 'Lisbon' }, callId: 'c3' }] },
        'Sunny, 21°C in Lisbon.',
      ],
    });
    const agent = createAgent({ client, tools: [weatherTool(seen)], toolValidator: jsonSchemaValidator(), onEvent: (e) => events.push(e) });
    const res = await agent.run('Weather in Lisbon?');
    const [town, type] = resultsOf(res.messages[1]!);
    expect(town).toMatchObject({
      callId: 'c1',
      isError: true,
      result: {
        error:
          'Invalid arguments for "get_weather": Instance does not have required property "city"; Property "town" does not match additional properties schema',
      },
    });
    expect(type).toMatchObject({
      callId: 'c2',
      isError: true,
      result: { error: 'Invalid arguments for "get_weather": city: Instance type "number" is invalid. Expected "string"' },
    });
    // the model saw the errors and retried; only the valid call ran, with exactly what the model sent (no default units)
    expect(resultsOf(client.calls[1]!.messages[2]!).map((r) => r.isError)).toEqual([true, true]);
    expect(seen).toEqual([{ city: 'Lisbon' }]);
    expect(resultsOf(res.messages[3]!)[0]).toMatchObject({ callId: 'c3', result: { city: 'Lisbon', celsius: 21 } });
    expect(res.text).toBe('Sunny, 21°C in Lisbon.');
    const failed = events.filter((e) => e.type === 'tool-end' && 'error' in e && e.error);
    expect(failed.map((e) => (e as { error: ToolExecutionError }).error.callId)).toEqual(['c1', 'c2']);
  });

  it("checks the agent's, the run's and providers' JSON Schema tools; Standard Schema tools keep their own validate", async () => {
    const compiled: string[] = [];
    const inner = jsonSchemaValidator();
    const spy: ToolValidator = {
      compile: (tool) => {
        compiled.push(tool.name);
        return inner.compile(tool);
      },
    };
    const standard: StandardSchemaV1<unknown, { n: number }> = {
      '~standard': {
        version: 1,
        vendor: 'test',
        validate: (value) => ({ value: value as { n: number } }),
        jsonSchema: { input: () => ({ type: 'object', properties: { n: { type: 'number' } }, required: ['n'] }) },
      },
    };
    const seen: unknown[] = [];
    const client = new ScriptedChatClient({
      replies: [
        {
          toolCalls: [
            { name: 'run_weather', arguments: { town: 'x' }, callId: 'r' },
            { name: 'rag_weather', arguments: { town: 'x' }, callId: 'p' },
            { name: 'double', arguments: { m: 1 }, callId: 's' },
          ],
        },
        'done',
      ],
    });
    const agent = createAgent({
      client,
      tools: [weatherTool(seen), defineTool({ name: 'double', parameters: standard, execute: (args) => args })],
      toolValidator: spy,
      contextProviders: [{ sourceId: 'rag', beforeRun: ({ context }) => context.extendTools('rag', [weatherTool(seen, 'rag_weather')]) }],
    });
    expect(compiled).toEqual(['get_weather']); // at createAgent
    compiled.length = 0;
    const res = await agent.run('go', { options: { tools: [weatherTool(seen, 'run_weather')] } });
    expect(compiled).toEqual(['get_weather', 'run_weather', 'rag_weather']); // once per run, before the model call
    const [run, provider, own] = resultsOf(res.messages[1]!);
    expect(run).toMatchObject({
      isError: true,
      result: { error: expect.stringMatching(/^Invalid arguments for "run_weather": .*"city"/) },
    });
    expect(provider).toMatchObject({
      isError: true,
      result: { error: expect.stringMatching(/^Invalid arguments for "rag_weather": .*"city"/) },
    });
    expect(own).toMatchObject({ result: { m: 1 } }); // its own (lenient) validate decided, not the JSON Schema
    expect(own!.isError).toBeUndefined();
    expect(seen).toEqual([]);
  });

  it('validates in streaming runs too: the error result streams, the retry runs', async () => {
    const seen: unknown[] = [];
    const client = new ScriptedChatClient({
      replies: [
        { toolCalls: [{ name: 'get_weather', arguments: { town: 42 }, callId: 'c1' }] },
        { toolCalls: [{ name: 'get_weather', arguments: { city: 'Porto', units: 'f' }, callId: 'c2' }] },
        'Done.',
      ],
    });
    const agent = createAgent({ client, tools: [weatherTool(seen)], toolValidator: jsonSchemaValidator() });
    const stream = agent.runStream('Weather in Porto?');
    const updates: ChatResponseUpdate[] = [];
    for await (const update of stream) updates.push(update);
    const results = updates.filter((u) => u.role === 'tool').flatMap((u) => u.contents as FunctionResultContent[]);
    expect(results.map((r) => [r.callId, r.isError ?? false])).toEqual([
      ['c1', true],
      ['c2', false],
    ]);
    expect(JSON.stringify(results[0]!.result)).toMatch(/required property \\"city\\".*\\"town\\"/);
    expect(seen).toEqual([{ city: 'Porto', units: 'f' }]);
    expect((await stream.response).text).toBe('Done.');
  });

  it('fails the run with a ConfigurationError naming a run or provider tool whose schema cannot be compiled, before the model is called', async () => {
    const broken = (name: string) =>
      defineTool({ name, parameters: { type: 'object', properties: { q: { type: 'text' } } }, execute: () => 'never' });
    const client = new ScriptedChatClient({ replies: ['never'] });
    const agent = createAgent({ client, toolValidator: jsonSchemaValidator() });
    const fromRun = await agent.run('go', { options: { tools: [broken('run_search')] } }).catch((e: unknown) => e);
    expect(ConfigurationError.isInstance(fromRun)).toBe(true);
    expect((fromRun as Error).message).toBe(
      'Tool "run_search": its JSON Schema cannot be compiled: "type" "text" at #/properties/q is not a JSON Schema type. Fix the tool\'s `parameters`.',
    );
    const withProvider = createAgent({
      client,
      toolValidator: jsonSchemaValidator(),
      contextProviders: [{ sourceId: 'rag', beforeRun: ({ context }) => context.extendTools('rag', [broken('rag_search')]) }],
    });
    const stream = withProvider.runStream('go');
    const fromProvider = await stream.response.catch((e: unknown) => e);
    expect(ConfigurationError.isInstance(fromProvider)).toBe(true);
    expect((fromProvider as Error).message).toMatch(/^Tool "rag_search": its JSON Schema cannot be compiled/);
    expect(client.calls).toHaveLength(0);
  });
});
