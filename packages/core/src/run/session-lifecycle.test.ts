import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkListOptions, pageOfSessions } from '../backend/session-cursor.js';
import { ConcurrencyError, ConfigurationError, ProviderError } from '../errors.js';
import { HistoryProvider } from '../history/history-provider.js';
import { Message } from '../messages/message.js';
import { withPolicies } from '../policies/with-policies.js';
import { FileSessionStore } from '../session/file-session-store.js';
import { InMemorySessionStore } from '../session/in-memory-session-store.js';
import type { GetHistoryArgs, SaveHistoryArgs } from '../contracts/history.js';
import type { JsonObject } from '../contracts/json.js';
import type { ContextProvider, SessionHookArgs, UserDataArgs } from '../contracts/run-view.js';
import type { ListSessionsOptions, SessionPage, SessionStore, StoredSession } from '../contracts/session-store.js';
import type { SessionJson } from '../contracts/session.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import type { AgentOptions } from './agent.js';
import { createAgent } from './create-agent.js';

/** A store that lists, holding plain JSON, counting every call. */
class ListingStore implements SessionStore {
  readonly calls = { get: 0, set: 0, delete: 0, list: 0 };
  readonly items = new Map<string, SessionJson>();
  #etag = 0;

  async get(sessionId: string): Promise<StoredSession | undefined> {
    this.calls.get++;
    const session = this.items.get(sessionId);
    return session && { session: structuredClone(session), etag: 'e' };
  }

  async set(session: SessionJson): Promise<string> {
    this.calls.set++;
    this.items.set(session.sessionId, JSON.parse(JSON.stringify(session)));
    return String(++this.#etag);
  }

  async delete(sessionId: string): Promise<boolean> {
    this.calls.delete++;
    return this.items.delete(sessionId);
  }

  async list(options?: ListSessionsOptions): Promise<SessionPage> {
    this.calls.list++;
    const entries = [...this.items.values()].map((s) => ({ sessionId: s.sessionId, metadata: s.metadata }));
    return pageOfSessions(entries, checkListOptions(options));
  }

  reset(): void {
    this.calls.get = this.calls.set = this.calls.delete = this.calls.list = 0;
  }
}

/** A history kept outside the session, by session id (as Redis or Cosmos keep it). */
class ExternalHistory extends HistoryProvider {
  readonly byId = new Map<string, Message[]>();
  readonly cleared: string[] = [];

  constructor(sourceId = 'external', loadMessages: boolean | 'auto' = 'auto') {
    super({ sourceId, loadMessages });
  }

  async getMessages(sessionId: string, { limit }: GetHistoryArgs): Promise<Message[]> {
    const all = this.byId.get(sessionId) ?? [];
    return limit === undefined ? [...all] : all.slice(-limit);
  }

  async saveMessages(sessionId: string, messages: readonly Message[], _args?: SaveHistoryArgs): Promise<void> {
    this.byId.set(sessionId, [...(this.byId.get(sessionId) ?? []), ...messages]);
  }

  override async clearMessages(sessionId: string): Promise<void> {
    this.cleared.push(sessionId);
    this.byId.delete(sessionId);
  }
}

/** A provider that records its session and user-data hooks. */
function recorder(sourceId: string, extra: Partial<ContextProvider> = {}) {
  const deleted: Array<{ sessionId: string; state: JsonObject; signal: AbortSignal }> = [];
  const users: Array<{ hook: string; userId: string }> = [];
  const provider: ContextProvider = {
    sourceId,
    afterRun: ({ state }) => {
      state.runs = ((state.runs as number | undefined) ?? 0) + 1;
    },
    onSessionDeleted: ({ session, state, signal }: SessionHookArgs) => {
      deleted.push({ sessionId: session.sessionId, state: structuredClone(state), signal });
    },
    deleteUserData: async ({ userId }: UserDataArgs) => {
      users.push({ hook: 'deleteUserData', userId });
    },
    ...extra,
  };
  return { provider, deleted, users };
}

/** An agent whose model answers `ok` to every call. */
function agentWith(options: Partial<AgentOptions> = {}) {
  return createAgent({ client: new ScriptedChatClient({ replies: () => 'ok' }), ...options });
}

/** Settles with how `run` ended, or 'still running' when it outlives `ms`. */
async function within<T>(ms: number, run: Promise<T>): Promise<T | 'still running'> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<'still running'>((resolve) => {
    timer = setTimeout(() => resolve('still running'), ms);
  });
  try {
    return await Promise.race([run, late]);
  } finally {
    clearTimeout(timer);
  }
}

const never = () => new Promise<never>(() => {});

describe('agent.listSessions', () => {
  it("pages through the store's list, newest first, with the caller's options", async () => {
    const store = new ListingStore();
    const agent = agentWith({ sessionStore: store });
    for (const [id, userId] of [
      ['a', 'u1'],
      ['b', 'u2'],
      ['c', 'u1'],
    ]) {
      const session = agent.createSession({ sessionId: id, userId });
      await agent.run(`hello ${id}`, { session });
      await agent.saveSession(session);
    }
    const first = await agent.listSessions({ userId: 'u1', limit: 1 });
    expect(first.sessions.map((s) => s.sessionId)).toEqual(['c']);
    expect(first.total).toBe(2);
    const second = await agent.listSessions({ userId: 'u1', limit: 1, cursor: first.nextCursor! });
    expect(second.sessions.map((s) => s.sessionId)).toEqual(['a']);
    expect(second.nextCursor).toBeUndefined();
    await expect(agent.listSessions({ limit: 0 })).rejects.toThrow(ConfigurationError);
  });

  it('is a ConfigurationError without a sessionStore, or with one that cannot list', async () => {
    await expect(agentWith().listSessions()).rejects.toThrow(/has no sessionStore/);
    const plain: SessionStore = { get: async () => undefined, set: async () => '1', delete: async () => false };
    const error = await agentWith({ sessionStore: plain })
      .listSessions()
      .catch((e: unknown) => e);
    expect(ConfigurationError.isInstance(error)).toBe(true);
    expect(String(error)).toMatch(/cannot list sessions/);
  });
});

describe('agent.deleteSession', () => {
  it("given an id, runs every provider's onSessionDeleted with the stored state, clears the history, then deletes from the store", async () => {
    const store = new ListingStore();
    const history = new ExternalHistory();
    const { provider, deleted } = recorder('notes');
    const agent = agentWith({ sessionStore: store, contextProviders: [history, provider] });
    const session = agent.createSession({ sessionId: 's1', userId: 'u1' });
    await agent.run('first', { session });
    await agent.run('second', { session });
    await agent.saveSession(session);
    expect(history.byId.get('s1')).toHaveLength(4);

    store.reset();
    expect(await agent.deleteSession('s1')).toBe(true);
    // Before the store's delete, and again after it: a hosted turn may have saved in between.
    const hook = { sessionId: 's1', state: { runs: 2 }, signal: expect.any(AbortSignal) };
    expect(deleted).toEqual([hook, hook]);
    expect(history.cleared).toEqual(['s1', 's1']);
    expect(history.byId.has('s1')).toBe(false);
    expect(store.items.has('s1')).toBe(false);
    expect(store.calls).toEqual({ get: 1, set: 0, delete: 1, list: 0 });

    // Idempotent: the store no longer holds it, the hooks run again (once) on an empty state.
    expect(await agent.deleteSession('s1')).toBe(false);
    expect(deleted).toHaveLength(3);
    expect(deleted[2]).toMatchObject({ sessionId: 's1', state: {} });
    expect(history.cleared).toEqual(['s1', 's1', 's1']);
  });

  it('cleans up a session the store never held, and one without any store, so backends keyed by id are emptied', async () => {
    const history = new ExternalHistory();
    await history.saveMessages('orphan', [Message.user('left behind')], { state: {} });
    const agent = agentWith({ sessionStore: new ListingStore(), contextProviders: [history] });
    expect(await agent.deleteSession('orphan')).toBe(false);
    expect(history.byId.has('orphan')).toBe(false);

    await history.saveMessages('x', [Message.user('kept elsewhere')], { state: {} });
    expect(await agentWith({ contextProviders: [history] }).deleteSession('x')).toBe(false);
    expect(history.byId.has('x')).toBe(false);
  });

  it('given a session object, clears the default in-memory history in it and deletes it from the store', async () => {
    const store = new InMemorySessionStore();
    const agent = agentWith({ sessionStore: store });
    const session = agent.createSession();
    await agent.run('remember me', { session });
    await agent.saveSession(session);
    expect(session.state.memory?.messages).toHaveLength(2);
    expect(await agent.deleteSession(session)).toBe(true);
    expect(session.state.memory?.messages).toBeUndefined();
    expect(await store.get(session.sessionId)).toBeUndefined();
  });

  it('runs every hook when some fail, then throws a ProviderError for the first in list order and keeps the session stored', async () => {
    const store = new ListingStore();
    const a = recorder('a', { onSessionDeleted: async () => Promise.reject(new Error('a is down')) });
    const b = recorder('b');
    const slowB: ContextProvider = {
      ...b.provider,
      onSessionDeleted: async (args) => {
        await new Promise((resolve) => setImmediate(resolve)); // finishes after a and c have failed
        return b.provider.onSessionDeleted!(args);
      },
    };
    const c = recorder('c', { onSessionDeleted: async () => Promise.reject(new Error('c is down')) });
    const agent = agentWith({ sessionStore: store, contextProviders: [a.provider, slowB, c.provider] });
    const session = agent.createSession({ sessionId: 's' });
    await agent.saveSession(session);

    const error = await agent.deleteSession('s').catch((e: unknown) => e);
    expect(ProviderError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ sourceId: 'a', phase: 'onSessionDeleted' });
    expect(String((error as ProviderError).cause)).toMatch(/a is down/);
    expect(b.deleted).toHaveLength(1); // the slow hook finished before the delete gave up
    expect(store.items.has('s')).toBe(true);
  });

  it('stops rather than leave a history it cannot clear behind', async () => {
    class AppendOnly extends HistoryProvider {
      constructor() {
        super({ sourceId: 'append-only' });
      }
      async getMessages(): Promise<Message[]> {
        return [];
      }
      async saveMessages(): Promise<void> {}
    }
    const store = new ListingStore();
    const agent = agentWith({ sessionStore: store, contextProviders: [new AppendOnly()] });
    await agent.saveSession(agent.createSession({ sessionId: 's' }));
    const error = await agent.deleteSession('s').catch((e: unknown) => e);
    expect(error).toMatchObject({ sourceId: 'append-only', phase: 'onSessionDeleted' });
    expect(ConfigurationError.isInstance((error as ProviderError).cause)).toBe(true);
    expect(store.items.has('s')).toBe(true);
  });

  it("bounds each hook by its timeoutMs (else the agent's providerTimeoutMs), aborting the hook's signal, and keeps the session", async () => {
    const store = new ListingStore();
    let seen: AbortSignal | undefined;
    const hung: ContextProvider = {
      sourceId: 'hung',
      onSessionDeleted: ({ signal }) => {
        seen = signal;
        return never();
      },
    };
    const agent = agentWith({ sessionStore: store, contextProviders: [hung], providerTimeoutMs: 30 });
    await agent.saveSession(agent.createSession({ sessionId: 's' }));
    const error = await within(2_000, agent.deleteSession('s')).catch((e: unknown) => e);
    expect(error).toMatchObject({ sourceId: 'hung', phase: 'onSessionDeleted' });
    expect(String(error)).toMatch(/did not finish onSessionDeleted within 30 ms/);
    expect(seen?.aborted).toBe(true);
    expect(store.items.has('s')).toBe(true);

    const own = agentWith({ contextProviders: [{ ...hung, timeoutMs: 20 }] });
    expect(String(await within(2_000, own.deleteSession('s')).catch((e: unknown) => e))).toMatch(/within 20 ms/);
  });

  it("ends at once when the caller's signal aborts, with its reason, deleting nothing", async () => {
    const store = new ListingStore();
    const hung: ContextProvider = { sourceId: 'hung', onSessionDeleted: never };
    const agent = agentWith({ sessionStore: store, contextProviders: [hung] });
    await agent.saveSession(agent.createSession({ sessionId: 's' }));
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('user left')), 20);
    await expect(within(2_000, agent.deleteSession('s', { signal: controller.signal }))).rejects.toThrow('user left');
    expect(store.items.has('s')).toBe(true);
    await expect(agent.deleteSession('s', { signal: controller.signal })).rejects.toThrow('user left');
  });

  it('reaches providers wrapped by withPolicies, gated off or not', async () => {
    const inner = recorder('inner');
    const agent = agentWith({ contextProviders: [withPolicies(inner.provider, { when: () => false })] });
    await agent.deleteSession('s');
    expect(inner.deleted.map((d) => d.sessionId)).toEqual(['s']);
  });

  it('refuses a blank id or something that is not a session, before any hook runs', async () => {
    const { provider, deleted } = recorder('r');
    const agent = agentWith({ contextProviders: [provider] });
    await expect(agent.deleteSession('  ')).rejects.toThrow(ConfigurationError);
    await expect(agent.deleteSession(42 as never)).rejects.toThrow(/takes an AgentSession or a session id/);
    expect(deleted).toEqual([]);
  });
});

/** `count` sessions of `userId` saved to the store, each with one turn. */
async function seed(agent: ReturnType<typeof agentWith>, userId: string, count: number, prefix = userId): Promise<void> {
  for (let i = 0; i < count; i++) {
    const session = agent.createSession({ sessionId: `${prefix}-${String(i).padStart(3, '0')}`, userId });
    await agent.run(`message ${i} of ${userId}`, { session });
    await agent.saveSession(session);
  }
}

describe('agent.exportUserData', () => {
  it("exports every session of the user across pages, with each history's messages and each provider's own data, as plain JSON", async () => {
    const store = new ListingStore();
    const audit = new ExternalHistory('audit', false);
    const facts: ContextProvider = {
      sourceId: 'facts',
      exportUserData: async ({ userId }) => ({ facts: [`${userId} likes tea`] }),
    };
    const silent: ContextProvider = { sourceId: 'silent', exportUserData: async () => undefined };
    const agent = agentWith({ sessionStore: store, contextProviders: [audit, facts, silent] });
    await seed(agent, 'u1', 103);
    await seed(agent, 'u2', 2);

    store.reset();
    const exported = await agent.exportUserData('u1');
    expect(store.calls).toEqual({ get: 103, set: 0, delete: 0, list: 2 });
    expect(exported).toMatchObject({ type: 'ctx.user-data', userId: 'u1', providers: { facts: { facts: ['u1 likes tea'] } } });
    expect(Object.keys(exported.providers)).toEqual(['facts']);
    expect(Date.parse(exported.exportedAt)).not.toBeNaN();
    expect(exported.sessions).toHaveLength(103);
    const ids = exported.sessions.map((s) => s.session.sessionId);
    expect(new Set(ids).size).toBe(103);
    expect(ids.every((id) => id.startsWith('u1-'))).toBe(true);
    const one = exported.sessions.find((s) => s.session.sessionId === 'u1-007')!;
    expect(one.session.metadata.userId).toBe('u1');
    expect(Object.keys(one.history).sort()).toEqual(['audit', 'memory']);
    expect(one.history.memory!.map((m) => Message.text(m))).toEqual(['message 7 of u1', 'ok']);
    expect(one.history.audit!.map((m) => Message.text(m))).toEqual(['message 7 of u1', 'ok']);
    expect(JSON.parse(JSON.stringify(exported))).toEqual(exported);
  });

  it('turns a history that cannot be read into a ProviderError (phase exportUserData)', async () => {
    const store = new ListingStore();
    const broken = new ExternalHistory('broken');
    broken.getMessages = async () => Promise.reject(new Error('unreachable'));
    const agent = agentWith({ sessionStore: store, contextProviders: [broken] });
    await agent.saveSession(agent.createSession({ sessionId: 's', userId: 'u' }));
    const error = await agent.exportUserData('u').catch((e: unknown) => e);
    expect(error).toMatchObject({ sourceId: 'broken', phase: 'exportUserData' });
  });

  it('needs a store that lists and a userId', async () => {
    await expect(agentWith().exportUserData('u')).rejects.toThrow(/has no sessionStore/);
    const plain: SessionStore = { get: async () => undefined, set: async () => '1', delete: async () => false };
    await expect(agentWith({ sessionStore: plain }).exportUserData('u')).rejects.toThrow(/cannot list sessions/);
    await expect(agentWith({ sessionStore: new ListingStore() }).exportUserData('')).rejects.toThrow(ConfigurationError);
  });
});

describe('agent.deleteUserData', () => {
  it("deletes every session of the user page after page, with every provider's cleanup, then the provider's user data; others stay", async () => {
    const store = new ListingStore();
    const history = new ExternalHistory();
    const { provider, deleted, users } = recorder('notes');
    const agent = agentWith({ sessionStore: store, contextProviders: [history, provider] });
    await seed(agent, 'u1', 105);
    await seed(agent, 'u2', 2);

    store.reset();
    expect(await agent.deleteUserData('u1')).toEqual({ sessions: 105 });
    // One list per page, one more to see none is left; one get and one delete per session.
    expect(store.calls).toEqual({ get: 105, set: 0, delete: 105, list: 3 });
    // Each session's cleanup runs before the store's delete and again after it (for a turn that saved in between).
    expect(deleted).toHaveLength(210);
    expect(users).toEqual([{ hook: 'deleteUserData', userId: 'u1' }]);
    expect([...store.items.keys()].sort()).toEqual(['u2-000', 'u2-001']);
    expect([...history.byId.keys()].sort()).toEqual(['u2-000', 'u2-001']);
    expect((await agent.listSessions({ userId: 'u1' })).sessions).toEqual([]);
  });

  it('also deletes a session saved again while it runs (it moves to the front of the listing)', async () => {
    const store = new ListingStore();
    let bumped = false;
    const bumper: ContextProvider = {
      sourceId: 'bumper',
      onSessionDeleted: () => {
        if (bumped) return;
        bumped = true;
        // The oldest session, beyond the first page, is saved again now.
        store.items.get('u1-000')!.metadata.updatedAt = new Date(Date.now() + 60_000).toISOString();
      },
    };
    const agent = agentWith({ sessionStore: store, contextProviders: [bumper] });
    await seed(agent, 'u1', 103);
    expect(await agent.deleteUserData('u1')).toEqual({ sessions: 103 });
    expect(store.items.size).toBe(0);
  });

  it('gives up with a ConcurrencyError on a session the store keeps listing after deletes, instead of looping', async () => {
    const store = new ListingStore();
    const agent = agentWith({ sessionStore: store });
    await seed(agent, 'u1', 2);
    const stuck = store.items.get('u1-001')!;
    store.delete = async (sessionId) => {
      store.calls.delete++;
      if (sessionId !== stuck.sessionId) return store.items.delete(sessionId);
      return true; // claims it deleted, but the listing still holds it
    };
    const error = await within(2_000, agent.deleteUserData('u1')).catch((e: unknown) => e);
    expect(ConcurrencyError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ sessionId: 'u1-001' });
    expect(store.calls.delete).toBe(3);
  });

  it("stops at the first session whose cleanup fails, keeping it, and does not call the providers' deleteUserData", async () => {
    const store = new ListingStore();
    const { provider, users } = recorder('notes', {
      onSessionDeleted: ({ session }) => {
        if (session.sessionId === 'u1-001') throw new Error('backend down');
      },
    });
    const agent = agentWith({ sessionStore: store, contextProviders: [provider] });
    await seed(agent, 'u1', 3);
    const error = await agent.deleteUserData('u1').catch((e: unknown) => e);
    expect(error).toMatchObject({ sourceId: 'notes', phase: 'onSessionDeleted' });
    expect(store.items.has('u1-001')).toBe(true);
    expect(users).toEqual([]);
  });

  it("fails with a ProviderError (phase deleteUserData) when a provider's deleteUserData fails, after running them all", async () => {
    const store = new ListingStore();
    const failing = recorder('failing', { deleteUserData: async () => Promise.reject(new Error('memory service down')) });
    const other = recorder('other');
    const agent = agentWith({ sessionStore: store, contextProviders: [failing.provider, other.provider] });
    await seed(agent, 'u1', 1);
    const error = await agent.deleteUserData('u1').catch((e: unknown) => e);
    expect(error).toMatchObject({ sourceId: 'failing', phase: 'deleteUserData' });
    expect(other.users).toEqual([{ hook: 'deleteUserData', userId: 'u1' }]);
    expect(store.items.size).toBe(0);
  });

  it('leaves a session that was handed to another user between the listing and the delete', async () => {
    const store = new ListingStore();
    const agent = agentWith({ sessionStore: store });
    await seed(agent, 'u1', 1);
    const realGet = store.get.bind(store);
    store.get = async (sessionId) => {
      const stored = await realGet(sessionId);
      if (stored) stored.session.metadata.userId = 'u2';
      return stored;
    };
    const listOnce = store.list.bind(store);
    let lists = 0;
    store.list = async (options) => (lists++ === 0 ? listOnce(options) : { sessions: [] });
    expect(await agent.deleteUserData('u1')).toEqual({ sessions: 0 });
    expect(store.items.size).toBe(1);
  });
});

describe('user data with the built-in stores', () => {
  it("exports and deletes a user's sessions kept as files, leaving the other user's files", async () => {
    const directory = await mkdtemp(join(tmpdir(), 'ctx-user-data-'));
    try {
      const agent = agentWith({ sessionStore: new FileSessionStore({ directory }) });
      await seed(agent, 'u1', 5);
      await seed(agent, 'u2', 1);
      const exported = await agent.exportUserData('u1');
      expect(exported.sessions.map((s) => s.session.sessionId).sort()).toEqual(['u1-000', 'u1-001', 'u1-002', 'u1-003', 'u1-004']);
      expect(exported.sessions.every((s) => s.history.memory!.length === 2)).toBe(true);
      expect(await agent.deleteUserData('u1')).toEqual({ sessions: 5 });
      expect((await readdir(directory)).filter((f) => f.endsWith('.json'))).toHaveLength(1);
      expect((await agent.listSessions()).sessions.map((s) => s.sessionId)).toEqual(['u2-000']);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });

  it('deletes a session of an InMemorySessionStore by id, then reports it gone', async () => {
    const store = new InMemorySessionStore();
    const agent = agentWith({ sessionStore: store });
    await seed(agent, 'u1', 1);
    expect(await agent.deleteSession('u1-000')).toBe(true);
    expect(await agent.deleteSession('u1-000')).toBe(false);
    expect((await agent.listSessions({ userId: 'u1' })).sessions).toEqual([]);
  });
});
