/**
 * Per-run overhead of the agent pipeline at 10, 1,000, 10,000 and 100,000 stored messages, in the
 * three ways an app runs a session: consecutive runs on one session, a run after a rewind, and a
 * session restored from JSON for every request. ctx (five providers, windowed and with the agent's
 * default history), LangChain.js (`RunnableWithMessageHistory`) and the OpenAI Agents SDK, each on
 * a fake model that answers at once, so only the library's own work is timed. Every side changes
 * its session only through its library's public API. Prints absolute figures, ratios and the
 * targets (met or not, from this run); asserts nothing about timings.
 */
import { pathToFileURL } from 'node:url';
import { langchainCase, toLangChain } from './alternatives/langchain.js';
import { openaiAgentsCase, toAgentItems } from './alternatives/openai-agents.js';
import { ANSWER, conversation } from './data.js';
import { loadAverage, runInfo } from './run-info.js';
import { fmtMs, fmtRatio, measure, printTable, settle, type MeasureOptions, type Measurement } from './timing.js';

const SIZES = [10, 1_000, 10_000, 100_000] as const;
/** The size the speed targets compare at. */
const TARGET_SIZE = 10_000;
const LARGEST = SIZES[SIZES.length - 1]!;
const WINDOW = 20;
const ROUNDS = 3;
/** Consecutive flow: timed runs between two resets (the run right after a reset is not timed). */
const RUN_LENGTH = 5;
/** Bounds of one measured case: up to 30 warm-up runs (200 ms), then at least 5 and up to 3,000 timed runs in 300 ms. */
const BOUNDS: MeasureOptions = { warmup: 30, warmupBudgetMs: 200, minIterations: 5, maxIterations: 3000, budgetMs: 300 };
/** At 100,000 messages, a case slower than this (mean ms) at 10,000 runs one round of 1 warm-up and 3 timed runs... */
const SLOW_MS = 20;
const SLOW_BOUNDS: MeasureOptions = { warmup: 1, minIterations: 3, maxIterations: 3, budgetMs: 0 };
/** ...and one slower than this is not run at 100,000 (seconds per run, growing with the history: shown up to 10,000). */
const SKIP_MS = 200;
/** Windowed targets: flat means at most this p50 ratio against 10 messages, faster means at least this ratio. */
const FLAT = 1.2;
const WINDOW_SPEEDUP = 5;
const FULL_SPEEDUP = 2;

/**
 * One library's pipeline on one session of N stored messages. Every method changes or reads the
 * session only through the library's public API.
 */
interface Side<S = unknown> {
  /** Brings the session back to exactly N stored messages (untimed) and returns it. */
  reset(): Promise<S>;
  /** One run of the question; resolves to the reply text. */
  run(session: S): Promise<string>;
  /** Messages stored in the session now (sanity checks only). */
  storedCount(session: S): Promise<number>;
  /** The session as the JSON text a hosted app keeps between requests. */
  serialize(session: S): Promise<string>;
  /** A new session restored from that text. */
  restore(json: string): Promise<S>;
}

/** The flows: how a timed run comes to its session. */
type FlowId = 'consecutive' | 'rewind' | 'restore-run' | 'restored-run';

interface Flow {
  id: FlowId;
  /** Its name in the targets table. */
  short: string;
  title: string;
  /** What one timed call is, printed under the title. */
  about: string;
  /** Whether the windowed targets apply: the timed call loads only a window. */
  windowTargets: boolean;
}

const FLOWS: Flow[] = [
  {
    id: 'consecutive',
    short: 'a) consecutive runs',
    title: 'a) Consecutive runs on one session',
    about: `Each timed run follows the previous run on the same session, which keeps the turns they stored: every ${RUN_LENGTH} timed runs the session is reset to N through the public API and one untimed run follows, so a timed run sees N+2 to N+${2 * RUN_LENGTH} messages.`,
    windowTargets: true,
  },
  {
    id: 'rewind',
    short: 'b) run after a rewind',
    title: 'b) A run after a rewind',
    about:
      'Before every timed run, untimed, the turn the previous run stored is removed through the public API (ctx: agent.rewindSession; LangChain: a new history over the stored messages; Agents SDK: session.popItem()), so every timed run sees exactly N messages.',
    windowTargets: true,
  },
  {
    id: 'restore-run',
    short: 'c) restore + run',
    title: 'c) A session restored from JSON for each request: restore + run',
    about:
      'Each timed call restores the session from the JSON text of N messages (ctx: agent.restoreSession, which validates the session and every message; LangChain: JSON.parse + mapStoredMessagesToChatMessages; Agents SDK: JSON.parse + a new session over the items), then runs. Restoring reads every message, so no windowed target applies here.',
    windowTargets: false,
  },
  {
    id: 'restored-run',
    short: 'c) run on a restored session',
    title: 'c) A session restored from JSON for each request: the run alone',
    about: 'The same, the restore untimed: the first run on a freshly restored session of N messages.',
    windowTargets: true,
  },
];

interface Variant {
  /** Row label. */
  label: string;
  /** Label of the ctx row this one is compared with (like-for-like window policy). */
  baseline: string;
  /** A peer's windowed session (for the windowed speed target): its short name. */
  peerWindow?: string;
  /** The flows this row is measured in (default: all). */
  flows?: FlowId[];
  make(size: number): Promise<Side>;
}

const CTX_WINDOW = `ctx, InMemoryHistoryProvider maxMessages ${WINDOW} + 4 providers`;
const CTX_FULL = "ctx, the agent's default history (InMemoryHistoryProvider, no window) + 4 providers";
const LC_FULL = 'LangChain RunnableWithMessageHistory (legacy API), InMemoryChatMessageHistory (full history)';

async function variants(): Promise<Variant[]> {
  const { ctxCase, toCtx } = await import('./ctx-side.js');
  return [
    { label: CTX_WINDOW, baseline: CTX_WINDOW, make: async (n) => ctxCase(toCtx(conversation(n)), { maxMessages: WINDOW }) },
    { label: CTX_FULL, baseline: CTX_FULL, make: async (n) => ctxCase(toCtx(conversation(n)), { history: 'default' }) },
    {
      label: `ctx, as first row but on core's ScriptedChatClient`,
      baseline: CTX_WINDOW,
      flows: ['rewind'],
      make: async (n) => ctxCase(toCtx(conversation(n)), { maxMessages: WINDOW, client: 'scripted' }),
    },
    { label: LC_FULL, baseline: CTX_FULL, make: async (n) => langchainCase(toLangChain(conversation(n))) },
    {
      label: `LangChain (legacy API) + trimMessages (last ${WINDOW})`,
      baseline: CTX_WINDOW,
      peerWindow: 'LangChain trimMessages',
      make: async (n) => langchainCase(toLangChain(conversation(n)), { window: WINDOW }),
    },
    {
      label: `LangChain (legacy API), user-written BaseListChatMessageHistory reading the last ${WINDOW}`,
      baseline: CTX_WINDOW,
      peerWindow: 'LangChain last-20 history',
      make: async (n) => langchainCase(toLangChain(conversation(n)), { window: WINDOW, history: 'last-messages' }),
    },
    {
      label: 'OpenAI Agents SDK, MemorySession (for demos and tests, its docs say; full history)',
      baseline: CTX_FULL,
      flows: ['rewind'],
      make: async (n) => openaiAgentsCase(toAgentItems(conversation(n))),
    },
    {
      label: `OpenAI Agents SDK, MemorySession + sessionInputCallback (last ${WINDOW})`,
      baseline: CTX_WINDOW,
      peerWindow: 'Agents SDK sessionInputCallback',
      make: async (n) => openaiAgentsCase(toAgentItems(conversation(n)), { window: WINDOW }),
    },
    {
      label: `OpenAI Agents SDK, user-written Session returning the last ${WINDOW}, no cloning`,
      baseline: CTX_WINDOW,
      peerWindow: 'Agents SDK last-20 session',
      make: async (n) => openaiAgentsCase(toAgentItems(conversation(n)), { window: WINDOW, session: 'last-items' }),
    },
  ];
}

/** The untimed step and the timed call of one side in one flow. */
interface Timed {
  setup(): Promise<unknown>;
  run(input: unknown): Promise<unknown>;
}

/**
 * Checks (not timing) that a side answers, stores the turn and resets to N, and in the restore
 * flows that a restored session holds N messages; returns the side's setup and timed call.
 */
async function prepare(label: string, side: Side, flow: FlowId, size: number): Promise<Timed> {
  const fail = (what: string) => {
    throw new Error(`${label} (${flow}, ${size} messages): ${what}`);
  };
  const session = await side.reset();
  if ((await side.storedCount(session)) !== size) fail(`the session does not hold ${size} messages`);
  const reply = await side.run(session);
  if (reply !== ANSWER) fail(`unexpected reply ${JSON.stringify(reply)}`);
  if ((await side.storedCount(session)) !== size + 2) fail(`expected ${size + 2} stored messages after a run`);
  if ((await side.storedCount(await side.reset())) !== size) fail(`reset did not bring back ${size} messages`);
  switch (flow) {
    case 'consecutive': {
      let left = 0;
      let current: unknown;
      return {
        async setup() {
          if (left === 0) {
            current = await side.reset();
            await side.run(current);
            left = RUN_LENGTH;
          }
          left--;
          return current;
        },
        run: (s) => side.run(s),
      };
    }
    case 'rewind':
      return { setup: () => side.reset(), run: (s) => side.run(s) };
    case 'restore-run':
    case 'restored-run': {
      const json = await side.serialize(await side.reset());
      const restored = await side.restore(json);
      if ((await side.storedCount(restored)) !== size) fail(`the restored session does not hold ${size} messages`);
      if ((await side.run(restored)) !== ANSWER || (await side.storedCount(restored)) !== size + 2)
        fail('a run on the restored session failed');
      return flow === 'restore-run'
        ? { setup: async () => json, run: async (j) => side.run(await side.restore(j as string)) }
        : { setup: () => side.restore(json), run: (s) => side.run(s) };
    }
  }
}

/** Measurements of one flow: by row label, by size; absent for a row not run at that size. */
type FlowResults = Map<string, Map<number, Measurement>>;

/** Measures one flow at every size and prints its table. */
async function runFlow(flow: Flow, vs: Variant[]): Promise<{ rows: Variant[]; results: FlowResults; skipped: Map<string, number> }> {
  const rows = vs.filter((v) => !v.flows || v.flows.includes(flow.id));
  const results: FlowResults = new Map(rows.map((v) => [v.label, new Map()]));
  const skipped = new Map<string, number>();
  const loads: string[] = [];
  for (const size of SIZES) {
    const timed = new Map<string, { t: Timed; bounds: MeasureOptions; rounds: number }>();
    for (const v of rows) {
      const before = results.get(v.label)!.get(TARGET_SIZE)?.meanMs;
      if (size === LARGEST && before !== undefined && before > SKIP_MS) {
        skipped.set(v.label, before);
        continue;
      }
      const slow = size === LARGEST && before !== undefined && before > SLOW_MS;
      const t = await prepare(v.label, await v.make(size), flow.id, size);
      timed.set(v.label, { t, bounds: slow ? SLOW_BOUNDS : BOUNDS, rounds: slow ? 1 : ROUNDS });
    }
    // Interleaved rounds, each row's best mean kept: load on a shared machine hits every row alike.
    for (let round = 0; round < ROUNDS; round++) {
      for (const v of rows) {
        const c = timed.get(v.label);
        if (!c || round >= c.rounds) continue;
        settle();
        const m = await measure(
          v.label,
          () => c.t.setup(),
          (input) => c.t.run(input),
          c.bounds,
        );
        const best = results.get(v.label)!.get(size);
        if (!best || m.meanMs < best.meanMs) results.get(v.label)!.set(size, m);
      }
    }
    loads.push(`${size.toLocaleString('en-US')}: ${loadAverage()}`);
  }

  console.log(`### ${flow.title}\n`);
  console.log(`${flow.about}\n`);
  const at = (label: string, size: number) => results.get(label)!.get(size);
  const cell = (label: string, size: number, pick: (m: Measurement) => number) => {
    const m = at(label, size);
    if (m) return fmtMs(pick(m));
    return skipped.has(label) ? 'skipped' : 'n/a';
  };
  printTable(
    [
      'pipeline',
      ...SIZES.map((s) => `mean @${s.toLocaleString('en-US')}`),
      `p50 @${TARGET_SIZE.toLocaleString('en-US')}`,
      `p50 @${LARGEST.toLocaleString('en-US')}`,
      `runs @${LARGEST.toLocaleString('en-US')}`,
      `vs ctx @${TARGET_SIZE.toLocaleString('en-US')} (p50)`,
      'growth (p50)',
    ],
    rows.map((v) => {
      const m = at(v.label, TARGET_SIZE)!;
      const base = at(v.baseline, TARGET_SIZE)!;
      return [
        v.label,
        ...SIZES.map((s) => cell(v.label, s, (x) => x.meanMs)),
        fmtMs(m.p50Ms),
        cell(v.label, LARGEST, (x) => x.p50Ms),
        String(at(v.label, LARGEST)?.iterations ?? 0),
        v.label === v.baseline ? '1 (baseline)' : fmtRatio(m.p50Ms / base.p50Ms),
        fmtRatio(growth(results.get(v.label)!)),
      ];
    }),
  );
  console.log(`\nLoad average (1/5/15 min) after each size: ${loads.join('; ')}.`);
  for (const [label, ms] of skipped) {
    console.log(
      `Skipped at ${LARGEST.toLocaleString('en-US')}: ${label} (${fmtMs(ms)} ms a run at ${TARGET_SIZE.toLocaleString('en-US')}, more than ${SKIP_MS} ms, and growing with the history).`,
    );
  }
  console.log('');
  return { rows, results, skipped };
}

/** The largest p50 at 1,000 messages or more against the p50 at 10 (what "flat" is judged on). */
function growth(bySize: Map<number, Measurement>): number {
  const first = bySize.get(SIZES[0])!.p50Ms;
  let worst = 0;
  for (const s of SIZES.slice(1)) {
    const m = bySize.get(s);
    if (m) worst = Math.max(worst, m.p50Ms / first);
  }
  return worst;
}

const metText = (ok: boolean) => (ok ? 'met' : 'NOT met');

/** Runs the benchmark and prints its tables and targets. Returns the measurements by flow, label and size. */
export async function pipelineOverhead(): Promise<Map<FlowId, FlowResults>> {
  console.log('\n## Pipeline overhead per run (fake model, no network)\n');
  console.log(`${runInfo()}.`);
  console.log(
    `Mean and p50 ms per run on a session of N stored messages; each row's best mean of ${ROUNDS} interleaved rounds. Each measured case: up to ${BOUNDS.warmup} warm-up runs (${BOUNDS.warmupBudgetMs} ms), then ${BOUNDS.minIterations} to ${BOUNDS.maxIterations} timed runs within ${BOUNDS.budgetMs} ms (untimed resets included). At ${LARGEST.toLocaleString('en-US')} messages a row slower than ${SLOW_MS} ms at ${TARGET_SIZE.toLocaleString('en-US')} runs one round of ${SLOW_BOUNDS.warmup} warm-up and ${SLOW_BOUNDS.minIterations} timed runs, and one slower than ${SKIP_MS} ms is skipped.`,
  );
  console.log(
    `"vs ctx" compares p50s like with like at ${TARGET_SIZE.toLocaleString('en-US')}: full-history rows against ctx without a window, windowed rows against ctx with maxMessages ${WINDOW}. "growth" is the largest p50 at 1,000 messages or more against the p50 at 10 (a window of ${WINDOW} holds only 10 at 10).\n`,
  );
  const vs = await variants();
  const all = new Map<FlowId, FlowResults>();
  const targets: string[][] = [];
  for (const flow of FLOWS) {
    const { rows, results } = await runFlow(flow, vs);
    all.set(flow.id, results);
    const at = (label: string) => results.get(label)!.get(TARGET_SIZE)!;
    const n = TARGET_SIZE.toLocaleString('en-US');
    // Judged on the p50 (the median run: a shared machine's pauses move the means), the means beside it.
    const both = (ours: Measurement, theirs: Measurement) =>
      `${fmtRatio(theirs.p50Ms / ours.p50Ms)} by p50 (${fmtMs(ours.p50Ms)} against ${fmtMs(theirs.p50Ms)} ms), ${fmtRatio(theirs.meanMs / ours.meanMs)} by mean`;
    if (flow.windowTargets) {
      const flat = growth(results.get(CTX_WINDOW)!);
      targets.push([
        flow.short,
        `window flat from 10 to ${LARGEST.toLocaleString('en-US')} messages (p50 at most ${FLAT}x)`,
        fmtRatio(flat),
        metText(flat <= FLAT),
      ]);
      const peers = rows.filter((v) => v.peerWindow);
      const fastest = peers.reduce((a, b) => (at(a.label).p50Ms <= at(b.label).p50Ms ? a : b));
      const speedup = at(fastest.label).p50Ms / at(CTX_WINDOW).p50Ms;
      targets.push([
        flow.short,
        `window at least ${WINDOW_SPEEDUP}x faster than the fastest peer window at ${n} (${fastest.peerWindow})`,
        both(at(CTX_WINDOW), at(fastest.label)),
        metText(speedup >= WINDOW_SPEEDUP),
      ]);
    }
    const full = at(LC_FULL).p50Ms / at(CTX_FULL).p50Ms;
    targets.push([
      flow.short,
      `no window at least ${FULL_SPEEDUP}x faster than LangChain's full history at ${n}`,
      both(at(CTX_FULL), at(LC_FULL)),
      flow.windowTargets ? metText(full >= FULL_SPEEDUP) : `no target (${full >= FULL_SPEEDUP ? 'would be met' : 'would not be met'})`,
    ]);
  }
  console.log('### Targets (computed from this run, judged on the p50)\n');
  printTable(['flow', 'target', 'this run', 'met?'], targets);
  console.log(`\nMemory per stored message is measured by src/memory.ts (bench:memory), which prints its own targets.`);
  console.log(`${runInfo()}.\n`);
  return all;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await pipelineOverhead();
}
