/**
 * Overhead of `CtxSession` (from @ctx/openai-agents, over ctx's InMemoryHistoryProvider) against the
 * OpenAI Agents SDK's own `MemorySession`, on the real runner, with 10, 100 and 1,000 items already
 * in the session, in client CPU time (`cpu-compare.ts`: one process, sides alternating call by call,
 * median and p90). Each timed call is one `run(agent, input, { session })`; before it, untimed, the
 * session is put back to its N items (the turn the previous run stored is popped).
 *
 * Two models, the same on both sides: a realistic one, a `Model` that calls the `openai` SDK's
 * `responses.create` and returns the response's output items, the SDK answering from a recorded
 * OpenAI response (`responses-text.json`) through an in-process `fetch` (no network, no server);
 * and the worst case, a model that answers at once without any SDK. Prints tables; asserts nothing
 * about timings.
 */
import { InMemoryHistoryProvider } from '@ctx/core';
import { Agent, type AgentInputItem, MemorySession, type Model, run, type Session, setTracingDisabled, Usage } from '@openai/agents-core';
import OpenAI from 'openai';
import { CtxSession } from '../../packages/openai-agents/src/index.js';
import { CPU_HEADERS, compareCpu, cpuCells } from './cpu-compare.js';
import { jsonBody, replay } from './replay-fetch.js';
import { printTable } from './timing.js';

setTracingDisabled(true);

/** A model that answers at once, without any SDK: the Agents runner and the session only. */
const instant: Model = {
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

/** A model that makes a real `openai` SDK call (request built and sent, response parsed), answered from a recording. */
function recordedModel(): Model {
  const fetch = replay(jsonBody('responses-text.json'), 'application/json');
  const sdk = new OpenAI({ apiKey: 'bench-key', baseURL: 'http://replay.invalid/v1', maxRetries: 0, fetch });
  return {
    async getResponse(request) {
      const input = typeof request.input === 'string' ? request.input : (request.input as OpenAI.Responses.ResponseInput);
      const response = await sdk.responses.create({ model: 'gpt-5-mini', instructions: request.systemInstructions, input });
      const u = response.usage;
      return {
        responseId: response.id,
        usage: new Usage({
          requests: 1,
          inputTokens: u?.input_tokens ?? 0,
          outputTokens: u?.output_tokens ?? 0,
          totalTokens: u?.total_tokens ?? 0,
        }),
        output: response.output as never,
      };
    },
    getStreamedResponse() {
      throw new Error('not streamed');
    },
  };
}

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

/** A session of each kind holding `initial`, and a reset that pops what a run added (untimed). */
async function sessions(initial: AgentInputItem[]) {
  const memory = new MemorySession({ initialItems: initial });
  const ctx = new CtxSession({ history: new InMemoryHistoryProvider() });
  await ctx.addItems(initial);
  const resetTo = (session: Session) => async () => {
    while ((await session.getItems()).length > initial.length) await session.popItem();
  };
  return { memory, ctx, resetMemory: resetTo(memory), resetCtx: resetTo(ctx) };
}

export async function openaiAgentsSessionBench(): Promise<void> {
  console.log('\n## OpenAI Agents SDK session: CtxSession against MemorySession, client CPU time\n');
  const rows: string[][] = [];
  for (const [label, model] of [
    ['recorded OpenAI response through the openai SDK', recordedModel()],
    ['worst case: a model that answers at once, no SDK', instant],
  ] as const) {
    const agent = new Agent({ name: 'bench', instructions: 'Be brief.', model });
    for (const size of [10, 100, 1_000]) {
      const s = await sessions(items(size));
      for (const session of [s.memory, s.ctx]) {
        await run(agent, 'and tomorrow?', { session });
        if ((await session.getItems()).length !== size + 2) throw new Error('A run did not store its turn.');
      }
      await s.resetMemory();
      await s.resetCtx();
      const input = 'and tomorrow?';
      const stats = await compareCpu(
        [
          { name: 'MemorySession', call: () => run(agent, input, { session: s.memory }), setup: s.resetMemory },
          { name: 'CtxSession over InMemoryHistoryProvider', call: () => run(agent, input, { session: s.ctx }), setup: s.resetCtx },
        ],
        size >= 1_000 ? { warmup: 20, calls: 100 } : { warmup: 100, calls: size >= 100 ? 500 : 1_000 },
      );
      rows.push([`${label}, ${size.toLocaleString('en-US')} items`, ...CPU_HEADERS.map(() => '')]);
      for (const st of stats) rows.push([`  ${st.name}`, ...cpuCells(st, stats[0]!)]);
    }
  }
  printTable(['one run(agent, input, { session })', ...CPU_HEADERS], rows);
  console.log(`\nNode ${process.version}. CPU µs per run (user + system), sides in turn call by call.\n`);
}

if (import.meta.url === `file://${process.argv[1]}`) await openaiAgentsSessionBench();
