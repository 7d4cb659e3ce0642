import { describe, expect, it } from 'vitest';
import { ConcurrencyError, ConfigurationError } from '../errors.js';
import { createAgent } from '../run/create-agent.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { InMemorySessionStore } from './in-memory-session-store.js';

describe('InMemorySessionStore', () => {
  it('keeps copies: changing a session after saving does not change the stored one', async () => {
    const store = new InMemorySessionStore();
    const agent = createAgent({ client: new ScriptedChatClient({ replies: [] }), sessionStore: store });
    const session = agent.createSession({ sessionId: 'a', state: { p: { n: 1 } } });
    await agent.saveSession(session);
    session.state.p!.n = 2;
    expect((await store.get('a'))!.session.state).toEqual({ p: { n: 1 } });
    await expect(store.set(session.toJSON(), { ifMatch: null })).rejects.toSatisfy((e) => ConcurrencyError.isInstance(e));
  });

  it('getSession without a store is a configuration error', async () => {
    const agent = createAgent({ client: new ScriptedChatClient({ replies: [] }) });
    await expect(agent.getSession('x')).rejects.toSatisfy((e) => ConfigurationError.isInstance(e));
  });
});
