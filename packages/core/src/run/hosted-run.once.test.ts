import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConcurrencyError, ConfigurationError, InvalidInputError } from '../errors.js';
import { InMemoryHistoryProvider } from '../history/in-memory-history-provider.js';
import { Message } from '../messages/message.js';
import type { GetHistoryArgs } from '../contracts/history.js';
import { InMemorySessionStore } from '../session/in-memory-session-store.js';
import type { AgentEvent } from '../contracts/events.js';
import type { SessionStore, TurnLease } from '../contracts/session-store.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { createAgent } from './create-agent.js';
import { leaseKey } from './running-turns.js';

const texts = (messages: unknown) => (messages as Message[]).map((m) => `${m.role}:${Message.text(m)}`);
const stored = async (store: SessionStore, id: string) => (await store.get(id))!.session.state.memory!.messages as Message[];

afterEach(() => {
  vi.useRealTimers();
});

/** A model that holds every call until `release()`, counting calls; `started` resolves at the first call. */
function heldModel() {
  let release!: () => void;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  let arrived!: () => void;
  const started = new Promise<void>((resolve) => {
    arrived = resolve;
  });
  const waiters: { calls: number; resolve: () => void }[] = [];
  /** Resolves once the model has been called `calls` times (each call then waits for `release`). */
  const called = (calls: number) => new Promise<void>((resolve) => waiters.push({ calls, resolve }));
  const client = new ScriptedChatClient({
    replies: async (messages, options) => {
      arrived();
      for (const waiter of waiters) if (client.calls.length >= waiter.calls) waiter.resolve();
      await new Promise<void>((resolve, reject) => {
        void held.then(resolve);
        options.signal?.addEventListener('abort', () => reject(options.signal!.reason), { once: true });
      });
      return `re: ${Message.text(messages.at(-1)!)}`;
    },
  });
  return { client, release, started, called };
}

/** A store that tells when a request finds a turn's lease taken by another holder. */
function watchedStore(inner: InMemorySessionStore): SessionStore & { refused: number; waiting: Promise<void> } {
  let seen!: () => void;
  const waiting = new Promise<void>((resolve) => {
    seen = resolve;
  });
  const store = {
    refused: 0,
    waiting,
    get: inner.get.bind(inner),
    set: inner.set.bind(inner),
    delete: inner.delete.bind(inner),
    releaseTurn: inner.releaseTurn.bind(inner),
    async leaseTurn(sessionId: string, lease: TurnLease) {
      const held = await inner.leaseTurn(sessionId, lease);
      if (!held) {
        store.refused++;
        seen();
      }
      return held;
    },
  };
  return store;
}

describe('a turn runs once: a hosted run of a turn running now waits for it', () => {
  it('two hosted runs of one message at once in one process: one model call, both callers get the stored reply, the turn is stored once', async () => {
    const store = new InMemorySessionStore();
    const client = new ScriptedChatClient({ replies: (messages) => `re: ${Message.text(messages.at(-1)!)}` });
    const agent = createAgent({ client, sessionStore: store });
    const message = Message.user('book a table', { id: 'm-1' });
    const [first, second] = await Promise.all([
      agent.run(message, { sessionId: 'c1', userId: 'ada' }),
      agent.run(message, { sessionId: 'c1', userId: 'ada' }),
    ]);
    expect(client.calls).toHaveLength(1);
    const history = await stored(store, 'c1');
    expect(history.map((m) => m.id)).toEqual(['m-1', first.messages[0]!.id]);
    for (const response of [first, second]) {
      expect(response.text).toBe('re: book a table');
      expect(response.sessionId).toBe('c1');
      expect(response.messages.map((m) => m.id)).toEqual([history[1]!.id]);
    }
    expect(second).toEqual(first);
    expect(second).not.toBe(first);
  });

  it('a streaming double submit reads the reply as updates with the stored message id', async () => {
    const store = new InMemorySessionStore();
    const client = new ScriptedChatClient({ replies: (messages) => `re: ${Message.text(messages.at(-1)!)}` });
    const agent = createAgent({ client, sessionStore: store });
    const message = Message.user('streamed twice', { id: 'm-s' });
    const first = agent.runStream(message, { sessionId: 'c2' });
    const second = agent.runStream(message, { sessionId: 'c2' });
    const read = async (stream: typeof first) => {
      const parts: string[] = [];
      for await (const update of stream)
        for (const c of update.contents) if (c.type === 'text') parts.push(`${update.messageId}:${c.text}`);
      return parts;
    };
    const [a, b] = await Promise.all([read(first), read(second)]);
    const replyId = (await stored(store, 'c2'))[1]!.id;
    expect(client.calls).toHaveLength(1);
    expect(a.join('').replaceAll(`${replyId}:`, '')).toBe('re: streamed twice');
    expect(b).toEqual([`${replyId}:re: streamed twice`]);
    expect((await second.response).messages.map((m) => m.id)).toEqual([replyId]);
  });

  it('the same id with other content while the turn runs is an InvalidInputError; only the first message runs and is stored', async () => {
    const store = new InMemorySessionStore();
    const { client, release, started } = heldModel();
    const agent = createAgent({ client, sessionStore: store });
    const first = agent.run(Message.user('one text', { id: 'm-x' }), { sessionId: 'c3' });
    await started;
    const other = await agent.run(Message.user('another text', { id: 'm-x' }), { sessionId: 'c3' }).catch((e: unknown) => e);
    expect(InvalidInputError.isInstance(other)).toBe(true);
    expect((other as Error).message).toContain('"m-x"');
    release();
    await first;
    expect(client.calls).toHaveLength(1);
    expect(texts(await stored(store, 'c3'))).toEqual(['user:one text', 'assistant:re: one text']);
  });

  it("a waiter's own abort ends only its wait: the turn goes on, is stored once, and the model was called once", async () => {
    const store = new InMemorySessionStore();
    const { client, release, started } = heldModel();
    const agent = createAgent({ client, sessionStore: store });
    const message = Message.user('patience', { id: 'm-a' });
    const runner = agent.run(message, { sessionId: 'c4' });
    await started;
    const controller = new AbortController();
    const waiter = agent.run(message, { sessionId: 'c4', signal: controller.signal }).catch((e: unknown) => e);
    const reason = new Error('the tab was closed');
    controller.abort(reason);
    expect(await waiter).toBe(reason);
    release();
    expect((await runner).text).toBe('re: patience');
    expect(client.calls).toHaveLength(1);
    expect(texts(await stored(store, 'c4'))).toEqual(['user:patience', 'assistant:re: patience']);
  });

  it("the runner's failure is the waiter's: the same error, and the model is not called again", async () => {
    const store = new InMemorySessionStore();
    let fail!: (error: Error) => void;
    const failure = new Promise<never>((_, reject) => {
      fail = reject;
    });
    failure.catch(() => {}); // rejected before the model reads it
    const client = new ScriptedChatClient({ replies: () => failure });
    const agent = createAgent({ client, sessionStore: store });
    const message = Message.user('doomed', { id: 'm-f' });
    const runner = agent.run(message, { sessionId: 'c5' }).catch((e: unknown) => e);
    const waiter = agent.run(message, { sessionId: 'c5' }).catch((e: unknown) => e);
    const error = new ConfigurationError('the model key was revoked');
    fail(error);
    expect(await runner).toBe(error);
    expect(await waiter).toBe(error);
    expect(client.calls).toHaveLength(1);
  });

  it("when the runner's own caller aborts it, a waiter runs the turn itself and gets the stored reply", async () => {
    const store = new InMemorySessionStore();
    const { client, release, started } = heldModel();
    const agent = createAgent({ client, sessionStore: store });
    const message = Message.user('still here', { id: 'm-r' });
    const controller = new AbortController();
    const runner = agent.run(message, { sessionId: 'c6', signal: controller.signal }).catch((e: unknown) => e);
    await started;
    const waiter = agent.run(message, { sessionId: 'c6' });
    controller.abort(new Error('the first tab went away'));
    expect(((await runner) as Error).message).toBe('the first tab went away');
    release();
    const response = await waiter;
    expect(response.text).toBe('re: still here');
    expect(client.calls).toHaveLength(2);
    const history = await stored(store, 'c6');
    expect(history.map((m) => m.id)).toEqual(['m-r', response.messages[0]!.id]);
  });

  it('a turn running longer than runningTurns.waitMs: the waiter fails with ConcurrencyError turnRunning, the turn is stored once', async () => {
    const store = new InMemorySessionStore();
    const { client, release, started } = heldModel();
    const agent = createAgent({ client, sessionStore: store, runningTurns: { waitMs: 20 } });
    const message = Message.user('slow one', { id: 'm-w' });
    const runner = agent.run(message, { sessionId: 'c7' });
    await started;
    const error = await agent.run(message, { sessionId: 'c7' }).catch((e: unknown) => e);
    expect(ConcurrencyError.isInstance(error)).toBe(true);
    expect((error as ConcurrencyError).turnRunning).toBe(true);
    expect((error as ConcurrencyError).turnStored).toBeUndefined();
    expect((error as Error).message).toMatch(/"c7".*running in another request.*send the same request again/s);
    release();
    await runner;
    expect(client.calls).toHaveLength(1);
    expect(texts(await stored(store, 'c7'))).toEqual(['user:slow one', 'assistant:re: slow one']);
  });

  it('runs of different turns, string inputs and runs of other users are not held back by a running turn', async () => {
    const store = new InMemorySessionStore();
    const { client, release, started } = heldModel();
    const agent = createAgent({ client, sessionStore: store, runningTurns: { waitMs: 0 } });
    const first = agent.run(Message.user('same', { id: 'm-d' }), { sessionId: 'c8', userId: 'ada' });
    await started;
    const others = [
      agent.run(Message.user('other', { id: 'm-e' }), { sessionId: 'c8', userId: 'ada' }),
      agent.run('same', { sessionId: 'c8', userId: 'ada' }),
    ];
    const bob = agent.run(Message.user('same', { id: 'm-d' }), { sessionId: 'c8', userId: 'bob' }).catch((e: unknown) => e);
    expect(InvalidInputError.isInstance(await bob), "bob runs (and is refused: not his session); he never waits for ada's turn").toBe(true);
    release();
    await Promise.all([first, ...others]);
    expect(client.calls).toHaveLength(3);
  });

  it('refuses a bad runningTurns at createAgent', () => {
    const client = new ScriptedChatClient({ replies: [] });
    for (const runningTurns of [{ waitMs: -1 }, { waitMs: 1.5 }, { leaseMs: 10 }, { leaseMs: 4_000_000 }, { wait: 1 }, 'soon']) {
      expect(() => createAgent({ client, runningTurns: runningTurns as never })).toThrow(ConfigurationError);
    }
  });
});

describe('a turn runs once across processes: through the session store lease', () => {
  it('two agents (two processes) on one store: one model call, the second answers with the reply the first stored', async () => {
    const store = watchedStore(new InMemorySessionStore());
    const { client, release, started } = heldModel();
    const [a, b] = [createAgent({ client, sessionStore: store }), createAgent({ client, sessionStore: store })];
    const message = Message.user('across', { id: 'm-p' });
    const first = a.run(message, { sessionId: 'p1', userId: 'ada' });
    await started;
    const second = b.run(message, { sessionId: 'p1', userId: 'ada' });
    await store.waiting;
    release();
    const [one, two] = await Promise.all([first, second]);
    expect(client.calls).toHaveLength(1);
    const history = await stored(store, 'p1');
    expect(history.map((m) => m.id)).toEqual(['m-p', one.messages[0]!.id]);
    expect(two.messages).toEqual(history.slice(1));
    expect(two.text).toBe('re: across');
    expect(two.sessionId).toBe('p1');
    // The lease was released: anyone may take it now.
    expect(await store.leaseTurn!('p1', { turn: await leaseKey([message]), holder: 'someone', ttlMs: 1000 })).toBe(true);
  });

  it.each([
    ['the newest messages hold it', 0, [100]],
    ['others stored 150 messages after it', 150, [100, undefined]],
  ])(
    'the waiting process reads the turn from the newest 100 messages, and the whole history only when they do not hold it (%s)',
    async (_, after, reads) => {
      /** The history of the waiting process, noting the `limit` of each read. */
      class NotedHistory extends InMemoryHistoryProvider {
        limits: (number | undefined)[] = [];
        override getMessages(sessionId: string, args: GetHistoryArgs) {
          this.limits.push(args.limit);
          return super.getMessages(sessionId, args);
        }
      }
      const inner = new InMemorySessionStore();
      const store = watchedStore(inner);
      const older = Array.from({ length: 300 }, (_, i) => (i % 2 ? Message.assistant(`a${i}`) : Message.user(`q${i}`)));
      const { client, release, started } = heldModel();
      await inner.set(
        createAgent({ client })
          .createSession({ sessionId: 'p9', userId: 'ada', state: { memory: { messages: older as never } } })
          .toJSON(),
      );
      const waiting = new NotedHistory();
      const a = createAgent({ client, sessionStore: store, contextProviders: [new InMemoryHistoryProvider()] });
      const b = createAgent({ client, sessionStore: store, contextProviders: [waiting] });
      const message = Message.user('deep', { id: 'm-deep' });
      const first = a.run(message, { sessionId: 'p9', userId: 'ada' });
      await started;
      const second = b.run(message, { sessionId: 'p9', userId: 'ada' });
      await store.waiting;
      release();
      await first;
      if (after > 0) {
        // Another writer stores more turns before the waiting process reads the reply.
        const current = (await inner.get('p9'))!;
        const later = Array.from({ length: after }, (_, i) => (i % 2 ? Message.assistant(`later a${i}`) : Message.user(`later q${i}`)));
        const json = current.session;
        (json.state.memory!.messages as unknown[]).push(...later);
        await inner.set(json, { ifMatch: current.etag });
      }
      const two = await second;
      expect(client.calls).toHaveLength(1);
      expect(two.text).toBe('re: deep');
      expect(waiting.limits).toEqual(reads);
    },
  );

  it('a lease whose holder died expires: the waiting run then runs the turn itself, once', async () => {
    const store = watchedStore(new InMemorySessionStore());
    const client = new ScriptedChatClient({ replies: (messages) => `re: ${Message.text(messages.at(-1)!)}` });
    const agent = createAgent({ client, sessionStore: store });
    const message = Message.user('orphaned', { id: 'm-o' });
    const turn = await leaseKey([message]);
    expect(await store.leaseTurn!('p2', { turn, holder: 'dead-process', ttlMs: 150 })).toBe(true);
    const response = await agent.run(message, { sessionId: 'p2' });
    expect(store.refused).toBeGreaterThan(0);
    expect(response.text).toBe('re: orphaned');
    expect(client.calls).toHaveLength(1);
    expect(texts(await stored(store, 'p2'))).toEqual(['user:orphaned', 'assistant:re: orphaned']);
    expect(await store.releaseTurn!('p2', { turn, holder: 'dead-process' }), 'the dead holder lost its lease').toBe(false);
  });

  it('a lease held past runningTurns.waitMs: ConcurrencyError with turnRunning, and the model is not called', async () => {
    const store = new InMemorySessionStore();
    const client = new ScriptedChatClient({ replies: ['never'] });
    const agent = createAgent({ client, sessionStore: store, runningTurns: { waitMs: 60 } });
    const message = Message.user('busy elsewhere', { id: 'm-b' });
    await store.leaseTurn('p3', { turn: await leaseKey([message]), holder: 'other-process', ttlMs: 60_000 });
    const error = await agent.run(message, { sessionId: 'p3' }).catch((e: unknown) => e);
    expect(ConcurrencyError.isInstance(error) && error.turnRunning).toBe(true);
    expect(client.calls).toHaveLength(0);
  });

  it('the lease is renewed while the run goes on: another process cannot take it after leaseMs', async () => {
    const store = new InMemorySessionStore();
    // The clocks are fake (timers, and performance.now for the store's leases): 350 ms pass, in which
    // the renewals (every third of leaseMs) must keep the lease.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'performance'] });
    const { client, release, started } = heldModel();
    const agent = createAgent({ client, sessionStore: store, runningTurns: { leaseMs: 100 } });
    const message = Message.user('long turn', { id: 'm-l' });
    const run = agent.run(message, { sessionId: 'p4' });
    await started;
    await vi.advanceTimersByTimeAsync(350);
    const turn = await leaseKey([message]);
    expect(await store.leaseTurn('p4', { turn, holder: 'other-process', ttlMs: 1000 })).toBe(false);
    release();
    await run;
    expect(await store.leaseTurn('p4', { turn, holder: 'other-process', ttlMs: 1000 })).toBe(true);
  });

  it('a renewal that finds the lease taken is a turn-lease-failed warning; the run goes on and is stored', async () => {
    const store = new InMemorySessionStore();
    const { client, release, started } = heldModel();
    const events: AgentEvent[] = [];
    const agent = createAgent({ client, sessionStore: store, runningTurns: { leaseMs: 100 }, onEvent: (e) => events.push(e) });
    const message = Message.user('lost lease', { id: 'm-k' });
    const turn = await leaseKey([message]);
    const taken = store.leaseTurn.bind(store);
    // The store forgets the run's lease (as if it expired while the process stalled), and another holder takes it.
    store.leaseTurn = async (sessionId, lease) => {
      if (lease.holder !== 'thief' && (await store.releaseTurn(sessionId, lease)))
        await taken(sessionId, { turn, holder: 'thief', ttlMs: 60_000 });
      return taken(sessionId, lease);
    };
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'performance'] });
    const run = agent.run(message, { sessionId: 'p5' });
    await started;
    await vi.advanceTimersByTimeAsync(150); // past a renewal, which finds the lease taken
    release();
    expect((await run).text).toBe('re: lost lease');
    expect(events.some((e) => e.type === 'warning' && e.code === 'turn-lease-failed')).toBe(true);
  });

  it('a store without leases keeps the behaviour of before: two processes both run the turn, and it is stored once', async () => {
    const inner = new InMemorySessionStore();
    const store: SessionStore = { get: inner.get.bind(inner), set: inner.set.bind(inner), delete: inner.delete.bind(inner) };
    const { client, release, started, called } = heldModel();
    const [a, b] = [createAgent({ client, sessionStore: store }), createAgent({ client, sessionStore: store })];
    const message = Message.user('twice', { id: 'm-t' });
    const first = a.run(message, { sessionId: 'p6' });
    await started;
    const second = b.run(message, { sessionId: 'p6' });
    await called(2); // nothing holds the second back: both are at the model
    release();
    await Promise.allSettled([first, second]);
    expect(client.calls).toHaveLength(2);
    expect(texts(await stored(inner, 'p6'))).toEqual(['user:twice', 'assistant:re: twice']);
  });
});
