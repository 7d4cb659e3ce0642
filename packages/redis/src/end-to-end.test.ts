import {
  type AgentSession,
  type ChatClient,
  type ChatResponse,
  type ChatResponseUpdate,
  ConcurrencyError,
  createAgent,
  Message,
  ProviderError,
  SessionStateError,
} from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { OpenAIChatClient } from '@ctx/openai';
import { startOpenAITestServer, type OpenAITestServer } from '@ctx/openai-test-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allKeys, clusterClient, singleClient, uniquePrefix } from '../test/helpers.js';
import { encodeKeyPart } from './keys.js';
import { RedisHistoryProvider } from './redis-history-provider.js';
import { RedisSessionStore } from './redis-session-store.js';

for (const [topology, connect] of [
  ['single node', () => singleClient()],
  ['cluster', () => clusterClient()],
] as const) {
  describe(`two agents on two ioredis clients (${topology})`, () => {
    const prefix = uniquePrefix('e2e');
    const build = () => {
      const client = connect();
      const chat = new ScriptedChatClient({ replies: (messages) => `re: ${Message.text(messages.at(-1)!)}` });
      const history = new RedisHistoryProvider({ client, prefix, maxMessages: 10 });
      const agent = createAgent({ client: chat, contextProviders: [history], sessionStore: new RedisSessionStore({ client, prefix }) });
      return { agent, chat, history };
    };

    it('continue the same session by id: each sees what the other stored', async () => {
      const a = build();
      const b = build();
      const sessionId = `e2e-${Math.random().toString(36).slice(2)}`;
      await a.agent.run('my name is Ada', { session: a.agent.getSessionById(sessionId) });
      await b.agent.run('what is my name?', { session: b.agent.getSessionById(sessionId) });
      expect(b.chat.calls[0]!.messages.map((m) => Message.text(m))).toEqual(['my name is Ada', 're: my name is Ada', 'what is my name?']);
      // The loaded messages are attributed to the Redis history provider.
      expect(Message.source(b.chat.calls[0]!.messages[0]!)).toEqual({ sourceId: 'redis', sourceType: 'history' });
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

    it('maxMessages loads only the window while Redis keeps everything', async () => {
      const a = build();
      const sessionId = `e2e-${Math.random().toString(36).slice(2)}`;
      for (let i = 0; i < 8; i++) await a.agent.run(`turn ${i}`, { session: a.agent.getSessionById(sessionId) });
      expect(a.chat.calls.at(-1)!.messages).toHaveLength(11);
      expect(await a.history.countMessages(sessionId)).toBe(16);
    });

    it('the hosted flow: getSession / saveSession across agents, with optimistic concurrency', async () => {
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
  });
}

for (const [topology, connect] of [
  ['single node', () => singleClient()],
  ['cluster', () => clusterClient()],
] as const) {
  describe(`sessions as a product on ${topology}: list, fork, delete, delete a user's data`, () => {
    it('an agent on RedisHistoryProvider and RedisSessionStore leaves nothing of a deleted session or user in Redis, and the other user intact', async () => {
      const client = connect();
      const prefix = uniquePrefix('product');
      const chat = new ScriptedChatClient({ replies: (messages) => `re: ${Message.text(messages.at(-1)!)}` });
      const history = new RedisHistoryProvider({ client, prefix, ttlSeconds: 3600 });
      const store = new RedisSessionStore({ client, prefix });
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
      const keysOf = async (sessionId: string) =>
        (await allKeys(client)).filter((k) => k.startsWith(`${prefix}:`) && k.includes(`{${encodeKeyPart(sessionId)}}`));
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
      expect(Message.text((await history.getMessages(forked.sessionId, { state: {} })).at(-1)!)).toBe('re: a: first');
      expect(await history.countMessages(forked.sessionId)).toBe(2);
      expect(await history.countMessages(a.sessionId)).toBe(4);
      expect(await listed('u1')).toContain(forked.sessionId);

      // Delete one session: its history keys and its session key are gone, its listings forget it.
      expect((await keysOf(b.sessionId)).length).toBe(3);
      expect(await agent.deleteSession(b.sessionId)).toBe(true);
      expect(await keysOf(b.sessionId)).toEqual([]);
      expect(await listed('u1')).not.toContain(b.sessionId);
      expect(await listed()).not.toContain(b.sessionId);

      // Delete everything of u1: no key of any of their sessions remains, nor a listing of theirs.
      expect(await agent.deleteUserData('u1')).toEqual({ sessions: 2 });
      for (const s of [a, b, forked]) expect(await keysOf(s.sessionId), s.sessionId).toEqual([]);
      const remaining = (await allKeys(client)).filter((k) => k.startsWith(`${prefix}:`));
      expect(remaining.filter((k) => k.includes('{user:u1}'))).toEqual([]);
      expect(await listed('u1')).toEqual([]);

      // u2 is untouched: sessions, histories and listings.
      expect(await listed('u2')).toEqual([d.sessionId, c.sessionId]);
      expect(await listed()).toEqual([d.sessionId, c.sessionId]);
      for (const s of [c, d]) {
        expect((await keysOf(s.sessionId)).length).toBe(3);
        expect((await agent.getSession(s.sessionId))?.metadata.userId).toBe('u2');
        expect(await history.countMessages(s.sessionId)).toBe(4);
      }
      const u2Index = store.indexKeys('u2');
      expect(remaining.sort()).toEqual(
        [
          ...(await keysOf(c.sessionId)),
          ...(await keysOf(d.sessionId)),
          // The listing of every session (on a cluster, the shards that hold c and d).
          ...new Set([c, d].flatMap((s) => [store.indexKeys(undefined, s.sessionId).order, store.indexKeys(undefined, s.sessionId).meta])),
          u2Index.order,
          u2Index.meta,
        ].sort(),
      );
    });
  });
}

/** A chat client that answers every call with one message id, as some OpenAI-compatible servers and proxies do. */
class FixedIdChatClient implements ChatClient {
  readonly specificationVersion = 'v1';
  readonly provider = 'fixed-id';
  readonly modelId = 'fixed-id-model';
  calls = 0;
  async getResponse(): Promise<ChatResponse> {
    return { messages: [Message.assistant(`reply ${++this.calls}`, { id: 'chatcmpl-same' })], finishReason: 'stop' };
  }
  async *getStreamingResponse(): AsyncIterable<ChatResponseUpdate> {
    yield { messageId: 'chatcmpl-same', role: 'assistant', contents: [{ type: 'text', text: `reply ${++this.calls}` }] };
  }
}

for (const [topology, connect] of [
  ['single node', () => singleClient()],
  ['cluster', () => clusterClient()],
] as const) {
  describe(`a chat client that reuses one message id (${topology})`, () => {
    for (const streaming of [false, true]) {
      it(`the second turn fails loudly with SessionStateError; no reply is dropped silently${streaming ? ' (streamed)' : ''}`, async () => {
        const history = new RedisHistoryProvider({ client: connect(), prefix: uniquePrefix('fixed-id') });
        const agent = createAgent({ client: new FixedIdChatClient(), contextProviders: [history] });
        const session = agent.getSessionById(`fixed-${Math.random().toString(36).slice(2)}`);
        const run = (text: string) => (streaming ? agent.runStream(text, { session }).response : agent.run(text, { session }));
        await run('one');
        const error = await run('two').catch((e: unknown) => e);
        expect(ProviderError.isInstance(error), String(error)).toBe(true);
        const cause = (error as ProviderError).cause;
        expect(SessionStateError.isInstance(cause), String(cause)).toBe(true);
        expect((cause as SessionStateError).message).toContain('"chatcmpl-same"');
        expect((cause as SessionStateError).message).toContain(session.sessionId);
        const stored = await history.getMessages(session.sessionId, { state: {} });
        expect(stored.map((m) => `${m.role}:${Message.text(m)}`)).toEqual(['user:one', 'assistant:reply 1']);
      });
    }
  });
}

describe('OpenAIChatClient against a server that answers every completion with one id', () => {
  let server: OpenAITestServer;
  beforeAll(async () => {
    server = await startOpenAITestServer({ reuseIds: true });
  });
  afterAll(() => server.close());

  for (const [topology, connect] of [
    ['single node', () => singleClient()],
    ['cluster', () => clusterClient()],
  ] as const) {
    for (const streaming of [false, true]) {
      it(`three turns store every reply (${topology}${streaming ? ', streamed' : ''})`, async () => {
        const history = new RedisHistoryProvider({ client: connect(), prefix: uniquePrefix('reused-ids') });
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
  }
});
