import {
  BackendUnavailableError,
  createAgent,
  defineTool,
  InMemorySessionStore,
  Message,
  ProviderError,
  SessionStateError,
  type AgentEvent,
  type ContextProvider,
} from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { beforeAll, describe, expect, it } from 'vitest';
import { ossBackend, platformBackend, uniqueId, type Backend } from '../test/backends.js';
import { isMemoryMessage, Mem0ContextProvider, type Mem0ContextProviderOptions, type Mem0UserDataExport } from './index.js';

/** Records every search and add that reaches the real mem0ai client. */
function spyOn(client: Backend['client']) {
  const calls: { method: 'search' | 'add'; args: unknown[] }[] = [];
  for (const method of ['search', 'add'] as const) {
    const original = (client[method] as (...args: unknown[]) => Promise<unknown>).bind(client);
    (client as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => {
      calls.push({ method, args: structuredClone(args) });
      return original(...args);
    };
  }
  return calls;
}

const memoryTextOf = (messages: Message[]) =>
  messages
    .filter(isMemoryMessage)
    .map((m) => Message.text(m))
    .join('\n');

for (const make of [ossBackend, platformBackend]) {
  describe(`end to end through createAgent (${make === ossBackend ? 'mem0 OSS Memory, offline' : 'platform MemoryClient, local REST server'})`, () => {
    let backend: Backend;
    let calls: ReturnType<typeof spyOn>;
    beforeAll(async () => {
      backend = await make();
      calls = spyOn(backend.client);
    });

    const build = (options: Partial<Mem0ContextProviderOptions> = {}, extra: ContextProvider[] = []) => {
      const events: AgentEvent[] = [];
      const chat = new ScriptedChatClient({
        replies: (messages) => (messages.some(isMemoryMessage) ? 'I remember something about you.' : 'Nice to meet you.'),
      });
      const memory = new Mem0ContextProvider({ client: backend.client, searchTimeoutMs: 1500, writeTimeoutMs: 3000, ...options });
      const agent = createAgent({ client: chat, contextProviders: [...extra, memory], onEvent: (e) => events.push(e) });
      const sessionOf = (userId: unknown) => agent.createSession({ state: { mem0: { userId } as never } });
      return { agent, chat, memory, events, sessionOf };
    };

    it('a fact said in session 1 is recalled in session 2 of the same user', async () => {
      const alice = uniqueId('alice');
      const { agent, chat, sessionOf } = build();
      await agent.run('My favourite colour is teal.', { session: sessionOf(alice) });
      expect(chat.calls[0]!.messages.some(isMemoryMessage)).toBe(false);
      const res = await agent.run('What is my favourite colour?', { session: sessionOf(alice) });
      expect(res.text).toBe('I remember something about you.');
      const seen = chat.calls[1]!.messages;
      // A new session has no history: the fact can only have come from mem0, as one attributed message before the input.
      expect(seen).toHaveLength(2);
      expect(Message.source(seen[0]!)).toEqual({ sourceId: 'mem0', sourceType: 'context' });
      expect(Message.text(seen[0]!)).toContain('- My favourite colour is teal.');
      expect(seen[0]!.role).toBe('user');
      expect(Message.text(seen[1]!)).toBe('What is my favourite colour?');
    });

    it("never in another user's session, and never for hostile ids", async () => {
      const alice = uniqueId('alice');
      const { agent, chat, events, sessionOf } = build();
      await agent.run('My favourite colour is teal.', { session: sessionOf(alice) });
      const before = calls.length;
      await agent.run('What is my favourite colour?', { session: sessionOf(uniqueId('bob')) });
      await agent.run('What is my favourite colour?', { session: sessionOf(alice.toUpperCase()) });
      await agent.run('What is my favourite colour?', { session: agent.createSession() }); // no user: nothing searched
      const hostile: unknown[] = [
        '*',
        `${alice}*`,
        `${alice} `,
        ` ${alice}`,
        `${alice}\n`,
        `${alice}\u0000`,
        '',
        'x'.repeat(300),
        '\ud800',
        { in: [alice] },
        [alice],
        { ne: 'nobody' },
        42,
        null,
      ];
      for (const userId of hostile) await agent.run('What is my favourite colour?', { session: sessionOf(userId) });
      for (const call of chat.calls.slice(1)) expect(memoryTextOf(call.messages)).toBe('');
      expect(chat.calls.slice(1).every((c) => !c.messages.some((m) => Message.text(m).includes('teal')))).toBe(true);
      // Hostile ids never reached mem0: only the two valid users were searched (bob, ALICE).
      const searches = calls.slice(before).filter((c) => c.method === 'search');
      const filters = searches.map((c) => (c.args[1] as { filters: { user_id?: string } }).filters);
      expect(filters).toHaveLength(2);
      expect(filters[0]).toEqual({ user_id: expect.stringMatching(/^bob-/) });
      expect(filters[1]).toEqual({ user_id: alice.toUpperCase() });
      // Only bob's and ALICE's turns were stored (under their own ids); the anonymous and hostile sessions stored nothing.
      expect(
        calls
          .slice(before)
          .filter((c) => c.method === 'add')
          .map((c) => (c.args[1] as { userId?: string }).userId),
      ).toEqual([expect.stringMatching(/^bob-/), alice.toUpperCase()]);
      // Each hostile id skipped the provider with a SessionStateError naming the state path (the run itself succeeded).
      const skipped = events.filter((e): e is Extract<AgentEvent, { type: 'provider-skipped' }> => e.type === 'provider-skipped');
      expect(skipped).toHaveLength(hostile.length);
      for (const e of skipped) {
        expect(e.sourceId).toBe('mem0');
        expect(SessionStateError.isInstance(e.error)).toBe(true);
        expect((e.error as SessionStateError).path).toBe('$.state.mem0.userId');
      }
      // A restored session with a hostile id is refused before any run.
      expect(() => agent.restoreSession({ type: 'ctx.session', version: 1, sessionId: 's', state: { mem0: { userId: '*' } } })).toThrow(
        SessionStateError,
      );
    });

    it('injected memories, other context and tool chatter are not re-added: only the input and the reply', async () => {
      const alice = uniqueId('alice');
      const weather = defineTool({
        name: 'weather',
        description: 'Weather',
        parameters: { type: 'object', properties: {} },
        execute: () => 'Sunny in Oslo',
      });
      const other: ContextProvider = {
        sourceId: 'notes',
        beforeRun: ({ context }) => context.extendMessages('notes', [Message.user('Company note: the office is closed on Friday.')]),
      };
      let turn = 0;
      const chat = new ScriptedChatClient({
        replies: () =>
          ++turn === 2
            ? { text: 'Let me check.', toolCalls: [{ name: 'weather', arguments: {} }] }
            : 'It is sunny, and your colour is teal.',
      });
      const memory = new Mem0ContextProvider({ client: backend.client });
      const agent = createAgent({ client: chat, tools: [weather], contextProviders: [other, memory] });
      const session = () => agent.createSession({ state: { mem0: { userId: alice } } });
      await agent.run('My favourite colour is teal.', { session: session() });
      const addsBefore = backend.addedTurns().length;
      await agent.run('What is my favourite colour and the weather?', { session: session() });
      expect(memoryTextOf(chat.calls[1]!.messages)).toContain('teal');
      const added = backend.addedTurns();
      expect(added).toHaveLength(addsBefore + 1);
      expect(added.at(-1)).toEqual([
        'user: What is my favourite colour and the weather?',
        'assistant: It is sunny, and your colour is teal.',
      ]);
      // The memory message, the other provider's note, the function call, its result and the text beside the call were all left out.
      const sent = JSON.stringify(added.at(-1));
      for (const absent of ['Memories about the user', 'office is closed', 'Sunny in Oslo', 'Let me check'])
        expect(sent).not.toContain(absent);
    });

    it('an outage skips the provider with a diagnostic; the run goes on and memory is back after it', async () => {
      const alice = uniqueId('alice');
      const { agent, chat, events, sessionOf } = build();
      await agent.run('My favourite colour is teal.', { session: sessionOf(alice) });
      await backend.down();
      try {
        const res = await agent.run('What is my favourite colour?', { session: sessionOf(alice) });
        expect(res.text).toBe('Nice to meet you.');
        expect(chat.calls[1]!.messages.some(isMemoryMessage)).toBe(false);
        const skipped = events.filter((e) => e.type === 'provider-skipped');
        expect(skipped).toHaveLength(1);
        expect(skipped[0]).toMatchObject({ sourceId: 'mem0', phase: 'beforeRun' });
        const error = (skipped[0] as { error: unknown }).error;
        expect(BackendUnavailableError.isInstance(error)).toBe(true);
        expect((error as BackendUnavailableError).backend).toBe('mem0');
        expect((error as Error).message).toMatch(/mem0 \((oss|platform)\) search for session/);
      } finally {
        await backend.up();
      }
      await agent.run('What is my favourite colour?', { session: sessionOf(alice) });
      expect(memoryTextOf(chat.calls[2]!.messages)).toContain('My favourite colour is teal.');
    });

    it("through the agent: deleteSession forgets that session's memories, exportUserData and deleteUserData cover the user's", async () => {
      const store = new InMemorySessionStore();
      const memory = new Mem0ContextProvider({ client: backend.client, storeScope: ['userId', 'runId'], forgetOnSessionDelete: true });
      const agent = createAgent({
        client: new ScriptedChatClient({ replies: () => 'Noted.' }),
        contextProviders: [memory],
        sessionStore: store,
      });
      const [ann, bob] = [uniqueId('ann'), uniqueId('bob')];
      const say = async (userId: string, text: string) => {
        const session = agent.createSession({ userId });
        await agent.run(text, { session });
        await agent.saveSession(session);
        return session;
      };
      const trip = await say(ann, 'I am flying to Lima.');
      await say(ann, 'I am vegetarian.');
      await say(bob, 'I am flying to Quito.');
      const texts = async (userId: string) => {
        const exported = (await agent.exportUserData(userId)).providers.mem0 as unknown as Mem0UserDataExport | undefined;
        return (exported?.memories ?? []).map((m) => m.text).sort();
      };
      expect(await texts(ann)).toEqual(['I am flying to Lima.', 'I am vegetarian.']);

      expect(await agent.deleteSession(trip.sessionId)).toBe(true);
      expect(await texts(ann)).toEqual(['I am vegetarian.']);
      const exported = await agent.exportUserData(ann);
      expect(exported.sessions).toHaveLength(1);

      expect(await agent.deleteUserData(ann)).toEqual({ sessions: 1 });
      expect(await texts(ann)).toEqual([]);
      expect((await agent.listSessions({ userId: ann })).sessions).toEqual([]);
      expect(await texts(bob)).toEqual(['I am flying to Quito.']);
    });

    it.runIf(make === platformBackend)(
      'mem0 down: deleteSession fails with a ProviderError and the session stays, to be retried',
      async () => {
        const store = new InMemorySessionStore();
        const memory = new Mem0ContextProvider({
          client: backend.client,
          storeScope: ['userId', 'runId'],
          forgetOnSessionDelete: true,
          writeTimeoutMs: 2000,
        });
        const agent = createAgent({
          client: new ScriptedChatClient({ replies: () => 'Noted.' }),
          contextProviders: [memory],
          sessionStore: store,
        });
        const session = agent.createSession({ userId: uniqueId('ann') });
        await agent.run('I am flying to Lima.', { session });
        await agent.saveSession(session);
        await backend.down();
        try {
          const error = await agent.deleteSession(session.sessionId).catch((e: unknown) => e);
          expect(ProviderError.isInstance(error)).toBe(true);
          expect(BackendUnavailableError.isInstance((error as ProviderError).cause)).toBe(true);
          expect(await store.get(session.sessionId)).toBeDefined();
        } finally {
          await backend.up();
        }
        expect(await agent.deleteSession(session.sessionId)).toBe(true);
        expect(await store.get(session.sessionId)).toBeUndefined();
      },
    );
  });
}
