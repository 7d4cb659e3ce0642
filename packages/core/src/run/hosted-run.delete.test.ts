import { describe, expect, it } from 'vitest';
import { ConcurrencyError } from '../errors.js';
import { HistoryProvider } from '../history/history-provider.js';
import { Message } from '../messages/message.js';
import { InMemorySessionStore } from '../session/in-memory-session-store.js';
import type { AgentEvent } from '../contracts/events.js';
import type { GetHistoryArgs } from '../contracts/history.js';
import type { ContextProvider } from '../contracts/run-view.js';
import type { SessionStore } from '../contracts/session-store.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { defineTool } from '../tools/define-tool.js';
import type { AgentOptions } from './agent.js';
import { createAgent } from './create-agent.js';

/** A history kept outside the session, by session id, as Redis or Cosmos DB keep it. */
class ExternalHistory extends HistoryProvider {
  readonly byId = new Map<string, Message[]>();
  failClear: Error | undefined;

  constructor() {
    super({ sourceId: 'external' });
  }

  async getMessages(sessionId: string, { limit }: GetHistoryArgs): Promise<Message[]> {
    const all = this.byId.get(sessionId) ?? [];
    return limit === undefined ? [...all] : all.slice(-limit);
  }

  async saveMessages(sessionId: string, messages: readonly Message[]): Promise<void> {
    const stored = this.byId.get(sessionId) ?? [];
    this.byId.set(sessionId, [...stored, ...messages.filter((m) => !stored.some((s) => s.id === m.id))]);
  }

  override async clearMessages(sessionId: string): Promise<void> {
    if (this.failClear) throw this.failClear;
    this.byId.delete(sessionId);
  }
}

/** Something to wait for, released from outside. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/** A model that answers `re: <input>` once `release` is opened, telling `reached` when it is called. */
function heldModel() {
  const reached = gate();
  const release = gate();
  const client = new ScriptedChatClient({
    replies: async (messages) => {
      reached.open();
      await release.opened;
      return `re: ${Message.text(messages.at(-1)!)}`;
    },
  });
  return { client, reached: reached.opened, release: release.open };
}

/** Asserts that `run` failed because its session was deleted while it ran, with nothing of its turn kept. */
async function expectDeletedWhileRunning(run: Promise<unknown>, sessionId: string, turnStored = false): Promise<ConcurrencyError> {
  const error = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(ConcurrencyError.isInstance(error), `the run failed with ${String(error)}`).toBe(true);
  const concurrency = error as ConcurrencyError;
  expect(concurrency.sessionId).toBe(sessionId);
  expect(concurrency.sessionDeleted).toBe(true);
  expect(concurrency.turnStored).toBe(turnStored);
  expect(concurrency.message).toContain('was deleted while this turn ran');
  return concurrency;
}

function agentOn(store: SessionStore, options: Partial<AgentOptions>) {
  return createAgent({ client: new ScriptedChatClient({ replies: () => 'ok' }), sessionStore: store, ...options });
}

describe('a delete wins over a hosted turn running on the session', () => {
  it('deleteSession while the model answers: the run fails saying so, and its late save leaves no history, session or listing', async () => {
    const store = new InMemorySessionStore();
    const history = new ExternalHistory();
    const other = agentOn(store, { contextProviders: [history] }); // another process on the same backends
    await other.run(Message.user('earlier', { id: 'q0' }), { sessionId: 's1', userId: 'ada' });
    const { client, reached, release } = heldModel();
    const running = agentOn(store, { client, contextProviders: [history] }).run(Message.user('book a table', { id: 'q1' }), {
      sessionId: 's1',
      userId: 'ada',
    });
    await reached;
    expect(await other.deleteSession('s1')).toBe(true);
    release();
    await expectDeletedWhileRunning(running, 's1');
    expect(history.byId.has('s1'), 'no history left for the deleted session').toBe(false);
    expect(await store.get('s1')).toBeUndefined();
    expect((await store.list({ userId: 'ada' })).sessions).toEqual([]);
    expect(await other.deleteUserData('ada')).toEqual({ sessions: 0 });
  });

  it('deleteUserData while the turn runs: nothing of the user is left, and a second deleteUserData finds nothing', async () => {
    const store = new InMemorySessionStore();
    const history = new ExternalHistory();
    const { client, reached, release } = heldModel();
    const running = agentOn(store, { client, contextProviders: [history] }).run(Message.user('hello', { id: 'q1' }), {
      sessionId: 's1',
      userId: 'ada',
    });
    await reached;
    const other = agentOn(store, { contextProviders: [history] });
    expect(await other.deleteUserData('ada')).toEqual({ sessions: 1 });
    release();
    await expectDeletedWhileRunning(running, 's1');
    expect([...history.byId.keys()]).toEqual([]);
    expect(await other.deleteUserData('ada')).toEqual({ sessions: 0 });
  });

  it("a turn whose save lands between the delete's cleanup and the store's delete succeeds, and the delete still removes its messages", async () => {
    const inner = new InMemorySessionStore();
    const history = new ExternalHistory();
    const { client, reached, release } = heldModel();
    let running!: Promise<unknown>;
    // The delete's first cleanup has run when the store's delete is called: the turn saves then.
    const deleting: SessionStore = {
      get: inner.get.bind(inner),
      set: (s, o) => inner.set(s, o),
      list: (o) => inner.list(o),
      delete: async (id) => {
        release();
        await running;
        return inner.delete(id);
      },
    };
    running = agentOn(inner, { client, contextProviders: [history] }).run(Message.user('hello', { id: 'q1' }), { sessionId: 's1' });
    await reached;
    expect(await agentOn(deleting, { contextProviders: [history] }).deleteSession('s1')).toBe(true);
    expect(((await running) as { text: string }).text).toBe('re: hello');
    expect(history.byId.has('s1'), 'the turn stored before the delete is removed by it').toBe(false);
    expect(await inner.get('s1')).toBeUndefined();
  });

  it('a delete that lands while onTurnStored hooks write (recall vectors): the run removes what they wrote, then fails saying so', async () => {
    const store = new InMemorySessionStore();
    const vectors = new Map<string, string[]>();
    const indexing = gate();
    const indexed = gate();
    const recall: ContextProvider = {
      sourceId: 'recall',
      onTurnStored: async ({ session, context }) => {
        indexing.open();
        await indexed.opened;
        vectors.set(
          session.sessionId,
          [...context.inputMessages, ...(context.response?.messages ?? [])].map((m) => m.id),
        );
      },
      onSessionDeleted: ({ session }) => {
        vectors.delete(session.sessionId);
      },
    };
    const history = new ExternalHistory();
    const running = agentOn(store, { contextProviders: [history, recall] }).run(Message.user('hello', { id: 'q1' }), {
      sessionId: 's1',
      userId: 'ada',
    });
    await indexing.opened;
    expect(history.byId.get('s1')?.map((m) => m.id)[0]).toBe('q1');
    expect(await agentOn(store, { contextProviders: [history, recall] }).deleteSession('s1')).toBe(true);
    indexed.open();
    await expectDeletedWhileRunning(running, 's1');
    expect(vectors.has('s1'), 'no vectors left for the deleted session').toBe(false);
    expect(history.byId.has('s1')).toBe(false);
  });

  it("a run that fails after storing part of its turn (persistence 'model-call') on a session deleted meanwhile removes that part", async () => {
    const store = new InMemorySessionStore();
    const history = new ExternalHistory();
    const tool = gate();
    const toolRunning = gate();
    const wait = defineTool({
      name: 'wait',
      description: 'waits',
      parameters: { type: 'object', properties: {} },
      execute: async () => {
        toolRunning.open();
        await tool.opened;
        return 'done';
      },
    });
    const client = new ScriptedChatClient({
      replies: [{ toolCalls: [{ name: 'wait', arguments: {} }] }, { error: new Error('model down') }],
    });
    const running = agentOn(store, { client, tools: [wait], persistence: 'model-call', contextProviders: [history] }).run(
      Message.user('hello', { id: 'q1' }),
      { sessionId: 's1' },
    );
    await toolRunning.opened;
    expect(await agentOn(store, { contextProviders: [history] }).deleteSession('s1')).toBe(true);
    expect(history.byId.has('s1')).toBe(false);
    tool.open();
    const error = await expectDeletedWhileRunning(running, 's1');
    expect(String((error.cause as Error | undefined)?.message ?? error.cause)).toContain('model down');
    expect(history.byId.has('s1'), 'the tool result stored after the delete is removed').toBe(false);
  });

  it('a failed run or a turn with onTurnStored hooks on a session nobody deleted keeps its history and fails or succeeds as before', async () => {
    const store = new InMemorySessionStore();
    const history = new ExternalHistory();
    const recall: ContextProvider = { sourceId: 'recall', onTurnStored: () => {} };
    const agent = agentOn(store, { contextProviders: [history, recall] });
    expect((await agent.run(Message.user('hi', { id: 'q1' }), { sessionId: 's1' })).text).toBe('ok');
    const failing = agentOn(store, {
      client: new ScriptedChatClient({ replies: [{ error: new Error('model down') }] }),
      contextProviders: [history],
    });
    await expect(failing.run(Message.user('again', { id: 'q2' }), { sessionId: 's1' })).rejects.toThrow('model down');
    expect(history.byId.get('s1')?.map((m) => m.id)[0]).toBe('q1');
    expect(await store.get('s1')).toBeDefined();
  });

  it('when removing what the turn stored fails, the error says so (turnStored: true) and a second deleteSession removes it', async () => {
    const store = new InMemorySessionStore();
    const history = new ExternalHistory();
    const { client, reached, release } = heldModel();
    const running = agentOn(store, { client, contextProviders: [history] }).run(Message.user('hello', { id: 'q1' }), { sessionId: 's1' });
    await reached;
    const other = agentOn(store, { contextProviders: [history] });
    expect(await other.deleteSession('s1')).toBe(true);
    history.failClear = new Error('history down');
    release();
    const error = await expectDeletedWhileRunning(running, 's1', true);
    expect(error.message).toContain('agent.deleteSession("s1") again');
    expect(history.byId.has('s1')).toBe(true);
    history.failClear = undefined;
    expect(await other.deleteSession('s1')).toBe(false);
    expect(history.byId.has('s1')).toBe(false);
  });

  it('a store that cannot be read after the onTurnStored hooks leaves the run successful, with a session-check-failed warning', async () => {
    const inner = new InMemorySessionStore();
    let reads = 0;
    let failReads = false;
    const flaky: SessionStore = {
      get: async (id, o) => {
        reads++;
        if (failReads) throw new Error('store down');
        return inner.get(id, ...(o ? [o] : []));
      },
      set: (s, o) => inner.set(s, o),
      delete: (id) => inner.delete(id),
    };
    const events: AgentEvent[] = [];
    const recall: ContextProvider = {
      sourceId: 'recall',
      onTurnStored: () => {
        failReads = true;
      },
    };
    const agent = agentOn(flaky, { contextProviders: [new ExternalHistory(), recall], onEvent: (e) => events.push(e) });
    expect((await agent.run(Message.user('hi', { id: 'q1' }), { sessionId: 's1' })).text).toBe('ok');
    expect(reads).toBe(2);
    expect(events.filter((e) => e.type === 'warning').map((e) => (e as { code: string }).code)).toEqual(['session-check-failed']);
  });
});
