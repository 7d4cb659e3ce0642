// A scripted agent for the inspector's tests: a multi-turn conversation with tools, a long tool
// loop, a budget, compaction, and a provider whose instruction breaks the prompt cache every run.
import {
  type ContextAudit,
  CompactionProvider,
  compactWhen,
  createAgent,
  createAuditProvider,
  defineTool,
  type EventHandler,
  Message,
  summarization,
  withPolicies,
} from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';

/** The user's turns, in order. */
export const SCENARIO_TURNS = [
  "What's the weather in Lisbon?",
  'Please research how prompt caching works',
  'And the weather in Oslo?',
  'Thanks, that is all for today',
] as const;

/** How many search calls the research turn makes, one per model call. */
export const RESEARCH_STEPS = 3;

/** What `createScenarioAgent` takes. */
export interface ScenarioOptions {
  /** The agent's event handler. */
  onEvent: EventHandler;
  /** When given, every `search_docs` call waits for it (a test holds a tool loop open with it). */
  toolGate?: () => Promise<void>;
}

/** The agent, and the audits `createAuditProvider` made of each run, in order. */
export function createScenarioAgent(options: ScenarioOptions) {
  const audits: ContextAudit[] = [];
  let turn = 0;
  const getWeather = defineTool({
    name: 'get_weather',
    description: 'Current weather for a city.',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    execute: ({ city }: { city: string }) => ({ city, tempC: city.length * 3, condition: 'clear' }),
  });
  const searchDocs = defineTool({
    name: 'search_docs',
    description: 'Searches the product documentation.',
    parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
    execute: async ({ query }: { query: string }) => {
      await options.toolGate?.();
      return { query, hits: [`${query}: cached prefixes are billed lower`, `${query}: the prefix must match from the first token`] };
    },
  });
  const profile = {
    sourceId: 'profile',
    beforeRun: ({ context }: { context: import('@ctx/core').SessionContext }) =>
      context.extendInstructions('profile', 'The user is Ada, in Lisbon; answer briefly and in metric units.'),
  };
  // Not declared per-run: its instruction leads the request and changes every run.
  const clock = {
    sourceId: 'clock',
    beforeRun: ({ context }: { context: import('@ctx/core').SessionContext }) =>
      context.extendInstructions('clock', `This is turn ${++turn}; the time is 09:${String(10 + turn * 7).padStart(2, '0')}.`),
  };
  const docs = withPolicies(
    {
      sourceId: 'docs',
      stability: 'stable' as const,
      beforeRun: ({ context }: { context: import('@ctx/core').SessionContext }) => {
        context.extendTools('docs', [searchDocs]);
        context.extendMessages('docs', [
          Message.system('Docs: the assistant answers weather questions with get_weather and looks things up with search_docs.'),
          Message.system('Docs: prompt caching reuses the start of a request that repeats the previous one word for word.'),
          Message.system('Docs: an appendix of release notes, long and rarely useful, that a budget should drop first of all.'),
        ]);
      },
    },
    { budget: { maxTokens: 120 } },
  );
  const summarizer = new ScriptedChatClient({
    modelId: 'summarizer',
    replies: () => 'Earlier: Ada asked for the weather in Lisbon and for research on prompt caching.',
  });
  const compaction = new CompactionProvider({
    strategy: compactWhen({ messages: 12 }, summarization({ client: summarizer, keepRecentGroups: 1 })),
  });
  const client = new ScriptedChatClient({
    modelId: 'scripted-model',
    replies: (messages) => {
      let at = messages.length - 1;
      while (at > 0 && messages[at]!.role !== 'user') at--;
      const asked = messages[at] ? Message.text(messages[at]!) : '';
      const since = messages.slice(at + 1);
      const results = since.filter((m) => m.role === 'tool').length;
      const weather = /weather in (\w+)/.exec(asked);
      if (weather) {
        if (results === 0) return { toolCalls: [{ name: 'get_weather', arguments: { city: weather[1]! } }] };
        return `It is clear in ${weather[1]}.`;
      }
      if (/research/.test(asked)) {
        if (results < RESEARCH_STEPS)
          return { toolCalls: [{ name: 'search_docs', arguments: { query: `prompt caching part ${results + 1}` } }] };
        return 'Prompt caching bills a repeated prefix lower; keep the start of the request stable.';
      }
      return 'You are welcome, Ada.';
    },
  });
  const agent = createAgent({
    name: 'assistant',
    client,
    instructions: 'You are a helpful assistant.',
    tools: [getWeather],
    contextProviders: [profile, clock, docs, compaction, createAuditProvider({ onAudit: (audit) => void audits.push(audit) })],
    onEvent: options.onEvent,
  });
  return { agent, audits };
}
