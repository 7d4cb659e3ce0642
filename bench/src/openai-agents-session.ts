/**
 * Overhead of `CtxSession` (from @ctx/openai-agents, over ctx's InMemoryHistoryProvider) against the
 * OpenAI Agents SDK's own `MemorySession`, on the same runner and the same fake model (answers at
 * once, no network), with 10, 100 and 1,000 items already in the session. Each timed call is one
 * `run(agent, input, { session })` on a session prepared untimed. Prints absolute figures and the
 * ratio; asserts nothing about timings.
 */
import { InMemoryHistoryProvider } from '@ctx/core';
import { Agent, MemorySession, run, setTracingDisabled, Usage, type AgentInputItem, type Model, type Session } from '@openai/agents-core';
import { CtxSession } from '../../packages/openai-agents/src/index.js';
import { fmtMs, fmtRatio, measure, printTable, settle } from './timing.js';

setTracingDisabled(true);

const model: Model = {
  async getResponse() {
    return {
      usage: new Usage({ requests: 1, inputTokens: 0, outputTokens: 0, totalTokens: 0 }),
      output: [{ type: 'message', id: 'msg', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'ok' }] }],
    };
  },
  getStreamedResponse() {
    throw new Error('not streamed');
  },
};
const agent = new Agent({ name: 'bench', instructions: 'Be brief.', model });

function items(n: number): AgentInputItem[] {
  return Array.from(
    { length: n },
    (_, i): AgentInputItem =>
      i % 2 === 0
        ? { role: 'user', content: `question ${i} about the weather in some city` }
        : {
            type: 'message',
            id: `msg_${i}`,
            role: 'assistant',
            status: 'completed',
            content: [{ type: 'output_text', text: `answer ${i}` }],
          },
  );
}

const cases: [string, (initial: AgentInputItem[]) => Promise<Session>][] = [
  ['Agents SDK MemorySession', async (initial) => new MemorySession({ initialItems: initial })],
  [
    'CtxSession over InMemoryHistoryProvider',
    async (initial) => {
      const session = new CtxSession({ history: new InMemoryHistoryProvider() });
      await session.addItems(initial);
      return session;
    },
  ],
];

const rows: string[][] = [];
for (const size of [10, 100, 1_000]) {
  const initial = items(size);
  const results = [];
  for (const [name, make] of cases) {
    settle();
    results.push(
      await measure(
        name,
        () => make(initial),
        (session) => run(agent, 'and tomorrow?', { session }),
        { budgetMs: 3000 },
      ),
    );
  }
  const base = results[0]!;
  for (const r of results)
    rows.push([`${r.name}, ${size} items`, fmtMs(r.meanMs), fmtMs(r.p50Ms), String(r.iterations), fmtRatio(r.meanMs / base.meanMs)]);
}
printTable(['one run(agent, input, { session })', 'mean ms', 'p50 ms', 'runs', 'vs MemorySession'], rows);
