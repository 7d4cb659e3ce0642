import { ConfigurationError, createAgent, Message, type SessionJson, type SessionStore, type TurnLease } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { expect, type TestContext } from 'vitest';
import { expectRejection } from './fixtures.js';
import { checkCapability, type RegisterTest } from './suite-options.js';

/** What the turn-lease tests need from the session store suite that registers them. */
export interface LeaseTestContext<S extends SessionStore> {
  /** The suite's name, for skip notes. */
  name: string;
  /** The suite's test registrar. */
  test: RegisterTest;
  /** Creates a store under test (cleaned up by the suite). */
  make: () => Promise<S>;
  /** A fresh session id. */
  newId: () => string;
  /** What the suite's options declare of turn leases (undefined: not declared). */
  declared: boolean | undefined;
}

type Leases = Required<Pick<SessionStore, 'leaseTurn' | 'releaseTurn'>>;

/** How long a test waits at most for a short lease to expire, in ms (polling). */
const EXPIRY_WAIT_MS = 10_000;
/** A lease no test outlives. */
const LONG_MS = 60_000;

/**
 * Registers the tests of the optional turn-lease capability (`leaseTurn`, `releaseTurn`): one holder
 * at a time, renewal, release by the holder only, expiry, independence of sessions and turns, the
 * leases kept out of `get` and `list`, refusals, and a double submit through two agents sharing
 * the store. A store without the capability fails them when it declares `leases`, else has them skipped.
 */
export function describeTurnLeases<S extends SessionStore>(context: LeaseTestContext<S>): void {
  const { name, test, make, newId, declared } = context;
  let turns = 0;
  const newTurn = () => `turn-${++turns}-${Math.random().toString(36).slice(2, 8)}`;

  /** The store's lease methods; without them, fails the test when leases are declared, else skips it. */
  const leasesOf = (store: S, testContext: TestContext): Leases => {
    const { leaseTurn, releaseTurn } = store;
    const present = typeof leaseTurn === 'function' && typeof releaseTurn === 'function';
    checkCapability(testContext, { suite: name, capability: 'leases', declared, present, methods: 'leaseTurn and releaseTurn' });
    return { leaseTurn: leaseTurn!.bind(store), releaseTurn: releaseTurn!.bind(store) };
  };

  test('leaseTurn: one holder at a time; the holder renews it; only the holder releases it', async (t) => {
    const store = await make();
    const { leaseTurn, releaseTurn } = leasesOf(store, t);
    const [id, turn] = [newId(), newTurn()];
    const lease = (holder: string, ttlMs = LONG_MS): TurnLease => ({ turn, holder, ttlMs });
    expect(await leaseTurn(id, lease('holder-a')), 'a free lease is taken').toBe(true);
    expect(await leaseTurn(id, lease('holder-b')), "another holder is refused while a's lease lasts").toBe(false);
    expect(await leaseTurn(id, lease('holder-a')), 'the holder renews its own lease').toBe(true);
    expect(await releaseTurn(id, { turn, holder: 'holder-b' }), "b cannot release a's lease").toBe(false);
    expect(await leaseTurn(id, lease('holder-b')), "a's lease is still held after b's release").toBe(false);
    expect(await releaseTurn(id, { turn, holder: 'holder-a' }), 'the holder releases it').toBe(true);
    expect(await releaseTurn(id, { turn, holder: 'holder-a' }), 'a released lease is not released twice').toBe(false);
    expect(await leaseTurn(id, lease('holder-b')), 'a released lease is free').toBe(true);
    await releaseTurn(id, { turn, holder: 'holder-b' });
  });

  test('twenty holders asking at once: exactly one takes the lease', async (t) => {
    const { leaseTurn, releaseTurn } = leasesOf(await make(), t);
    const [id, turn] = [newId(), newTurn()];
    const taken = await Promise.all(Array.from({ length: 20 }, (_, i) => leaseTurn(id, { turn, holder: `holder-${i}`, ttlMs: LONG_MS })));
    expect(taken.filter(Boolean), 'holders that took the lease').toHaveLength(1);
    expect(await releaseTurn(id, { turn, holder: `holder-${taken.indexOf(true)}` })).toBe(true);
  });

  test('a lease whose holder never renews or releases it expires by itself', async (t) => {
    const store = await make();
    const { leaseTurn, releaseTurn } = leasesOf(store, t);
    const [id, turn] = [newId(), newTurn()];
    expect(await leaseTurn(id, { turn, holder: 'crashed', ttlMs: 200 })).toBe(true);
    expect(await leaseTurn(id, { turn, holder: 'waiting', ttlMs: LONG_MS }), 'refused before it expires').toBe(false);
    let taken = false;
    for (const started = Date.now(); !taken && Date.now() - started < EXPIRY_WAIT_MS; ) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      taken = await leaseTurn(id, { turn, holder: 'waiting', ttlMs: LONG_MS });
    }
    expect(taken, `the lease of a holder that stopped renewing it was still held after ${EXPIRY_WAIT_MS} ms`).toBe(true);
    expect(await releaseTurn(id, { turn, holder: 'crashed' }), 'the expired holder cannot release the new lease').toBe(false);
    expect(await leaseTurn(id, { turn, holder: 'crashed', ttlMs: LONG_MS }), 'nor take it back').toBe(false);
    await releaseTurn(id, { turn, holder: 'waiting' });
  });

  test('leases are per session and per turn, and never show in get or list', async (t) => {
    const store = await make();
    const { leaseTurn, releaseTurn } = leasesOf(store, t);
    const [one, two, turn, other] = [newId(), newId(), newTurn(), newTurn()];
    expect(await leaseTurn(one, { turn, holder: 'a', ttlMs: LONG_MS })).toBe(true);
    expect(await leaseTurn(one, { turn: other, holder: 'b', ttlMs: LONG_MS }), 'another turn of the session').toBe(true);
    expect(await leaseTurn(two, { turn, holder: 'b', ttlMs: LONG_MS }), 'the same turn key on another session').toBe(true);
    expect(await store.get(one), 'a lease is not a session').toBeUndefined();
    const session: SessionJson = {
      type: 'ctx.session',
      version: 2,
      sessionId: one,
      metadata: { createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z', userId: `lease-user-${one}` },
      state: {},
    };
    const etag = await store.set(session, { ifMatch: null });
    expect(await store.get(one)).toEqual({ session, etag });
    if (typeof store.list === 'function') {
      const listed = await store.list({ limit: 100 });
      expect(
        listed.sessions.map((s) => s.sessionId),
        'a session that only has a lease is not listed',
      ).not.toContain(two);
      expect((await store.list({ userId: `lease-user-${one}` })).sessions.map((s) => s.sessionId)).toEqual([one]);
    }
    expect(await store.delete(two), 'a lease is nothing to delete').toBe(false);
    for (const [id, key, holder] of [
      [one, turn, 'a'],
      [one, other, 'b'],
      [two, turn, 'b'],
    ] as const)
      expect(await releaseTurn(id, { turn: key, holder })).toBe(true);
  });

  test('refuses a blank session id and malformed leases with ConfigurationError, before any I/O', async (t) => {
    const store = await make();
    const { leaseTurn, releaseTurn } = leasesOf(store, t);
    const id = newId();
    const good: TurnLease = { turn: newTurn(), holder: 'h', ttlMs: 1000 };
    const bad: unknown[] = [
      { ...good, turn: '' },
      { ...good, turn: 'a b' },
      { ...good, turn: 'x'.repeat(65) },
      { ...good, turn: 'a:b' },
      { ...good, holder: '' },
      { ...good, holder: 'a/b' },
      { ...good, ttlMs: 0 },
      { ...good, ttlMs: 1.5 },
      { ...good, ttlMs: 3_600_001 },
      { ...good, ttlMs: '1000' },
      undefined,
    ];
    const refused = (call: () => Promise<unknown>, what: string) =>
      expectRejection(Promise.resolve().then(call), ConfigurationError.isInstance, what);
    for (const lease of bad) await refused(() => leaseTurn(id, lease as TurnLease), `leaseTurn of ${JSON.stringify(lease)}`);
    await refused(() => leaseTurn(' ', good), 'leaseTurn with a blank session id');
    await refused(() => releaseTurn(id, { turn: 'a b', holder: 'h' }), 'releaseTurn of a malformed turn');
    await refused(() => releaseTurn('', { turn: good.turn, holder: 'h' }), 'releaseTurn with a blank session id');
    expect(await leaseTurn(id, good), 'nothing was taken by the refused calls').toBe(true);
    await releaseTurn(id, good);
  });

  test('a double submit through two agents sharing the store: the model is called once and both callers get the stored reply', async (t) => {
    const store = await make();
    const leases = leasesOf(store, t);
    // The second agent's view of the store tells when it finds the first one's lease (and waits).
    let found!: () => void;
    const waiting = new Promise<void>((resolve) => {
      found = resolve;
    });
    const watched: SessionStore = {
      get: store.get.bind(store),
      set: store.set.bind(store),
      delete: store.delete.bind(store),
      releaseTurn: leases.releaseTurn,
      leaseTurn: async (sessionId, lease) => {
        const taken = await leases.leaseTurn(sessionId, lease);
        if (!taken) found();
        return taken;
      },
    };
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let arrived!: () => void;
    const started = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    const client = new ScriptedChatClient({
      replies: async (messages) => {
        arrived();
        await held;
        return `re: ${Message.text(messages.at(-1)!)}`;
      },
    });
    const [a, b] = [createAgent({ client, sessionStore: store }), createAgent({ client, sessionStore: watched })];
    const id = newId();
    const message = Message.user('only once', { id: `${id}-m1` });
    const first = a.run(message, { sessionId: id, userId: 'ada' });
    await started;
    const second = b.run(message, { sessionId: id, userId: 'ada' });
    await waiting;
    release();
    const [one, two] = await Promise.all([first, second]);
    expect(client.calls).toHaveLength(1);
    const history = await a.getHistory((await a.getSession(id, { userId: 'ada' }))!);
    expect(history.map((m) => m.id)).toEqual([message.id, one.messages[0]!.id]);
    expect(two.messages.map((m) => m.id)).toEqual([one.messages[0]!.id]);
    expect(two.text).toBe('re: only once');
  });
}
