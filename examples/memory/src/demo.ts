import {
  type ChatClient,
  CompactionProvider,
  createAgent,
  createHashEmbedding,
  type EmbeddingGenerator,
  InMemoryHistoryProvider,
  InMemoryVectorIndex,
  Message,
  SemanticRecallProvider,
  summarization,
} from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';

/** Where the demo's output goes. */
export type Print = (line: string) => void;

/** Session 1: a fact told once. */
export const FIRST_SESSION = ['My gym locker code is 4471.', 'I am training for a half marathon in April.'];
/** Session 2: a detail early on, then enough turns that compaction summarizes it away, then a question about it. */
export const SECOND_SESSION = [
  'The plumber comes on Thursday at 9 to fix the boiler.',
  'Can you suggest a stretching routine?',
  'What should I eat before a long run?',
  'How many rest days a week do I need?',
  'Any tips for running in the rain?',
  'When does the plumber come?',
];
/** Session 3, new: a question whose answer was said in session 1. */
export const THIRD_SESSION = ['What is my gym locker code?'];

/** The words of four letters or more (no "a", "is", "my"), lower-cased. */
const words = (text: string) => new Set((text.toLowerCase().match(/[a-z0-9]+/g) ?? []).filter((w) => w.length >= 4));

/**
 * The model without an API key: it answers a question only from the recalled lines it is sent (the
 * line sharing the most words with the question), and says "Noted." otherwise.
 */
export function offlineModel(): ChatClient {
  return new ScriptedChatClient({
    replies: (messages) => {
      const question = Message.text(messages.at(-1)!);
      const recalled = messages
        .filter((m) => (m.metadata?.ctx as { sourceId?: string } | undefined)?.sourceId === 'recall')
        .flatMap((m) => Message.text(m).split('\n'));
      const asked = words(question);
      let best: string | undefined;
      let bestScore = 0;
      for (const line of recalled.filter((l) => l.includes(' user: '))) {
        const score = [...words(line)].filter((w) => asked.has(w)).length;
        if (score > bestScore) [best, bestScore] = [line, score];
      }
      return best ? `You told me: ${best.slice(best.indexOf(' user: ') + 7)}` : 'Noted.';
    },
  });
}

/** A summarizer that, like a real one, keeps the gist and drops the details. */
export function offlineSummarizer(): ChatClient {
  return new ScriptedChatClient({ replies: () => 'The user talked about household errands and running.' });
}

/** OpenAI through `@ctx/openai` when `OPENAI_API_KEY` is set (chat, summaries, embeddings), else the offline stand-ins. */
export async function chooseModels(
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ client: ChatClient; summarizer: ChatClient; embeddings: EmbeddingGenerator; label: string }> {
  if (!env.OPENAI_API_KEY)
    return {
      client: offlineModel(),
      summarizer: offlineSummarizer(),
      embeddings: createHashEmbedding(),
      label: 'offline (scripted model, createHashEmbedding: lexical)',
    };
  const { OpenAIChatClient, OpenAIEmbeddings } = await import('@ctx/openai');
  const client = new OpenAIChatClient({ model: env.OPENAI_MODEL ?? 'gpt-4o-mini', apiKey: env.OPENAI_API_KEY });
  return { client, summarizer: client, embeddings: new OpenAIEmbeddings({ apiKey: env.OPENAI_API_KEY }), label: 'OpenAI' };
}

/**
 * Three sessions of one user on one agent: every stored turn is embedded into the recall index;
 * compaction summarizes the second session's start and archives it; the last question of session 2
 * and the question of session 3 are answered from recalled messages. Resolves to every reply, by session.
 */
export async function runDemo(options: {
  client: ChatClient;
  summarizer: ChatClient;
  embeddings: EmbeddingGenerator;
  userId: string;
  print: Print;
}): Promise<string[][]> {
  const { client, summarizer, embeddings, userId, print } = options;
  const index = new InMemoryVectorIndex();
  const agent = createAgent({
    client,
    instructions: 'You are a friendly running coach. Answer in one sentence.',
    contextProviders: [
      new InMemoryHistoryProvider(),
      // Past 6 messages, everything but the last 2 turns becomes a summary; archive: true keeps the originals searchable.
      new CompactionProvider({
        strategy: summarization({ client: summarizer, keepRecentGroups: 2, trigger: { messages: 6 }, archive: true }),
      }),
      new SemanticRecallProvider({ embeddings, index, scope: 'user', topK: 2, messageRange: 1 }),
    ],
  });
  const replies: string[][] = [];
  for (const [n, turns] of [FIRST_SESSION, SECOND_SESSION, THIRD_SESSION].entries()) {
    const session = agent.createSession({ userId });
    print(`--- session ${n + 1} ---`);
    const out: string[] = [];
    for (const input of turns) {
      print(`user: ${input}`);
      const response = await agent.run(input, { session });
      print(`assistant: ${response.text}`);
      out.push(response.text);
    }
    replies.push(out);
  }
  print(`(recall index: ${index.size} messages of this user, the summarized-away ones archived)`);
  return replies;
}
