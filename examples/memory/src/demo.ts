import type { PGlite } from '@electric-sql/pglite';
import {
  type ChatClient,
  CompactionProvider,
  createAgent,
  createHashEmbedding,
  type EmbeddingGenerator,
  type JsonValue,
  Message,
  SemanticRecallProvider,
  summarization,
  type UserDataExport,
  WORKING_MEMORY_TOOL,
  WorkingMemoryProvider,
} from '@ctx/core';
import { PgVectorIndex, PostgresHistoryProvider, PostgresSessionStore, PostgresWorkingMemoryStore } from '@ctx/postgres';
import { ScriptedChatClient } from '@ctx/core/testing';
import { z } from 'zod';

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
/** Session 3, new: a question whose answer was said in session 1, and one the working memory answers. */
export const THIRD_SESSION = ['What is my gym locker code?', 'What am I training for?'];

/** The working-memory record kept per user: what the coach should always know, whatever the session. */
export const profile = z.object({
  training: z.string().optional().describe('The race or goal the user trains for, with its date.'),
  injuries: z.array(z.string()).optional().describe('Injuries to work around.'),
});

/** The words of four letters or more (no "a", "is", "my"), lower-cased. */
const words = (text: string) => new Set((text.toLowerCase().match(/[a-z0-9]+/g) ?? []).filter((w) => w.length >= 4));

/**
 * The model without an API key. It keeps what the user trains for in the working memory (it calls
 * `update_working_memory` when the user says "I am training for ..."); it answers "What am I
 * training for?" only from the working memory in its instructions; any other question only from the
 * recalled lines it is sent (the line sharing the most words with the question); and says "Noted."
 * otherwise.
 */
export function offlineModel(): ChatClient {
  return new ScriptedChatClient({
    replies: (messages, options) => {
      const last = messages.at(-1)!;
      if (last.role === 'tool') return 'Noted.';
      const question = Message.text(last);
      const training = /^I am training for (.+)\.$/.exec(question);
      if (training) return { toolCalls: [{ name: WORKING_MEMORY_TOOL, arguments: { update: { training: training[1]! } } }] };
      if (question === 'What am I training for?') {
        const memory = /"training": "([^"]*)"/.exec(options.instructions ?? '');
        return memory ? `Your working memory says: ${memory[1]}.` : 'I do not know yet.';
      }
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

/**
 * Opens (or creates) the embedded database in `dataDir`, with pgvector. Close it before the process
 * exits, so everything is on disk.
 */
export async function openDatabase(dataDir: string): Promise<PGlite> {
  const [{ PGlite }, { vector }] = await Promise.all([import('@electric-sql/pglite'), import('@electric-sql/pglite-pgvector')]);
  return PGlite.create({ dataDir, extensions: { vector } });
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
  return {
    client,
    summarizer: client,
    embeddings: new OpenAIEmbeddings({ apiKey: env.OPENAI_API_KEY, dimensions: 1536 }),
    label: 'OpenAI',
  };
}

/** What both processes share: the models, the embedded database, the user. */
export interface DemoOptions {
  client: ChatClient;
  summarizer: ChatClient;
  embeddings: EmbeddingGenerator;
  /** The PGlite database (with pgvector) every store of the demo keeps its tables in. */
  db: PGlite;
  userId: string;
  print: Print;
}

/**
 * The agent both processes build the same way, on one embedded PostgreSQL (PGlite in a directory):
 * sessions, history, recall vectors and working memory all in its tables, so a process started
 * later finds what an earlier one stored.
 */
export function createMemoryAgent(options: Omit<DemoOptions, 'userId' | 'print'>) {
  const { client, summarizer, embeddings, db } = options;
  // createHashEmbedding's 512 offline, 1536 with OpenAI: vectors of each length get their own table.
  const dimensions = embeddings.dimensions ?? 512;
  const index = new PgVectorIndex({ client: db, dimensions, tablePrefix: `ctx_d${dimensions}_` });
  const memoryStore = new PostgresWorkingMemoryStore({ client: db });
  const agent = createAgent({
    client,
    instructions: 'You are a friendly running coach. Answer in one sentence.',
    sessionStore: new PostgresSessionStore({ client: db }),
    contextProviders: [
      new PostgresHistoryProvider({ client: db }),
      // Past 6 messages, everything but the last 2 turns becomes a summary; archive: true keeps the originals searchable.
      new CompactionProvider({
        strategy: summarization({ client: summarizer, keepRecentGroups: 2, trigger: { messages: 6 }, archive: true }),
      }),
      new SemanticRecallProvider({ embeddings, index, scope: 'user', topK: 2, messageRange: 1 }),
      // One record per user, shown as stable instructions; the model updates it with update_working_memory.
      new WorkingMemoryProvider({ schema: profile, store: memoryStore }),
    ],
  });
  return { agent, index, memoryStore };
}

/** Runs the turns of one new session of the user, printing them; resolves to the replies. */
async function runSession(agent: ReturnType<typeof createMemoryAgent>['agent'], n: number, turns: readonly string[], options: DemoOptions) {
  const { userId, print } = options;
  const session = agent.createSession({ userId });
  print(`--- session ${n} ---`);
  const out: string[] = [];
  for (const input of turns) {
    print(`user: ${input}`);
    const response = await agent.run(input, { session });
    for (const call of response.messages.flatMap((m) => Message.functionCalls(m)))
      print(`  (tool ${call.name}: ${typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments)})`);
    print(`assistant: ${response.text}`);
    out.push(response.text);
  }
  await agent.saveSession(session);
  return out;
}

/**
 * The first process: sessions 1 and 2. Every stored turn is embedded into the recall index;
 * compaction summarizes the second session's start and archives it, and the session's last
 * question is answered from the archived message; the model keeps what the user trains for in the
 * user's working memory. Everything lands in the database; the process may exit.
 */
export async function firstProcess(options: DemoOptions): Promise<{ replies: string[][] }> {
  const { agent, index } = createMemoryAgent(options);
  const replies = [await runSession(agent, 1, FIRST_SESSION, options), await runSession(agent, 2, SECOND_SESSION, options)];
  options.print(
    `(recall index: ${(await index.list({ userId: options.userId })).length} messages of this user, the summarized-away ones archived)`,
  );
  return { replies };
}

/** What `secondProcess` resolves to. */
export interface SecondProcessResult {
  /** The replies of session 3. */
  replies: string[];
  /** `agent.exportUserData` of the user after the three sessions. */
  exported: UserDataExport;
  /** What is left of the user after `agent.deleteUserData`: recall records, working-memory records, sessions. */
  afterDelete: { recall: number; workingMemory: number; sessions: number };
}

/**
 * The second process, started after the first exited: session 3, a new session, asks what was said
 * in session 1 (recalled from the vectors the first process stored) and what the user trains for
 * (the working-memory record the first process stored, shown as instructions). Then everything about
 * the user is exported and deleted.
 */
export async function secondProcess(options: DemoOptions): Promise<SecondProcessResult> {
  const { userId, print } = options;
  const { agent, index, memoryStore } = createMemoryAgent(options);
  const replies = await runSession(agent, 3, THIRD_SESSION, options);
  const exported = await agent.exportUserData(userId);
  const recall = exported.providers.recall as { records: JsonValue[] } | undefined;
  print('--- export and delete ---');
  print(`exportUserData: ${exported.sessions.length} sessions, ${recall?.records.length ?? 0} recall records,`);
  print(`  working memory ${JSON.stringify(exported.providers['working-memory'])}`);
  const { sessions } = await agent.deleteUserData(userId);
  const afterDelete = {
    recall: (await index.list({ userId })).length,
    workingMemory: (await memoryStore.listUser(userId)).length,
    sessions: (await agent.listSessions({ userId })).sessions.length,
  };
  print(`deleteUserData: ${sessions} sessions deleted; left: ${JSON.stringify(afterDelete)}`);
  return { replies, exported, afterDelete };
}
