/**
 * Runs every ctx benchmark in one process: pipeline overhead, the session round trip, and the
 * overhead of the OpenAI clients.
 * Prints tables; never asserts timings.
 */
import { pipelineOverhead } from './pipeline-overhead.js';
import { contextualTools } from './contextual-tools.js';
import { openaiOverhead } from './openai-overhead.js';
import { sessionRoundtrip } from './session-roundtrip.js';

const started = process.hrtime.bigint();
console.log('# ctx benchmarks');
await pipelineOverhead();
await sessionRoundtrip();
await openaiOverhead();
await contextualTools();
console.log(`Total wall time: ${(Number(process.hrtime.bigint() - started) / 1e9).toFixed(1)} s`);
