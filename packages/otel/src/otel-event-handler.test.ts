import {
  type AgentEvent,
  type AgentOptions,
  BackendUnavailableError,
  type ContextProvider,
  createAgent,
  createAuditProvider,
  defineTool,
  Message,
} from '@ctx/core';
import { ScriptedChatClient, type ScriptedReply } from '@ctx/core/testing';
import { context, SpanKind, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { beforeEach, describe, expect, it } from 'vitest';
import { createOtelEventHandler, type OtelEventHandlerOptions } from './otel-event-handler.js';

let exporter: InMemorySpanExporter;
let tracer: Tracer;
/** Ids of spans in the order they were started, and of spans ended: to prove none is left open. */
let started: string[];
let ended: string[];

beforeEach(() => {
  exporter = new InMemorySpanExporter();
  started = [];
  ended = [];
  const provider = new BasicTracerProvider({
    spanProcessors: [
      new SimpleSpanProcessor(exporter),
      {
        onStart: (span) => void started.push(span.spanContext().spanId),
        onEnd: (span) => void ended.push(span.spanContext().spanId),
        forceFlush: async () => {},
        shutdown: async () => {},
      },
    ],
  });
  tracer = provider.getTracer('test');
});

function agentWith(options: Omit<AgentOptions, 'onEvent'>, handler: OtelEventHandlerOptions = {}) {
  return createAgent({ ...options, onEvent: createOtelEventHandler({ tracer, ...handler }) });
}

const spans = () => exporter.getFinishedSpans();
const named = (prefix: string) => spans().filter((s) => s.name.startsWith(prefix));
const one = (name: string): ReadableSpan => {
  const found = spans().filter((s) => s.name === name);
  expect(found.map((s) => s.name)).toEqual([name]);
  return found[0]!;
};
const idOf = (s: ReadableSpan) => s.spanContext().spanId;
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;
const ms = (t: [number, number]) => t[0] * 1e3 + t[1] / 1e6;
/** Names of the spans whose parent is `parent`, in the order they were started. */
const childrenOf = (parent: ReadableSpan) =>
  spans()
    .filter((s) => parentOf(s) === idOf(parent))
    .sort((a, b) => started.indexOf(idOf(a)) - started.indexOf(idOf(b)))
    .map((s) => s.name);
/** Every span started was ended. */
const allEnded = () => expect([...ended].sort()).toEqual([...started].sort());

const weather = defineTool({
  name: 'get_weather',
  description: 'The weather in a city.',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  execute: async ({ city }: { city: string }) => {
    await new Promise((r) => setTimeout(r, 5));
    return { city, sky: 'clear' };
  },
});
const toolTurn = (...cities: string[]): ScriptedReply => ({
  toolCalls: cities.map((city, i) => ({ name: 'get_weather', arguments: { city }, callId: `call_${i + 1}` })),
});

describe('createOtelEventHandler', () => {
  it('traces a plain run: an invoke_agent span with the chat span and provider hooks as children', async () => {
    const agent = agentWith({
      name: 'helper',
      client: new ScriptedChatClient({
        modelId: 'gpt-test',
        replies: [{ text: 'Hello there.', usage: { inputTokens: 120, outputTokens: 3, cachedInputTokens: 100, reasoningTokens: 2 } }],
      }),
    });
    const session = agent.createSession();
    await agent.run('Hi', { session });

    const run = one('invoke_agent helper');
    expect(parentOf(run)).toBeUndefined();
    expect(run.kind).toBe(SpanKind.INTERNAL);
    expect(run.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.provider.name': 'scripted',
      'gen_ai.request.model': 'gpt-test',
      'gen_ai.agent.name': 'helper',
      'gen_ai.conversation.id': session.sessionId,
      'ctx.run.providers': ['memory'],
    });
    expect(childrenOf(run)).toEqual(['beforeRun memory', 'chat gpt-test', 'afterRun memory']);

    const chat = one('chat gpt-test');
    expect(chat.kind).toBe(SpanKind.CLIENT);
    expect(chat.spanContext().traceId).toBe(run.spanContext().traceId);
    expect(chat.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'scripted',
      'gen_ai.request.model': 'gpt-test',
      'gen_ai.conversation.id': session.sessionId,
      'gen_ai.response.finish_reasons': ['stop'],
      'gen_ai.usage.input_tokens': 120,
      'gen_ai.usage.output_tokens': 3,
      'gen_ai.usage.cache_read.input_tokens': 100,
      'gen_ai.usage.reasoning.output_tokens': 2,
      'ctx.roundtrip': 0,
      'ctx.request.messages': 1,
    });
    expect(run.attributes).toMatchObject({ 'gen_ai.usage.input_tokens': 120, 'gen_ai.usage.cache_read.input_tokens': 100 });
    expect(chat.status.code).toBe(SpanStatusCode.UNSET);
    // Children sit inside their parent in time (the SDK starts spans on Date.now(), a millisecond clock).
    expect(ms(chat.startTime)).toBeGreaterThanOrEqual(ms(run.startTime));
    expect(ms(chat.endTime)).toBeLessThanOrEqual(ms(run.endTime) + 1);
    allEnded();
  });

  it('traces a streaming run like a plain one', async () => {
    const agent = agentWith({
      client: new ScriptedChatClient({
        replies: [{ text: 'A streamed answer in pieces.', usage: { inputTokens: 5, outputTokens: 7 } }],
        chunkSize: 4,
      }),
    });
    const stream = agent.runStream('Hi', { session: agent.createSession() });
    let pieces = 0;
    for await (const _ of stream) pieces++;
    expect(pieces).toBeGreaterThan(5);

    const run = one('invoke_agent agent');
    expect(childrenOf(run)).toEqual(['beforeRun memory', 'chat scripted-model', 'afterRun memory']);
    expect(one('chat scripted-model').attributes).toMatchObject({
      'gen_ai.response.finish_reasons': ['stop'],
      'gen_ai.usage.output_tokens': 7,
    });
    allEnded();
  });

  it('traces the tool loop: chat, execute_tool, chat, all children of the run span', async () => {
    const client = new ScriptedChatClient({ replies: [toolTurn('Oslo'), 'Clear in Oslo.'] });
    const agent = agentWith({ client, tools: [weather] });
    await agent.run('Weather in Oslo?');

    const run = one('invoke_agent agent');
    expect(childrenOf(run)).toEqual(['chat scripted-model', 'execute_tool get_weather', 'chat scripted-model']);
    const tool = one('execute_tool get_weather');
    expect(tool.kind).toBe(SpanKind.INTERNAL);
    expect(tool.attributes).toEqual({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'get_weather',
      'gen_ai.tool.call.id': 'call_1',
      'gen_ai.tool.type': 'function',
    });
    const [first, second] = named('chat ').sort((a, b) => Number(a.attributes['ctx.roundtrip']) - Number(b.attributes['ctx.roundtrip']));
    expect(first!.attributes['gen_ai.response.finish_reasons']).toEqual(['tool_call']);
    expect(second!.attributes['ctx.roundtrip']).toBe(1);
    expect(ms(tool.startTime) + 1).toBeGreaterThanOrEqual(ms(first!.endTime));
    expect(ms(tool.endTime)).toBeLessThanOrEqual(ms(second!.startTime) + 1);
    // The run span carries the usage of both calls.
    const sum = (key: string) => named('chat ').reduce((n, s) => n + Number(s.attributes[key]), 0);
    expect(run.attributes['gen_ai.usage.input_tokens']).toBe(sum('gen_ai.usage.input_tokens'));
    expect(run.attributes['gen_ai.usage.output_tokens']).toBe(sum('gen_ai.usage.output_tokens'));
  });

  it('gives parallel tool calls one span each, overlapping, under the run span', async () => {
    const client = new ScriptedChatClient({ replies: [toolTurn('Oslo', 'Rome', 'Lima'), 'All clear.'] });
    await agentWith({ client, tools: [weather] }).run('Weather in three cities?');

    const run = one('invoke_agent agent');
    const tools = named('execute_tool ');
    expect(tools.map((s) => s.attributes['gen_ai.tool.call.id']).sort()).toEqual(['call_1', 'call_2', 'call_3']);
    for (const t of tools) expect(parentOf(t)).toBe(idOf(run));
    // They ran at once: each started before any of them ended.
    const firstEnd = Math.min(...tools.map((t) => ms(t.endTime)));
    for (const t of tools) expect(ms(t.startTime)).toBeLessThan(firstEnd);
    allEnded();
  });

  it('keeps concurrent runs apart: each run its own trace, its spans under its own run span', async () => {
    const client = new ScriptedChatClient({
      replies: (messages) => {
        const text = Message.text(messages.at(-1)!);
        if (messages.at(-1)!.role === 'tool') return `Done: ${text}`;
        return toolTurn(text);
      },
    });
    const agent = agentWith({ client, tools: [weather] });
    const cities = ['Oslo', 'Rome', 'Lima', 'Pune'];
    await Promise.all(cities.map((city) => agent.run(city)));

    const runs = named('invoke_agent ');
    expect(runs).toHaveLength(4);
    expect(new Set(runs.map((r) => r.spanContext().traceId)).size).toBe(4);
    for (const run of runs) {
      expect(childrenOf(run)).toEqual(['chat scripted-model', 'execute_tool get_weather', 'chat scripted-model']);
      const traceId = run.spanContext().traceId;
      expect(spans().filter((s) => s.spanContext().traceId === traceId)).toHaveLength(4);
    }
    allEnded();
  });

  it('marks a failing tool on its span and leaves the run successful', async () => {
    const broken = defineTool({
      name: 'broken',
      parameters: { type: 'object' },
      execute: () => {
        throw new TypeError('no such field');
      },
    });
    const client = new ScriptedChatClient({
      replies: [
        {
          toolCalls: [
            { name: 'broken', callId: 'c1' },
            { name: 'missing', callId: 'c2' },
          ],
        },
        'Sorry.',
      ],
    });
    await agentWith({ client, tools: [broken] }).run('Go');

    const failed = one('execute_tool broken');
    expect(failed.status).toEqual({ code: SpanStatusCode.ERROR, message: 'Tool "broken" failed: TypeError: no such field' });
    expect(failed.attributes['error.type']).toBe('ToolExecutionError');
    expect(one('execute_tool missing').attributes['error.type']).toBe('ToolExecutionError');
    expect(one('invoke_agent agent').status.code).toBe(SpanStatusCode.UNSET);
  });

  it('ends the chat and run spans with the error when the model call fails', async () => {
    const error = new BackendUnavailableError('openai', 'The model service is down.');
    const agent = agentWith({ client: new ScriptedChatClient({ replies: [{ error }] }) });
    await expect(agent.run('Hi')).rejects.toBe(error);

    for (const span of [one('chat scripted-model'), one('invoke_agent agent')]) {
      expect(span.status).toEqual({ code: SpanStatusCode.ERROR, message: 'The model service is down.' });
      expect(span.attributes['error.type']).toBe('BackendUnavailableError');
    }
    allEnded();
  });

  it('records provider hooks with what they added, skipped providers, and failing providers', async () => {
    const rag: ContextProvider = {
      sourceId: 'rag',
      beforeRun: ({ context }) => {
        context.extendMessages('rag', [Message.user('doc one'), Message.user('doc two')]);
        context.extendInstructions('rag', 'Cite the documents.');
        context.extendTools('rag', [defineTool({ name: 'search', parameters: { type: 'object' }, execute: () => [] })]);
      },
    };
    const flaky: ContextProvider = {
      sourceId: 'flaky',
      onError: 'skip',
      beforeRun: () => {
        throw new RangeError('quota');
      },
    };
    await agentWith({ client: new ScriptedChatClient({ replies: ['ok'] }), contextProviders: [rag, flaky] }).run('Hi');

    expect(one('beforeRun rag').attributes).toEqual({
      'ctx.provider.source_id': 'rag',
      'ctx.provider.phase': 'beforeRun',
      'ctx.provider.added.messages': 2,
      'ctx.provider.added.instructions': 1,
      'ctx.provider.added.tools': 1,
    });
    const skipped = one('beforeRun flaky');
    expect(skipped.attributes).toMatchObject({ 'ctx.provider.skipped': true, 'error.type': 'RangeError' });
    expect(skipped.status).toEqual({ code: SpanStatusCode.ERROR, message: 'quota' });
    expect(one('chat scripted-model').attributes['ctx.request.messages']).toBe(3);

    exporter.reset();
    const failing: ContextProvider = {
      sourceId: 'strict',
      beforeRun: () => {
        throw new Error('bad config');
      },
    };
    await expect(agentWith({ client: new ScriptedChatClient({ replies: ['ok'] }), contextProviders: [failing] }).run('Hi')).rejects.toThrow(
      /strict/,
    );
    const run = one('invoke_agent agent');
    expect(run.attributes['error.type']).toBe('ProviderError');
    expect(named('chat ')).toEqual([]);
    allEnded();
  });

  it('records the tokens of each source from the audit provider as events on the run span', async () => {
    const rules: ContextProvider = { sourceId: 'rules', beforeRun: ({ context }) => context.extendInstructions('rules', 'x'.repeat(40)) };
    const agent = agentWith({
      client: new ScriptedChatClient({ replies: ['ok'] }),
      contextProviders: [rules, createAuditProvider({})],
    });
    await agent.run('y'.repeat(20), { session: agent.createSession() });

    const run = one('invoke_agent agent');
    const sources = run.events.filter((e) => e.name === 'ctx.context.source').map((e) => e.attributes);
    expect(sources).toEqual([
      {
        'ctx.provider.source_id': 'rules',
        'ctx.context.messages': 0,
        'ctx.context.instructions': 1,
        'ctx.context.tools': 0,
        'ctx.context.tokens': 10,
      },
      {
        'ctx.provider.source_id': 'input',
        'ctx.context.messages': 1,
        'ctx.context.instructions': 0,
        'ctx.context.tools': 0,
        'ctx.context.tokens': 9,
      },
    ]);
    expect(run.attributes['ctx.context.tokens']).toBe(19);
    expect(run.events.find((e) => e.name === 'ctx.provider.diagnostic')?.attributes).toMatchObject({
      'ctx.provider.source_id': 'audit',
      'ctx.code': 'context-audit',
    });
  });

  it('ends every span of an aborted run, a running tool included', async () => {
    const controller = new AbortController();
    const waits = defineTool({
      name: 'wait_forever',
      parameters: { type: 'object' },
      execute: (_args, { signal }) =>
        new Promise((_, reject) => {
          signal.addEventListener('abort', () => reject(signal.reason), { once: true });
          controller.abort(new DOMException('The user left.', 'AbortError'));
        }),
    });
    const client = new ScriptedChatClient({ replies: [{ toolCalls: [{ name: 'wait_forever', callId: 'c1' }] }, 'never'] });
    await expect(agentWith({ client, tools: [waits] }).run('Go', { signal: controller.signal })).rejects.toThrow('The user left.');

    const tool = one('execute_tool wait_forever');
    expect(tool.attributes['error.type']).toBe('AbortError');
    expect(one('invoke_agent agent').status).toEqual({ code: SpanStatusCode.ERROR, message: 'The user left.' });
    allEnded();
    expect(started).toHaveLength(3);
  });

  it('ends the spans of a streaming run whose reader stops early', async () => {
    const agent = agentWith({ client: new ScriptedChatClient({ replies: ['A long answer that the reader abandons.'], chunkSize: 2 }) });
    const stream = agent.runStream('Hi');
    for await (const _ of stream) break;
    // The run ends (aborted by the reader leaving) once its response settles.
    await stream.response.catch(() => {});

    const chat = one('chat scripted-model');
    expect(chat.attributes['error.type']).toBe('AbortError');
    expect(one('invoke_agent agent').attributes['error.type']).toBe('AbortError');
    allEnded();
  });

  it('records no message content by default', async () => {
    const client = new ScriptedChatClient({ replies: [toolTurn('secret-city'), 'secret-answer'] });
    await agentWith({ client, tools: [weather], instructions: 'secret-instructions' }).run('secret-question');

    expect(spans()).toHaveLength(4);
    const everything = JSON.stringify(spans().map((s) => [s.name, s.attributes, s.events]));
    expect(everything).not.toMatch(/secret/);
    expect(everything).not.toMatch(/gen_ai\.(input|output)\.messages|system_instructions|tool\.call\.(arguments|result)/);
  });

  it('records message content in the conventions attributes with recordContent', async () => {
    const client = new ScriptedChatClient({ replies: [{ ...toolTurn('Oslo'), reasoning: 'Need the weather.' }, 'Clear in Oslo.'] });
    await agentWith({ client, tools: [weather], instructions: 'Be brief.' }, { recordContent: true }).run('Weather in Oslo?');

    const [first, second] = named('chat ').sort((a, b) => Number(a.attributes['ctx.roundtrip']) - Number(b.attributes['ctx.roundtrip']));
    expect(JSON.parse(String(first!.attributes['gen_ai.system_instructions']))).toEqual([{ type: 'text', content: 'Be brief.' }]);
    expect(JSON.parse(String(first!.attributes['gen_ai.input.messages']))).toEqual([
      { role: 'user', parts: [{ type: 'text', content: 'Weather in Oslo?' }] },
    ]);
    expect(JSON.parse(String(first!.attributes['gen_ai.output.messages']))).toEqual([
      {
        role: 'assistant',
        parts: [
          { type: 'reasoning', content: 'Need the weather.' },
          { type: 'tool_call', id: 'call_1', name: 'get_weather', arguments: { city: 'Oslo' } },
        ],
        finish_reason: 'tool_call',
      },
    ]);
    expect(JSON.parse(String(second!.attributes['gen_ai.input.messages'])).at(-1)).toEqual({
      role: 'tool',
      parts: [{ type: 'tool_call_response', id: 'call_1', response: { city: 'Oslo', sky: 'clear' } }],
    });
    const tool = one('execute_tool get_weather');
    expect(tool.attributes['gen_ai.tool.call.arguments']).toBe('{"city":"Oslo"}');
    expect(tool.attributes['gen_ai.tool.call.result']).toBe('{"city":"Oslo","sky":"clear"}');
  });

  it('parents the run span on the context active when the run starts, and works without a context manager', async () => {
    const manager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(manager);
    try {
      const request = tracer.startSpan('POST /chat');
      const agent = agentWith({ client: new ScriptedChatClient({ replies: [toolTurn('Oslo'), 'ok'] }), tools: [weather] });
      await context.with(trace.setSpan(context.active(), request), () => agent.run('Hi'));
      request.end();
      const run = one('invoke_agent agent');
      expect(parentOf(run)).toBe(request.spanContext().spanId);
      expect(childrenOf(run)).toEqual(['chat scripted-model', 'execute_tool get_weather', 'chat scripted-model']);
    } finally {
      context.disable();
    }
    // Without a context manager (the default), the run span is a root and its children still find it.
    exporter.reset();
    await agentWith({ client: new ScriptedChatClient({ replies: ['ok'] }) }).run('Hi');
    expect(childrenOf(one('invoke_agent agent'))).toEqual(['chat scripted-model']);
  });

  it('uses the global tracer provider by default, and asks the agent for content only with recordContent', () => {
    expect(createOtelEventHandler().includeContent).toBe(false);
    expect(createOtelEventHandler({ recordContent: true }).includeContent).toBe(true);
  });

  it('never throws into the run, even when the tracer does', async () => {
    const throwing = {
      startSpan: () => {
        throw new Error('exporter bug');
      },
      startActiveSpan: () => {
        throw new Error('exporter bug');
      },
    } as unknown as Tracer;
    const seen: AgentEvent['type'][] = [];
    const handler = createOtelEventHandler({ tracer: throwing });
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: ['fine'] }),
      onEvent: (e) => {
        seen.push(e.type);
        handler(e);
      },
    });
    expect((await agent.run('Hi')).text).toBe('fine');
    expect(seen).toContain('run-end');
  });

  it('ignores events of runs it has not seen start', () => {
    const handler = createOtelEventHandler({ tracer });
    handler({ type: 'tool-end', runId: 'unknown', toolName: 't', callId: 'c', durationMs: 1 });
    handler({ type: 'run-end', runId: 'unknown', sessionId: 's', durationMs: 1 });
    expect(spans()).toEqual([]);
  });
});
