/**
 * Memory: heap (and array buffers) retained per stored message (one session of 10,000 messages) and per session
 * (1,000 sessions of 50 messages), for ctx's in-memory history and the stores a user of LangChain.js
 * or the OpenAI Agents SDK would keep in memory. Each side stores the same conversation through its
 * own API, from data generated inside the measured span, so the text every side keeps is counted
 * for every side. Needs `node --expose-gc`. Prints figures and ratios; asserts nothing.
 */
import { pathToFileURL } from 'node:url';
import { AgentSession, createAgent, InMemoryHistoryProvider, type JsonObject, type Message } from '@ctx/core';
import { InMemoryChatMessageHistory } from '@langchain/core/chat_history';
import { MemorySession } from '@openai/agents-core';
import { toLangChain } from './alternatives/langchain.js';
import { toAgentItems } from './alternatives/openai-agents.js';
import { FixedReplyChatClient, toCtx } from './ctx-side.js';
import { conversation, QUESTION, type Turn } from './data.js';
import { runInfo } from './run-info.js';
import { fmtRatio, printTable } from './timing.js';

const MESSAGES = 10_000;
const SESSIONS = 1_000;
const PER_SESSION = 50;
/** Runs without a window before the "after runs" figure (each stores a turn of 2 messages). */
const RUNS = 3;

function gc(): void {
  const collect = (globalThis as { gc?: () => void }).gc;
  if (!collect) throw new Error('run with node --expose-gc');
  for (let i = 0; i < 3; i++) collect();
}

/** The heap in use plus the memory of array buffers (a typed array's data lives outside the heap). */
function used(): number {
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return heapUsed + arrayBuffers;
}

/** Memory retained by what `build` returns (heap and array buffers), in bytes. The returned value is kept alive until measured. */
async function retained(build: () => Promise<unknown>): Promise<number> {
  gc();
  const before = used();
  const kept = await build();
  gc();
  const after = used();
  if (kept === undefined) throw new Error('nothing kept');
  return after - before;
}

/**
 * ctx messages as runs store them: the user's as input, the model's as response, each with its own
 * id and its own `createdAt` (a real run stamps every message; the other libraries keep no time).
 */
function ctxMessages(turns: Turn[], clock: { t: number }): Message[] {
  return toCtx(turns).map((m) => ({ ...m, createdAt: new Date(1_750_000_000_000 + clock.t++ * 1000).toISOString() }));
}

/** Stores a conversation turn by turn (a user message up to the next one), as runs do. */
function turnsOf<T>(items: T[], isUser: (item: T) => boolean): T[][] {
  const out: T[][] = [];
  for (const item of items) {
    if (isUser(item) || out.length === 0) out.push([]);
    out[out.length - 1]!.push(item);
  }
  return out;
}

const sides = {
  async ctx(turns: () => Turn[], clock: { t: number }) {
    const history = new InMemoryHistoryProvider();
    const session = new AgentSession();
    const state = session.stateOf('memory') as JsonObject;
    for (const turn of turnsOf(ctxMessages(turns(), clock), (m) => m.role === 'user')) {
      await history.saveMessages(session.sessionId, turn, { state });
    }
    return session;
  },
  async langchain(turns: () => Turn[]) {
    const history = new InMemoryChatMessageHistory();
    for (const turn of turnsOf(toLangChain(turns()), (m) => m.getType() === 'human')) await history.addMessages(turn);
    return history;
  },
  async agents(turns: () => Turn[]) {
    const session = new MemorySession();
    for (const turn of turnsOf(toAgentItems(turns()), (i) => (i as { role?: string }).role === 'user')) await session.addItems(turn);
    return session;
  },
};

/** Runs the benchmark and prints its tables. */
export async function memoryBench(): Promise<{ perMessage: Record<string, number>; perSession: Record<string, number> }> {
  console.log('\n## Memory (heap and array buffers retained, node --expose-gc, after full collections)\n');
  console.log(`${runInfo()}.\n`);
  const clock = { t: 0 };
  const perMessage: Record<string, number> = {
    ctx: (await retained(() => sides.ctx(() => conversation(MESSAGES, 11), clock))) / MESSAGES,
    langchain: (await retained(() => sides.langchain(() => conversation(MESSAGES, 11)))) / MESSAGES,
    agents: (await retained(() => sides.agents(() => conversation(MESSAGES, 11)))) / MESSAGES,
  };
  // The same session after runs of the agent's default history (no window), with what loading
  // keeps for later runs; the turns the runs stored are removed through the agent's public API.
  perMessage['ctx-after-runs'] =
    (await retained(async () => {
      const session = await sides.ctx(() => conversation(MESSAGES, 11), clock);
      const agent = createAgent({ client: new FixedReplyChatClient() });
      for (let i = 0; i < RUNS; i++) await agent.run(QUESTION, { session });
      const [firstAdded] = await agent.getHistory(session, { limit: 2 * RUNS });
      await agent.rewindSession(session, firstAdded!.id);
      if ((await agent.getHistory(session)).length !== MESSAGES) throw new Error(`the rewind did not bring back ${MESSAGES} messages`);
      return [session, agent];
    })) / MESSAGES;

  const lowest = Math.min(perMessage.langchain!, perMessage.agents!);
  console.log(`### Per stored message (one session of ${MESSAGES.toLocaleString('en-US')} messages)\n`);
  printTable(
    ['store', 'bytes / message', 'vs lowest peer'],
    [
      ['ctx InMemoryHistoryProvider (saveMessages per turn)', perMessage.ctx!.toFixed(0), fmtRatio(perMessage.ctx! / lowest)],
      [
        `ctx, the same after ${RUNS} runs of the default history (no window) and a rewind (+ what loading keeps)`,
        perMessage['ctx-after-runs']!.toFixed(0),
        fmtRatio(perMessage['ctx-after-runs']! / lowest),
      ],
      [
        'LangChain InMemoryChatMessageHistory (addMessages per turn)',
        perMessage.langchain!.toFixed(0),
        fmtRatio(perMessage.langchain! / lowest),
      ],
      [
        'OpenAI Agents SDK MemorySession (for demos and tests; addItems per turn)',
        perMessage.agents!.toFixed(0),
        fmtRatio(perMessage.agents! / lowest),
      ],
    ],
  );
  console.log(
    `\nTarget (ctx at most the lowest peer's): ${perMessage.ctx! <= lowest ? 'met' : 'NOT met'} when stored; ${perMessage['ctx-after-runs']! <= lowest ? 'met' : 'NOT met'} after runs without a window.`,
  );
  console.log(
    'ctx keeps an id and an ISO createdAt per message (a distinct string each here, as runs make them); the others keep no time.\n',
  );

  const perSession: Record<string, number> = {};
  for (const [name, side] of Object.entries(sides)) {
    let seed = 1;
    const bytes = await retained(async () => {
      const all: unknown[] = [];
      for (let i = 0; i < SESSIONS; i++) all.push(await side(() => conversation(PER_SESSION, seed++), clock));
      return all;
    });
    perSession[name] = bytes / SESSIONS;
  }
  console.log(`### Per session (${SESSIONS.toLocaleString('en-US')} sessions x ${PER_SESSION} messages)\n`);
  const lowestSession = Math.min(perSession.langchain!, perSession.agents!);
  printTable(
    ['store', 'KiB / session', 'vs lowest peer'],
    [
      ['ctx AgentSession + InMemoryHistoryProvider state', (perSession.ctx! / 1024).toFixed(1), fmtRatio(perSession.ctx! / lowestSession)],
      ['LangChain InMemoryChatMessageHistory', (perSession.langchain! / 1024).toFixed(1), fmtRatio(perSession.langchain! / lowestSession)],
      ['OpenAI Agents SDK MemorySession', (perSession.agents! / 1024).toFixed(1), fmtRatio(perSession.agents! / lowestSession)],
    ],
  );
  console.log('');
  return { perMessage, perSession };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await memoryBench();
}
