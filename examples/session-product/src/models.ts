import { type ChatClient, Message } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';

/** What the offline model answers, by a word of the question; a question asked again gets the next answer. */
const ANSWERS: [RegExp, string[]][] = [
  [/ceviche/i, ['Have it at lunch, the way Lima does: a cevichería in Miraflores or Barranco.']],
  [/cusco/i, ['Five days: two in Lima, then fly to Cusco for three, one of them in the Sacred Valley.']],
  [/lima/i, ['Day 1 the historic centre, day 2 Miraflores and Barranco, day 3 Pachacámac.']],
  [
    /lasagna/i,
    [
      'Layer pasta, ricotta with spinach and tomato sauce; bake 45 minutes at 180 °C.',
      'Roast courgettes and peppers, layer them with béchamel and pasta; bake 40 minutes at 190 °C.',
    ],
  ],
  [/portuguese/i, ['olá, obrigado, por favor, sim, não.']],
  [/italian/i, ['ciao, grazie, per favore, sì, no.']],
  [/houseplant/i, ['A pothos: it forgives missed waterings and low light.']],
];

/** Titles the offline title model gives, by a word of the first message. */
const TITLES: [RegExp, string][] = [
  [/lima/i, 'Three days in Lima'],
  [/lasagna/i, 'Vegetarian lasagna'],
  [/portuguese/i, 'Portuguese words'],
  [/italian/i, 'Italian words'],
  [/houseplant/i, 'A first houseplant'],
];

/**
 * The chat model without an API key: it answers the last user message from a small table, and a
 * question it has answered before with the next answer of its row (so a regenerated reply differs).
 */
export function offlineModel(): ChatClient {
  const asked = new Map<string, number>();
  return new ScriptedChatClient({
    replies: (messages) => {
      const question = Message.text(messages.filter((m) => m.role === 'user').at(-1) ?? Message.user(''));
      const times = asked.get(question) ?? 0;
      asked.set(question, times + 1);
      const answers = ANSWERS.find(([word]) => word.test(question))?.[1] ?? ['Noted.'];
      const answer = answers[times % answers.length]!;
      return times >= answers.length ? `Another take: ${answer}` : answer;
    },
  });
}

/** The title model without an API key: a title from the first message's topic, else its first five words. */
export function offlineTitleModel(): ChatClient {
  return new ScriptedChatClient({
    replies: (messages) => {
      const first = Message.text(messages.at(-1) ?? Message.user(''));
      return TITLES.find(([word]) => word.test(first))?.[1] ?? first.split(/\s+/).slice(0, 5).join(' ');
    },
  });
}

/** OpenAI through `@ctx/openai` for both when `OPENAI_API_KEY` is set, else the offline models. */
export async function chooseModels(env: NodeJS.ProcessEnv = process.env): Promise<{ chat: ChatClient; titles: ChatClient }> {
  if (!env.OPENAI_API_KEY) return { chat: offlineModel(), titles: offlineTitleModel() };
  const { OpenAIChatClient } = await import('@ctx/openai');
  const model = new OpenAIChatClient({ model: env.OPENAI_MODEL ?? 'gpt-4o-mini', apiKey: env.OPENAI_API_KEY });
  return { chat: model, titles: model };
}
