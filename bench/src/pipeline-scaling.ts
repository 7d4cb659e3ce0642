/**
 * What the pipeline costs per provider: stateless ctx runs with 1, 5, 20 and 50 providers (each
 * adds one instruction in `beforeRun`), on agents with 0, 100 and 1,000 tools and as many
 * instructions, fake model. Per-provider cost = (run with 50 providers - run with 1) / 49, from
 * medians (each side's lowest median over three interleaved rounds: a median shrugs off the
 * pauses other processes cause on a shared machine).
 * Prints figures; asserts nothing.
 */
import { pathToFileURL } from 'node:url';
import { createAgent, defineTool, type ContextProvider } from '@ctx/core';
import { FixedReplyChatClient } from './ctx-side.js';
import { QUESTION } from './data.js';
import { fmtMs, measure, printTable, settle } from './timing.js';

const PROVIDERS = [1, 5, 20, 50] as const;
const TOOLS = [0, 100, 1_000] as const;

function agentWith(providers: number, tools: number) {
  const contextProviders: ContextProvider[] = Array.from({ length: providers }, (_, i) => ({
    sourceId: `p${i}`,
    beforeRun: ({ context }) => context.extendInstructions(`p${i}`, `Instruction of provider ${i}.`),
  }));
  return createAgent({
    client: new FixedReplyChatClient(),
    instructions: Array.from({ length: tools }, (_, i) => `Rule ${i}.`).join('\n'),
    tools: Array.from({ length: tools }, (_, i) =>
      defineTool({ name: `tool_${i}`, description: `Tool ${i}.`, parameters: { type: 'object' }, execute: () => i }),
    ),
    contextProviders,
  });
}

/** Runs the benchmark and prints its table. */
export async function pipelineScaling(): Promise<Map<number, Map<number, number>>> {
  console.log('\n## Pipeline cost by number of providers and tools (stateless runs, fake model)\n');
  const ms = new Map<number, Map<number, number>>();
  for (const tools of TOOLS) {
    const row = new Map<number, number>();
    const agents = PROVIDERS.map((p) => agentWith(p, tools));
    // Interleaved rounds, lowest median kept.
    for (let round = 0; round < 3; round++) {
      for (const [i, agent] of agents.entries()) {
        settle();
        const m = await measure(
          `${PROVIDERS[i]} providers`,
          () => undefined,
          () => agent.run(QUESTION),
          { warmup: 50, minIterations: 20, maxIterations: 5000, budgetMs: 300 },
        );
        const best = row.get(PROVIDERS[i]!);
        if (best === undefined || m.p50Ms < best) row.set(PROVIDERS[i]!, m.p50Ms);
      }
    }
    ms.set(tools, row);
  }
  const first = PROVIDERS[0];
  const last = PROVIDERS[PROVIDERS.length - 1]!;
  printTable(
    ['agent tools (and instructions)', ...PROVIDERS.map((p) => `${p} provider${p === 1 ? '' : 's'} ms (p50)`), 'µs per provider'],
    [...ms].map(([tools, row]) => [
      String(tools),
      ...PROVIDERS.map((p) => fmtMs(row.get(p)!)),
      (((row.get(last)! - row.get(first)!) / (last - first)) * 1000).toFixed(2),
    ]),
  );
  console.log('\nA provider costs the same whatever the number of tools when the last column stays flat.\n');
  return ms;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await pipelineScaling();
}
