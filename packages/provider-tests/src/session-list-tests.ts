import {
  ConfigurationError,
  createAgent,
  InvalidInputError,
  type ListSessionsOptions,
  type SessionJson,
  type SessionMetadata,
  type SessionPage,
  type SessionStore,
  type SessionSummary,
} from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { describe, expect, type TestContext } from 'vitest';
import { describeId, expectRejection, HOSTILE_SESSION_IDS, jsonCopy } from './fixtures.js';
import { checkCapability, type RegisterTest } from './suite-options.js';

/** What the listing tests need from the session store suite that registers them. */
export interface ListingTestContext<S extends SessionStore> {
  /** The suite's name, for skip notes. */
  name: string;
  /** The suite's test registrar. */
  test: RegisterTest;
  /** Creates a store under test (cleaned up by the suite). */
  make: () => Promise<S>;
  /** A fresh session id. */
  newId: () => string;
  /** Whether the store keeps a session id, by its capabilities (hostile ids it refuses are left out). */
  storable: (id: string) => boolean;
  /** What the suite's options declare of `list` and `total` (undefined: not declared). */
  capabilities: { list: boolean | undefined; total: boolean | undefined };
}

type List = (options?: ListSessionsOptions) => Promise<SessionPage>;

/** Pages a listing walks through at most, so a broken cursor cannot loop forever. */
const MAX_PAGES = 1000;

/** A cursor refused as the caller's mistake: `InvalidInputError` (or `ConfigurationError`, from stores written before it). */
const refusedCursor = (error: unknown) => InvalidInputError.isInstance(error) || ConfigurationError.isInstance(error);
const MINUTE = 60_000;

/**
 * Registers the tests of the optional `SessionStore.list` capability: order, paging with every
 * limit, paging while sessions change, the user filter, refusals, `total`, and sessions saved
 * through an agent. Each test lists the sessions of a user of its own, so stores that share data
 * between tests (or with other suites) still give exact answers; the tests of the listing of every
 * user check only the relative order of their own sessions.
 */
export function describeListing<S extends SessionStore>(context: ListingTestContext<S>): void {
  const { name, test, make, newId, capabilities } = context;
  const newUser = () => `user ${newId()}`;

  /** The store's list; without one, fails the test when `list` is declared, else skips it. */
  const lister = (store: S, testContext: TestContext): List => {
    const list = store.list;
    checkCapability(testContext, {
      suite: name,
      capability: 'list',
      declared: capabilities.list,
      present: typeof list === 'function',
      methods: 'list',
    });
    return (options) => list!.call(store, options);
  };

  /** Checks `total` of a page: required when `total` is declared, else only when the page gives it. */
  const expectTotal = (page: SessionPage, expected: number, what: string) => {
    if (capabilities.total === true || page.total !== undefined) expect(page.total, what).toBe(expected);
  };

  /** Saves one session per entry and returns the summaries the store should list. */
  const seed = async (store: S, entries: readonly SessionSpec[]): Promise<SessionSummary[]> => {
    const summaries: SessionSummary[] = [];
    for (const entry of entries) {
      const session = listedSession(entry);
      await store.set(session);
      summaries.push({ sessionId: session.sessionId, metadata: jsonCopy(session.metadata) });
    }
    return summaries;
  };

  describe('listing (the optional list capability; skipped without it)', () => {
    test("list gives a user's sessions newest first by metadata.updatedAt, ties by sessionId descending, each as { sessionId, metadata }", async (testContext) => {
      const store = await make();
      const list = lister(store, testContext);
      const userId = newUser();
      const p = newId();
      const t = Date.UTC(2030, 0, 1);
      // Saved out of order; createdAt runs against updatedAt, so ordering by it would show.
      const saved = await seed(store, [
        { sessionId: `${p}-b`, userId, updatedAt: t + 2 * MINUTE, createdAt: t - 2 * MINUTE },
        { sessionId: `${p}-a`, userId, updatedAt: t + 2 * MINUTE, createdAt: t - 3 * MINUTE },
        { sessionId: `${p}-c`, userId, updatedAt: t + 1, createdAt: t },
        { sessionId: `${p}-d`, userId, updatedAt: t + 3 * MINUTE, createdAt: t - 5 * MINUTE, title: 'newest' },
        { sessionId: `${p}-e`, userId, updatedAt: t + 2 * MINUTE, createdAt: t - MINUTE, custom: { n: 1 } },
        { sessionId: `${p}-ab`, userId, updatedAt: t + 2 * MINUTE, createdAt: t - 4 * MINUTE },
        { sessionId: `${p}-Z`, userId, updatedAt: t, createdAt: t },
      ]);
      const page = await list({ userId, limit: 100 });
      const expected = [`${p}-d`, `${p}-e`, `${p}-b`, `${p}-ab`, `${p}-a`, `${p}-c`, `${p}-Z`];
      expect(ids(page.sessions)).toEqual(expected);
      expect(page.sessions, 'each entry is exactly { sessionId, metadata } as saved, never the state').toEqual(
        expected.map((id) => saved.find((s) => s.sessionId === id)),
      );
      expect(page.nextCursor).toBeUndefined();
    });

    test('paging with every limit from 1 to 100 visits every session exactly once, in order; full pages until the last, which has no cursor', async (testContext) => {
      const store = await make();
      const list = lister(store, testContext);
      const userId = newUser();
      const p = newId();
      const t = Date.UTC(2031, 5, 15);
      // 13 sessions: runs of equal times, so pages end inside a tie.
      const specs = Array.from({ length: 13 }, (_, i) => ({
        sessionId: `${p}-${String(i).padStart(2, '0')}`,
        userId,
        updatedAt: t + Math.floor(i / 3) * MINUTE,
      }));
      await seed(store, specs);
      const expected = specs.map((s) => s.sessionId).reverse();
      for (let limit = 1; limit <= 100; limit++) {
        const pages = await allPages(list, { userId, limit });
        expect(ids(pages.flatMap((page) => page.sessions)), `limit ${limit}`).toEqual(expected);
        expect(pages.length, `pages at limit ${limit}`).toBe(Math.ceil(expected.length / limit));
        pages.forEach((page, i) => {
          const last = i === pages.length - 1;
          expect(page.sessions.length, `page ${i + 1} at limit ${limit}`).toBe(last ? expected.length - limit * i : limit);
          expectTotal(page, expected.length, `total on page ${i + 1} at limit ${limit}`);
        });
      }
    });

    test('paging stays exact while sessions are saved again or deleted between pages: none is listed twice or skipped unless it moved', async (testContext) => {
      const store = await make();
      const list = lister(store, testContext);
      const userId = newUser();
      const p = newId();
      const t = Date.UTC(2032, 2, 3);
      const s = (i: number) => `${p}-s${i}`;
      const spec = (i: number, at: number, title?: string): SessionSpec => ({
        sessionId: s(i),
        userId,
        updatedAt: at,
        ...(title ? { title } : {}),
      });
      await seed(
        store,
        Array.from({ length: 10 }, (_, i) => spec(i, t + i * MINUTE)),
      );
      const first = await list({ userId, limit: 3 });
      expect(ids(first.sessions)).toEqual([s(9), s(8), s(7)]);
      expect(first.nextCursor).toBeDefined();

      const [moved9, moved5, added] = await seed(store, [
        spec(9, t + 20 * MINUTE, 'saved again after it was listed'),
        spec(5, t + 21 * MINUTE, 'saved again before it was listed'),
        spec(10, t + 22 * MINUTE, 'new'),
      ]);
      const [retitled3] = await seed(store, [spec(3, t + 3 * MINUTE, 'retitled in place')]);
      expect(await store.delete(s(6)), 'delete a session not listed yet').toBe(true);
      expect(await store.delete(s(7)), 'delete the session the cursor points at').toBe(true);

      const rest = await allPages(list, { userId, limit: 3, cursor: first.nextCursor! });
      const restIds = ids(rest.flatMap((page) => page.sessions));
      expect(restIds, 'the pass goes on after s7: s9 not again, s5 moved ahead of the cursor, s6 and s7 deleted').toEqual([
        s(4),
        s(3),
        s(2),
        s(1),
        s(0),
      ]);
      expect(
        rest.flatMap((page) => page.sessions).find((e) => e.sessionId === s(3)),
        'metadata as last saved',
      ).toEqual(retitled3);

      const fresh = await list({ userId, limit: 100 });
      expect(fresh.sessions.slice(0, 3), 'a new listing shows the moved sessions first, as last saved').toEqual([added, moved5, moved9]);
      expect(ids(fresh.sessions)).toEqual([s(10), s(5), s(9), s(8), s(4), s(3), s(2), s(1), s(0)]);
      expectTotal(fresh, 9, 'total of a new listing');
    });

    test("list with userId gives only that user's sessions, follows a session to its new user, and without userId lists every user's", async (testContext) => {
      const store = await make();
      const list = lister(store, testContext);
      const [a, b, nobody] = [newUser(), newUser(), newUser()];
      const p = newId();
      // Far in the future, so these lead the listing of every user even in a store full of others.
      const t = Date.UTC(9000 + Math.floor(Math.random() * 900), 0, 1);
      const saved = await seed(store, [
        { sessionId: `${p}-a1`, userId: a, updatedAt: t + 1 },
        { sessionId: `${p}-b1`, userId: b, updatedAt: t + 2 },
        { sessionId: `${p}-none`, updatedAt: t + 3 },
        { sessionId: `${p}-a2`, userId: a, updatedAt: t + 4 },
        { sessionId: `${p}-b2`, userId: b, updatedAt: t + 5 },
        { sessionId: `${p}-a3`, userId: a, updatedAt: t + 6 },
      ]);
      expect(ids((await list({ userId: a })).sessions)).toEqual([`${p}-a3`, `${p}-a2`, `${p}-a1`]);
      expect(ids((await list({ userId: b })).sessions)).toEqual([`${p}-b2`, `${p}-b1`]);
      const empty = await list({ userId: nobody });
      expect(empty.sessions).toEqual([]);
      expect(empty.nextCursor).toBeUndefined();
      expectTotal(empty, 0, 'total of the listing of an unknown user');

      const ours = new Set(ids(saved));
      const everyone = await collectOurs(list, ours, 7);
      expect(everyone, 'every session of every user (and of none), newest first').toEqual([
        `${p}-a3`,
        `${p}-b2`,
        `${p}-a2`,
        `${p}-none`,
        `${p}-b1`,
        `${p}-a1`,
      ]);

      await seed(store, [{ sessionId: `${p}-a2`, userId: b, updatedAt: t + 7 }]);
      expect(ids((await list({ userId: a })).sessions), 'a session given to another user leaves the old listing').toEqual([
        `${p}-a3`,
        `${p}-a1`,
      ]);
      expect(ids((await list({ userId: b })).sessions)).toEqual([`${p}-a2`, `${p}-b2`, `${p}-b1`]);
    });

    test('list pages 20 by default and refuses a limit of 0, 101, 1.5, -1 or NaN with ConfigurationError', async (testContext) => {
      const store = await make();
      const list = lister(store, testContext);
      const userId = newUser();
      const p = newId();
      const t = Date.UTC(2033, 0, 1);
      await seed(
        store,
        Array.from({ length: 21 }, (_, i) => ({ sessionId: `${p}-${i}`, userId, updatedAt: t + i * MINUTE })),
      );
      const page = await list({ userId });
      expect(page.sessions).toHaveLength(20);
      expect(page.nextCursor).toBeDefined();
      expect(ids((await list({ userId, cursor: page.nextCursor! })).sessions)).toEqual([`${p}-0`]);
      for (const limit of [0, 101, 1.5, -1, Number.NaN])
        await expectRejection(list({ userId, limit }), ConfigurationError.isInstance, `list({ limit: ${limit} })`);
      expect((await list({ userId, limit: 1 })).sessions).toHaveLength(1);
      expect((await list({ userId, limit: 100 })).sessions).toHaveLength(21);
    });

    test("list refuses a cursor of another listing (another userId, or every user's) and garbage with InvalidInputError", async (testContext) => {
      const store = await make();
      const list = lister(store, testContext);
      const [a, b] = [newUser(), newUser()];
      const p = newId();
      const t = Date.UTC(2034, 0, 1);
      await seed(store, [
        { sessionId: `${p}-1`, userId: a, updatedAt: t },
        { sessionId: `${p}-2`, userId: a, updatedAt: t + 1 },
        { sessionId: `${p}-3`, updatedAt: t + 2 },
      ]);
      const ofA = (await list({ userId: a, limit: 1 })).nextCursor;
      const ofEveryone = (await list({ limit: 1 })).nextCursor;
      expect(ofA).toBeDefined();
      expect(ofEveryone).toBeDefined();
      await expectRejection(list({ userId: b, cursor: ofA! }), refusedCursor, "a cursor of user a in user b's listing");
      await expectRejection(list({ cursor: ofA! }), refusedCursor, 'a cursor of user a in the listing of every user');
      await expectRejection(list({ userId: a, cursor: ofEveryone! }), refusedCursor, "a cursor of every user's listing in user a's");
      const garbage = ['', 'garbage', 'not a cursor!', Buffer.from('{"a":1}').toString('base64url'), 'x'.repeat(5000)];
      for (const cursor of garbage)
        await expectRejection(list({ userId: a, cursor }), refusedCursor, `list with cursor ${describeId(cursor)}`);
      expect(ids((await list({ userId: a, cursor: ofA! })).sessions), 'the right cursor still works').toEqual([`${p}-1`]);
    });

    test('total, when the store gives it, counts every session of the listing on every page', async (testContext) => {
      const store = await make();
      const list = lister(store, testContext);
      const userId = newUser();
      const p = newId();
      const t = Date.UTC(2035, 0, 1);
      await seed(
        store,
        Array.from({ length: 5 }, (_, i) => ({ sessionId: `${p}-${i}`, userId, updatedAt: t + i })),
      );
      await seed(store, [{ sessionId: `${p}-other`, userId: newUser(), updatedAt: t }]);
      const pages = await allPages(list, { userId, limit: 2 });
      checkCapability(testContext, {
        suite: name,
        capability: 'total',
        declared: capabilities.total,
        present: pages[0]!.total !== undefined,
        methods: 'total on the pages of list',
      });
      expect(pages.map((page) => page.total)).toEqual([5, 5, 5]);
      await store.delete(`${p}-0`);
      expect((await list({ userId, limit: 2 })).total).toBe(4);
    });

    test('lists hostile session ids, each once and under its own id', async (testContext) => {
      const store = await make();
      const list = lister(store, testContext);
      const userId = newUser();
      const hostile = HOSTILE_SESSION_IDS.filter(context.storable);
      for (const id of hostile) await store.delete(id);
      const t = Date.UTC(2036, 0, 1);
      await seed(
        store,
        hostile.map((sessionId, i) => ({ sessionId, userId, updatedAt: t + i * MINUTE })),
      );
      try {
        // Pages of 1 make every id the cursor's once (a 4 KB id included).
        for (const limit of [1, 7]) {
          const pages = await allPages(list, { userId, limit });
          const listed = ids(pages.flatMap((page) => page.sessions));
          expect(listed.map(describeId), `limit ${limit}`).toEqual([...hostile].reverse().map(describeId));
        }
      } finally {
        for (const id of hostile) await store.delete(id);
      }
    });

    test('a session saved through an agent is listed for its user, with updatedAt set when its last run ended', async (testContext) => {
      const store = await make();
      const list = lister(store, testContext);
      const userId = newUser();
      const agent = createAgent({ client: new ScriptedChatClient({ replies: () => 'ok' }), sessionStore: store });
      const session = agent.createSession({ userId, title: 'Trip to Lisbon', custom: { plan: 'pro' } });
      const other = agent.createSession({ userId: newUser() });
      const created = session.metadata.createdAt;
      await agent.run('hello', { session: other });
      await agent.saveSession(other);
      await tick();
      await agent.run('hello', { session });
      const firstRun = session.metadata.updatedAt;
      expect(firstRun > created, `updatedAt ${firstRun} is after createdAt ${created}`).toBe(true);
      await agent.saveSession(session);
      const listed = await list({ userId });
      expect(listed.sessions).toEqual([
        {
          sessionId: session.sessionId,
          metadata: { createdAt: created, updatedAt: firstRun, userId, title: 'Trip to Lisbon', custom: { plan: 'pro' } },
        },
      ]);

      await tick();
      const resumed = (await agent.getSession(session.sessionId, { userId }))!;
      await agent.run('again', { session: resumed });
      await agent.saveSession(resumed);
      const [entry] = (await list({ userId })).sessions;
      expect(entry?.metadata).toEqual(resumed.metadata);
      expect(entry!.metadata.updatedAt > firstRun, 'the second run moved updatedAt on').toBe(true);
      expect(entry!.metadata.createdAt).toBe(created);
    });
  });
}

/** A session to list: its id, owner, times (ms since the epoch) and optional fields. */
interface SessionSpec {
  sessionId: string;
  userId?: string;
  updatedAt: number;
  createdAt?: number;
  title?: string;
  custom?: SessionMetadata['custom'];
}

function listedSession(spec: SessionSpec): SessionJson {
  const metadata: SessionMetadata = {
    createdAt: new Date(spec.createdAt ?? spec.updatedAt).toISOString(),
    updatedAt: new Date(spec.updatedAt).toISOString(),
  };
  if (spec.title !== undefined) metadata.title = spec.title;
  if (spec.userId !== undefined) metadata.userId = spec.userId;
  if (spec.custom !== undefined) metadata.custom = spec.custom;
  return { type: 'ctx.session', version: 2, sessionId: spec.sessionId, metadata, state: { app: { big: 'state is never listed' } } };
}

function ids(sessions: readonly SessionSummary[]): string[] {
  return sessions.map((s) => s.sessionId);
}

/** Every page of a listing, following the cursors; fails on a page that is empty but not the only one, or on too many pages. */
async function allPages(list: List, options: ListSessionsOptions): Promise<SessionPage[]> {
  const pages: SessionPage[] = [];
  let cursor = options.cursor;
  for (;;) {
    const page = await list({ ...options, ...(cursor === undefined ? {} : { cursor }) });
    pages.push(page);
    if (page.sessions.length === 0 && pages.length > 1)
      throw new Error(`Page ${pages.length} is empty; the page before it should have had no nextCursor.`);
    if (page.nextCursor === undefined) return pages;
    if (pages.length >= MAX_PAGES) throw new Error(`The listing still had a nextCursor after ${MAX_PAGES} pages.`);
    cursor = page.nextCursor;
  }
}

/**
 * Pages the listing of every user (in pages of `limit`) until every id of `ours` was seen, and
 * returns the ids of ours in listing order; fails when one is listed twice.
 */
async function collectOurs(list: List, ours: ReadonlySet<string>, limit: number): Promise<string[]> {
  const seen: string[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < MAX_PAGES && seen.length < ours.size; i++) {
    const page = await list({ limit, ...(cursor === undefined ? {} : { cursor }) });
    for (const id of ids(page.sessions)) {
      if (!ours.has(id)) continue;
      if (seen.includes(id)) throw new Error(`Session ${describeId(id)} was listed twice in one pass.`);
      seen.push(id);
    }
    if (page.nextCursor === undefined) break;
    cursor = page.nextCursor;
  }
  return seen;
}

/** Waits 2 ms, so the next run ends at a later millisecond. */
function tick(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 2));
}
