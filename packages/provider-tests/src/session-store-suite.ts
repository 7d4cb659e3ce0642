import {
  ConcurrencyError,
  ConfigurationError,
  createAgent,
  InvalidInputError,
  Message,
  SessionStateError,
  type ContextProvider,
  type JsonValue,
  type SessionJson,
  type SessionMetadata,
  type SessionStore,
  type StoredSession,
} from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { afterAll, afterEach, beforeAll, describe, expect } from 'vitest';
import { BLANK_SESSION_IDS, describeId, expectRejection, HOSTILE_SESSION_IDS, jsonCopy, messagesOfEveryKind } from './fixtures.js';
import { describeTurnLeases } from './session-lease-tests.js';
import { describeListing } from './session-list-tests.js';
import { createRegistrar, expectDeclared, randomTag, type ConformanceSuiteOptions, type MaybePromise } from './suite-options.js';

/** A lone UTF-16 surrogate (in `u` mode a pair is one code point, so only a lone one matches). */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/** What a session store can or cannot do; the suite adapts the tests that depend on it. */
export interface SessionStoreCapabilities {
  /**
   * The longest session id (in UTF-16 code units) the store stores. A longer hostile id must be
   * refused by `set` with `InvalidInputError` naming the limit, never stored cut or changed
   * (the hostile-id test checks it), and is left out of the other tests. Default: no limit, so every
   * hostile id must be stored and read back exactly.
   */
  maxSessionIdLength?: number;
  /**
   * The store takes only session ids of well-formed Unicode: `set` refuses an id holding a lone
   * UTF-16 surrogate (which UTF-8 text cannot hold: it would become U+FFFD and meet other ids) with
   * `InvalidInputError` saying so (the hostile-id test checks it), and such ids are left out of the
   * other tests. Default false: lone surrogates must be stored and read back exactly.
   */
  wellFormedIdsOnly?: boolean;
  /**
   * The store has `list`. True: the listing tests run, and a store without `list` fails them. False:
   * they are skipped (a store that has `list` all the same fails the declaration test). Default
   * (undeclared): decided by whether the store has `list`, so a store that lost it only skips them.
   */
  list?: boolean;
  /**
   * `list` gives `total` on every page. True: a page without it fails. False: it is never required.
   * Default (undeclared): checked on the pages that give it.
   */
  total?: boolean;
  /**
   * The store has turn leases (`leaseTurn` and `releaseTurn`). True: the lease tests run, and a store
   * without them fails them. False: they are skipped (a store that has them all the same fails the
   * declaration test). Default (undeclared): decided by whether the store has them.
   */
  leases?: boolean;
}

/** Options of `describeSessionStore`. */
export interface SessionStoreSuiteOptions<S extends SessionStore = SessionStore> extends ConformanceSuiteOptions<S> {
  /**
   * Creates the store under test. Called once or more per test; a store may start empty or share
   * data with earlier ones (the suite uses fresh random session ids, and deletes the hostile ids
   * before it writes them).
   */
  create: () => MaybePromise<S>;
  /** What the store can do. Every capability defaults to the strictest expectation. */
  capabilities?: SessionStoreCapabilities;
  /** How many writers the concurrency tests start at once on one session. Default 20. */
  concurrentWriters?: number;
}

/**
 * Defines a vitest suite that checks a `SessionStore` against the contract of `@ctx/core`: round
 * trips, copies, etags, `ifMatch` (current, stale, `null`), delete, hostile ids, concurrent writers,
 * listing and turn leases (the optional `list`, `leaseTurn` and `releaseTurn`: skipped when the
 * store lacks them), and the hosted flow through `agent.getSession` / `agent.saveSession`. Call it
 * at the top level of a test file.
 */
export function describeSessionStore<S extends SessionStore>(name: string, options: SessionStoreSuiteOptions<S>): void {
  const maxSessionIdLength = options.capabilities?.maxSessionIdLength ?? Number.POSITIVE_INFINITY;
  const wellFormedIdsOnly = options.capabilities?.wellFormedIdsOnly ?? false;
  /** Whether the store must keep `id`, by its capabilities (else it must refuse it). */
  const storable = (id: string) => id.length <= maxSessionIdLength && !(wellFormedIdsOnly && LONE_SURROGATE.test(id));
  const writers = options.concurrentWriters ?? 20;

  describe(`${name} (SessionStore conformance)`, options.timeout === undefined ? {} : { timeout: options.timeout }, () => {
    const { test, finish } = createRegistrar(name, options.expectedFailures);
    afterAll(finish);
    const tag = randomTag();
    let counter = 0;
    const created: S[] = [];
    const newId = () => `session-${tag}-${++counter}`;

    if (options.setup) beforeAll(() => options.setup!());
    if (options.teardown) afterAll(() => options.teardown!());
    afterEach(async () => {
      const list = created.splice(0);
      if (options.cleanup) for (const store of list) await options.cleanup(store);
    });

    const make = async (): Promise<S> => {
      const store = await options.create();
      created.push(store);
      return store;
    };

    describe('reading and writing', () => {
      test('get of an unknown id resolves to undefined', async () => {
        const store = await make();
        expect(await store.get(newId())).toBeUndefined();
      });

      test('set then get returns the same session, deep-equal, with the etag set returned', async () => {
        const store = await make();
        const session = sessionJson(newId());
        const etag = await store.set(session);
        expect(typeof etag).toBe('string');
        expect(etag.length).toBeGreaterThan(0);
        const stored = await store.get(session.sessionId);
        expect(stored).toEqual({ session: jsonCopy(session), etag });
      });

      test('a session without a serviceSessionId comes back without one', async () => {
        const store = await make();
        const session: SessionJson = { type: 'ctx.session', version: 2, sessionId: newId(), metadata: TIMES_ONLY, state: {} };
        await store.set(session);
        const stored = await store.get(session.sessionId);
        expect(stored?.session).toEqual(session);
        expect(stored?.session.serviceSessionId).toBeUndefined();
      });

      test('metadata round-trips exactly: times, a 200-character title, userId, custom JSON, forkedFrom; absent fields stay absent', async () => {
        const store = await make();
        const custom = { text: 'ü🦜\n"'.repeat(300), list: [0, -1.5, 1e21, null, true, '', { deep: [[{}]] }], empty: {} };
        const variants: SessionMetadata[] = [
          {
            createdAt: '0001-01-01T00:00:00.000Z',
            updatedAt: '9999-12-31T23:59:59.999Z',
            title: `${'🦜é'.repeat(66)}ab`,
            userId: 'tenant/42:user "q"',
            custom,
            forkedFrom: { sessionId: 'parent 🦜', messageId: 'message-3' },
          },
          { ...TIMES_ONLY, title: '', forkedFrom: { sessionId: 'parent' } },
          TIMES_ONLY,
        ];
        for (const metadata of variants) {
          const session: SessionJson = { type: 'ctx.session', version: 2, sessionId: newId(), metadata, state: { app: { n: 1 } } };
          const etag = await store.set(session);
          const stored = await store.get(session.sessionId);
          expect(stored).toEqual({ session: jsonCopy(session), etag });
          expect(Object.keys(stored!.session.metadata).sort(), 'no metadata field appears that was not saved').toEqual(
            Object.keys(metadata).sort(),
          );
        }
      });

      test('the store holds copies: changing a session after set or after get changes nothing stored', async () => {
        const store = await make();
        const session = sessionJson(newId());
        const snapshot = jsonCopy(session);
        await store.set(session);
        session.state.whiteboard!.decisions = ['changed after set'];
        session.serviceSessionId = 'changed after set';
        expect((await store.get(session.sessionId))?.session).toEqual(snapshot);
        const loaded = (await store.get(session.sessionId))!;
        loaded.session.state.whiteboard!.decisions = ['changed after get'];
        loaded.session.state.added = { by: 'get' };
        expect((await store.get(session.sessionId))?.session).toEqual(snapshot);
      });

      test('the etag changes on every set, even of identical content', async () => {
        const store = await make();
        const id = newId();
        const etags: string[] = [];
        const same = sessionJson(id, 'same');
        for (const session of [same, same, same, sessionJson(id, 'version 3'), sessionJson(id, 'version 4')])
          etags.push(await store.set(session));
        expect(new Set(etags).size).toBe(5);
        const stored = await store.get(id);
        expect(stored?.etag).toBe(etags[4]);
        expect(stored?.session).toEqual(jsonCopy(sessionJson(id, 'version 4')));
      });

      test('delete resolves to whether a session was stored', async () => {
        const store = await make();
        const id = newId();
        const other = newId();
        await store.set(sessionJson(id));
        await store.set(sessionJson(other));
        expect(await store.delete(id)).toBe(true);
        expect(await store.get(id)).toBeUndefined();
        expect(await store.delete(id)).toBe(false);
        expect(await store.delete(newId())).toBe(false);
        expect((await store.get(other))?.session.sessionId).toBe(other);
      });
    });

    describe('optimistic concurrency', () => {
      test('ifMatch with the current etag writes and returns a new etag', async () => {
        const store = await make();
        const id = newId();
        const first = await store.set(sessionJson(id, 'v1'));
        const second = await store.set(sessionJson(id, 'v2'), { ifMatch: first });
        expect(second).not.toBe(first);
        expect(await store.get(id)).toEqual({ session: jsonCopy(sessionJson(id, 'v2')), etag: second });
      });

      test('ifMatch with a stale etag throws ConcurrencyError and writes nothing', async () => {
        const store = await make();
        const id = newId();
        const stale = await store.set(sessionJson(id, 'v1'));
        const current = await store.set(sessionJson(id, 'v2'));
        await expectConcurrencyError(store.set(sessionJson(id, 'v3'), { ifMatch: stale }), id);
        expect(await store.get(id)).toEqual({ session: jsonCopy(sessionJson(id, 'v2')), etag: current });
      });

      test('ifMatch null creates a session only when none is stored', async () => {
        const store = await make();
        const id = newId();
        const etag = await store.set(sessionJson(id, 'first'), { ifMatch: null });
        expect((await store.get(id))?.etag).toBe(etag);
        await expectConcurrencyError(store.set(sessionJson(id, 'second'), { ifMatch: null }), id);
        expect(await store.get(id)).toEqual({ session: jsonCopy(sessionJson(id, 'first')), etag });
      });

      test('ifMatch with an etag on a missing session throws ConcurrencyError and creates nothing', async () => {
        const store = await make();
        const id = newId();
        const etag = await store.set(sessionJson(id));
        expect(await store.delete(id)).toBe(true);
        await expectConcurrencyError(store.set(sessionJson(id), { ifMatch: etag }), id);
        expect(await store.get(id)).toBeUndefined();
        const again = await store.set(sessionJson(id, 'recreated'), { ifMatch: null });
        expect(await store.get(id)).toEqual({ session: jsonCopy(sessionJson(id, 'recreated')), etag: again });
      });

      test('an etag a deleted session had never matches again: after a delete and a re-create, a set with any pre-delete etag throws ConcurrencyError', async () => {
        const store = await make();
        const id = newId();
        const before: string[] = [];
        for (const version of ['v1', 'v2', 'v3']) before.push(await store.set(sessionJson(id, version)));
        expect(await store.delete(id)).toBe(true);
        // A per-row counter starts again after a delete: version n of the new session would get the
        // etag of version n of the deleted one, and a writer holding that etag would overwrite it.
        const after: string[] = [];
        for (const version of ['again 1', 'again 2', 'again 3']) {
          after.push(await store.set(sessionJson(id, version), { ifMatch: after.at(-1) ?? null }));
          for (const stale of before)
            await expectConcurrencyError(store.set(sessionJson(id, `written with the pre-delete etag ${stale}`), { ifMatch: stale }), id);
        }
        expect(
          after.filter((etag) => before.includes(etag)),
          'etags handed out again after the delete',
        ).toEqual([]);
        expect(await store.get(id)).toEqual({ session: jsonCopy(sessionJson(id, 'again 3')), etag: after[2] });
      });

      test(`${writers} concurrent sets with the same ifMatch: exactly one wins, the others get ConcurrencyError`, async () => {
        const store = await make();
        const id = newId();
        const base = await store.set(sessionJson(id, 'base'));
        const outcomes = await Promise.allSettled(
          Array.from({ length: writers }, (_, i) => store.set(sessionJson(id, `writer ${i}`), { ifMatch: base })),
        );
        const winners = outcomes.flatMap((o, i) => (o.status === 'fulfilled' ? [{ i, etag: o.value }] : []));
        expect(winners).toHaveLength(1);
        for (const o of outcomes)
          if (o.status === 'rejected') expect(ConcurrencyError.isInstance(o.reason), `rejected with ${String(o.reason)}`).toBe(true);
        expect(await store.get(id)).toEqual({ session: jsonCopy(sessionJson(id, `writer ${winners[0]!.i}`)), etag: winners[0]!.etag });
      });

      test(`${writers} concurrent creates with ifMatch null: exactly one wins, the others get ConcurrencyError`, async () => {
        const store = await make();
        const id = newId();
        const outcomes = await Promise.allSettled(
          Array.from({ length: writers }, (_, i) => store.set(sessionJson(id, `creator ${i}`), { ifMatch: null })),
        );
        const winners = outcomes.flatMap((o, i) => (o.status === 'fulfilled' ? [{ i, etag: o.value }] : []));
        expect(winners).toHaveLength(1);
        for (const o of outcomes)
          if (o.status === 'rejected') expect(ConcurrencyError.isInstance(o.reason), `rejected with ${String(o.reason)}`).toBe(true);
        expect(await store.get(id)).toEqual({ session: jsonCopy(sessionJson(id, `creator ${winners[0]!.i}`)), etag: winners[0]!.etag });
      });

      test(`${writers} concurrent unconditional sets leave one whole session with the etag its writer got`, async () => {
        const store = await make();
        const id = newId();
        const etags = await Promise.all(Array.from({ length: writers }, (_, i) => store.set(sessionJson(id, `writer ${i}`))));
        expect(new Set(etags).size).toBe(writers);
        const stored = await store.get(id);
        const winner = etags.indexOf(stored!.etag);
        expect(winner, 'the stored etag is one a writer got').toBeGreaterThanOrEqual(0);
        expect(stored!.session).toEqual(jsonCopy(sessionJson(id, `writer ${winner}`)));
      });
    });

    describe('hostile session ids', () => {
      test('keeps every hostile session id apart and round-trips it', async () => {
        const store = await make();
        const ids = HOSTILE_SESSION_IDS.filter(storable);
        for (const id of HOSTILE_SESSION_IDS.filter((id) => !storable(id))) {
          const long = id.length > maxSessionIdLength;
          const error = await expectRejection(
            store.set(sessionJson(id)),
            InvalidInputError.isInstance,
            `set of session ${describeId(id)}, ${long ? 'longer than maxSessionIdLength' : 'with a lone surrogate'}`,
          );
          expect((error as Error).message, 'the refusal names the limit').toContain(long ? String(maxSessionIdLength) : 'surrogate');
          expect(await store.get(id), `refused ${describeId(id)} is not stored`).toBeUndefined();
        }
        for (const id of ids) await store.delete(id);
        const etags = new Map<string, string>();
        for (const [i, id] of ids.entries()) etags.set(id, await store.set(sessionJson(id, `hostile #${i}`), { ifMatch: null }));
        for (const [i, id] of ids.entries()) {
          expect(await store.get(id), `session id ${describeId(id)}`).toEqual({
            session: jsonCopy(sessionJson(id, `hostile #${i}`)),
            etag: etags.get(id),
          });
        }
        for (const [i, id] of ids.entries()) {
          expect(await store.delete(id), `delete ${describeId(id)}`).toBe(true);
          expect(await store.get(id), `deleted ${describeId(id)}`).toBeUndefined();
          const next = ids[i + 1];
          if (next !== undefined)
            expect((await store.get(next))?.session.sessionId, `${describeId(next)} survives deleting ${describeId(id)}`).toBe(next);
        }
      });
    });

    describe('refusals', () => {
      test('get, set and delete refuse empty and whitespace-only session ids with ConfigurationError and touch nothing', async () => {
        const store = await make();
        const id = newId();
        const etag = await store.set(sessionJson(id));
        for (const blank of BLANK_SESSION_IDS) {
          await expectRejection(store.get(blank), ConfigurationError.isInstance, `get(${describeId(blank)})`);
          await expectRejection(store.set(sessionJson(blank)), ConfigurationError.isInstance, `set of session ${describeId(blank)}`);
          await expectRejection(store.delete(blank), ConfigurationError.isInstance, `delete(${describeId(blank)})`);
        }
        expect(await store.get(id)).toEqual({ session: jsonCopy(sessionJson(id)), etag });
      });

      test('set of a session holding NaN, a Map, a Date or an array state slot throws SessionStateError and writes nothing', async () => {
        const store = await make();
        const id = newId();
        const fresh = newId();
        const etag = await store.set(sessionJson(id));
        const unstorable: [string, string, Record<string, unknown>][] = [
          ['NaN', '.state.app.n', { app: { n: Number.NaN } }],
          ['a Map', '.state.app.m', { app: { m: new Map([['k', 1]]) } }],
          ['a Date', '.state.app.at', { app: { at: new Date(0) } }],
          ['an array state slot', '.state.app', { app: [1, 2] }],
        ];
        for (const [what, path, state] of unstorable) {
          for (const sessionId of [id, fresh]) {
            const error = await expectRejection(
              store.set({ ...sessionJson(sessionId), state } as unknown as SessionJson),
              SessionStateError.isInstance,
              `set of a session holding ${what}`,
            );
            const at = (error as SessionStateError).path;
            expect(at.endsWith(path), `the error of ${what} names ${path}, got ${at}`).toBe(true);
          }
        }
        expect(await store.get(id), 'the stored session is unchanged').toEqual({ session: jsonCopy(sessionJson(id)), etag });
        expect(await store.get(fresh), 'nothing is stored under a new id').toBeUndefined();
      });

      test('set of a session with malformed metadata throws SessionStateError naming the path and writes nothing', async () => {
        const store = await make();
        const id = newId();
        const fresh = newId();
        const etag = await store.set(sessionJson(id));
        const bad: [string, Record<string, unknown> | undefined][] = [
          ['.metadata', undefined],
          ['.metadata.updatedAt', { ...TIMES_ONLY, updatedAt: 'yesterday' }],
          ['.metadata.createdAt', { ...TIMES_ONLY, createdAt: '2026-01-31' }],
          ['.metadata.title', { ...TIMES_ONLY, title: 'x'.repeat(201) }],
          ['.metadata.userId', { ...TIMES_ONLY, userId: ' \t' }],
          ['.metadata.custom', { ...TIMES_ONLY, custom: { big: 'x'.repeat(8200) } }],
          ['.metadata.custom.n', { ...TIMES_ONLY, custom: { n: Number.NaN } }],
          ['.metadata.forkedFrom', { ...TIMES_ONLY, forkedFrom: { sessionId: 5 } }],
        ];
        for (const [path, metadata] of bad) {
          for (const sessionId of [id, fresh]) {
            const error = await expectRejection(
              store.set({ ...sessionJson(sessionId), metadata } as unknown as SessionJson),
              SessionStateError.isInstance,
              `set of a session with ${JSON.stringify(metadata)?.slice(0, 80)}`,
            );
            const at = (error as SessionStateError).path;
            expect(at.endsWith(path), `the error names ${path}, got ${at}`).toBe(true);
          }
        }
        expect(await store.get(id), 'the stored session is unchanged').toEqual({ session: jsonCopy(sessionJson(id)), etag });
        expect(await store.get(fresh), 'nothing is stored under a new id').toBeUndefined();
      });

      test('set of a session nested deeper than 128 levels or holding a cycle throws SessionStateError and writes nothing', async () => {
        const store = await make();
        const id = newId();
        const etag = await store.set(sessionJson(id));
        let deep: JsonValue = 'leaf';
        for (let i = 0; i < 200; i++) deep = [deep];
        const cyclic: Record<string, unknown> = {};
        cyclic.self = cyclic;
        for (const [what, state] of [
          ['nesting deeper than 128 levels', { app: { deep } }],
          ['a cycle', { app: { cyclic } }],
        ] as const) {
          await expectRejection(
            store.set({ ...sessionJson(id), state } as unknown as SessionJson),
            SessionStateError.isInstance,
            `set of a session holding ${what}`,
          );
        }
        expect(await store.get(id), 'the stored session is unchanged').toEqual({ session: jsonCopy(sessionJson(id)), etag });
      });
    });

    describe('capabilities', () => {
      test('declares its optional capabilities (list, total, turn leases) as it has them', async () => {
        const store = await make();
        const hasList = typeof store.list === 'function';
        const checks = [
          { suite: name, capability: 'list', declared: options.capabilities?.list, present: hasList, methods: 'list' },
          {
            suite: name,
            capability: 'leases',
            declared: options.capabilities?.leases,
            present: typeof store.leaseTurn === 'function' && typeof store.releaseTurn === 'function',
            methods: 'leaseTurn and releaseTurn',
          },
        ];
        const page = hasList ? await store.list!({ userId: `user ${newId()}`, limit: 1 }) : undefined;
        checks.push({
          suite: name,
          capability: 'total',
          declared: options.capabilities?.total,
          present: page?.total !== undefined,
          methods: 'total on the pages of list',
        });
        expectDeclared(checks);
      });
    });

    describeListing({
      name,
      test,
      make,
      newId,
      storable,
      capabilities: { list: options.capabilities?.list, total: options.capabilities?.total },
    });

    describe('turn leases', () => {
      describeTurnLeases({ name, test, make, newId, declared: options.capabilities?.leases });
    });

    describe('reading for a user', () => {
      test("get with userId gives a session to its owner only: another user's, or one with no user, reads as not stored", async () => {
        const store = await make();
        const [alices, nobodys] = [newId(), newId()];
        const etag = await store.set(ownedSession(alices, 'alice'));
        await store.set(ownedSession(nobodys, undefined));
        expect(await store.get(alices, { userId: 'alice' })).toEqual({ session: jsonCopy(ownedSession(alices, 'alice')), etag });
        expect(await store.get(alices, { userId: 'bob' }), "bob reads alice's session").toBeUndefined();
        expect(await store.get(alices, { userId: 'alic' }), 'a prefix of the owner reads it').toBeUndefined();
        expect(await store.get(nobodys, { userId: 'alice' }), 'a session with no user is read for a user').toBeUndefined();
        expect(await store.get(newId(), { userId: 'alice' })).toBeUndefined();
        expect((await store.get(nobodys))?.session.sessionId, 'without userId any session is read').toBe(nobodys);
        expect((await store.get(alices))?.etag).toBe(etag);
      });
    });

    describe('through an agent', () => {
      test('continues a conversation across two agent instances', async () => {
        const store = await make();
        const id = newId();
        const first = createAgent({ client: echoClient(), sessionStore: store });
        expect(await first.getSession(id), 'an id the store does not hold').toBeUndefined();
        const session = first.createSession({ sessionId: id });
        await first.run('first', { session });
        await first.saveSession(session);
        expect(session.etag).toBe((await store.get(id))?.etag);

        const client = echoClient();
        const second = createAgent({ client, sessionStore: store });
        const resumed = (await second.getSession(id))!;
        expect(resumed.etag).toBe(session.etag);
        await second.run('second', { session: resumed });
        expect(texts(client.calls[0]!.messages)).toEqual(['user:first', 'assistant:re: first', 'user:second']);
        await second.saveSession(resumed);
        const stored = await store.get(id);
        expect(stored?.etag).toBe(resumed.etag);
        expect(stored?.session).toEqual(jsonCopy(resumed.toJSON()));
        expect(texts(memoryOf(stored))).toEqual(['user:first', 'assistant:re: first', 'user:second', 'assistant:re: second']);
      });

      test("agent.getSession with userId resolves to undefined for another user's session, and to the session for its owner", async () => {
        const store = await make();
        const id = newId();
        const agent = createAgent({ client: echoClient(), sessionStore: store });
        const session = agent.createSession({ sessionId: id, userId: 'alice' });
        await agent.run('my secret plan', { session });
        await agent.saveSession(session);
        expect(await agent.getSession(id, { userId: 'bob' })).toBeUndefined();
        const mine = await agent.getSession(id, { userId: 'alice' });
        expect(texts(memoryOf({ session: mine!.toJSON(), etag: '' }))).toEqual(['user:my secret plan', 'assistant:re: my secret plan']);
      });

      test('saveSession merges a save made since the session was loaded: both turns are kept, each slot takes the side that changed it', async () => {
        const store = await make();
        const id = newId();
        const a = createAgent({ client: echoClient(), sessionStore: store, contextProviders: [counterProvider('a-runs')] });
        const b = createAgent({ client: echoClient(), sessionStore: store, contextProviders: [counterProvider('b-runs')] });
        const seed = a.createSession({ sessionId: id, userId: 'user 7', title: 'seeded' });
        await a.run('seed', { session: seed });
        await a.saveSession(seed);

        const mine = (await a.getSession(id))!;
        const theirs = (await b.getSession(id))!;
        await a.run('from a', { session: mine });
        mine.metadata.title = 'renamed by a';
        await b.run('from b', { session: theirs });
        theirs.metadata.custom = { by: 'b' };
        await b.saveSession(theirs);
        await a.saveSession(mine);
        const stored = await store.get(id);
        expect(stored?.etag).toBe(mine.etag);
        expect(texts(memoryOf(stored))).toEqual([
          'user:seed',
          'assistant:re: seed',
          'user:from b',
          'assistant:re: from b',
          'user:from a',
          'assistant:re: from a',
        ]);
        expect(stored?.session.state['a-runs']).toEqual({ runs: 2, last: 'from a' });
        expect(stored?.session.state['b-runs']).toEqual({ runs: 1, last: 'from b' });
        expect(stored?.session.metadata).toMatchObject({ title: 'renamed by a', custom: { by: 'b' }, userId: 'user 7' });
        expect(stored?.session, 'the saved session holds what was stored').toEqual(jsonCopy(mine.toJSON()));
      });

      test('saveSession throws ConcurrencyError when both saves changed a slot its provider cannot merge, and stores nothing of its own', async () => {
        const store = await make();
        const id = newId();
        const a = createAgent({ client: echoClient(), sessionStore: store, contextProviders: [counterProvider('runs')] });
        const b = createAgent({ client: echoClient(), sessionStore: store, contextProviders: [counterProvider('runs')] });
        const seed = a.createSession({ sessionId: id });
        await a.saveSession(seed);
        const mine = (await a.getSession(id))!;
        const theirs = (await b.getSession(id))!;
        await a.run('from a', { session: mine });
        await b.run('from b', { session: theirs });
        await b.saveSession(theirs);
        const error = await expectConcurrencyError(a.saveSession(mine), id);
        expect(error.turnStored, 'the history lives in the session, so the turn was not stored').toBe(false);
        expect(error.message).toContain('$.state.runs');
        const stored = await store.get(id);
        expect(stored?.etag).toBe(theirs.etag);
        expect(texts(memoryOf(stored))).toEqual(['user:from b', 'assistant:re: from b']);
      });

      test('two agents starting the same new session: both saves land, with both turns', async () => {
        const store = await make();
        const id = newId();
        const a = createAgent({ client: echoClient(), sessionStore: store });
        const b = createAgent({ client: echoClient(), sessionStore: store });
        const mine = a.createSession({ sessionId: id });
        const theirs = b.createSession({ sessionId: id });
        await a.run('from a', { session: mine });
        await b.run('from b', { session: theirs });
        await a.saveSession(mine);
        await b.saveSession(theirs);
        expect(texts(memoryOf(await store.get(id)))).toEqual([
          'user:from a',
          'assistant:re: from a',
          'user:from b',
          'assistant:re: from b',
        ]);
      });
    });
  });
}

/** A provider counting the runs of a session in its slot, with the last input (`{ runs, last }`); it cannot merge. */
function counterProvider(sourceId: string): ContextProvider {
  return {
    sourceId,
    afterRun: ({ state, context }) => {
      state.runs = ((state.runs as number | undefined) ?? 0) + 1;
      state.last = Message.text(context.inputMessages[0]!);
    },
  };
}

/** Session JSON owned by `userId` (none when undefined). */
function ownedSession(sessionId: string, userId: string | undefined): SessionJson {
  const json = sessionJson(sessionId);
  const { userId: _, ...metadata } = json.metadata;
  return { ...json, metadata: userId === undefined ? metadata : { ...metadata, userId } };
}

/** Metadata with only the required fields. */
const TIMES_ONLY: SessionMetadata = Object.freeze({ createdAt: '2026-01-31T12:00:00.000Z', updatedAt: '2026-01-31T12:00:00.000Z' });

/**
 * Session JSON with nested provider state of every JSON kind (and messages of every content kind);
 * the same arguments give equal JSON, `marker` makes versions distinguishable.
 */
function sessionJson(sessionId: string, marker = 'v1'): SessionJson {
  return {
    type: 'ctx.session',
    version: 2,
    sessionId,
    metadata: {
      createdAt: '2026-01-31T12:00:00.000Z',
      updatedAt: '2026-02-01T08:30:15.123Z',
      title: `Session 🦜 "${marker}"`,
      userId: 'user 7',
      custom: { marker, tags: ['a', 'b'], nested: { n: 1.5, none: null, yes: true } },
    },
    serviceSessionId: 'resp_0123456789',
    state: {
      memory: { messages: jsonCopy(messagesOfEveryKind().map((m, i) => ({ ...m, id: `message-${i}` }))) as unknown as JsonValue[] },
      whiteboard: {
        marker,
        decisions: ['use redis', '🦜 "quoted" \\ back\\slash\nnew line'],
        nested: { a: [1, -2.5, 1e21, 0, null, true, false, '', { b: { c: [[], {}] } }] },
      },
      empty: {},
    },
  };
}

/** The default history (`state.memory.messages`) of a stored session. */
function memoryOf(stored: StoredSession | undefined): Message[] {
  const messages = stored?.session.state.memory?.messages;
  if (!Array.isArray(messages))
    throw new Error(`The stored session has no default history; got ${JSON.stringify(stored?.session.state.memory)}.`);
  return messages as unknown as Message[];
}

function texts(messages: readonly Message[]): string[] {
  return messages.map((m) => `${m.role}:${Message.text(m)}`);
}

function echoClient(): ScriptedChatClient {
  return new ScriptedChatClient({ replies: (messages) => `re: ${Message.text(messages.at(-1)!)}` });
}

/** Awaits `promise` and checks it rejected with a `ConcurrencyError` naming `sessionId`; resolves to it. */
async function expectConcurrencyError(promise: Promise<unknown>, sessionId: string): Promise<ConcurrencyError> {
  const outcome = await promise.then(
    (value) => ({ resolved: true as const, value }),
    (error: unknown) => ({ resolved: false as const, error }),
  );
  if (outcome.resolved)
    throw new Error(
      `Expected a ConcurrencyError for session ${describeId(sessionId)}, but the write succeeded (resolved to ${JSON.stringify(outcome.value)}).`,
    );
  expect(ConcurrencyError.isInstance(outcome.error), `expected a ConcurrencyError, got ${String(outcome.error)}`).toBe(true);
  expect((outcome.error as ConcurrencyError).sessionId).toBe(sessionId);
  return outcome.error as ConcurrencyError;
}
