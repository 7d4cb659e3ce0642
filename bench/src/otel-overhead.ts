/**
 * The overhead of `@ctx/otel`'s event handler: the same agent run with and without
 * `onEvent: createOtelEventHandler()`, the spans going through a real SDK pipeline
 * (`BasicTracerProvider` + `BatchSpanProcessor`, an exporter that drops them). Two runs: a plain
 * run through `@ctx/openai` against the local OpenAI-protocol server in its own process (what a
 * user's run looks like), and a tool loop with two parallel tools on core's instant
 * `ScriptedChatClient` (ctx's own work only, the worst case). The two agents run in turn; medians.
 * Prints tables; never asserts timings.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type AgentOptions, createAgent, defineTool } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { OpenAIChatClient } from '@ctx/openai';
import { createOtelEventHandler } from '@ctx/otel';
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import OpenAI from 'openai';
import { fmtMs, fmtRatio, printTable, settle } from './timing.js';

const MIN_PAIRS = 300;
const MAX_PAIRS = 5000;
const BUDGET_MS = 8000;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/** An exporter that drops what it is given, so only the handler and the SDK's span work are timed. */
const dropExporter: SpanExporter = {
  export: (_spans, done) => done({ code: 0 }),
  shutdown: async () => {},
};

export async function otelOverhead(): Promise<void> {
  console.log('\n## OpenTelemetry handler overhead (`@ctx/otel`)\n');
  const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropExporter, { maxQueueSize: 100_000 })] });
  const handler = createOtelEventHandler({ tracer: provider.getTracer('bench') });

  const server = spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(new URL('./openai-server-process.ts', import.meta.url)), 'bench-key', '100'],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const url = await new Promise<string>((resolve, reject) => {
    server.stdout!.once('data', (chunk: Buffer) => resolve(chunk.toString().trim()));
    server.once('exit', (code) => reject(new Error(`the test server exited with ${code}`)));
  });
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
    const openai = (): Pick<AgentOptions, 'client' | 'tools'> => ({
      client: new OpenAIChatClient({ client: new OpenAI({ baseURL: url, apiKey: 'bench-key', maxRetries: 0 }), model: 'gpt-4o-mini' }),
    });
    const cases = [
      { name: 'plain run, @ctx/openai on the local server (100-token reply)', make: openai },
      { name: 'tool loop, 2 parallel tools, instant ScriptedChatClient', make: toolLoop },
    ];

    const rows: string[][] = [];
    for (const c of cases) {
      const bare = createAgent({ ...c.make(), name: 'bench' });
      const traced = createAgent({ ...c.make(), name: 'bench', onEvent: handler });
      const once = async (agent: typeof bare) => {
        const t0 = process.hrtime.bigint();
        await agent.run('Weather in Oslo and Rome?', { session: agent.createSession() });
        return Number(process.hrtime.bigint() - t0) / 1e6;
      };
      // Warm-up, then the two agents in turn, so a busy machine slows both alike.
      for (let i = 0; i < 200; i++) {
        await once(bare);
        await once(traced);
      }
      settle();
      const samples = { bare: [] as number[], traced: [] as number[] };
      const deadline = performance.now() + BUDGET_MS;
      for (let i = 0; i < MAX_PAIRS && (i < MIN_PAIRS || performance.now() < deadline); i++) {
        const tracedFirst = i % 2 === 1;
        if (tracedFirst) samples.traced.push(await once(traced));
        samples.bare.push(await once(bare));
        if (!tracedFirst) samples.traced.push(await once(traced));
      }
      await provider.forceFlush();
      const b = median(samples.bare);
      const t = median(samples.traced);
      rows.push([c.name, String(samples.bare.length), fmtMs(b), fmtMs(t), ((t - b) * 1000).toFixed(1), fmtRatio(t / b)]);
    }
    console.log(`Node ${process.version}. Median ms per agent.run, the two agents run in turn.\n`);
    printTable(['run', 'pairs', 'no handler ms', 'with @ctx/otel ms', 'added µs', 'ratio'], rows);
  } finally {
    server.kill('SIGTERM');
    await provider.shutdown();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await otelOverhead();
