import { describe, expect, it } from 'vitest';
import { ConcurrencyError, ConfigurationError, InvalidInputError, SessionStateError } from '../errors.js';
import { createAgent } from '../run/create-agent.js';
import type { SessionJson } from '../contracts/session.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { InMemorySessionStore } from './in-memory-session-store.js';

/** A version-2 session updated at minute `minute` of 2030, owned by `userId`. */
function sessionOf(sessionId: string, minute = 0, userId?: string): SessionJson {
  const at = new Date(Date.UTC(2030, 0, 1, 0, minute)).toISOString();
  return {
    type: 'ctx.session',
    version: 2,
    sessionId,
    metadata: { createdAt: at, updatedAt: at, ...(userId ? { userId } : {}) },
    state: {},
  };
}

describe('InMemorySessionStore', () => {
  it('keeps copies: changing a session after saving does not change the stored one', async () => {
    const store = new InMemorySessionStore();
    const agent = createAgent({ client: new ScriptedChatClient({ replies: [] }), sessionStore: store });
    const session = agent.createSession({ sessionId: 'a', state: { p: { n: 1 } } });
    await agent.saveSession(session);
    session.state.p!.n = 2;
    expect((await store.get('a'))!.session.state).toEqual({ p: { n: 1 } });
    await expect(store.set(session.toJSON(), { ifMatch: null })).rejects.toSatisfy((e) => ConcurrencyError.isInstance(e));
  });

  it('getSession without a store is a configuration error', async () => {
    const agent = createAgent({ client: new ScriptedChatClient({ replies: [] }) });
    await expect(agent.getSession('x')).rejects.toSatisfy((e) => ConfigurationError.isInstance(e));
  });

  it('refuses empty and whitespace-only session ids with a ConfigurationError in get, set and delete', async () => {
    const store = new InMemorySessionStore();
    for (const id of ['', ' ', '\t\n', '\u00a0']) {
      await expect(store.get(id)).rejects.toSatisfy((e) => ConfigurationError.isInstance(e));
      await expect(store.delete(id)).rejects.toSatisfy((e) => ConfigurationError.isInstance(e));
      await expect(store.set({ ...sessionOf('x'), sessionId: id })).rejects.toSatisfy((e) => ConfigurationError.isInstance(e));
    }
    expect(await store.get(' a ')).toBeUndefined();
  });
});

const cyclic: Record<string, unknown> = {};
cyclic.self = cyclic;
let deep: unknown = 1;
for (let i = 0; i < 1000; i++) deep = [deep];

/** State that JSON would silently change or that no reader accepts, with the path `set` must name. */
const UNSTORABLE: [string, string, () => Record<string, unknown>][] = [
  ['NaN', '$.state.app.n', () => ({ app: { n: Number.NaN } })],
  ['Infinity', '$.state.app.list[1]', () => ({ app: { list: [1, Number.POSITIVE_INFINITY] } })],
  ['a Map', '$.state.app.m', () => ({ app: { m: new Map([['k', 1]]) } })],
  ['a Date', '$.state.app.at', () => ({ app: { at: new Date(0) } })],
  ['undefined', '$.state.app.u', () => ({ app: { u: undefined } })],
  ['a function', '$.state.app.f', () => ({ app: { f: () => 1 } })],
  ['a class instance', '$.state.app.c', () => ({ app: { c: new (class Point {})() } })],
  ['an array state slot', '$.state.app', () => ({ app: [1, 2] })],
  ['a cycle', '$.state.app.c.self', () => ({ app: { c: cyclic } })],
  ['nesting deeper than 128 levels', `$.state.app.deep${'[0]'.repeat(125)}`, () => ({ app: { deep } })],
];

describe('InMemorySessionStore refuses what it could not give back', () => {
  it.each(UNSTORABLE)('set of a session holding %s is a SessionStateError at %s, and nothing is written', async (_, path, state) => {
    const store = new InMemorySessionStore();
    const good: SessionJson = { ...sessionOf('s'), state: { app: { ok: true } } };
    const etag = await store.set(good);
    const bad = { ...good, state: state() } as SessionJson;
    const error = await store.set(bad).catch((e: unknown) => e);
    expect(SessionStateError.isInstance(error), String(error)).toBe(true);
    expect((error as SessionStateError).path).toBe(path);
    expect(await store.get('s')).toEqual({ session: good, etag });
    await expect(store.set({ ...bad, sessionId: 'fresh' })).rejects.toSatisfy((e) => SessionStateError.isInstance(e));
    expect(await store.get('fresh')).toBeUndefined();
  });
});

describe('InMemorySessionStore.list', () => {
  it('lists newest first with the metadata as last saved, and total; an empty store lists nothing', async () => {
    const store = new InMemorySessionStore();
    expect(await store.list()).toEqual({ sessions: [], total: 0 });
    await store.set(sessionOf('a', 1, 'u'));
    await store.set(sessionOf('b', 2, 'u'));
    await store.set(sessionOf('c', 3));
    await store.set({ ...sessionOf('a', 4, 'u'), metadata: { ...sessionOf('a', 4, 'u').metadata, title: 'again' } });
    const page = await store.list({ userId: 'u' });
    expect(page).toEqual({
      sessions: [
        { sessionId: 'a', metadata: { ...sessionOf('a', 4, 'u').metadata, title: 'again' } },
        { sessionId: 'b', metadata: sessionOf('b', 2, 'u').metadata },
      ],
      total: 2,
    });
    expect((await store.list()).sessions.map((s) => s.sessionId)).toEqual(['a', 'c', 'b']);
    await store.delete('a');
    expect(await store.list({ userId: 'u' })).toMatchObject({ sessions: [{ sessionId: 'b' }], total: 1 });
  });

  it('gives copies: changing a listed entry changes nothing stored or listed later', async () => {
    const store = new InMemorySessionStore();
    const session = { ...sessionOf('a', 1), metadata: { ...sessionOf('a', 1).metadata, custom: { n: 1 } } };
    await store.set(session);
    session.metadata.custom.n = 2;
    const [entry] = (await store.list()).sessions;
    expect(entry?.metadata.custom).toEqual({ n: 1 });
    entry!.metadata.custom!.n = 3;
    entry!.metadata.title = 'changed';
    expect((await store.list()).sessions[0]?.metadata).toEqual({ ...sessionOf('a', 1).metadata, custom: { n: 1 } });
    expect((await store.get('a'))?.session.metadata.custom).toEqual({ n: 1 });
  });

  it('refuses bad limits with a ConfigurationError and bad cursors with an InvalidInputError', async () => {
    const store = new InMemorySessionStore();
    await store.set(sessionOf('a', 1, 'u'));
    await store.set(sessionOf('b', 2, 'u'));
    const { nextCursor } = await store.list({ userId: 'u', limit: 1 });
    expect(nextCursor).toBeDefined();
    for (const options of [{ limit: 0 }, { limit: 101 }, { limit: 2.5 }, { userId: ' ' }])
      await expect(store.list(options)).rejects.toSatisfy((e) => ConfigurationError.isInstance(e));
    for (const options of [{ cursor: 'nope' }, { cursor: nextCursor }])
      await expect(store.list(options)).rejects.toSatisfy((e) => InvalidInputError.isInstance(e));
    expect((await store.list({ userId: 'u', cursor: nextCursor })).sessions.map((s) => s.sessionId)).toEqual(['a']);
  });
});
