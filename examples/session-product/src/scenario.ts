import { randomUUID } from 'node:crypto';
import { type Agent, type AgentSession, type ChatClient, createAgent, Message, type SessionSummary, TitleProvider } from '@ctx/core';
import { RedisHistoryProvider, RedisSessionStore } from '@ctx/redis';
import type { Redis } from 'ioredis';
import { findTraces, type Trace } from './traces.js';

/** Where the scenario's output goes. */
export type Print = (line: string) => void;

/** What the scenario did, for checks. */
export interface ScenarioResult {
  /** The two users' ids. */
  users: { ada: string; bob: string };
  /** Each of Ada's listing pages (two per page), newest first. */
  pages: SessionSummary[][];
  /** The forked conversation and the one it came from, as `role: text` lines. */
  fork: { forkedFrom: { sessionId: string; messageId?: string } | undefined; history: string[]; original: string[] };
  /** The reply before and after `regenerate`, and the conversation after it. */
  regenerated: { before: string; after: string; history: string[] };
  /** What `rewindSession` removed, the conversation after the edited message ran, and its new title. */
  edited: { removed: string[]; history: string[]; title: string | undefined };
  /** What `exportUserData` held for Ada before the delete. */
  exported: { sessions: number; messages: number };
  /** How many sessions `deleteUserData` deleted. */
  deleted: number;
  /** Keys that mentioned Ada before the delete, and after it (none). */
  traces: { before: Trace[]; after: Trace[]; scanned: number };
  /** Bob's conversations after Ada's delete. */
  bob: { sessions: number; history: string[] };
}

/** The agent of the product: history and sessions in Redis under `prefix`, titles written by `titles`. */
export function createProductAgent(options: { redis: Redis; prefix: string; chat: ChatClient; titles: ChatClient }): Agent {
  const { redis, prefix } = options;
  return createAgent({
    client: options.chat,
    instructions: 'You are a concise travel and cooking assistant.',
    // The title provider after the history, so it sees a conversation's first message when it loads.
    contextProviders: [new RedisHistoryProvider({ client: redis, prefix }), new TitleProvider({ client: options.titles })],
    sessionStore: new RedisSessionStore({ client: redis, prefix }),
  });
}

const lines = (messages: readonly Message[]) => messages.map((m) => `${m.role}: ${Message.text(m)}`);

/**
 * The product's life on one Redis: two users' conversations created and titled, one user's listed
 * newest first two at a time, one forked at its first reply, a reply regenerated, a message edited,
 * then the user's data exported and deleted, and Redis scanned for anything of theirs left.
 * @throws Error when something of the deleted user is still in Redis.
 */
export async function runScenario(options: {
  redis: Redis;
  chat: ChatClient;
  titles: ChatClient;
  print: Print;
  /** Key prefix of this run (default `session-product`). */
  prefix?: string;
}): Promise<ScenarioResult> {
  const { redis, print } = options;
  const prefix = options.prefix ?? 'session-product';
  const agent = createProductAgent({ redis, prefix, chat: options.chat, titles: options.titles });
  const run = randomUUID().slice(0, 8);
  const users = { ada: `ada-${run}`, bob: `bob-${run}` };

  /** One turn: run, wait for the title, save. */
  const say = async (session: AgentSession, text: string) => {
    print(`  user: ${text}`);
    const response = await agent.run(text, { session });
    print(`  assistant: ${response.text}`);
    await agent.flush(); // the title, when this turn asked for one
    await agent.saveSession(session);
  };
  const open = async (userId: string, text: string) => {
    const session = agent.createSession({ userId });
    print(`new conversation of ${userId}:`);
    await say(session, text);
    print(`  title: ${session.metadata.title}`);
    return session;
  };

  print('--- conversations ---');
  const lima = await open(users.ada, 'Plan three days in Lima for me.');
  const lasagna = await open(users.ada, 'How do I make a vegetarian lasagna?');
  const words = await open(users.ada, 'Teach me five words of Portuguese.');
  const plants = await open(users.bob, 'What is a good first houseplant?');
  print(`back to "${lima.metadata.title}":`);
  await say(lima, 'Where should I eat ceviche?');

  print(`--- ${users.ada}'s conversations, newest first, two a page ---`);
  const pages: SessionSummary[][] = [];
  let cursor: string | undefined;
  do {
    const page = await agent.listSessions({ userId: users.ada, limit: 2, ...(cursor ? { cursor } : {}) });
    pages.push(page.sessions);
    print(`page ${pages.length}:`);
    for (const { sessionId, metadata } of page.sessions) print(`  ${metadata.updatedAt}  ${metadata.title}  (${sessionId})`);
    cursor = page.nextCursor;
  } while (cursor);

  print(`--- fork "${lima.metadata.title}" at its first reply ---`);
  const firstReply = (await agent.getHistory(lima)).find((m) => m.role === 'assistant')!;
  const fork = await agent.forkSession(lima, { atMessageId: firstReply.id });
  print(
    `fork "${fork.metadata.title}" ${fork.sessionId} of ${fork.metadata.forkedFrom?.sessionId}, at message ${fork.metadata.forkedFrom?.messageId}`,
  );
  await say(fork, 'Make it five days and add Cusco.');
  const forked = lines(await agent.getHistory(fork));
  const original = lines(await agent.getHistory(lima));
  print(`the fork has ${forked.length} messages; the original keeps its ${original.length}`);

  print(`--- regenerate the last reply of "${lasagna.metadata.title}" ---`);
  const before = Message.text((await agent.getHistory(lasagna)).at(-1)!);
  const again = await agent.regenerate(lasagna);
  await agent.saveSession(lasagna);
  print(`  before: ${before}`);
  print(`  after:  ${again.text}`);
  const regenerated = { before, after: again.text, history: lines(await agent.getHistory(lasagna)) };

  print(`--- edit the first message of "${words.metadata.title}" ---`);
  const question = (await agent.getHistory(words)).find((m) => m.role === 'user')!;
  const removed = await agent.rewindSession(words, question.id);
  print(`rewound: ${removed.length} messages removed`);
  words.metadata.title = undefined; // a new first message, a new title
  await say(words, 'Teach me five words of Italian.');
  print(`  title: ${words.metadata.title}`);
  const edited = { removed: lines(removed), history: lines(await agent.getHistory(words)), title: words.metadata.title };

  print(`--- delete ${users.ada} ---`);
  const data = await agent.exportUserData(users.ada);
  const exported = {
    sessions: data.sessions.length,
    messages: data.sessions.reduce((sum, s) => sum + Object.values(s.history).reduce((n, h) => n + h.length, 0), 0),
  };
  print(`export: ${exported.sessions} conversations, ${exported.messages} messages`);
  // Ada's user id, the ids of her conversations and what she typed: none may stay in Redis.
  const needles = [
    users.ada,
    lima.sessionId,
    lasagna.sessionId,
    words.sessionId,
    fork.sessionId,
    'Lima for me',
    'vegetarian lasagna',
    'five words of Italian',
  ];
  const pattern = `${prefix}:*`;
  const found = await findTraces(redis, pattern, needles);
  print(`before: ${found.traces.length} keys of ${found.scanned} under ${pattern} mention ${users.ada}`);
  const { sessions: deleted } = await agent.deleteUserData(users.ada);
  const left = await findTraces(redis, pattern, needles);
  print(`deleteUserData: ${deleted} conversations deleted`);
  print(`after: ${left.traces.length} keys of ${left.scanned} mention ${users.ada}`);
  for (const trace of left.traces) print(`  left: ${trace.key} (${trace.found.join(', ')})`);

  const bobPage = await agent.listSessions({ userId: users.bob });
  const bob = { sessions: bobPage.sessions.length, history: lines(await agent.getHistory(plants)) };
  print(`${users.bob} still has ${bob.sessions} conversation of ${bob.history.length} messages`);
  if (left.traces.length > 0) throw new Error(`${left.traces.length} keys still mention ${users.ada} after deleteUserData.`);
  return {
    users,
    pages,
    fork: { forkedFrom: fork.metadata.forkedFrom, history: forked, original },
    regenerated,
    edited,
    exported,
    deleted,
    traces: { before: found.traces, after: left.traces, scanned: left.scanned },
    bob,
  };
}
