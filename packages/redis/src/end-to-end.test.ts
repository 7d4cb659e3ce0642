import { ConcurrencyError, createAgent, Message } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { describe, expect, it } from 'vitest';
import { clusterClient, singleClient, uniquePrefix } from '../test/helpers.js';
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
      const sa = await a.agent.getSession(sessionId);
      sa.state.profile = { name: 'Ada' };
      await a.agent.run('hello', { session: sa });
      await a.agent.saveSession(sa);
      const sb = await b.agent.getSession(sessionId);
      expect(sb.state.profile).toEqual({ name: 'Ada' });
      sb.state.profile = { name: 'Grace' };
      await b.agent.saveSession(sb);
      sa.state.profile = { name: 'stale' };
      await expect(a.agent.saveSession(sa)).rejects.toSatisfy(ConcurrencyError.isInstance);
      expect((await b.agent.getSession(sessionId)).state.profile).toEqual({ name: 'Grace' });
    });
  });
}
