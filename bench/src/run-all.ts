/**
 * Runs the core benchmarks in one process: pipeline overhead, pipeline cost by providers and
 * tools, memory, the session round trip, the OpenAI clients' overhead, contextual tool selection,
 * compaction and import time. Backend benchmarks (Redis, Cosmos, Azure AI Search, mem0) start
 * their own servers and run with their own scripts (`bench:redis`...). Prints tables; never
 * asserts timings.
 */
import { compactionBench } from './compaction.js';
import { contextualTools } from './contextual-tools.js';
import { importTime } from './import-time.js';
import { memoryBench } from './memory.js';
import { openaiOverhead } from './openai-overhead.js';
import { pipelineOverhead } from './pipeline-overhead.js';
import { pipelineScaling } from './pipeline-scaling.js';
import { sessionRoundtrip } from './session-roundtrip.js';

const started = process.hrtime.bigint();
console.log('# ctx benchmarks');
await pipelineOverhead();
await pipelineScaling();
await memoryBench();
await sessionRoundtrip();
await openaiOverhead();
await contextualTools();
await compactionBench();
await importTime();
console.log(`Total wall time: ${(Number(process.hrtime.bigint() - started) / 1e9).toFixed(1)} s`);
