import { ConcurrencyError, createAgent, type HistoryProvider, Message, type Agent, type AgentResponse, type SessionStore } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { afterAll, afterEach, beforeAll, describe, expect } from 'vitest';
import type { HistoryProviderCreateOptions } from './history-provider-suite.js';
import { createRegistrar, randomTag, type ConformanceSuiteOptions, type MaybePromise } from './suite-options.js';

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
 * and every caller gets the one stored reply (skipped for a store without them). Call it at the top
 * level of a test file.
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
        if (typeof leaseTurn !== 'function' || typeof releaseTurn !== 'function')
          return context.skip(`${name}: the store has no turn leases`);
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
