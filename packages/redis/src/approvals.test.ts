import { createAgent, defineTool, type FunctionResultContent, Message } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { describe, expect, it } from 'vitest';
import { clusterClient, singleClient, uniquePrefix } from '../test/helpers.js';
import { RedisHistoryProvider } from './redis-history-provider.js';
import { RedisSessionStore } from './redis-session-store.js';

for (const [topology, connect] of [
  ['single node', () => singleClient()],
  ['cluster', () => clusterClient()],
] as const) {
  describe(`tool approvals kept in Redis (${topology})`, () => {
    const prefix = uniquePrefix('approvals');
    /** An agent on its own ioredis client, as another process would have; `ran` records the transfers made. */
    const build = (replies: ConstructorParameters<typeof ScriptedChatClient>[0]['replies']) => {
      const client = connect();
      const ran: number[] = [];
      const transfer = defineTool({
        name: 'transfer',
        parameters: { type: 'object', properties: { amount: { type: 'number' } } },
        needsApproval: true,
        execute: ({ amount }: { amount: number }) => {
          ran.push(amount);
          return { sent: amount };
        },
      });
      const chat = new ScriptedChatClient({ replies });
      const agent = createAgent({
        client: chat,
        tools: [transfer],
        contextProviders: [new RedisHistoryProvider({ client, prefix })],
        sessionStore: new RedisSessionStore({ client, prefix }),
      });
      return { agent, chat, ran, client };
    };

    it('a call waiting in a session saved by one agent is approved by another, and the model sees its result after the call', async () => {
      const sessionId = `s-${Math.random().toString(36).slice(2)}`;
      const a = build([{ toolCalls: [{ name: 'transfer', arguments: { amount: 300 }, callId: 'c_1' }] }]);
      const session = a.agent.createSession({ sessionId });
      const first = await a.agent.run('send 300', { session });
      expect(first.pendingApprovals?.map((p) => p.callId)).toEqual(['c_1']);
      await a.agent.saveSession(session);

      const b = build(['Sent 300.']);
      const loaded = (await b.agent.getSession(sessionId))!;
      expect(loaded.pending?.approvals).toEqual([{ callId: 'c_1', toolName: 'transfer', arguments: '{"amount":300}' }]);
      const done = await b.agent.run([], { session: loaded, approvals: [{ callId: 'c_1', approved: true }] });
      await b.agent.saveSession(loaded);
      expect(done.text).toBe('Sent 300.');
      expect(a.ran).toEqual([]);
      expect(b.ran).toEqual([300]);
      const sent = b.chat.calls[0]!.messages;
      expect(sent.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
      expect((sent[2]!.contents[0] as FunctionResultContent).callId).toBe('c_1');
      expect((await b.agent.getSession(sessionId))?.pending).toBeUndefined();
      // The stored history holds the whole turn once, the result after its call.
      const stored = await new RedisHistoryProvider({ client: b.client, prefix }).getMessages(sessionId, { state: {} });
      expect(stored.map((m) => `${m.role}:${Message.text(m)}`)).toEqual(['user:send 300', 'assistant:', 'tool:', 'assistant:Sent 300.']);
      a.client.disconnect();
      b.client.disconnect();
    });
  });
}
