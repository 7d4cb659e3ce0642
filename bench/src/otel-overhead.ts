/**
 * The overhead of `@ctx/otel`'s event handler: the same agent run with and without
 * `onEvent: createOtelEventHandler()`, the spans going through a real SDK pipeline
 * (`BasicTracerProvider` + `BatchSpanProcessor`, an exporter that drops them), in client CPU time
 * (`cpu-compare.ts`: one process, the two agents alternating run by run, median and p90). Two runs:
 * a streamed run through `@ctx/openai` whose `openai` SDK gets a recorded OpenAI stream
 * (`chat-text-stream.chunks.txt`, 302 chunks) from an in-process `fetch` (what a user's run looks
 * like, nothing but client work), and the worst case, a tool loop with two parallel tools on core's
 * instant `ScriptedChatClient` (ctx's own work only). Prints tables; never asserts timings.
 */
import { type AgentOptions, createAgent, defineTool } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { OpenAIChatClient } from '@ctx/openai';
import { createOtelEventHandler } from '@ctx/otel';
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import OpenAI from 'openai';
import { CPU_HEADERS, compareCpu, cpuCells } from './cpu-compare.js';
import { replay, sseBody } from './replay-fetch.js';
import { printTable } from './timing.js';

/** An exporter that drops what it is given, so only the handler and the SDK's span work are timed. */
const dropExporter: SpanExporter = {
  export: (_spans, done) => done({ code: 0 }),
  shutdown: async () => {},
};

/** The `openai` SDK answering every call with the recorded stream (`replay-fetch.ts`). */
function replayedOpenAI(): OpenAI {
  const fetch = replay(sseBody('chat-text-stream.chunks.txt', false), 'text/event-stream');
  return new OpenAI({ apiKey: 'bench-key', baseURL: 'http://replay.invalid/v1', maxRetries: 0, fetch });
}

export async function otelOverhead(): Promise<void> {
  console.log('\n## OpenTelemetry handler overhead (`@ctx/otel`), client CPU time\n');
  const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropExporter, { maxQueueSize: 100_000 })] });
  const handler = createOtelEventHandler({ tracer: provider.getTracer('bench') });
  try {
    const weather = defineTool({
      name: 'get_weather',
      parameters: { type: 'object', properties: { city: { type: 'string' } } },
      execute: ({ city }: { city: string }) => ({ city, sky: 'clear' }),
    });
    const toolLoop = (): Pick<AgentOptions, 'client' | 'tools'> => ({
      tools: [weather],
      client: new ScriptedChatClient({
        replies: (_messages, _options, i) =>
          i % 2 === 0
            ? {
                toolCalls: [
                  { name: 'get_weather', arguments: { city: 'Oslo' }, callId: 'c1' },
                  { name: 'get_weather', arguments: { city: 'Rome' }, callId: 'c2' },
                ],
              }
            : 'Clear in both.',
      }),
    });
    const sdk = replayedOpenAI();
    const openai = (): Pick<AgentOptions, 'client' | 'tools'> => ({
      client: new OpenAIChatClient({ client: sdk, model: 'gpt-4.1-nano' }),
    });
    const cases = [
      { name: 'streamed run, @ctx/openai on a recorded stream (300 tokens, 4 spans)', make: openai, streamed: true },
      { name: 'worst case: tool loop, 2 parallel tools, instant ScriptedChatClient (8 spans)', make: toolLoop, streamed: false },
    ];

    const rows: string[][] = [];
    for (const c of cases) {
      const bare = createAgent({ ...c.make(), name: 'bench' });
      const traced = createAgent({ ...c.make(), name: 'bench', onEvent: handler });
      const once = (agent: typeof bare) => async () => {
        if (!c.streamed) return agent.run('Weather in Oslo and Rome?', { session: agent.createSession() });
        const stream = agent.runStream('Invent a holiday.', { session: agent.createSession() });
        for await (const _ of stream);
        return stream.response;
      };
      const stats = await compareCpu(
        [
          { name: 'no handler', call: once(bare) },
          { name: 'with @ctx/otel', call: once(traced) },
        ],
        c.streamed ? { warmup: 50, calls: 300 } : { warmup: 200, calls: 2000 },
      );
      await provider.forceFlush();
      rows.push([c.name, ...CPU_HEADERS.map(() => '')]);
      for (const s of stats) rows.push([`  ${s.name}`, ...cpuCells(s, stats[0]!)]);
    }
    printTable(['agent run', ...CPU_HEADERS], rows);
    console.log(`\nNode ${process.version}. CPU µs per run (user + system), the two agents in turn run by run.\n`);
  } finally {
    await provider.shutdown();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await otelOverhead();
