import type { HistoryProvider } from '@ctx/core';
import { CtxSession } from '@ctx/openai-agents';
import { Agent, run, setTracingDisabled, tool } from '@openai/agents';
import { z } from 'zod';
import { ScriptedModel } from './scripted-model.js';

setTracingDisabled(true);

/** What the demo did, for the smoke test and the console. */
export interface DemoResult {
  replies: string[];
  itemsAfterTwoRuns: number;
  undone: string | undefined;
  itemsAfterUndo: number;
}

/** Two runs of one Agents SDK agent sharing a ctx-backed session (the first calls a tool), then the last item undone. */
export async function runDemo(history: HistoryProvider, sessionId: string): Promise<DemoResult> {
  const weather = tool({
    name: 'weather',
    description: 'The weather in a city.',
    parameters: z.object({ city: z.string() }),
    execute: async ({ city }) => `sunny in ${city}`,
  });
  const agent = new Agent({ name: 'Assistant', instructions: 'Be brief.', model: new ScriptedModel(), tools: [weather] });
  const session = new CtxSession({ history, sessionId });
  const first = await run(agent, 'What is the weather in Paris?', { session });
  const second = await run(agent, 'Thanks!', { session });
  const itemsAfterTwoRuns = (await session.getItems()).length;
  const undone = await session.popItem();
  return {
    replies: [String(first.finalOutput), String(second.finalOutput)],
    itemsAfterTwoRuns,
    undone:
      undone && 'content' in undone && Array.isArray(undone.content)
        ? undone.content.map((c) => ('text' in c ? c.text : '')).join('')
        : undefined,
    itemsAfterUndo: (await session.getItems()).length,
  };
}
