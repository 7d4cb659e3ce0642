import { describe, expect, it } from 'vitest';
import { ConfigurationError, InvalidInputError, SessionStateError } from '../errors.js';
import { Message } from '../messages/message.js';
import { createAgent } from '../run/create-agent.js';
import { AgentSession } from '../session/agent-session.js';
import type { AgentEvent } from '../contracts/events.js';
import type { GetHistoryArgs, SaveHistoryArgs } from '../contracts/history.js';
import type { ContextProvider } from '../contracts/run-view.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { defineTool } from '../tools/define-tool.js';
import { HistoryProvider } from './history-provider.js';
import { InMemoryHistoryProvider } from './in-memory-history-provider.js';

const texts = (messages: readonly Message[]) => messages.map((m) => Message.text(m) || m.role);
const rag: ContextProvider = {
  sourceId: 'rag',
  beforeRun: ({ context }) => context.extendMessages('rag', [Message.system('doc: the sky is blue')]),
};

describe('HistoryProvider', () => {
  it('stores input then response, attributed, and loads them as history', async () => {
    const history = new InMemoryHistoryProvider({ sourceId: 'h' });
    const client = new ScriptedChatClient({ replies: ['one', 'two'] });
    const agent = createAgent({ client, contextProviders: [history] });
    const session = agent.createSession();
    await agent.run('first', { session });
    const stored = session.state.h!.messages as unknown as Message[];
    expect(stored.map((m) => [Message.text(m), Message.source(m)])).toEqual([
      ['first', { sourceId: 'input', sourceType: 'input' }],
      ['one', { sourceId: 'response', sourceType: 'response' }],
    ]);
    await agent.run('second', { session });
    expect(client.calls[1]!.messages.map((m) => Message.source(m)?.sourceType)).toEqual(['history', 'history', 'input']);
    expect(texts(session.state.h!.messages as unknown as Message[])).toEqual(['first', 'one', 'second', 'two']);
  });

  it('stores injected context only when asked, never other history', async () => {
    const run = async (options: ConstructorParameters<typeof InMemoryHistoryProvider>[0]) => {
      const other = new InMemoryHistoryProvider({ sourceId: 'other' });
      const audit = new InMemoryHistoryProvider({ sourceId: 'audit', loadMessages: false, ...options });
      const agent = createAgent({ client: new ScriptedChatClient({ replies: ['a', 'b'] }), contextProviders: [other, rag, audit] });
      const session = agent.createSession();
      await agent.run('q1', { session });
      await agent.run('q2', { session });
      return texts(session.state.audit!.messages as unknown as Message[]);
    };
    expect(await run({})).toEqual(['q1', 'a', 'q2', 'b']);
    expect(await run({ storeContextMessages: true })).toEqual(['doc: the sky is blue', 'q1', 'a', 'doc: the sky is blue', 'q2', 'b']);
    expect(await run({ storeContextFrom: ['nobody'] })).toEqual(['q1', 'a', 'q2', 'b']);
    expect(await run({ storeContextFrom: ['rag'], storeInputs: false })).toEqual([
      'doc: the sky is blue',
      'a',
      'doc: the sky is blue',
      'b',
    ]);
    expect(await run({ storeOutputs: false })).toEqual(['q1', 'q2']);
  });

  it('loads only the newest maxMessages and never starts a window with orphaned tool results', async () => {
    const ping = defineTool({ name: 'ping', parameters: { type: 'object' }, execute: () => 'pong' });
    const client = new ScriptedChatClient({ replies: [{ toolCalls: [{ name: 'ping' }] }, 'pinged', 'next', 'more'] });
    const agent = createAgent({
      client,
      tools: [ping],
      contextProviders: [new InMemoryHistoryProvider({ sourceId: 'h', maxMessages: 2 })],
    });
    const session = agent.createSession();
    await agent.run('ping please', { session }); // stores user, call, result, reply
    await agent.run('again', { session });
    // the newest 2 are [tool result, 'pinged']: the result's call was cut off, so only 'pinged' loads
    expect(texts(client.calls[2]!.messages)).toEqual(['pinged', 'again']);
    await agent.run('last', { session });
    expect(texts(client.calls[3]!.messages)).toEqual(['again', 'next', 'last']);
  });

  it("hands a backend the run's report channel when loading and storing, attributed to the history provider", async () => {
    const stored: Message[] = [];
    class ReportingHistory extends HistoryProvider {
      constructor() {
        super({ sourceId: 'reporting' });
      }
      async getMessages(_sessionId: string, { report }: GetHistoryArgs): Promise<Message[]> {
        report?.({ code: 'repaired', message: 'dropped 1 repeated entry', data: { duplicates: 1 } });
        return [...stored];
      }
      async saveMessages(_sessionId: string, messages: readonly Message[], { report }: SaveHistoryArgs): Promise<void> {
        stored.push(...messages);
        report?.({ code: 'saved', message: `stored ${messages.length}` });
      }
    }
    const events: AgentEvent[] = [];
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: ['hi'] }),
      contextProviders: [new ReportingHistory()],
      onEvent: (e) => events.push(e),
    });
    await agent.run('hello', { session: agent.createSession() });
    const diagnostics = events.filter((e) => e.type === 'provider-diagnostic');
    expect(diagnostics.map((e) => [e.sourceId, e.code])).toEqual([
      ['reporting', 'repaired'],
      ['reporting', 'saved'],
    ]);
  });

  it('a backend needs only getMessages and saveMessages', async () => {
    const rows = new Map<string, Message[]>();
    class MapHistory extends HistoryProvider {
      constructor() {
        super({ sourceId: 'map', maxMessages: 3 });
      }
      async getMessages(sessionId: string, { limit }: GetHistoryArgs) {
        return (rows.get(sessionId) ?? []).slice(-(limit ?? Infinity));
      }
      async saveMessages(sessionId: string, messages: readonly Message[]) {
        rows.set(sessionId, [...(rows.get(sessionId) ?? []), ...messages]);
      }
    }
    const client = new ScriptedChatClient({ replies: ['a', 'b'] });
    const agent = createAgent({ client, contextProviders: [new MapHistory()] });
    await agent.run('one', { session: agent.getSessionById('u1') });
    await agent.run('two', { session: agent.getSessionById('u1') });
    expect(texts(client.calls[1]!.messages)).toEqual(['one', 'a', 'two']);
    expect(rows.get('u1')).toHaveLength(4);
    expect(HistoryProvider.isInstance(new MapHistory())).toBe(true);
    expect(HistoryProvider.isInstance({ sourceId: 'x' })).toBe(false);
  });

  it('does not store a retried turn twice (message ids de-duplicate)', async () => {
    const history = new InMemoryHistoryProvider();
    const session = new AgentSession();
    const turn = [Message.user('hi'), Message.assistant('hello')];
    await history.saveMessages(session.sessionId, turn, { state: session.stateOf('memory') });
    await history.saveMessages(session.sessionId, turn, { state: session.stateOf('memory') });
    expect(await history.getMessages(session.sessionId, { state: session.stateOf('memory') })).toEqual(turn);
  });

  it('gives a SessionStateError naming the path when its state is corrupt', async () => {
    const agent = createAgent({ client: new ScriptedChatClient({ replies: ['x'] }) });
    const session = agent.createSession({ state: { memory: { messages: [Message.user('ok'), { id: 1 } as never] } } });
    const error = await agent.run('hi', { session }).catch((e: unknown) => e);
    expect(SessionStateError.isInstance((error as Error).cause)).toBe(true);
    expect(((error as Error).cause as SessionStateError).path).toBe('$.state.memory.messages[1].id');
    const notArray = agent.createSession({ state: { memory: { messages: 'oops' } } });
    await expect(agent.run('hi', { session: notArray })).rejects.toThrow(/\$\.state\.memory\.messages: must be an array/);
  });

  it('rejects a bad maxMessages', () => {
    expect(() => new InMemoryHistoryProvider({ maxMessages: 0 })).toThrow(ConfigurationError);
  });

  it("forkMessages refuses a message not in the history (unknown, empty, of another session) with InvalidInputError, the caller's mistake; nothing is written", async () => {
    const rows = new Map<string, Message[]>();
    class MapHistory extends HistoryProvider {
      constructor() {
        super({ sourceId: 'map' });
      }
      async getMessages(sessionId: string) {
        return rows.get(sessionId) ?? [];
      }
      async saveMessages(sessionId: string, messages: readonly Message[]) {
        rows.set(sessionId, [...(rows.get(sessionId) ?? []), ...messages]);
      }
    }
    const elsewhere = Message.user('in another session');
    for (const provider of [new MapHistory(), new InMemoryHistoryProvider({ sourceId: 'map' })]) {
      const kind = provider.constructor.name;
      const session = new AgentSession();
      const other = new AgentSession();
      await provider.saveMessages(session.sessionId, [Message.user('a'), Message.assistant('b')], { state: session.stateOf('map') });
      await provider.saveMessages(other.sessionId, [elsewhere], { state: other.stateOf('map') });
      for (const atMessageId of ['no-such-message', '', elsewhere.id]) {
        const to = new AgentSession();
        const toState = structuredClone(session.stateOf('map'));
        const error = await provider
          .forkMessages(session.sessionId, to.sessionId, { fromState: session.stateOf('map'), toState, atMessageId })
          .catch((e: unknown) => e);
        expect(InvalidInputError.isInstance(error), `${kind} at ${JSON.stringify(atMessageId)}`).toBe(true);
        expect(ConfigurationError.isInstance(error)).toBe(false);
        expect((error as Error).message).toBe(
          `History provider "map": message ${JSON.stringify(atMessageId)} is not in the history of the session forked; nothing was copied.`,
        );
        expect(rows.has(to.sessionId)).toBe(false);
        expect(toState).toEqual(session.stateOf('map'));
      }
    }
  });
});

describe('an input reusing the id of another stored message', () => {
  /** A history kept by a backend of its own (the base loader). */
  class ListHistory extends InMemoryHistoryProvider {
    readonly stored: Message[] = [];
    override async getMessages(): Promise<Message[]> {
      return [...this.stored];
    }
    override async saveMessages(_: string, messages: readonly Message[]): Promise<void> {
      this.stored.push(...messages);
    }
  }

  it('is the caller’s mistake, refused before the model is called, whatever the history’s onError; the same message again is a retry', async () => {
    for (const history of [new InMemoryHistoryProvider({ onError: 'skip' }), new ListHistory({ sourceId: 'list', onError: 'skip' })]) {
      const client = new ScriptedChatClient({ replies: ['first', 'again'] });
      const agent = createAgent({ client, contextProviders: [history] });
      const session = agent.createSession();
      const first = Message.user('book a table', { id: 'm1' });
      await agent.run(first, { session });
      const error = await agent.run(Message.user('cancel it', { id: 'm1' }), { session }).catch((e: unknown) => e);
      expect(InvalidInputError.isInstance(error), String(error)).toBe(true);
      expect((error as Error).message).toMatch(/Input message "m1" has the id of another message stored in session/);
      expect(client.calls).toHaveLength(1);
      expect((await agent.run(first, { session })).text).toBe('again');
    }
  });
});
