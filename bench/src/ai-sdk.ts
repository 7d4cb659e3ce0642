/**
 * @ctx/ai-sdk: what ctx adds to a model call beside the bare AI SDK call, on the AI SDK's own
 * MockLanguageModelV3 (no network). Rows: `generateText` on the bare model; the same call through
 * `ctxMiddleware` (stateless, and with a session holding 10 messages); a ctx agent on
 * `aiSdkChatClient`. Once with a model that answers at once (the pure overhead, in µs) and once
 * with a model that takes 5 ms to answer (a fast real call takes hundreds). Prints tables; never
 * asserts timings.
 */
import { aiSdkChatClient, ctxMiddleware } from '@ctx/ai-sdk';
import { AgentSession, createAgent, type JsonObject } from '@ctx/core';
import { generateText, wrapLanguageModel } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { fmtMs, fmtRatio, type Measurement, measure, printTable, settle } from './timing.js';

const QUESTION = 'How long does shipping to Norway take?';
const REPLY = 'Shipping to Norway takes 5 working days.';

function mockModel(latencyMs: number) {
  return new MockLanguageModelV3({
    doGenerate: async () => {
      if (latencyMs) await new Promise((resolve) => setTimeout(resolve, latencyMs));
      return {
        content: [{ type: 'text', text: REPLY }],
        finishReason: { unified: 'stop', raw: 'stop' },
        usage: {
          inputTokens: { total: 20, noCache: 20, cacheRead: undefined, cacheWrite: undefined },
          outputTokens: { total: 9, text: 9, reasoning: undefined },
        },
        warnings: [],
      };
    },
  });
}

type Side = { name: string; run: () => Promise<unknown>; setup?: () => void };

/** Interleaves three rounds of each side and keeps each one's best mean, so drift hits all alike. */
async function compare(sides: Side[], budgetMs: number): Promise<Measurement[]> {
  const best: (Measurement | undefined)[] = sides.map(() => undefined);
  for (let round = 0; round < 3; round++) {
    for (const [i, side] of sides.entries()) {
      settle();
      const m = await measure(side.name, () => side.setup?.(), side.run, {
        budgetMs,
        maxIterations: 2000,
        warmup: 200,
        warmupBudgetMs: 300,
      });
      if (!best[i] || m.meanMs < best[i]!.meanMs) best[i] = m;
    }
  }
  return best as Measurement[];
}

export async function aiSdkBench(): Promise<void> {
  console.log('\n## @ctx/ai-sdk: overhead over the bare AI SDK call (ai 6, MockLanguageModelV3)\n');
  for (const latencyMs of [0, 5]) {
    const model = mockModel(latencyMs);
    const stateless = wrapLanguageModel({ model, middleware: ctxMiddleware() });
    const session = new AgentSession();
    const withSession = wrapLanguageModel({ model, middleware: ctxMiddleware({ session }) });
    // 10 stored messages before every timed call: the previous call's turn is removed untimed.
    const history = Array.from({ length: 10 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', text: `message ${i}` }));
    await generateText({ model: withSession, prompt: 'warm' });
    const reset = () => {
      session.state.memory = {
        messages: history.map((m, i) => ({
          id: `m${i}`,
          role: m.role,
          contents: [{ type: 'text', text: m.text }],
          metadata: { ctx: { sourceId: m.role === 'user' ? 'input' : 'response', sourceType: m.role === 'user' ? 'input' : 'response' } },
        })),
      } as unknown as JsonObject;
      delete session.state['ai-sdk'];
    };
    const agent = createAgent({ client: aiSdkChatClient(model) });
    const check = await generateText({ model: stateless, prompt: QUESTION });
    if (check.text !== REPLY || (await agent.run(QUESTION)).text !== REPLY) throw new Error('A side did not answer.');
    reset();
    await generateText({ model: withSession, prompt: QUESTION });
    if (((session.state.memory?.messages ?? []) as unknown[]).length !== 12) throw new Error('The session call did not store its turn.');

    const [bare, mwStateless, mwSession, client] = await compare(
      [
        { name: 'bare', run: () => generateText({ model, prompt: QUESTION }) },
        { name: 'middleware', run: () => generateText({ model: stateless, prompt: QUESTION }) },
        { name: 'middleware+session', run: () => generateText({ model: withSession, prompt: QUESTION }), setup: reset },
        { name: 'client', run: () => agent.run(QUESTION) },
      ],
      latencyMs ? 1500 : 800,
    );
    console.log(`Model answers ${latencyMs ? `after ${latencyMs} ms` : 'at once'}:\n`);
    const row = (name: string, m: Measurement) => [
      name,
      fmtMs(m.meanMs),
      fmtMs(m.p50Ms),
      `${((m.p50Ms - bare!.p50Ms) * 1000).toFixed(0)} µs`,
      fmtRatio(m.p50Ms / bare!.p50Ms),
      fmtRatio(m.meanMs / bare!.meanMs),
    ];
    printTable(
      ['call', 'mean ms', 'p50 ms', 'added (p50)', 'ratio p50', 'ratio mean'],
      [
        row('AI SDK generateText, bare model', bare!),
        row('generateText through ctxMiddleware(), no session', mwStateless!),
        row('generateText through ctxMiddleware({ session }), 10 messages of history', mwSession!),
        row('ctx agent.run on aiSdkChatClient(model)', client!),
      ],
    );
    console.log('');
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await aiSdkBench();
