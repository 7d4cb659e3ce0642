/**
 * Runs every ctx benchmark in one process: pipeline overhead, then the session round trip.
 * Prints tables; never asserts timings.
 */
import { pipelineOverhead } from './pipeline-overhead.js';
import { sessionRoundtrip } from './session-roundtrip.js';

const started = process.hrtime.bigint();
console.log('# ctx benchmarks');
await pipelineOverhead();
await sessionRoundtrip();
console.log(`Total wall time: ${(Number(process.hrtime.bigint() - started) / 1e9).toFixed(1)} s`);
