import { describe, expect, it } from 'vitest';
import { ConfigurationError } from '../errors.js';
import { InMemoryHistoryProvider } from '../history/in-memory-history-provider.js';
import { AgentSession } from '../session/agent-session.js';
import type { ContextProvider } from '../contracts/run-view.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { defaultHistory } from './default-history.js';

const rag: ContextProvider = { sourceId: 'rag' };

describe('the default-history rule', () => {
  it('adds the in-memory history (sourceId memory) first, for a run with a session and nothing that loads history', () => {
    const rule = defaultHistory(new ScriptedChatClient({ replies: [] }), [rag]);
    const providers = rule.providersFor(new AgentSession(), {});
    expect(providers.map((p) => p.sourceId)).toEqual(['memory', 'rag']);
    expect(rule.validators.map((p) => p.sourceId)).toEqual(['memory', 'rag']);
  });

  it('adds nothing without a session, when the service keeps the conversation, or when a provider loads history', () => {
    const client = new ScriptedChatClient({ replies: [] });
    const rule = defaultHistory(client, [rag]);
    expect(rule.providersFor(undefined, {}).map((p) => p.sourceId)).toEqual(['rag']);
    expect(rule.providersFor(new AgentSession({ serviceSessionId: 'resp_1' }), {}).map((p) => p.sourceId)).toEqual(['rag']);
    expect(rule.providersFor(new AgentSession(), { store: true }).map((p) => p.sourceId)).toEqual(['rag']);
    const storing = defaultHistory(new ScriptedChatClient({ replies: [], storesByDefault: true }), [rag]);
    expect(storing.providersFor(new AgentSession(), {}).map((p) => p.sourceId)).toEqual(['rag']);
    expect(storing.providersFor(new AgentSession(), { store: false }).map((p) => p.sourceId)).toEqual(['memory', 'rag']);
    const own = new InMemoryHistoryProvider({ sourceId: 'mine' });
    const withHistory = defaultHistory(client, [own, rag]);
    expect(withHistory.providersFor(new AgentSession(), {})).toEqual([own, rag]);
    expect(withHistory.loaders).toEqual([own]);
  });

  it('keeps the memory slot for the default history unless the provider using it loads history', () => {
    const client = new ScriptedChatClient({ replies: [] });
    expect(() => defaultHistory(client, [{ sourceId: 'memory' }])).toThrow(ConfigurationError);
    const mine = new InMemoryHistoryProvider();
    expect(defaultHistory(client, [mine]).validators).toEqual([mine]);
  });
});
