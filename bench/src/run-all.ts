/**
 * Every benchmark in one run: the core benchmarks in this process (pipeline overhead, pipeline
 * cost by providers and tools, memory, the session round trip, the OpenAI clients' overhead,
 * contextual tool selection, compaction, import time), then each backend and adapter benchmark in
 * a child process of its own, one after another (Redis, durable runs, session listing, Cosmos,
 * mem0, Azure AI Search, the AI SDK, OpenTelemetry, the Agents SDK session, memory beyond the
 * window beside Mastra, @ctx/postgres), each starting and stopping its own servers. The recall benchmark runs its
 * Mastra side only with NODE22 set (a Node >= 22.13 binary) and `npm install` done in bench/mastra;
 * without them it runs the ctx sides and prints why Mastra was skipped. The load average is sampled every 20 s and printed per section, since
 * the machine may be shared. Prints tables; never asserts timings.
 */
import { spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { compactionBench } from './compaction.js';
import { contextualTools } from './contextual-tools.js';
import { importTime } from './import-time.js';
import { memoryBench } from './memory.js';
import { openaiOverhead, openaiOverheadFloor } from './openai-overhead.js';
import { pipelineOverhead } from './pipeline-overhead.js';
import { pipelineScaling } from './pipeline-scaling.js';
import { runInfo } from './run-info.js';
import { sessionRoundtrip } from './session-roundtrip.js';

/** The benchmarks that run in a child process of their own, relative to the package. */
const SCRIPTS = [
  'redis/redis-history.ts',
  'redis/durable-runs.ts',
  'redis/session-listing.ts',
  'src/cosmos-history.ts',
  'src/mem0.ts',
  'src/azure-search.ts',
  'src/azure-search-knowledge-base.ts',
  'src/ai-sdk.ts',
  'src/otel-overhead.ts',
  'src/openai-agents-session.ts',
  'src/recall.ts',
  'src/postgres.ts',
];

const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url));
const started = process.hrtime.bigint();
let loads: number[] = [];
const sampler = setInterval(() => loads.push(loadavg()[0]!), 20_000);
const section = async (name: string, run: () => unknown) => {
  loads = [loadavg()[0]!];
  const t0 = process.hrtime.bigint();
  await run();
  const range = `${Math.min(...loads).toFixed(1)}-${Math.max(...loads, loadavg()[0]!).toFixed(1)}`;
  console.log(`[${name}: ${(Number(process.hrtime.bigint() - t0) / 1e9).toFixed(0)} s, load average ${range}]`);
};

console.log(`# ctx benchmarks (${runInfo()})`);
await section('pipeline overhead', pipelineOverhead);
await section('pipeline scaling', pipelineScaling);
await section('memory', memoryBench);
await section('session round trip', sessionRoundtrip);
await section('OpenAI clients', openaiOverhead);
await section('agent.run beyond the OpenAI client', openaiOverheadFloor);
await section('contextual tools', contextualTools);
await section('compaction', compactionBench);
await section('import time', importTime);
for (const script of SCRIPTS) {
  await section(
    script,
    () =>
      new Promise<void>((resolve, reject) => {
        const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', script], { cwd: PACKAGE_DIR, stdio: 'inherit' });
        child.on('error', reject);
        child.on('exit', (code, signal) => (code === 0 ? resolve() : reject(new Error(`${script} failed (exit ${code ?? signal}).`))));
      }),
  );
}
clearInterval(sampler);
console.log(`Total wall time: ${(Number(process.hrtime.bigint() - started) / 1e9).toFixed(1)} s (${runInfo()})`);
