import {
  ConcurrencyError,
  createAgent,
  createHashEmbedding,
  type EmbeddingGenerator,
  type HistoryProvider,
  InMemoryVectorIndex,
  InMemoryWorkingMemoryStore,
  Message,
  SemanticRecallProvider,
  WORKING_MEMORY_TOOL,
  WorkingMemoryProvider,
  type Agent,
  type AgentResponse,
  type ContextProvider,
  type SessionStore,
} from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { afterAll, afterEach, beforeAll, describe, expect } from 'vitest';
import type { HistoryProviderCreateOptions } from './history-provider-suite.js';
import { checkCapability, createRegistrar, randomTag, type ConformanceSuiteOptions, type MaybePromise } from './suite-options.js';

/** What the store of `describeHostedConcurrency` can do; the suite adapts the tests that depend on it. */
export interface HostedConcurrencyCapabilities {
  /**
   * The store has turn leases (`leaseTurn` and `releaseTurn`). True: the double-submit test runs, and
   * a store without them fails it. False: it is skipped. Default (undeclared): decided by whether
   * the store has them, so a store that lost them only skips it.
   */
  leases?: boolean;
}

/** Options of `describeHostedConcurrency`. */
export interface HostedConcurrencySuiteOptions extends ConformanceSuiteOptions<SessionStore> {
  /**
   * Creates a session store. Called once per simulated server per test; every store it returns
   * must share one backend (the same data), as separate processes would. The suite uses fresh
   * random session ids.
   */
  createStore: () => MaybePromise<SessionStore>;
  /**
   * Creates the history provider the agents run with, with exactly these options; every provider
   * it returns must share one backend. Absent: the agents keep the conversation in the session
   * (the default in-memory history), so the session store carries the history too.
   */
  createHistory?: (options: HistoryProviderCreateOptions) => MaybePromise<HistoryProvider>;
  /** How many agents (servers, each with its own store instance) share the requests. Default 3. */
  servers?: number;
  /** The numbers of concurrent requests on one session, one test each. Default `[5, 50]`. */
  requests?: readonly number[];
  /** What the store can do. Undeclared capabilities are decided by the methods the store has. */
  capabilities?: HostedConcurrencyCapabilities;
}

/** How many times the suite runs again a request whose `ConcurrencyError` says nothing was stored. */
const MAX_RETRY_ROUNDS = 5;

/**
 * Defines a vitest suite of the hosted cycle under concurrency: N requests at once on one new
 * session, each `agent.run(message, { sessionId, userId })` on one of several agents (servers)
 * whose stores share a backend, with a chat client that holds every run at the model call until
 * all N are there (so they interleave the same way every time, no timing involved). Every request
 * must end in success or in a `ConcurrencyError` that says whether its turn is stored
 * (`turnStored`), and that must be true; the requests whose turn is not stored are run again with
 * the same message, as an app would. Afterwards every input is stored exactly once, right before
 * exactly one reply to it, and the session belongs to the user. And one message sent to every
 * server at once (a double submit): with a store that has turn leases, the model is called once
 * and every caller gets the one stored reply (skipped for a store without them, failed for one that
 * declares `capabilities.leases` without them). And a delete wins
 * over a running turn: `deleteSession` or `deleteUserData` on one server while a turn of the session
 * runs on another (the model answering; its save landing between the delete's cleanup and the
 * store's delete; its recall indexing after the save) leaves nothing of the session: no history,
 * recall vectors, working memory, session or listing entry, and the turn, unless it was stored
 * before the delete, fails with a `ConcurrencyError` with `sessionDeleted: true` and
 * `turnStored: false`. Call it at the top level of a test file.
 */
export function describeHostedConcurrency(name: string, options: HostedConcurrencySuiteOptions): void {
  const servers = options.servers ?? 3;
  const counts = options.requests ?? [5, 50];

  describe(`${name} (hosted runs under concurrency)`, options.timeout === undefined ? {} : { timeout: options.timeout }, () => {
    const { test, finish } = createRegistrar(name, options.expectedFailures);
    afterAll(finish);
    const tag = randomTag();
    let counter = 0;
    const created: SessionStore[] = [];
    if (options.setup) beforeAll(() => options.setup!());
    if (options.teardown) afterAll(() => options.teardown!());
    afterEach(async () => {
      const list = created.splice(0);
      if (options.cleanup) for (const store of list) await options.cleanup(store);
    });

    for (const count of counts) {
      test(`${count} concurrent hosted runs on one new session: each input is stored once with one reply, and every failure says truly whether its turn is stored`, async () => {
        const n = ++counter;
        const sessionId = `hosted-${tag}-${n}`;
        const userId = `user-${tag}-${n}`;
        const sourceId = `chat-${tag}-${n}`;
        const gate = barrier(count);
        const client = new ScriptedChatClient({
          replies: async (messages) => {
            const input = messages.at(-1)!;
            await gate.arrive(input.id);
            return { text: `re: ${Message.text(input)}` };
          },
        });
        const agents: Agent[] = [];
        for (let i = 0; i < servers; i++) {
          const store = await options.createStore();
          created.push(store);
          const history = options.createHistory ? [await options.createHistory({ sourceId })] : [];
          agents.push(createAgent({ client, sessionStore: store, contextProviders: history, name: `server-${i}` }));
        }
        const inputs = Array.from({ length: count }, (_, i) => Message.user(`question ${i}`, { id: `${sessionId}-q${i}` }));
        const request = (i: number): Promise<AgentResponse> =>
          agents[i % servers]!.run(inputs[i]!, { sessionId, userId }).catch((error: unknown) => {
            gate.leave(inputs[i]!.id);
            throw error;
          });

        let batch = inputs.map((_, i) => i);
        let results = await Promise.allSettled(batch.map(request));
        for (let round = 1; ; round++) {
          const stored = new Set((await historyOf(agents[0]!, sessionId, userId)).map((m) => m.id));
          const again: number[] = [];
          results.forEach((outcome, k) => {
            const i = batch[k]!;
            if (outcome.status === 'fulfilled') {
              expect(outcome.value.text).toBe(`re: question ${i}`);
              expect(outcome.value.sessionId).toBe(sessionId);
              expect(stored.has(inputs[i]!.id), `request ${i} succeeded, so its turn is stored`).toBe(true);
              return;
            }
            const error = outcome.reason as unknown;
            expect(ConcurrencyError.isInstance(error), `request ${i} failed with ${String(error)}`).toBe(true);
            const { turnStored } = error as ConcurrencyError;
            expect(typeof turnStored, `request ${i}: the ConcurrencyError says whether its turn is stored`).toBe('boolean');
            expect(stored.has(inputs[i]!.id), `request ${i}: turnStored is ${turnStored}`).toBe(turnStored);
            if (!turnStored) again.push(i);
          });
          if (again.length === 0) break;
          expect(round, `requests still failing after ${MAX_RETRY_ROUNDS} rounds of retries`).toBeLessThanOrEqual(MAX_RETRY_ROUNDS);
          batch = again;
          results = await Promise.allSettled(batch.map(request));
        }

        const history = await historyOf(agents[0]!, sessionId, userId);
        expect(history).toHaveLength(2 * count);
        inputs.forEach((input, i) => {
          const at = history.findIndex((m) => m.id === input.id);
          expect(at, `question ${i} is stored`).toBeGreaterThanOrEqual(0);
          expect(
            history.filter((m) => m.id === input.id),
            `question ${i} is stored once`,
          ).toHaveLength(1);
          const replies = history.filter((m) => m.role === 'assistant' && Message.text(m) === `re: question ${i}`);
          expect(replies, `question ${i} has one reply`).toHaveLength(1);
          expect(history[at + 1], `the reply follows question ${i}`).toBe(replies[0]);
        });
        const session = await agents[1 % servers]!.getSession(sessionId, { userId });
        expect(session?.metadata.userId).toBe(userId);
        expect(await agents[0]!.getSession(sessionId, { userId: `${userId}-other` })).toBeUndefined();
      });
    }

    /**
     * Two servers on one session: server 0 runs a turn with the history, recall vectors (onTurnStored)
     * and a session's working memory (written by a tool call in the turn), server 1 deletes. `hold`
     * decides where the turn waits; `storeOf` wraps server 1's store.
     */
    const deleteRig = async (rig: { holdEmbedding?: boolean; storeOf?: (store: SessionStore) => SessionStore } = {}) => {
      const n = ++counter;
      const sessionId = `hosted-${tag}-${n}`;
      const userId = `user-${tag}-${n}`;
      const sourceId = `chat-${tag}-${n}`;
      const model = gate();
      const modelReached = gate();
      const embedding = gate();
      const embeddingReached = gate();
      const client = new ScriptedChatClient({
        replies: async (messages) => {
          const question = Message.text([...messages].reverse().find((m) => m.role === 'user')!);
          if (messages.at(-1)!.role !== 'user') return { text: `re: ${question}` };
          if (question === 'second') {
            modelReached.open();
            await model.opened;
          }
          return { toolCalls: [{ name: WORKING_MEMORY_TOOL, arguments: { memory: `# Notes\n- ${question}\n` } }] };
        },
      });
      const hash = createHashEmbedding({ dimensions: 64 });
      const embeddings: EmbeddingGenerator = {
        dimensions: 64,
        embed: async (values, options) => {
          if (rig.holdEmbedding && values.some((v) => v.includes('re: second'))) {
            embeddingReached.open();
            await embedding.opened;
          }
          return hash.embed(values, options);
        },
      };
      const index = new InMemoryVectorIndex();
      const memory = new InMemoryWorkingMemoryStore();
      const agents: Agent[] = [];
      for (let i = 0; i < 2; i++) {
        const store = await options.createStore();
        created.push(store);
        const providers: ContextProvider[] = options.createHistory ? [await options.createHistory({ sourceId })] : [];
        providers.push(
          new SemanticRecallProvider({ embeddings, index, scope: 'session' }),
          new WorkingMemoryProvider({ template: '# Notes\n', store: memory, scope: 'session' }),
        );
        const sessionStore = i === 1 && rig.storeOf ? rig.storeOf(store) : store;
        agents.push(createAgent({ client, sessionStore, contextProviders: providers, name: `server-${i}` }));
      }
      const [runner, deleter] = agents as [Agent, Agent];
      const first = await runner.run(Message.user('first', { id: `${sessionId}-q1` }), { sessionId, userId });
      expect(first.text).toBe('re: first');
      expect(await index.list({ sessionId }), 'the first turn is indexed').not.toEqual([]);
      expect(await memory.listUser(userId), 'the first turn wrote working memory').not.toEqual([]);
      const second = () => runner.run(Message.user('second', { id: `${sessionId}-q2` }), { sessionId, userId });
      /** Asserts that nothing of the session is left: session, listing, history, vectors, working memory. */
      const nothingLeft = async () => {
        expect(await deleter.getSession(sessionId), 'the session is not stored').toBeUndefined();
        expect((await deleter.listSessions({ userId })).sessions, 'the user has no session listed').toEqual([]);
        if (options.createHistory) {
          const history = await options.createHistory({ sourceId });
          expect(await history.getMessages(sessionId, { state: {} }), 'no history is left').toEqual([]);
        }
        expect(await index.list({ sessionId }), 'no recall vectors are left').toEqual([]);
        expect(await memory.listUser(userId), 'no working memory is left').toEqual([]);
        expect(await deleter.deleteUserData(userId), 'a second delete finds nothing').toEqual({ sessions: 0 });
      };
      return {
        sessionId,
        userId,
        deleter,
        second,
        nothingLeft,
        modelReached: modelReached.opened,
        releaseModel: model.open,
        embeddingReached: embeddingReached.opened,
        releaseEmbedding: embedding.open,
      };
    };

    for (const how of ['deleteSession', 'deleteUserData'] as const) {
      test(`${how} on another server while a hosted turn runs wins: the turn fails saying the session was deleted, and nothing of it is left (history, recall vectors, working memory, session, listing)`, async () => {
        const rig = await deleteRig();
        const running = rig.second();
        await rig.modelReached;
        if (how === 'deleteSession') expect(await rig.deleter.deleteSession(rig.sessionId)).toBe(true);
        else expect(await rig.deleter.deleteUserData(rig.userId)).toEqual({ sessions: 1 });
        rig.releaseModel();
        await expectDeletedWhileRunning(running, rig.sessionId);
        await rig.nothingLeft();
      });
    }

    test("a turn whose save lands between a delete's first cleanup and the store's delete succeeds, and the delete still leaves nothing of it", async () => {
      let running: Promise<unknown> | undefined;
      let release = () => {};
      const rig = await deleteRig({
        storeOf: (store) => ({
          ...forward(store),
          delete: async (id, o) => {
            release();
            await running?.catch(() => {});
            return store.delete(id, o);
          },
        }),
      });
      release = rig.releaseModel;
      running = rig.second();
      await rig.modelReached;
      expect(await rig.deleter.deleteSession(rig.sessionId)).toBe(true);
      expect(((await running) as AgentResponse).text).toBe('re: second');
      await rig.nothingLeft();
    });

    test('a delete that lands after the save, while the turn is being indexed for recall (onTurnStored): the turn removes what it indexed and fails saying so', async () => {
      const rig = await deleteRig({ holdEmbedding: true });
      rig.releaseModel();
      const running = rig.second();
      await rig.embeddingReached;
      expect(await rig.deleter.deleteSession(rig.sessionId)).toBe(true);
      rig.releaseEmbedding();
      await expectDeletedWhileRunning(running, rig.sessionId);
      await rig.nothingLeft();
    });

    test('one message sent to every server at once (a double submit): the model is called once, and every caller gets the stored reply', async (context) => {
      const n = ++counter;
      const sessionId = `hosted-${tag}-${n}`;
      const userId = `user-${tag}-${n}`;
      const sourceId = `chat-${tag}-${n}`;
      let waitingServers = 0;
      let allWaiting!: () => void;
      const waiting = new Promise<void>((resolve) => {
        allWaiting = resolve;
      });
      // The model answers once every other server found the turn running (and waits for it).
      const client = new ScriptedChatClient({
        replies: async (messages) => {
          await waiting;
          return { text: `re: ${Message.text(messages.at(-1)!)}` };
        },
      });
      const agents: Agent[] = [];
      for (let i = 0; i < servers; i++) {
        const store = await options.createStore();
        created.push(store);
        const { leaseTurn, releaseTurn } = store;
        checkCapability(context, {
          suite: name,
          capability: 'leases',
          declared: options.capabilities?.leases,
          present: typeof leaseTurn === 'function' && typeof releaseTurn === 'function',
          methods: 'leaseTurn and releaseTurn',
        });
        if (typeof leaseTurn !== 'function' || typeof releaseTurn !== 'function') return;
        let found = false;
        const watched: SessionStore = {
          get: store.get.bind(store),
          set: store.set.bind(store),
          delete: store.delete.bind(store),
          releaseTurn: releaseTurn.bind(store),
          leaseTurn: async (id, lease) => {
            const taken = await leaseTurn.call(store, id, lease);
            if (!taken && !found) {
              found = true;
              if (++waitingServers === servers - 1) allWaiting();
            }
            return taken;
          },
        };
        const history = options.createHistory ? [await options.createHistory({ sourceId })] : [];
        agents.push(createAgent({ client, sessionStore: watched, contextProviders: history, name: `server-${i}` }));
      }
      if (servers === 1) allWaiting();
      const message = Message.user('book a table for two', { id: `${sessionId}-q` });
      // Two copies per server: one waits in its process for the other, or for another server.
      const responses = await Promise.all(
        Array.from({ length: servers * 2 }, (_, i) => agents[i % servers]!.run(message, { sessionId, userId })),
      );
      expect(client.calls).toHaveLength(1);
      const history = await historyOf(agents[0]!, sessionId, userId);
      expect(history.map((m) => m.id)).toEqual([message.id, history[1]!.id]);
      for (const response of responses) {
        expect(response.text).toBe('re: book a table for two');
        expect(response.sessionId).toBe(sessionId);
        expect(response.messages.map((m) => m.id)).toEqual([history[1]!.id]);
      }
    });
  });
}

/** Something to wait for, opened from outside. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/** A store that calls `store` for every method it has (its optional ones included). */
function forward(store: SessionStore): SessionStore {
  const { list, leaseTurn, releaseTurn } = store;
  return {
    get: store.get.bind(store),
    set: store.set.bind(store),
    delete: store.delete.bind(store),
    ...(typeof list === 'function' ? { list: list.bind(store) } : {}),
    ...(typeof leaseTurn === 'function' ? { leaseTurn: leaseTurn.bind(store) } : {}),
    ...(typeof releaseTurn === 'function' ? { releaseTurn: releaseTurn.bind(store) } : {}),
  };
}

/** Asserts that `run` failed because its session was deleted while the turn ran, nothing of it kept. */
async function expectDeletedWhileRunning(run: Promise<unknown>, sessionId: string): Promise<void> {
  const error = await run.then(
    () => new Error('the run succeeded'),
    (e: unknown) => e,
  );
  expect(ConcurrencyError.isInstance(error), `the run failed with ${String(error)}`).toBe(true);
  const { sessionDeleted, turnStored } = error as ConcurrencyError;
  expect((error as ConcurrencyError).sessionId).toBe(sessionId);
  expect(sessionDeleted, 'the ConcurrencyError says the session was deleted (sessionDeleted: true)').toBe(true);
  expect(turnStored, 'the ConcurrencyError says nothing of the turn is stored (turnStored: false)').toBe(false);
}

/** The stored conversation of the session, through `agent` (loading the session for the user). */
async function historyOf(agent: Agent, sessionId: string, userId: string): Promise<Message[]> {
  const session = await agent.getSession(sessionId, { userId });
  if (!session) throw new Error(`Session ${JSON.stringify(sessionId)} of user ${JSON.stringify(userId)} is not stored.`);
  return agent.getHistory(session);
}

/**
 * Holds every caller of `arrive` until `count` callers arrived or left (a request that failed before
 * reaching the model leaves, so the others never wait for it); later callers pass at once.
 */
function barrier(count: number): { arrive(id: string): Promise<void>; leave(id: string): void } {
  const arrived = new Set<string>();
  const left = new Set<string>();
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  const check = () => {
    if (arrived.size + left.size >= count) open();
  };
  return {
    arrive(id) {
      arrived.add(id);
      check();
      return opened;
    },
    leave(id) {
      if (!arrived.has(id)) left.add(id);
      check();
    },
  };
}
