import { describe, expect, it } from 'vitest';
import { HistoryProvider } from '../history/history-provider.js';
import { Message } from '../messages/message.js';
import { InMemorySessionStore } from '../session/in-memory-session-store.js';
import type { GetHistoryArgs } from '../contracts/history.js';
import type { ContextProvider } from '../contracts/run-view.js';
import type { SessionStore } from '../contracts/session-store.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { createAgent } from './create-agent.js';

/** A history kept outside the session, by session id, as Redis or Cosmos DB keep it. */
class ExternalHistory extends HistoryProvider {
  readonly byId = new Map<string, Message[]>();

  constructor() {
    super({ sourceId: 'external' });
  }

  async getMessages(sessionId: string, { limit }: GetHistoryArgs): Promise<Message[]> {
    const all = this.byId.get(sessionId) ?? [];
    return limit === undefined ? [...all] : all.slice(-limit);
  }

  async saveMessages(sessionId: string, messages: readonly Message[]): Promise<void> {
    this.byId.set(sessionId, [...(this.byId.get(sessionId) ?? []), ...messages]);
  }

  override async clearMessages(sessionId: string): Promise<void> {
    this.byId.delete(sessionId);
  }
}

/** Something to wait for, opened from outside. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/** A store whose reads stop answering (a stalled backend) once `stall()` is called; `reads` counts the reads that hang. */
function stallingStore(inner: SessionStore) {
  let stalled = false;
  const hanging = { reads: 0 };
  const store: SessionStore = {
    get: (id, o) => {
      if (!stalled) return inner.get(id, ...(o ? [o] : []));
      hanging.reads++;
      return new Promise(() => {});
    },
    set: (s, o) => inner.set(s, o),
    delete: (id, o) => inner.delete(id, o),
  };
  return { store, hanging, stall: () => (stalled = true) };
}

describe("a hosted run's look at the store after a failure honours the run's signal", () => {
  it('a run aborted while the store stalls fails with the abort reason at once, not when the store answers', async () => {
    const { store, hanging, stall } = stallingStore(new InMemorySessionStore());
    const reached = gate();
    const client = new ScriptedChatClient({
      replies: async () => {
        reached.open();
        return new Promise<string>(() => {}); // the model never answers
      },
    });
    const agent = createAgent({ client, sessionStore: store, contextProviders: [new ExternalHistory()] });
    const controller = new AbortController();
    const running = agent.run(Message.user('hello', { id: 'q1' }), { sessionId: 's1', signal: controller.signal });
    await reached.opened;
    stall();
    const reason = new Error('the caller went away');
    controller.abort(reason);
    await expect(running).rejects.toBe(reason);
    expect(hanging.reads, 'the run did look at the store').toBe(1);
  });

  it('a run aborted after its session was deleted still removes what it stored, after failing at once', async () => {
    const inner = new InMemorySessionStore();
    const history = new ExternalHistory();
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let watching = false;
    // The store answers the run's look only once the test lets it: the caller has left by then.
    const slow: SessionStore = {
      get: async (id, o) => {
        const stored = await inner.get(id, ...(o ? [o] : []));
        if (watching && stored === undefined) await released;
        return stored;
      },
      set: (s, o) => inner.set(s, o),
      delete: (id) => inner.delete(id),
    };
    const reached = gate();
    const client = new ScriptedChatClient({
      replies: async (_messages, options) => {
        reached.open();
        await new Promise((_, reject) => options.signal?.addEventListener('abort', () => reject(options.signal!.reason)));
        return 'never';
      },
    });
    const agent = createAgent({ client, sessionStore: slow, contextProviders: [history], persistence: 'model-call' });
    const controller = new AbortController();
    const running = agent.run(Message.user('hello', { id: 'q1' }), { sessionId: 's1', signal: controller.signal });
    await reached.opened;
    watching = true;
    expect(await createAgent({ client, sessionStore: inner, contextProviders: [history] }).deleteSession('s1')).toBe(true);
    await history.saveMessages('s1', [Message.user('hello', { id: 'q1' })]); // as a late save of the turn would
    const reason = new Error('the caller went away');
    controller.abort(reason);
    await expect(running).rejects.toBe(reason);
    expect(history.byId.has('s1'), 'not removed yet: the look at the store has not answered').toBe(true);
    release();
    await expect.poll(() => history.byId.has('s1'), { interval: 1, timeout: 2000 }).toBe(false);
  });
});

describe("a delete during a hosted turn with persistence 'model-call' and the history in the session", () => {
  it('the next model call finds the session deleted: the run fails saying so, and the session is not stored again', async () => {
    const store = new InMemorySessionStore();
    const toolRunning = gate();
    const toolDone = gate();
    const client = new ScriptedChatClient({ replies: [{ toolCalls: [{ name: 'wait', arguments: {} }] }, 'done'] });
    const wait = {
      name: 'wait',
      description: 'waits',
      parameters: { type: 'object' as const, properties: {} },
      execute: async () => {
        toolRunning.open();
        await toolDone.opened;
        return 'waited';
      },
    };
    const agent = createAgent({ client, sessionStore: store, tools: [wait], persistence: 'model-call' });
    const running = agent.run(Message.user('hello', { id: 'q1' }), { sessionId: 's1', userId: 'ada' });
    await toolRunning.opened;
    expect((await store.get('s1'))?.session.state.memory, 'the first model call is in the stored session').toBeDefined();
    expect(await createAgent({ client, sessionStore: store }).deleteSession('s1')).toBe(true);
    toolDone.open();
    const error = await running.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((error as { sessionDeleted?: boolean } | undefined)?.sessionDeleted, String(error)).toBe(true);
    expect(await store.get('s1')).toBeUndefined();
    expect((await store.list({ userId: 'ada' })).sessions).toEqual([]);
  });
});

describe("a hosted run's look at the store after its onTurnStored hooks honours the run's signal", () => {
  it('a caller that aborts while the store stalls is answered with the abort reason, not held until the store answers', async () => {
    const { store, hanging, stall } = stallingStore(new InMemorySessionStore());
    const controller = new AbortController();
    const reason = new Error('the caller went away');
    const recall: ContextProvider = {
      sourceId: 'recall',
      onTurnStored: () => {
        stall();
        controller.abort(reason);
      },
    };
    const agent = createAgent({
      client: new ScriptedChatClient({ replies: ['ok'] }),
      sessionStore: store,
      contextProviders: [new ExternalHistory(), recall],
    });
    const running = agent.run(Message.user('hello', { id: 'q1' }), { sessionId: 's1', signal: controller.signal });
    await expect(running).rejects.toBe(reason);
    expect(hanging.reads).toBe(1);
  });
});
