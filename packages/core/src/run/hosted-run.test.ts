import { describe, expect, it } from 'vitest';
import { HistoryProvider } from '../history/history-provider.js';
import type { ContextProvider } from '../contracts/run-view.js';
import { ConcurrencyError, ConfigurationError, InvalidInputError } from '../errors.js';
import { Message } from '../messages/message.js';
import { InMemorySessionStore } from '../session/in-memory-session-store.js';
import type { SessionStore } from '../contracts/session-store.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { createAgent } from './create-agent.js';

const echo = () => new ScriptedChatClient({ replies: (messages) => `re: ${Message.text(messages.at(-1)!)}` });
const texts = (messages: unknown) => (messages as Message[]).map((m) => `${m.role}:${Message.text(m)}`);

describe('agent.run with a sessionId (the hosted cycle)', () => {
  it('creates the session owned by the user, runs, saves; the next call continues it', async () => {
    const store = new InMemorySessionStore();
    const client = echo();
    const agent = createAgent({ client, sessionStore: store });
    const first = await agent.run('hello', { sessionId: 'c1', userId: 'alice' });
    expect(first.sessionId).toBe('c1');
    const stored = (await store.get('c1'))!;
    expect(stored.session.metadata.userId).toBe('alice');
    expect(texts(stored.session.state.memory!.messages)).toEqual(['user:hello', 'assistant:re: hello']);

    const second = await createAgent({ client, sessionStore: store }).run('again', { sessionId: 'c1', userId: 'alice' });
    expect(second.text).toBe('re: again');
    expect(texts(client.calls[1]!.messages)).toEqual(['user:hello', 'assistant:re: hello', 'user:again']);
    expect(texts((await store.get('c1'))!.session.state.memory!.messages)).toHaveLength(4);
  });

  it('streams too: the response resolves once the session is saved', async () => {
    const store = new InMemorySessionStore();
    const agent = createAgent({ client: echo(), sessionStore: store });
    const stream = agent.runStream('streamed', { sessionId: 'c2' });
    let text = '';
    for await (const update of stream) for (const c of update.contents) if (c.type === 'text') text += c.text;
    expect(text).toBe('re: streamed');
    expect((await stream.response).sessionId).toBe('c2');
    expect(texts((await store.get('c2'))!.session.state.memory!.messages)).toEqual(['user:streamed', 'assistant:re: streamed']);
  });

  it("refuses another user's session with InvalidInputError before anything runs or is stored", async () => {
    const store = new InMemorySessionStore();
    const client = echo();
    const agent = createAgent({ client, sessionStore: store });
    await agent.run('my plan', { sessionId: 'c3', userId: 'alice' });
    const before = await store.get('c3');
    const error = await agent.run('show me', { sessionId: 'c3', userId: 'bob' }).catch((e: unknown) => e);
    expect(InvalidInputError.isInstance(error)).toBe(true);
    expect((error as Error).message).toContain('"c3"');
    expect((error as Error).message).not.toContain('alice');
    expect(client.calls).toHaveLength(1);
    expect(await store.get('c3')).toEqual(before);
    // A session with no owner is not anyone's to take either.
    await agent.run('unowned', { sessionId: 'c4' });
    await expect(agent.run('mine now?', { sessionId: 'c4', userId: 'bob' })).rejects.toSatisfy(InvalidInputError.isInstance);
  });

  it('refuses a sessionId with a session, without a store, a userId alone, and blank ids, as ConfigurationError', async () => {
    const store = new InMemorySessionStore();
    const agent = createAgent({ client: echo(), sessionStore: store });
    const session = agent.createSession({ sessionId: 'x' });
    await expect(agent.run('a', { session, sessionId: 'x' })).rejects.toSatisfy(ConfigurationError.isInstance);
    await expect(agent.run('a', { userId: 'alice' })).rejects.toSatisfy(ConfigurationError.isInstance);
    await expect(agent.run('a', { sessionId: ' ' })).rejects.toSatisfy(ConfigurationError.isInstance);
    await expect(agent.run('a', { sessionId: 'x', userId: '' })).rejects.toSatisfy(ConfigurationError.isInstance);
    await expect(createAgent({ client: echo() }).run('a', { sessionId: 'x' })).rejects.toSatisfy(ConfigurationError.isInstance);
    await expect(agent.runStream('a', { session, sessionId: 'x' }).response).rejects.toSatisfy(ConfigurationError.isInstance);
    expect(await store.get('x')).toBeUndefined();
  });

  it('two users creating one id at once: the second finds it taken and is refused, its message never stored', async () => {
    const store = new InMemorySessionStore();
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const client = new ScriptedChatClient({
      replies: async (messages) => {
        // Alice's run holds the model until Bob's request is answered.
        if (Message.text(messages.at(-1)!) === 'alice here') await held;
        return `re: ${Message.text(messages.at(-1)!)}`;
      },
    });
    const agent = createAgent({ client, sessionStore: store });
    const alice = agent.run('alice here', { sessionId: 'same', userId: 'alice' });
    const bob = agent.run('bob here', { sessionId: 'same', userId: 'bob' }).catch((e: unknown) => e);
    expect(InvalidInputError.isInstance(await bob)).toBe(true);
    release();
    await alice;
    expect(texts((await store.get('same'))!.session.state.memory!.messages)).toEqual(['user:alice here', 'assistant:re: alice here']);
  });

  it('5 concurrent requests on one session through 5 agents: every turn stored once, none fails', async () => {
    const store = new InMemorySessionStore();
    let waiting: (() => void)[] = [];
    const client = new ScriptedChatClient({
      replies: async (messages) => {
        // Every run waits at the model until all five are there, so all five loaded the same version.
        await new Promise<void>((resolve) => {
          waiting.push(resolve);
          if (waiting.length === 5) for (const go of waiting.splice(0)) go();
        });
        return `re: ${Message.text(messages.at(-1)!)}`;
      },
    });
    const agents = Array.from({ length: 5 }, () => createAgent({ client, sessionStore: store }));
    const responses = await Promise.all(agents.map((agent, i) => agent.run(`q${i}`, { sessionId: 'busy', userId: 'u' })));
    waiting = [];
    expect(responses.map((r) => r.text)).toEqual(['re: q0', 're: q1', 're: q2', 're: q3', 're: q4']);
    const stored = texts((await store.get('busy'))!.session.state.memory!.messages);
    expect(stored).toHaveLength(10);
    for (let i = 0; i < 5; i++) expect(stored.indexOf(`assistant:re: q${i}`)).toBe(stored.indexOf(`user:q${i}`) + 1);
  });

  it("with persistence 'model-call', the saves during concurrent runs merge too: 3 runs at once, every turn stored once", async () => {
    const store = new InMemorySessionStore();
    let waiting: (() => void)[] = [];
    const client = new ScriptedChatClient({
      replies: async (messages) => {
        await new Promise<void>((resolve) => {
          waiting.push(resolve);
          if (waiting.length === 3) for (const go of waiting.splice(0)) go();
        });
        return `re: ${Message.text(messages.at(-1)!)}`;
      },
    });
    const agents = Array.from({ length: 3 }, () => createAgent({ client, sessionStore: store, persistence: 'model-call' }));
    await agents[0]!.saveSession(agents[0]!.createSession({ sessionId: 'mc' }));
    const responses = await Promise.all(agents.map((agent, i) => agent.run(`q${i}`, { sessionId: 'mc' })));
    waiting = [];
    expect(responses.map((r) => r.text)).toEqual(['re: q0', 're: q1', 're: q2']);
    const stored = texts((await store.get('mc'))!.session.state.memory!.messages);
    expect([...stored].sort()).toEqual(['assistant:re: q0', 'assistant:re: q1', 'assistant:re: q2', 'user:q0', 'user:q1', 'user:q2']);
    for (let i = 0; i < 3; i++) expect(stored.indexOf(`assistant:re: q${i}`)).toBe(stored.indexOf(`user:q${i}`) + 1);
  });

  it('an input refused for its size on a new sessionId leaves no session behind', async () => {
    const store = new InMemorySessionStore();
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: ['never'] }),
      sessionStore: store,
      limits: { maxMessageBytes: 1024 },
    });
    await expect(agent.run('x'.repeat(2048), { sessionId: 'fresh', userId: 'ada' })).rejects.toSatisfy(InvalidInputError.isInstance);
    expect(await store.get('fresh')).toBeUndefined();
  });

  it('turnStored is true only when a history outside the session stored the whole turn (not when it was skipped)', async () => {
    /** A history kept outside the session; `failing` makes its writes fail. */
    class OutsideHistory extends HistoryProvider {
      readonly stored: Message[] = [];
      failing = false;
      async getMessages(): Promise<Message[]> {
        return [...this.stored];
      }
      async saveMessages(_: string, messages: readonly Message[]): Promise<void> {
        if (this.failing) throw new Error('backend down');
        this.stored.push(...messages);
      }
    }
    for (const failing of [false, true]) {
      const store = new InMemorySessionStore();
      const history = new OutsideHistory({ sourceId: 'outside', onError: 'skip' });
      let go!: () => void;
      const gate = new Promise<void>((resolve) => {
        go = resolve;
      });
      const client = new ScriptedChatClient({
        replies: async (messages) => {
          if (Message.text(messages.at(-1)!) === 'slow') await gate;
          return 'ok';
        },
      });
      const notes: ContextProvider = {
        sourceId: 'notes',
        afterRun: ({ state, context }) => {
          state.last = Message.text(context.inputMessages[0]!);
        },
      };
      const agent = createAgent({ client, sessionStore: store, contextProviders: [history, notes] });
      await agent.run('seed', { sessionId: 'k' });
      const slow = agent.run('slow', { sessionId: 'k' }).catch((e: unknown) => e);
      await agent.run('fast', { sessionId: 'k' });
      history.failing = failing;
      go();
      const error = (await slow) as ConcurrencyError;
      expect(ConcurrencyError.isInstance(error)).toBe(true);
      expect(error.turnStored).toBe(!failing);
      expect(history.stored.some((m) => Message.text(m) === 'slow')).toBe(!failing);
    }
  });

  it('a real conflict ends the call in a ConcurrencyError with turnStored false; running it again with the same message stores it once', async () => {
    const store = new InMemorySessionStore();
    let go!: () => void;
    const gate = new Promise<void>((resolve) => {
      go = resolve;
    });
    const client = new ScriptedChatClient({
      replies: async (messages) => {
        if (Message.text(messages.at(-1)!) === 'slow') await gate;
        return `re: ${Message.text(messages.at(-1)!)}`;
      },
    });
    const agent = () =>
      createAgent({
        client,
        sessionStore: store,
        contextProviders: [
          {
            sourceId: 'notes',
            afterRun: ({ state, context }) => {
              state.last = Message.text(context.inputMessages[0]!);
            },
          },
        ],
      });
    await agent().run('seed', { sessionId: 'k' });
    const input = Message.user('slow');
    const slow = agent()
      .run(input, { sessionId: 'k' })
      .catch((e: unknown) => e);
    await agent().run('fast', { sessionId: 'k' });
    go();
    const error = (await slow) as ConcurrencyError;
    expect(ConcurrencyError.isInstance(error)).toBe(true);
    expect(error.turnStored).toBe(false);
    expect(texts((await store.get('k'))!.session.state.memory!.messages)).not.toContain('user:slow');
    await agent().run(input, { sessionId: 'k' });
    const stored = (await store.get('k'))!.session.state.memory!.messages as Message[];
    expect(stored.filter((m) => m.id === input.id)).toHaveLength(1);
    expect(texts(stored).slice(-2)).toEqual(['user:slow', 'assistant:re: slow']);
  });
});

describe('agent.getSession', () => {
  it("resolves to undefined for an unknown id, and with userId for another user's session", async () => {
    const store = new InMemorySessionStore();
    const agent = createAgent({ client: echo(), sessionStore: store });
    expect(await agent.getSession('nope')).toBeUndefined();
    await agent.run('secret', { sessionId: 'a1', userId: 'alice' });
    expect(await agent.getSession('a1', { userId: 'bob' })).toBeUndefined();
    expect((await agent.getSession('a1', { userId: 'alice' }))?.metadata.userId).toBe('alice');
    expect((await agent.getSession('a1'))?.sessionId).toBe('a1');
  });

  it('checks the owner itself, so a store that ignores userId is still safe', async () => {
    const inner = new InMemorySessionStore();
    const ignoring: SessionStore = { get: (id) => inner.get(id), set: (s, o) => inner.set(s, o), delete: (id) => inner.delete(id) };
    const agent = createAgent({ client: echo(), sessionStore: ignoring });
    await agent.run('secret', { sessionId: 'a2', userId: 'alice' });
    expect(await agent.getSession('a2', { userId: 'bob' })).toBeUndefined();
    expect(await agent.getSession('a2', { userId: 'alice' })).toBeDefined();
  });
});
