import { describe, expect, it } from 'vitest';
import { ConcurrencyError } from '../errors.js';
import { HistoryProvider } from '../history/history-provider.js';
import { InMemoryHistoryProvider } from '../history/in-memory-history-provider.js';
import { Message } from '../messages/message.js';
import { createAgent } from '../run/create-agent.js';
import type { GetHistoryArgs, SaveHistoryArgs } from '../contracts/history.js';
import type { JsonObject } from '../contracts/json.js';
import type { ContextProvider } from '../contracts/run-view.js';
import type { SessionStore, SetSessionOptions } from '../contracts/session-store.js';
import type { SessionJson } from '../contracts/session.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { InMemorySessionStore } from './in-memory-session-store.js';
import { MAX_SAVE_ATTEMPTS, mergeSessionJson } from './session-merge.js';

const echo = () => new ScriptedChatClient({ replies: (messages) => `re: ${Message.text(messages.at(-1)!)}` });
const texts = (messages: unknown) => (messages as Message[]).map((m) => `${m.role}:${Message.text(m)}`);

/** A history kept outside the session, in a map by session id (as Redis or Cosmos DB keep it). */
class MapHistory extends HistoryProvider {
  readonly stored = new Map<string, Message[]>();
  constructor() {
    super({ sourceId: 'outside' });
  }
  async getMessages(sessionId: string, _args: GetHistoryArgs): Promise<Message[]> {
    return [...(this.stored.get(sessionId) ?? [])];
  }
  async saveMessages(sessionId: string, messages: readonly Message[], _args: SaveHistoryArgs): Promise<void> {
    this.stored.set(sessionId, [...(this.stored.get(sessionId) ?? []), ...messages]);
  }
}

/** Writes `by` into its slot on every run; cannot merge. */
const noter = (sourceId = 'notes'): ContextProvider => ({
  sourceId,
  afterRun: ({ state, context }) => {
    state.last = Message.text(context.inputMessages[0]!);
  },
});

/** Two sessions loaded from one stored version, by two agents. */
async function twoCopies(options: { providers?: () => ContextProvider[]; store?: SessionStore } = {}) {
  const store = options.store ?? new InMemorySessionStore();
  const make = () => createAgent({ client: echo(), sessionStore: store, contextProviders: options.providers?.() ?? [] });
  const [a, b] = [make(), make()];
  const seed = a.createSession({ sessionId: 's', userId: 'alice', title: 'first' });
  await a.run('seed', { session: seed });
  await a.saveSession(seed);
  return { store, a, b, mine: (await a.getSession('s'))!, theirs: (await b.getSession('s'))! };
}

describe('saveSession merges', () => {
  it('two runs saved from one loaded version: both turns of the in-memory history land, in save order', async () => {
    const { store, a, b, mine, theirs } = await twoCopies();
    await a.run('from a', { session: mine });
    await b.run('from b', { session: theirs });
    await b.saveSession(theirs);
    await a.saveSession(mine);
    const stored = (await store.get('s'))!;
    expect(texts(stored.session.state.memory!.messages)).toEqual([
      'user:seed',
      'assistant:re: seed',
      'user:from b',
      'assistant:re: from b',
      'user:from a',
      'assistant:re: from a',
    ]);
    expect(mine.etag).toBe(stored.etag);
    expect(JSON.parse(JSON.stringify(mine))).toEqual(stored.session);
    // The merged session is the base of its next save: a third run saves without a conflict.
    await a.run('again', { session: mine });
    await a.saveSession(mine);
    expect(texts((await store.get('s'))!.session.state.memory!.messages)).toHaveLength(8);
  });

  it('metadata: the later updatedAt, our title when we changed it, their custom when only they did', async () => {
    const { store, a, b, mine, theirs } = await twoCopies();
    theirs.metadata.custom = { plan: 'pro' };
    theirs.metadata.updatedAt = '2099-01-01T00:00:00.000Z';
    await b.saveSession(theirs);
    mine.metadata.title = 'renamed';
    await a.saveSession(mine);
    expect((await store.get('s'))!.session.metadata).toMatchObject({
      title: 'renamed',
      custom: { plan: 'pro' },
      userId: 'alice',
      updatedAt: '2099-01-01T00:00:00.000Z',
    });
  });

  it('a slot both changed with no mergeState is a ConcurrencyError naming it; turnStored is false with the history in the session', async () => {
    const { store, a, b, mine, theirs } = await twoCopies({ providers: () => [noter()] });
    await a.run('from a', { session: mine });
    await b.run('from b', { session: theirs });
    await b.saveSession(theirs);
    const before = (await store.get('s'))!;
    const error = await a.saveSession(mine).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(ConcurrencyError.isInstance(error)).toBe(true);
    const conflict = error as ConcurrencyError;
    expect(conflict.sessionId).toBe('s');
    expect(conflict.turnStored).toBe(false);
    expect(conflict.message).toContain('$.state.notes');
    expect(conflict.message).toContain('run it again with the same input message');
    expect(await store.get('s')).toEqual(before);
  });

  it('turnStored is true when a history outside the session stored the turn', async () => {
    const history = new MapHistory();
    const { store, a, b, mine, theirs } = await twoCopies({ providers: () => [history, noter()] });
    await a.run('from a', { session: mine });
    await b.run('from b', { session: theirs });
    await b.saveSession(theirs);
    const error = (await a.saveSession(mine).catch((e: unknown) => e)) as ConcurrencyError;
    expect(ConcurrencyError.isInstance(error)).toBe(true);
    expect(error.turnStored).toBe(true);
    expect(error.message).toContain('do not run it again');
    expect(texts(history.stored.get('s'))).toContain('user:from a');
    expect((await store.get('s'))!.session.state.notes).toEqual({ last: 'from b' });
  });

  it('a save with no run since the last save leaves turnStored undefined', async () => {
    const { b, a, mine, theirs } = await twoCopies({ providers: () => [noter()] });
    mine.state.notes = { last: 'edited by hand' };
    await b.run('from b', { session: theirs });
    await b.saveSession(theirs);
    const error = (await a.saveSession(mine).catch((e: unknown) => e)) as ConcurrencyError;
    expect(ConcurrencyError.isInstance(error)).toBe(true);
    expect(error.turnStored).toBeUndefined();
  });

  it('a session deleted since it was loaded is not brought back', async () => {
    const { store, a, mine, b } = await twoCopies();
    await b.deleteSession('s');
    await a.run('late', { session: mine });
    await expect(a.saveSession(mine)).rejects.toSatisfy((e) => ConcurrencyError.isInstance(e) && /deleted/.test((e as Error).message));
    expect(await store.get('s')).toBeUndefined();
  });

  it(`gives up after ${MAX_SAVE_ATTEMPTS} saves when the store keeps changing, and says so`, async () => {
    const inner = new InMemorySessionStore();
    let sets = 0;
    // Another writer saves right after every read of this one, so every merged save meets a newer version.
    const busy: SessionStore = {
      get: async (id, options) => {
        const stored = await inner.get(id, options);
        if (stored) await inner.set({ ...stored.session, metadata: { ...stored.session.metadata, title: `t${sets}` } });
        return stored;
      },
      set: async (session, options?: SetSessionOptions) => {
        sets++;
        return inner.set(session, options);
      },
      delete: (id) => inner.delete(id),
    };
    const { a, mine } = await twoCopies({ store: busy });
    await inner.set({ ...mine.toJSON(), metadata: { ...mine.metadata, title: 'changed' } });
    sets = 0;
    await a.run('from a', { session: mine });
    const error = (await a.saveSession(mine).catch((e: unknown) => e)) as ConcurrencyError;
    expect(ConcurrencyError.isInstance(error)).toBe(true);
    expect(error.message).toContain(`${MAX_SAVE_ATTEMPTS} saves in a row`);
    expect(error.turnStored).toBe(false);
    expect(sets).toBe(MAX_SAVE_ATTEMPTS);
  });

  it('saves of one session by one agent wait for each other: 20 at once never conflict', async () => {
    const inner = new InMemorySessionStore();
    let conflicts = 0;
    const counting: SessionStore = {
      get: (id, options) => inner.get(id, options),
      set: (session, options) =>
        inner.set(session, options).catch((e: unknown) => {
          conflicts++;
          throw e;
        }),
      delete: (id) => inner.delete(id),
    };
    const agent = createAgent({ client: echo(), sessionStore: counting });
    await agent.saveSession(agent.createSession({ sessionId: 's' }));
    const sessions = await Promise.all(Array.from({ length: 20 }, async () => (await agent.getSession('s'))!));
    await Promise.all(sessions.map((session, i) => agent.run(`turn ${i}`, { session })));
    await Promise.all(sessions.map((session) => agent.saveSession(session)));
    const stored = (await inner.get('s'))!;
    expect(texts(stored.session.state.memory!.messages)).toHaveLength(40);
    // Each save after the first met the previous one's version once, and merged: nothing else conflicted.
    expect(conflicts).toBe(19);
  });
});

describe('mergeSessionJson', () => {
  const at = '2030-01-01T00:00:00.000Z';
  const json = (state: Record<string, JsonObject>, extra: Partial<SessionJson> = {}): SessionJson => ({
    type: 'ctx.session',
    version: 2,
    sessionId: 's',
    metadata: { createdAt: at, updatedAt: at },
    state,
    ...extra,
  });

  it('a slot only one side changed takes that side, removals included', () => {
    const base = json({ a: { n: 1 }, b: { n: 1 }, gone: { x: 1 } });
    const ours = json({ a: { n: 2 }, b: { n: 1 }, gone: { x: 1 } });
    const theirs = json({ a: { n: 1 }, b: { n: 3 }, added: { y: 1 } });
    expect(mergeSessionJson(base, ours, theirs, [])).toEqual(json({ a: { n: 2 }, b: { n: 3 }, added: { y: 1 } }));
  });

  it('two writers creating one session for different users conflict', () => {
    const mine = json({}, { metadata: { createdAt: at, updatedAt: at, userId: 'bob' } });
    const theirs = json({}, { metadata: { createdAt: at, updatedAt: at, userId: 'alice' } });
    expect(mergeSessionJson(null, mine, theirs, [])).toMatch(/different users/);
  });

  it('both continuing the service conversation differently conflict; pending is ours when we changed it', () => {
    const base = json({}, { serviceSessionId: 'r1' });
    expect(mergeSessionJson(base, json({}, { serviceSessionId: 'r2' }), json({}, { serviceSessionId: 'r3' }), [])).toMatch(
      /serviceSessionId/,
    );
    const pending = { approvals: [{ callId: 'c', toolName: 't', arguments: '{}' }], messages: [] };
    expect(mergeSessionJson(json({}), json({}, { pending }), json({}), [])).toMatchObject({ pending });
    expect(mergeSessionJson(json({}, { pending }), json({}, { pending }), json({}), [])).not.toHaveProperty('pending');
  });
});

describe('InMemoryHistoryProvider.mergeState', () => {
  const history = new InMemoryHistoryProvider();
  const m = (id: string) => ({ ...Message.user(id, { id }) }) as unknown as JsonObject;
  const slot = (...ids: string[]) => ({ messages: ids.map(m) }) as JsonObject;
  const merge = (base: JsonObject, ours: JsonObject, theirs: JsonObject) =>
    history.mergeState({ base, ours, theirs, path: '$.state.memory', sessionId: 's' });
  const ids = (slotValue: JsonObject | undefined) => (slotValue?.messages as { id: string }[] | undefined)?.map((x) => x.id);

  it('both appended: theirs, then what we added', () => {
    expect(ids(merge(slot('1'), slot('1', 'a1', 'a2'), slot('1', 'b1', 'b2')))).toEqual(['1', 'b1', 'b2', 'a1', 'a2']);
  });

  it('we rewrote (a retried turn, compaction) and they appended: ours, then what they added', () => {
    expect(ids(merge(slot('1', 'x', 'r1'), slot('1', 'x', 'r2'), slot('1', 'x', 'r1', 'b1')))).toEqual(['1', 'x', 'r2', 'b1']);
  });

  it('both rewrote, or both added the same message: cannot merge', () => {
    expect(merge(slot('1', '2'), slot('1', 'a'), slot('1', 'b'))).toBeUndefined();
    expect(merge(slot('1'), slot('1', 'same', 'a'), slot('1', 'same', 'b'))).toBeUndefined();
  });

  it('another field of the slot both changed differently: cannot merge; changed by one side: that side', () => {
    expect(merge({ ...slot('1'), k: 1 }, { ...slot('1'), k: 2 }, { ...slot('1'), k: 3 })).toBeUndefined();
    expect(merge({ ...slot('1'), k: 1 }, { ...slot('1', 'a'), k: 1 }, { ...slot('1'), k: 3 })).toMatchObject({ k: 3 });
  });
});
