/**
 * Import time of each package: a fresh `node` process per sample imports the package's entry
 * (what an app's first `import` costs at start-up), median of 5. ctx packages beside the libraries
 * the other benchmarks compare them with. Prints figures; asserts nothing.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { printTable } from './timing.js';

const SAMPLES = 5;
const PACKAGES: [name: string, entries: string[]][] = [
  ['@ctx/core', ['@ctx/core']],
  ['@ctx/openai', ['@ctx/openai']],
  ['@ctx/redis', ['@ctx/redis']],
  ['@ctx/cosmos', ['@ctx/cosmos']],
  ['@ctx/azure-search', ['@ctx/azure-search']],
  ['@ctx/mem0', ['@ctx/mem0']],
  [
    '@langchain/core (what the pipeline benchmark imports)',
    ['@langchain/core/chat_history', '@langchain/core/messages', '@langchain/core/prompts', '@langchain/core/runnables'],
  ],
  ['@openai/agents-core', ['@openai/agents-core']],
  ['openai', ['openai']],
  ['ai', ['ai']],
  ['ioredis', ['ioredis']],
  ['@langchain/redis', ['@langchain/redis']],
];

const cwd = fileURLToPath(new URL('..', import.meta.url));

/** Milliseconds one fresh process takes to import `entries`, measured inside it. */
function sample(entries: string[]): number {
  const script = `const t = performance.now(); ${entries.map((e) => `await import(${JSON.stringify(e)});`).join(' ')} console.log(performance.now() - t);`;
  const out = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, MEM0_TELEMETRY: 'false' },
  });
  if (out.status !== 0) throw new Error(`importing ${entries.join(', ')} failed: ${out.stderr}`);
  return Number(out.stdout.trim().split('\n').pop());
}

/** Runs the benchmark and prints its table. */
export async function importTime(): Promise<Map<string, number>> {
  console.log('\n## Import time (fresh process per sample, median of 5)\n');
  const results = new Map<string, number>();
  for (const [name, entries] of PACKAGES) {
    const samples = Array.from({ length: SAMPLES }, () => sample(entries)).sort((a, b) => a - b);
    results.set(name, samples[Math.floor(SAMPLES / 2)]!);
  }
  printTable(
    ['package', 'import ms (median)'],
    [...results].map(([name, ms]) => [name, ms.toFixed(1)]),
  );
  console.log('');
  return results;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await importTime();
}
