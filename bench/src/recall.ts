/**
 * Memory beyond the window, beside Mastra's semantic recall, on one generated multi-session history
 * (`recall-data.ts`: one user, 60 sessions of 84 turns, 10,080 messages, seeded). After the history,
 * 40 questions are asked in the last session, each about a fact said once in an earlier session or
 * early in the last one (which compaction summarized away). For each question and each side: did the
 * fact's value reach the model (recall at k), how many tokens were sent (one exact tokenizer,
 * gpt-4o / o200k, for every side), and how long the run took.
 *
 * Sides: full history (every message, one session, no window); ctx's window only (per-session
 * history compacted by summarization, no recall); ctx with `SemanticRecallProvider` (topK 4,
 * messageRange 1, user scope, `InMemoryVectorIndex`); ctx with recall and compaction's `archive: true`;
 * Mastra's `@mastra/memory` (`semanticRecall: { topK: 4, messageRange: 1, scope: 'resource' }`,
 * `lastMessages: 20`, LibSQL store and vector on a temp file), run in a child process under Node 22
 * (Mastra needs >= 22.13): set NODE22 to its binary, else the Mastra row is left out.
 *
 * Times, like with like: Mastra's `memory.recall` (recent messages, embedding the question, the
 * vector query, neighbours) beside the same work of a ctx run, read from the agent's `provider-end`
 * events of that run: the recall step (`SemanticRecallProvider.beforeRun`: embed the question, query,
 * neighbours) and the memory load (the history's, compaction's and recall's `beforeRun`: the window
 * and what recall adds). The whole `agent.run` (also the stand-in model call, storing and indexing
 * the turn) is its own row.
 *
 * Embeddings: `createHashEmbedding` (lexical: hashed words) offline on every side; with OPENAI_API_KEY
 * set, OpenAI text-embedding-3-small on every side.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CompactionProvider,
  createAgent,
  createHashEmbedding,
  type AgentEvent,
  type EmbeddingGenerator,
  InMemoryHistoryProvider,
  InMemoryVectorIndex,
  Message,
  SemanticRecallProvider,
  summarization,
} from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { OpenAIEmbeddings } from '@ctx/openai';
import { createOpenAITokenizer } from '@ctx/openai/tokenizer';
import { generateRecallDataset, type RecallDataset } from './recall-data.js';
import { fmtRatio, printTable } from './timing.js';

const TOP_K = 4;
const MESSAGE_RANGE = 1;
/** The window ctx keeps per session: compaction summarizes past 40 messages, keeping the last 10 turns. */
const COMPACT_PAST = 40;
const KEEP_GROUPS = 10;
/** Mastra's recent-message window: about what ctx's compacted window keeps. */
const LAST_MESSAGES = 20;
const DIMENSIONS = 512;
/** Timed runs per question and side (interleaved). */
const RUNS = 3;
/** Indexed messages of the recall-on/off time target. */
const TARGET_INDEXED = 10_000;

const real = Boolean(process.env.OPENAI_API_KEY);
const EMBEDDER = real ? 'OpenAI text-embedding-3-small (real embeddings)' : 'createHashEmbedding (lexical, offline)';
const embeddings: EmbeddingGenerator = real
  ? new OpenAIEmbeddings({ dimensions: DIMENSIONS })
  : createHashEmbedding({ dimensions: DIMENSIONS });
const tokenizer = createOpenAITokenizer({ model: 'gpt-4o' });
const SUMMARY = 'Summary of the earlier conversation: the user and the assistant chatted about everyday plans.';

/** What one question cost a side, in ms. */
interface Timing {
  /** ctx: the whole `agent.run`; Mastra: `memory.recall` (its whole memory work for the call). */
  ms: number;
  /** ctx: `SemanticRecallProvider.beforeRun` (embed, query, neighbours); undefined without recall, and for Mastra. */
  recallMs?: number;
  /** ctx: the `beforeRun` of history, compaction and recall: the memory the call is given. Mastra: `memory.recall`. */
  memoryMs: number;
}

interface Side {
  name: string;
  ask(question: string): Promise<{ messages: Message[] } & Timing>;
}

interface Outcome {
  hits: number;
  hitsLast: number;
  tokens: number[];
  times: number[];
  recallTimes: number[];
  memoryTimes: number[];
}

/** A ctx side: one agent, the whole history run through it turn by turn, questions asked in the last session. */
async function ctxSide(
  name: string,
  data: RecallDataset,
  options: { recall?: boolean; archive?: boolean; window?: boolean },
): Promise<Side & { index: InMemoryVectorIndex }> {
  let reply = '';
  const client = new ScriptedChatClient({ replies: () => ({ text: reply }) });
  const summarizer = new ScriptedChatClient({ replies: () => ({ text: SUMMARY }) });
  const index = new InMemoryVectorIndex({ dimensions: DIMENSIONS });
  const providers = [];
  if (options.window !== false) {
    providers.push(new InMemoryHistoryProvider());
    providers.push(
      new CompactionProvider({
        strategy: summarization({
          client: summarizer,
          keepRecentGroups: KEEP_GROUPS,
          trigger: { messages: COMPACT_PAST },
          ...(options.archive ? { archive: true } : {}),
        }),
      }),
    );
  } else {
    providers.push(new InMemoryHistoryProvider());
  }
  if (options.recall)
    providers.push(new SemanticRecallProvider({ embeddings, index, topK: TOP_K, messageRange: MESSAGE_RANGE, scope: 'user' }));
  // Each provider's beforeRun time in the timed run, from the agent's own events.
  let timing: { recall?: number; memory: number } | undefined;
  const onEvent = (event: AgentEvent) => {
    if (!timing || event.type !== 'provider-end' || event.phase !== 'beforeRun') return;
    timing.memory += event.durationMs;
    if (event.sourceId === 'recall') timing.recall = event.durationMs;
  };
  const agent = createAgent({ client, contextProviders: providers, onEvent });
  // Full history: every session's turns in one session, so every message is sent.
  const single = options.window === false ? agent.createSession({ userId: data.userId }) : undefined;
  let session = single;
  for (const turns of data.sessions) {
    if (!single) session = agent.createSession({ userId: data.userId });
    for (const turn of turns) {
      reply = turn.assistant;
      await agent.run(turn.user, { session: session! });
    }
  }
  reply = 'I will check.';
  return {
    name,
    index,
    async ask(question) {
      timing = { memory: 0 };
      const start = performance.now();
      await agent.run(question, { session: session! });
      const ms = performance.now() - start;
      const { recall, memory } = timing;
      timing = undefined;
      return { messages: client.calls.at(-1)!.messages, ms, memoryMs: memory, ...(recall === undefined ? {} : { recallMs: recall }) };
    },
  };
}

/** Mastra's side: a child process under Node 22 answering with the messages `memory.recall` gives for each question. */
async function mastraSide(data: RecallDataset, node: string): Promise<{ side: Side; loadMs: number; version: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'ctx-bench-recall-'));
  writeFileSync(join(dir, 'data.json'), JSON.stringify(data));
  writeFileSync(
    join(dir, 'options.json'),
    JSON.stringify({ topK: TOP_K, messageRange: MESSAGE_RANGE, lastMessages: LAST_MESSAGES, dimensions: DIMENSIONS, runs: RUNS }),
  );
  const script = join(dirname(fileURLToPath(import.meta.url)), '..', 'mastra', 'recall-mastra.mjs');
  const out = await new Promise<string>((resolve, reject) => {
    const child = spawn(node, [script, join(dir, 'data.json'), join(dir, 'options.json')], { stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    child.stdout.on('data', (chunk) => (text += chunk));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(text) : reject(new Error(`recall-mastra.mjs exited with ${code}`))));
  });
  rmSync(dir, { recursive: true, force: true });
  const parsed = JSON.parse(out) as {
    node: string;
    loadMs: number;
    results: { question: string; texts: { role: string; text: string }[]; times: number[] }[];
  };
  const byQuestion = new Map(parsed.results.map((r) => [r.question, { ...r, next: 0 }]));
  return {
    loadMs: parsed.loadMs,
    version: parsed.node,
    side: {
      name: 'Mastra @mastra/memory semantic recall',
      async ask(question) {
        const r = byQuestion.get(question)!;
        // What the model would receive: the recalled messages, then the question.
        const messages = [
          ...r.texts.map((t) => (t.role === 'assistant' ? Message.assistant(t.text) : Message.user(t.text))),
          Message.user(question),
        ];
        const ms = r.times[r.next++ % r.times.length]!;
        return { messages, ms, memoryMs: ms };
      },
    },
  };
}

/**
 * Mastra's side needs NODE22 (a Node >= 22.13 binary) and `npm install` run in bench/mastra: the
 * binary to use, or why the side is skipped.
 */
function mastraAvailable(): { node: string; missing?: undefined } | { node?: undefined; missing: string } {
  const node = process.env.NODE22;
  if (!node) return { missing: 'NODE22 is not set (a Node >= 22.13 binary; Mastra needs it).' };
  let version: string;
  try {
    version = execFileSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim();
  } catch (error) {
    return { missing: `NODE22 (${node}) does not run: ${(error as Error).message.split('\n')[0]}` };
  }
  const [major = 0, minor = 0] = version.split('.').map(Number);
  if (major < 22 || (major === 22 && minor < 13)) return { missing: `NODE22 is Node ${version}; Mastra needs >= 22.13.` };
  const mastraDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'mastra');
  if (!existsSync(join(mastraDir, 'node_modules', '@mastra', 'memory')))
    return { missing: `bench/mastra has no node_modules/@mastra/memory: run \`npm install\` there under Node 22 first.` };
  return { node };
}

function p50(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

async function main(): Promise<void> {
  // RECALL_SESSIONS / RECALL_TURNS shrink the history for a quick try; the table in the README uses the defaults.
  const data = generateRecallDataset({
    ...(process.env.RECALL_SESSIONS ? { sessions: Number(process.env.RECALL_SESSIONS) } : {}),
    ...(process.env.RECALL_TURNS ? { turnsPerSession: Number(process.env.RECALL_TURNS) } : {}),
  });
  const turns = data.sessions.reduce((n, s) => n + s.length, 0);
  const loads: number[] = [loadavg()[0]!];
  const sampler = setInterval(() => loads.push(loadavg()[0]!), 5_000);
  console.log(
    `recall benchmark: ${data.sessions.length} sessions, ${turns} turns (${turns * 2} messages), ${data.questions.length} questions (${data.questions.filter((q) => q.inLastSession).length} about the last session's summarized-away start), seed ${data.seed}; embedder ${EMBEDDER}; Node ${process.version}`,
  );
  const built = performance.now();
  const sides: (Side & { index?: InMemoryVectorIndex })[] = [
    await ctxSide('full history (every message)', data, { window: false }),
    await ctxSide('ctx window only (compacted, no recall)', data, {}),
    await ctxSide('ctx + semantic recall', data, { recall: true }),
    await ctxSide('ctx + semantic recall + archive', data, { recall: true, archive: true }),
  ];
  console.log(`ctx sides built in ${((performance.now() - built) / 1000).toFixed(1)} s`);
  const mastraCheck = mastraAvailable();
  let mastraNote = `Mastra skipped: ${mastraCheck.missing}`;
  let mastraIndex: number | undefined;
  if (mastraCheck.node) {
    const mastra = await mastraSide(data, mastraCheck.node);
    mastraIndex = sides.push(mastra.side) - 1;
    mastraNote = `Mastra ran under Node ${mastra.version} (child process); loading the history into LibSQL with embeddings took ${(mastra.loadMs / 1000).toFixed(1)} s.`;
  }
  console.log(mastraNote);
  const outcomes = new Map<Side, Outcome>(
    sides.map((s) => [s, { hits: 0, hitsLast: 0, tokens: [], times: [], recallTimes: [], memoryTimes: [] }]),
  );
  for (const question of data.questions) {
    for (let run = 0; run < RUNS; run++) {
      // Interleaved, the side that goes first rotating, so load drift spreads over every side.
      for (let i = 0; i < sides.length; i++) {
        const side = sides[(i + run) % sides.length]!;
        const { messages, ms, recallMs, memoryMs } = await side.ask(question.text);
        const outcome = outcomes.get(side)!;
        outcome.times.push(ms);
        outcome.memoryTimes.push(memoryMs);
        if (recallMs !== undefined) outcome.recallTimes.push(recallMs);
        if (run > 0) continue;
        outcome.tokens.push(tokenizer.countMessageTokens(messages));
        if (messages.some((m) => Message.text(m).includes(question.value))) {
          outcome.hits++;
          if (question.inLastSession) outcome.hitsLast++;
        }
      }
    }
  }
  clearInterval(sampler);
  loads.push(loadavg()[0]!);
  const n = data.questions.length;
  const last = data.questions.filter((q) => q.inLastSession).length;
  const windowOnly = outcomes.get(sides[1]!)!;
  const mastra = mastraIndex === undefined ? undefined : outcomes.get(sides[mastraIndex]!);
  const rows = sides.map((side) => {
    const o = outcomes.get(side)!;
    const tokens = o.tokens.reduce((a, b) => a + b, 0) / o.tokens.length;
    return [
      side.name,
      `${o.hits}/${n} (${((o.hits / n) * 100).toFixed(0)}%)`,
      `${o.hitsLast}/${last}`,
      tokens.toFixed(0),
      mastra ? fmtRatio(tokens / (mastra.tokens.reduce((a, b) => a + b, 0) / mastra.tokens.length)) : '-',
    ];
  });
  console.log(`\nRecall at k=${TOP_K} (messageRange ${MESSAGE_RANGE}), embedder: ${EMBEDDER}`);
  printTable(['side', 'evidence reached the model', 'of those summarized away', 'tokens sent (mean)', 'tokens vs Mastra'], rows);
  // Times, like with like: the same work on every side in one row; the whole ctx run in a row of its own.
  const ms = (values: readonly number[]) => (values.length ? `${p50(values).toFixed(2)} ms` : '-');
  const isMastra = (side: Side) => mastraIndex !== undefined && side === sides[mastraIndex];
  console.log(`\nTime per question, p50 over ${RUNS} interleaved runs of each of the ${n} questions (embedder: ${EMBEDDER})`);
  printTable(
    ['what is timed', ...sides.map((side) => side.name)],
    [
      [
        'memory for the call: ctx history + compaction + recall beforeRun; Mastra memory.recall (recent messages, embed, vector query, neighbours)',
        ...sides.map((side) => ms(outcomes.get(side)!.memoryTimes)),
      ],
      [
        'recall step: ctx SemanticRecallProvider.beforeRun (embed the question, query, neighbours)',
        ...sides.map((side) => ms(outcomes.get(side)!.recallTimes)),
      ],
      [
        'whole agent.run (ctx only: also the stand-in model call, storing and indexing the turn)',
        ...sides.map((side) => (isMastra(side) ? 'not comparable' : ms(outcomes.get(side)!.times))),
      ],
    ],
  );
  const recallSide = outcomes.get(sides[2]!)!;
  console.log(
    `\nwhole agent.run, recall on vs off (window only), p50: ${p50(recallSide.times).toFixed(3)} ms vs ${p50(windowOnly.times).toFixed(3)} ms, +${(p50(recallSide.times) - p50(windowOnly.times)).toFixed(3)} ms; indexed messages: ${sides[2]!.index!.size} (recall), ${sides[3]!.index!.size} (recall + archive)`,
  );

  // The time target at 10,000 indexed messages: the recall side's index is filled up with more sessions of the
  // same user (another seed's filler turns, embedded by the same embedder), then recall on and off are timed again,
  // interleaved, on the same questions.
  const index = sides[2]!.index!;
  const padding = generateRecallDataset({ seed: data.seed + 1, sessions: 70, turnsPerSession: 42 })
    .sessions.flatMap((turns, s) => turns.flatMap((t) => [t.user, t.assistant]).map((text, i) => ({ text, s, i })))
    .slice(0, Math.max(0, TARGET_INDEXED - index.size));
  for (let i = 0; i < padding.length; i += 500) {
    const batch = padding.slice(i, i + 500);
    const vectors = await embeddings.embed(batch.map((p) => p.text));
    await index.upsert(
      batch.map((p, j) => ({
        id: `padding-${p.s}/${p.i}`,
        text: p.text,
        userId: data.userId,
        sessionId: `padding-${p.s}`,
        messageId: `padding-${p.s}-${p.i}`,
        role: p.i % 2 ? 'assistant' : 'user',
        sequence: p.i,
        vector: vectors[j]!,
      })),
    );
  }
  const on: number[] = [];
  const off: number[] = [];
  const step: number[] = [];
  for (const question of data.questions) {
    for (let run = 0; run < RUNS; run++) {
      const pair: [Side, number[]][] = [
        [sides[1]!, off],
        [sides[2]!, on],
      ];
      if (run % 2) pair.reverse();
      for (const [side, times] of pair) {
        const timing = await side.ask(question.text);
        times.push(timing.ms);
        if (timing.recallMs !== undefined) step.push(timing.recallMs);
      }
    }
  }
  console.log(
    `target: recall on vs off at ${index.size} indexed messages (InMemoryVectorIndex), whole agent.run p50 over ${on.length} runs each: ${p50(on).toFixed(3)} ms vs ${p50(off).toFixed(3)} ms, +${(p50(on) - p50(off)).toFixed(3)} ms (${fmtRatio(p50(on) / p50(off))}); the recall step alone p50 ${p50(step).toFixed(3)} ms`,
  );
  console.log(mastraNote);
  console.log(`Load average (1 min) during the run: ${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)}.`);
}

await main();
