/**
 * Per-run overhead of the agent pipeline at 10, 1,000 and 10,000 stored messages: ctx (five
 * providers, windowed and not), LangChain.js (`RunnableWithMessageHistory`) and the OpenAI Agents
 * SDK (`MemorySession`), each on a fake model that answers at once, so only the library's own
 * work is timed. Prints absolute figures and ratios; asserts nothing about timings.
 */
import { pathToFileURL } from 'node:url';
import { langchainCase, toLangChain } from './alternatives/langchain.js';
import { openaiAgentsCase, toAgentItems } from './alternatives/openai-agents.js';
import { ANSWER, conversation } from './data.js';
import { fmtMs, fmtOps, fmtRatio, measure, printTable, settle, type Measurement } from './timing.js';

const SIZES = [10, 1_000, 10_000] as const;
const WINDOW = 20;
const ROUNDS = 3;

/** A case: prepared per history size, measured as `run(setup())`. */
interface Case<T = unknown> {
  setup(): T | Promise<T>;
  run(input: T): Promise<string>;
  storedCount(input: T): number | Promise<number>;
}

interface Variant {
  /** Row label. */
  label: string;
  /** Label of the ctx row this one is compared with (like-for-like window policy). */
  baseline: string;
  make(size: number): Promise<Case>;
}

const CTX_WINDOW = `ctx, InMemoryHistoryProvider maxMessages ${WINDOW} + 4 providers`;
const CTX_FULL = 'ctx, InMemoryHistoryProvider (no window) + 4 providers';
const LC_FULL = 'LangChain RunnableWithMessageHistory (legacy API), InMemoryChatMessageHistory (full history)';

async function variants(): Promise<Variant[]> {
  const { ctxCase, toCtx } = await import('./ctx-side.js');
  return [
    { label: CTX_WINDOW, baseline: CTX_WINDOW, make: async (n) => ctxCase(toCtx(conversation(n)), { maxMessages: WINDOW }) as Case },
    { label: CTX_FULL, baseline: CTX_FULL, make: async (n) => ctxCase(toCtx(conversation(n))) as Case },
    {
      label: `ctx, as first row but on core's ScriptedChatClient`,
      baseline: CTX_WINDOW,
      make: async (n) => ctxCase(toCtx(conversation(n)), { maxMessages: WINDOW, client: 'scripted' }) as Case,
    },
    {
      label: LC_FULL,
      baseline: CTX_FULL,
      make: async (n) => langchainCase(toLangChain(conversation(n))) as Case,
    },
    {
      label: `LangChain (legacy API) + trimMessages (last ${WINDOW})`,
      baseline: CTX_WINDOW,
      make: async (n) => langchainCase(toLangChain(conversation(n)), { window: WINDOW }) as Case,
    },
    {
      label: `LangChain (legacy API), user-written BaseListChatMessageHistory reading the last ${WINDOW}`,
      baseline: CTX_WINDOW,
      make: async (n) => langchainCase(toLangChain(conversation(n)), { window: WINDOW, history: 'last-messages' }) as Case,
    },
    {
      label: 'OpenAI Agents SDK, MemorySession (for demos and tests, its docs say; full history)',
      baseline: CTX_FULL,
      make: async (n) => openaiAgentsCase(toAgentItems(conversation(n))) as Case,
    },
    {
      label: `OpenAI Agents SDK, MemorySession + sessionInputCallback (last ${WINDOW})`,
      baseline: CTX_WINDOW,
      make: async (n) => openaiAgentsCase(toAgentItems(conversation(n)), { window: WINDOW }) as Case,
    },
    {
      label: `OpenAI Agents SDK, user-written Session returning the last ${WINDOW}, no cloning`,
      baseline: CTX_WINDOW,
      make: async (n) => openaiAgentsCase(toAgentItems(conversation(n)), { window: WINDOW, session: 'last-items' }) as Case,
    },
  ];
}

/** Runs the benchmark and prints its tables. Returns the measurements by label and size. */
export async function pipelineOverhead(): Promise<Map<string, Map<number, Measurement>>> {
  console.log('\n## Pipeline overhead per run (fake model, no network)\n');
  console.log(`Node ${process.version}, ${process.platform}/${process.arch}. Each timed call is one run of the`);
  console.log('question on a session holding exactly N stored messages (the turn the previous run stored is');
  console.log('removed, untimed, before each call). Ratio = this row / the ctx row with the same window policy.\n');

  const vs = await variants();
  const results = new Map<string, Map<number, Measurement>>();
  for (const v of vs) results.set(v.label, new Map());

  for (const size of SIZES) {
    const cases = new Map<string, Case>();
    for (const v of vs) {
      const c = await v.make(size);
      // Sanity (not timing): the run answers, stores the turn, and setup restores exactly N messages.
      const input = await c.setup();
      const reply = await c.run(input);
      if (reply !== ANSWER) throw new Error(`${v.label}: unexpected reply ${JSON.stringify(reply)}`);
      if ((await c.storedCount(input)) !== size + 2) throw new Error(`${v.label}: expected ${size + 2} stored messages after a run`);
      if ((await c.storedCount(await c.setup())) !== size) throw new Error(`${v.label}: setup did not restore ${size} messages`);
      cases.set(v.label, c);
    }
    // Three interleaved rounds, each side's best mean kept: load on a shared machine hits every side alike.
    for (let round = 0; round < ROUNDS; round++) {
      for (const v of vs) {
        const c = cases.get(v.label)!;
        settle();
        const m = await measure(
          v.label,
          () => c.setup(),
          (input) => c.run(input),
          { warmup: 30, minIterations: 5, maxIterations: 3000, budgetMs: 500 },
        );
        const best = results.get(v.label)!.get(size);
        if (!best || m.meanMs < best.meanMs) results.get(v.label)!.set(size, m);
      }
    }

    console.log(`### ${size.toLocaleString('en-US')} stored messages\n`);
    printTable(
      ['pipeline', 'ms/run (mean)', 'ms/run (p50)', 'ops/s', 'runs', 'ratio vs ctx'],
      vs.map((v) => {
        const m = results.get(v.label)!.get(size)!;
        const base = results.get(v.baseline)!.get(size)!;
        return [
          v.label,
          fmtMs(m.meanMs),
          fmtMs(m.p50Ms),
          fmtOps(m.opsPerSec),
          String(m.iterations),
          v.label === v.baseline ? '1 (baseline)' : fmtRatio(m.meanMs / base.meanMs),
        ];
      }),
    );
    console.log('');
  }

  console.log('### Growth with history length\n');
  const first = SIZES[0];
  const mid = SIZES[1];
  const last = SIZES[SIZES.length - 1]!;
  const growth = `@${last.toLocaleString('en-US')} / @${first}`;
  printTable(
    [
      'pipeline',
      ...SIZES.map((s) => `mean @${s.toLocaleString('en-US')}`),
      `${growth} (mean)`,
      `${growth} (p50)`,
      `@${last.toLocaleString('en-US')} / @${mid.toLocaleString('en-US')} (p50)`,
    ],
    vs.map((v) => {
      const r = results.get(v.label)!;
      return [
        v.label,
        ...SIZES.map((s) => fmtMs(r.get(s)!.meanMs)),
        fmtRatio(r.get(last)!.meanMs / r.get(first)!.meanMs),
        fmtRatio(r.get(last)!.p50Ms / r.get(first)!.p50Ms),
        fmtRatio(r.get(last)!.p50Ms / r.get(mid)!.p50Ms),
      ];
    }),
  );
  console.log(
    `\nAt ${first} stored messages a ${WINDOW}-message window holds only ${first}; from ${mid.toLocaleString('en-US')} on it is full, so`,
  );
  console.log(`@${last.toLocaleString('en-US')} / @${mid.toLocaleString('en-US')} compares runs that load the same number of messages.\n`);
  const speedup = results.get(LC_FULL)!.get(last)!.meanMs / results.get(CTX_FULL)!.get(last)!.meanMs;
  console.log(
    `Target (ctx without a window at least 2x faster than LangChain's full history at ${last.toLocaleString('en-US')}): ${fmtRatio(speedup)} faster, ${speedup >= 2 ? 'met' : 'NOT met'}.\n`,
  );
  return results;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await pipelineOverhead();
}
