import { describe, expect, it } from 'vitest';
import { InMemoryHistoryProvider } from '../history/in-memory-history-provider.js';
import { Message } from '../messages/message.js';
import { createAgentResponse } from '../run/agent-response.js';
import { AgentSession } from '../session/agent-session.js';
import type { ContextProvider } from '../contracts/run-view.js';
import { createProviderRunArgs } from './create-provider-run-args.js';

describe('createProviderRunArgs', () => {
  it("runs a history provider's hooks directly, without an agent and without redact (the messages as they are)", async () => {
    const history = new InMemoryHistoryProvider({ sourceId: 'history' });
    const session = new AgentSession({ sessionId: 's1' });
    const first = createProviderRunArgs({ sourceId: 'history', session, inputMessages: [Message.user('hi', { id: 'u1' })] });
    await history.beforeRun(first);
    first.context.response = createAgentResponse([Message.assistant('hello', { id: 'a1' })]);
    await history.afterRun(first);
    expect(((session.state.history as { messages: Message[] }).messages ?? []).map((m) => m.id)).toEqual(['u1', 'a1']);

    // The next run loads what the first stored; a given redact is what the provider writes through.
    const second = createProviderRunArgs({
      sourceId: 'history',
      session,
      inputMessages: [Message.user('secret 42', { id: 'u2' })],
      redact: async (messages) => messages.map((m) => ({ ...m, contents: [{ type: 'text' as const, text: '[masked]' }] })),
    });
    await history.beforeRun(second);
    expect(second.context.getMessages().map((m) => Message.text(m))).toEqual(['hi', 'hello']);
    second.context.response = createAgentResponse([]);
    await history.afterRun(second);
    expect((session.state.history as { messages: Message[] }).messages.map((m) => Message.text(m))).toEqual(['hi', 'hello', '[masked]']);
  });

  it('gives the state slot by identity, a session id, an agent view, and records diagnostics', async () => {
    const state = { count: 1 };
    const provider: ContextProvider = {
      sourceId: 'counter',
      beforeRun: ({ state, report, agent }) => {
        (state as { count: number }).count++;
        report({ code: 'counted', message: `by ${agent.name}` });
      },
    };
    const args = createProviderRunArgs({ sourceId: 'counter', sessionId: 's9', state, agentName: 'bot' });
    await provider.beforeRun!(args);
    expect(state.count).toBe(2);
    expect(args.session.sessionId).toBe('s9');
    expect(args.session.state.counter).toBe(state);
    expect(args.context.sessionId).toBe('s9');
    expect(args.diagnostics).toEqual([{ code: 'counted', message: 'by bot' }]);
    expect(args.signal.aborted).toBe(false);
    expect(args.redact).toBeUndefined();
  });
});
