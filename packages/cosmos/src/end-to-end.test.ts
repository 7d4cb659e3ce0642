import { type AgentSession, CompactionProvider, ConcurrencyError, createAgent, Message, truncation } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { OpenAIChatClient } from '@ctx/openai';
import { startOpenAITestServer, type OpenAITestServer } from '@ctx/openai-test-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allItems, cosmosClient, uniqueId } from '../test/helpers.js';
import { CosmosHistoryProvider } from './cosmos-history-provider.js';
import { CosmosSessionStore } from './cosmos-session-store.js';

describe('two agents on two CosmosClients', () => {
  const databaseId = uniqueId('e2e');
  const build = (options: { maxMessages?: number } = {}) => {
    const client = cosmosClient();
    const chat = new ScriptedChatClient({ replies: (messages) => `re: ${Message.text(messages.at(-1)!)}` });
    const history = new CosmosHistoryProvider({ client, databaseId, createIfNotExists: true, ...options });
    const sessionStore = new CosmosSessionStore({ client, databaseId, createIfNotExists: true });
    const agent = createAgent({ client: chat, contextProviders: [history], sessionStore });
    return { agent, chat, history };
  };

  it('continue the same session by id: each sees what the other stored, attributed to the Cosmos history', async () => {
    const a = build();
    const b = build();
    const sessionId = `e2e-${Math.random().toString(36).slice(2)}`;
    await a.agent.run('my name is Ada', { session: a.agent.getSessionById(sessionId) });
    await b.agent.run('what is my name?', { session: b.agent.getSessionById(sessionId) });
    expect(b.chat.calls[0]!.messages.map((m) => Message.text(m))).toEqual(['my name is Ada', 're: my name is Ada', 'what is my name?']);
    expect(Message.source(b.chat.calls[0]!.messages[0]!)).toEqual({ sourceId: 'cosmos', sourceType: 'history' });
    await a.agent.run('and again', { session: a.agent.getSessionById(sessionId) });
    expect(a.chat.calls[1]!.messages.map((m) => Message.text(m))).toEqual([
      'my name is Ada',
      're: my name is Ada',
      'what is my name?',
      're: what is my name?',
      'and again',
    ]);
    expect(await a.history.countMessages(sessionId)).toBe(6);
  });

  it('maxMessages loads only the window while Cosmos DB keeps everything', async () => {
    const a = build({ maxMessages: 10 });
    const sessionId = `e2e-${Math.random().toString(36).slice(2)}`;
    for (let i = 0; i < 8; i++) await a.agent.run(`turn ${i}`, { session: a.agent.getSessionById(sessionId) });
    expect(a.chat.calls.at(-1)!.messages).toHaveLength(11);
    expect(a.chat.calls.at(-1)!.messages[0]!.contents).toEqual([{ type: 'text', text: 'turn 2' }]);
    expect(await a.history.countMessages(sessionId)).toBe(16);
  });

  it('the hosted flow: getSession / saveSession across agents, with ETag optimistic concurrency', async () => {
    const a = build();
    const b = build();
    const sessionId = `hosted-${Math.random().toString(36).slice(2)}`;
    expect(await a.agent.getSession(sessionId)).toBeUndefined();
    const sa = a.agent.createSession({ sessionId });
    sa.state.profile = { name: 'Ada' };
    await a.agent.run('hello', { session: sa });
    await a.agent.saveSession(sa);
    const sb = (await b.agent.getSession(sessionId))!;
    expect(sb.state.profile).toEqual({ name: 'Ada' });
    sb.state.profile = { name: 'Grace' };
    await b.agent.saveSession(sb);
    sa.state.profile = { name: 'stale' };
    await expect(a.agent.saveSession(sa)).rejects.toSatisfy(ConcurrencyError.isInstance);
    expect((await b.agent.getSession(sessionId))?.state.profile).toEqual({ name: 'Grace' });
  });

  it("core's CompactionProvider rewrites the stored history through replaceMessages; a store-only audit provider keeps everything", async () => {
    const client = cosmosClient();
    const chat = new ScriptedChatClient({ replies: (_m, _o, i) => `answer ${i}` });
    const history = new CosmosHistoryProvider({ client, databaseId, containerId: 'compacted', createIfNotExists: true });
    const audit = new CosmosHistoryProvider({ client, databaseId, containerId: 'compacted', sourceId: 'audit', loadMessages: false });
    const agent = createAgent({
      client: chat,
      contextProviders: [history, new CompactionProvider({ strategy: truncation({ maxMessages: 4, target: 1 }) }), audit],
    });
    const sessionId = `compact-${Math.random().toString(36).slice(2)}`;
    for (let i = 0; i < 6; i++) await agent.run(`question ${i}`, { session: agent.getSessionById(sessionId) });
    const texts = (messages: readonly Message[]) => messages.map((m) => Message.text(m));
    expect(texts(chat.calls[5]!.messages)).toEqual(['question 3', 'answer 3', 'question 4', 'answer 4', 'question 5']);
    expect(texts(await history.getMessages(sessionId, { state: {} }))).toEqual([
      'question 3',
      'answer 3',
      'question 4',
      'answer 4',
      'question 5',
      'answer 5',
    ]);
    expect(await history.countMessages(sessionId)).toBe(6);
    expect(await audit.countMessages(sessionId)).toBe(12);
  });
});

describe("sessions as a product: list, fork, delete, delete a user's data", () => {
  it('an agent on CosmosHistoryProvider and CosmosSessionStore leaves no item of a deleted session or user, and the other user intact', async () => {
    const client = cosmosClient();
    const databaseId = uniqueId('product');
    const chat = new ScriptedChatClient({ replies: (messages) => `re: ${Message.text(messages.at(-1)!)}` });
    const history = new CosmosHistoryProvider({ client, databaseId, createIfNotExists: true });
    const store = new CosmosSessionStore({ client, databaseId, createIfNotExists: true });
    const agent = createAgent({ client: chat, contextProviders: [history], sessionStore: store });
    const start = async (userId: string, title: string): Promise<AgentSession> => {
      const session = agent.createSession({ userId, title });
      await agent.run(`${title}: first`, { session });
      await agent.run(`${title}: second`, { session });
      await agent.saveSession(session);
      await new Promise((r) => setTimeout(r, 2)); // each session saved at a later millisecond
      return session;
    };
    const [a, b] = [await start('u1', 'a'), await start('u1', 'b')];
    const [c, d] = [await start('u2', 'c'), await start('u2', 'd')];
    /** Every item of a session in both containers (history items by partition key, the store's by session id). */
    const itemsOf = async (sessionId: string) => [
      ...(await allItems(history.container)).filter((item) => item.sessionKey === history.partitionValue(sessionId)),
      ...(await allItems(store.container)).filter((item) => item.sessionId === sessionId),
    ];
    const listed = async (userId?: string) =>
      (await agent.listSessions(userId === undefined ? {} : { userId })).sessions.map((s) => s.sessionId);

    expect(await listed('u1')).toEqual([b.sessionId, a.sessionId]);
    expect(await listed('u2')).toEqual([d.sessionId, c.sessionId]);
    expect(await listed()).toEqual([d, c, b, a].map((s) => s.sessionId));
    expect((await agent.listSessions({ userId: 'u1' })).sessions[0]!.metadata).toMatchObject({ userId: 'u1', title: 'b' });

    // Fork a at its first reply: the copy holds the first turn only, and is listed for u1 once saved.
    const [, firstReply] = await history.getMessages(a.sessionId, { state: {} });
    const forked = await agent.forkSession(a, { atMessageId: firstReply!.id });
    await agent.saveSession(forked);
    expect((await history.getMessages(forked.sessionId, { state: {} })).map((m) => Message.text(m))).toEqual(['a: first', 're: a: first']);
    expect(await history.countMessages(a.sessionId)).toBe(4);
    expect((await agent.listSessions({ userId: 'u1' })).sessions[0]).toMatchObject({
      sessionId: forked.sessionId,
      metadata: { forkedFrom: { sessionId: a.sessionId, messageId: firstReply!.id } },
    });

    // Delete one session: a query finds none of its items in either container; listings forget it.
    expect((await itemsOf(b.sessionId)).length).toBe(6); // 4 messages, the head, the session
    expect(await agent.deleteSession(b.sessionId)).toBe(true);
    expect(await itemsOf(b.sessionId)).toEqual([]);
    expect(await listed('u1')).toEqual([forked.sessionId, a.sessionId]);
    expect(await listed()).not.toContain(b.sessionId);

    // Delete everything of u1: no item of any of their sessions remains, nor a listing of theirs.
    expect(await agent.deleteUserData('u1')).toEqual({ sessions: 2 });
    for (const s of [a, b, forked]) expect(await itemsOf(s.sessionId), s.sessionId).toEqual([]);
    expect((await allItems(store.container)).filter((item) => item.userId === 'u1')).toEqual([]);
    expect(await listed('u1')).toEqual([]);

    // u2 is untouched: sessions, histories and listings; nothing else is left in either container.
    expect(await listed('u2')).toEqual([d.sessionId, c.sessionId]);
    expect(await listed()).toEqual([d.sessionId, c.sessionId]);
    for (const [s, title] of [
      [c, 'c'],
      [d, 'd'],
    ] as const) {
      expect((await itemsOf(s.sessionId)).length).toBe(6);
      expect((await agent.getSession(s.sessionId))?.metadata.userId).toBe('u2');
      expect((await history.getMessages(s.sessionId, { state: {} })).map((m) => Message.text(m))).toEqual([
        `${title}: first`,
        `re: ${title}: first`,
        `${title}: second`,
        `re: ${title}: second`,
      ]);
    }
    expect((await allItems(history.container)).length + (await allItems(store.container)).length).toBe(12);
  });
});

describe('OpenAIChatClient against a server that answers every completion with one id', () => {
  let server: OpenAITestServer;
  beforeAll(async () => {
    server = await startOpenAITestServer({ reuseIds: true });
  });
  afterAll(() => server.close());
  const databaseId = uniqueId('reused-ids');

  for (const streaming of [false, true]) {
    it(`three turns store every reply${streaming ? ' (streamed)' : ''}`, async () => {
      const history = new CosmosHistoryProvider({ client: cosmosClient(), databaseId, createIfNotExists: true });
      const client = new OpenAIChatClient({ baseURL: server.url, apiKey: 'test-key', model: 'gpt-4o-mini', maxRetries: 0 });
      const agent = createAgent({ client, contextProviders: [history] });
      const sessionId = `reused-${Math.random().toString(36).slice(2)}`;
      for (const text of ['one', 'two', 'three']) {
        const session = agent.getSessionById(sessionId);
        await (streaming ? agent.runStream(text, { session }).response : agent.run(text, { session }));
      }
      const stored = await history.getMessages(sessionId, { state: {} });
      expect(stored.map((m) => `${m.role}:${Message.text(m)}`)).toEqual([
        'user:one',
        'assistant:You said: one',
        'user:two',
        'assistant:You said: two',
        'user:three',
        'assistant:You said: three',
      ]);
      expect(stored.filter((m) => m.role === 'assistant').map((m) => m.metadata?.serviceMessageId)).toEqual([
        'chatcmpl-reused',
        'chatcmpl-reused',
        'chatcmpl-reused',
      ]);
    });
  }
});
