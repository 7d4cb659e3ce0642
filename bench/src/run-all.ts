/**
 * Runs the core benchmarks in one process: pipeline overhead, the session round trip, the OpenAI
 * clients' overhead, contextual tool selection and compaction. Backend benchmarks (Redis, Cosmos,
 * Azure AI Search, mem0) start their own servers and run with their own scripts (`bench:redis`...).
 * Prints tables; never asserts timings.
 */
import { compactionBench } from './compaction.js';
import { contextualTools } from './contextual-tools.js';
import { openaiOverhead } from './openai-overhead.js';
import { pipelineOverhead } from './pipeline-overhead.js';
import { sessionRoundtrip } from './session-roundtrip.js';

const started = process.hrtime.bigint();
console.log('# ctx benchmarks');
await pipelineOverhead();
await sessionRoundtrip();
await openaiOverhead();
await contextualTools();
await compactionBench();
console.log(`Total wall time: ${(Number(process.hrtime.bigint() - started) / 1e9).toFixed(1)} s`);
