import {
  ConcurrencyError,
  ConfigurationError,
  createAgent,
  InMemorySessionStore,
  WorkingMemoryProvider,
  type JsonValue,
  type WorkingMemoryKey,
  type WorkingMemoryStore,
} from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { afterAll, afterEach, beforeAll, describe, expect } from 'vitest';
import { describeId, expectRejection, HOSTILE_SESSION_IDS } from './fixtures.js';
import { createRegistrar, randomTag, type ConformanceSuiteOptions, type MaybePromise } from './suite-options.js';

/** Options of `describeWorkingMemoryStore`. */
export interface WorkingMemoryStoreSuiteOptions<S extends WorkingMemoryStore = WorkingMemoryStore> extends ConformanceSuiteOptions<S> {
  /**
   * Creates the store under test. Called once or more per test; a store may start empty or share
   * data with earlier ones (the suite uses fresh random user and session ids).
   */
  create: () => MaybePromise<S>;
  /** The longest id the store accepts; longer hostile ids are left out. Default: no limit. */
  maxIdLength?: number;
  /** How many writers the concurrency test starts at once on one record. Default 20. */
  concurrentWriters?: number;
}

/** A record with every kind of JSON value, unicode and nesting. */
const RECORD: JsonValue = {
  name: 'Ada 🦜',
  prefs: { diet: 'végétarien', languages: ['en', 'fr'], nested: { deep: [[{}], null, true, 0, -1.5, 1e21] } },
  empty: {},
  note: 'line one\r\nline two "quoted" \\ back',
};

/**
 * Defines a vitest suite that checks a `WorkingMemoryStore` against the contract of `@ctx/core`:
 * round trips and copies, user and session keys kept apart, etags and `ifMatch` (current, stale,
 * `null`, after a delete), concurrent conditional writers (exactly one wins each round), `listUser`
 * and `deleteUser`, hostile ids, bad keys, and `WorkingMemoryProvider` on the store through
 * `agent.exportUserData` and `agent.deleteUserData`. Call it at the top level of a test file.
 */
export function describeWorkingMemoryStore<S extends WorkingMemoryStore>(name: string, options: WorkingMemoryStoreSuiteOptions<S>): void {
  const maxIdLength = options.maxIdLength ?? Number.POSITIVE_INFINITY;
  const writers = options.concurrentWriters ?? 20;

  describe(`${name} (WorkingMemoryStore conformance)`, options.timeout === undefined ? {} : { timeout: options.timeout }, () => {
    const { test, finish } = createRegistrar(name, options.expectedFailures);
    afterAll(finish);
    const tag = randomTag();
    let counter = 0;
    const created: S[] = [];
    const newId = (kind: string) => `${kind}-${tag}-${++counter}`;

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

    test('get of an unknown key resolves to undefined', async () => {
      const store = await make();
      expect(await store.get({ userId: newId('user') })).toBeUndefined();
      expect(await store.get({ sessionId: newId('session') })).toBeUndefined();
    });

    test('put then get returns the same record, deep-equal, with the etag put returned and an ISO updatedAt', async () => {
      const store = await make();
      const key = { userId: newId('user') };
      const before = Date.now();
      const etag = await store.put(key, RECORD);
      expect(typeof etag).toBe('string');
      expect(etag.length).toBeGreaterThan(0);
      const stored = await store.get(key);
      expect(stored?.record).toEqual(RECORD);
      expect(stored?.etag).toBe(etag);
      const at = Date.parse(stored!.updatedAt);
      expect(new Date(at).toISOString()).toBe(stored!.updatedAt);
      expect(at).toBeGreaterThanOrEqual(before - 60_000); // clocks of a remote store may differ a little
      // Markdown text is a record too.
      const text = { userId: newId('user') };
      await store.put(text, '# Notes\n- one 🦜');
      expect((await store.get(text))?.record).toBe('# Notes\n- one 🦜');
    });

    test('the store holds copies: changing a record after put or after get changes nothing stored', async () => {
      const store = await make();
      const key = { userId: newId('user') };
      const record = { list: ['a'], inner: { n: 1 } };
      await store.put(key, record);
      record.list.push('changed after put');
      record.inner.n = 2;
      const loaded = (await store.get(key))!;
      expect(loaded.record).toEqual({ list: ['a'], inner: { n: 1 } });
      (loaded.record as { list: string[] }).list.push('changed after get');
      expect((await store.get(key))!.record).toEqual({ list: ['a'], inner: { n: 1 } });
    });

    test('a user’s record, a session’s record and the same session with the user are three records', async () => {
      const store = await make();
      const userId = newId('user');
      const sessionId = newId('session');
      const keys: WorkingMemoryKey[] = [{ userId }, { sessionId }, { userId, sessionId }, { userId: sessionId }];
      for (const [i, key] of keys.entries()) await store.put(key, { i });
      for (const [i, key] of keys.entries()) expect((await store.get(key))?.record, JSON.stringify(key)).toEqual({ i });
      expect(await store.delete({ sessionId })).toBe(true);
      expect(await store.get({ sessionId })).toBeUndefined();
      expect((await store.get({ userId, sessionId }))?.record).toEqual({ i: 2 });
    });

    test('the etag changes on every put, even of identical content, and is never one a deleted record had', async () => {
      const store = await make();
      const key = { userId: newId('user') };
      const etags: string[] = [];
      for (let i = 0; i < 4; i++) etags.push(await store.put(key, { same: true }));
      expect(await store.delete(key)).toBe(true);
      etags.push(await store.put(key, { same: true }));
      expect(new Set(etags).size).toBe(5);
      expect((await store.get(key))?.etag).toBe(etags[4]);
    });

    test('ifMatch: the current etag writes; a stale one, or null over a stored record, throws ConcurrencyError and writes nothing', async () => {
      const store = await make();
      const key = { userId: newId('user'), sessionId: newId('session') };
      const first = await store.put(key, { v: 1 }, { ifMatch: null });
      const second = await store.put(key, { v: 2 }, { ifMatch: first });
      expect(second).not.toBe(first);
      await expectRejection(store.put(key, { v: 3 }, { ifMatch: first }), ConcurrencyError.isInstance, 'put with a stale etag');
      await expectRejection(
        store.put(key, { v: 3 }, { ifMatch: null }),
        ConcurrencyError.isInstance,
        'put with ifMatch null over a record',
      );
      expect(await store.get(key)).toMatchObject({ record: { v: 2 }, etag: second });
    });

    test('ifMatch with an etag on a deleted record throws ConcurrencyError and creates nothing', async () => {
      const store = await make();
      const key = { userId: newId('user') };
      const etag = await store.put(key, { v: 1 });
      expect(await store.delete(key)).toBe(true);
      expect(await store.delete(key)).toBe(false);
      await expectRejection(store.put(key, { v: 2 }, { ifMatch: etag }), ConcurrencyError.isInstance, 'put over a deleted record');
      expect(await store.get(key)).toBeUndefined();
    });

    test(`${writers} conditional writers on one record at once: exactly one wins, the others get ConcurrencyError`, async () => {
      const store = await make();
      const key = { userId: newId('user') };
      const etag = await store.put(key, { n: 0 });
      const outcomes = await Promise.allSettled(Array.from({ length: writers }, (_, i) => store.put(key, { n: i + 1 }, { ifMatch: etag })));
      const won = outcomes.flatMap((o, i) => (o.status === 'fulfilled' ? [{ i, etag: o.value }] : []));
      expect(won).toHaveLength(1);
      for (const o of outcomes) if (o.status === 'rejected') expect(ConcurrencyError.isInstance(o.reason), String(o.reason)).toBe(true);
      expect(await store.get(key)).toMatchObject({ record: { n: won[0]!.i + 1 }, etag: won[0]!.etag });
    });

    test('listUser lists the user’s record and their sessions’ records, and nobody else’s; deleteUser deletes exactly those', async () => {
      const store = await make();
      const userId = newId('user');
      const other = newId('user');
      const [s1, s2, anonymous] = [newId('session'), newId('session'), newId('session')];
      await store.put({ userId }, { mine: true });
      await store.put({ userId, sessionId: s1 }, 'one');
      await store.put({ userId, sessionId: s2 }, 'two');
      await store.put({ sessionId: anonymous }, 'nobody');
      await store.put({ userId: other }, { theirs: true });
      await store.put({ userId: other, sessionId: s1 }, 'theirs');
      const listed = await store.listUser(userId);
      expect(listed.map((e) => [e.sessionId ?? null, e.record]).sort((a, b) => String(a[0]).localeCompare(String(b[0])))).toEqual(
        [
          [null, { mine: true }],
          [s1, 'one'],
          [s2, 'two'],
        ].sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
      );
      for (const entry of listed) {
        const key = entry.sessionId === undefined ? { userId } : { userId, sessionId: entry.sessionId };
        expect((await store.get(key))?.etag).toBe(entry.etag);
        expect(Number.isNaN(Date.parse(entry.updatedAt))).toBe(false);
        expect(Object.keys(entry).sort()).toEqual(
          entry.sessionId === undefined ? ['etag', 'record', 'updatedAt'] : ['etag', 'record', 'sessionId', 'updatedAt'],
        );
      }
      expect(await store.deleteUser(userId)).toBe(3);
      expect(await store.listUser(userId)).toEqual([]);
      expect(await store.get({ userId, sessionId: s1 })).toBeUndefined();
      expect(await store.deleteUser(userId)).toBe(0);
      expect((await store.get({ sessionId: anonymous }))?.record).toBe('nobody');
      expect((await store.get({ userId: other, sessionId: s1 }))?.record).toBe('theirs');
      expect(await store.listUser(other)).toHaveLength(2);
      // A user deleted and written again is listed with the new record only.
      await store.put({ userId, sessionId: s2 }, 'again');
      expect((await store.listUser(userId)).map((e) => e.record)).toEqual(['again']);
    });

    test('hostile user and session ids are stored and listed apart, each under its own key', async () => {
      const store = await make();
      const ids = HOSTILE_SESSION_IDS.filter((id) => id.length <= maxIdLength);
      const prefix = newId('hostile');
      for (const [i, id] of ids.entries()) {
        await store.put({ userId: `${prefix}${id}` }, { i });
        await store.put({ userId: prefix, sessionId: `${prefix}${id}` }, { i });
      }
      for (const [i, id] of ids.entries()) {
        expect((await store.get({ userId: `${prefix}${id}` }))?.record, describeId(id)).toEqual({ i });
        expect((await store.get({ userId: prefix, sessionId: `${prefix}${id}` }))?.record, describeId(id)).toEqual({ i });
        expect(
          (await store.listUser(`${prefix}${id}`)).map((e) => e.record),
          describeId(id),
        ).toEqual([{ i }]);
      }
      const sessions = (await store.listUser(prefix)).map((e) => e.sessionId).sort();
      expect(sessions).toEqual(ids.map((id) => `${prefix}${id}`).sort());
      expect(await store.deleteUser(prefix)).toBe(ids.length);
      for (const id of ids) expect(await store.deleteUser(`${prefix}${id}`)).toBe(1);
    });

    test('a key with neither id, or a blank id, is a ConfigurationError', async () => {
      const store = await make();
      const bad: unknown[] = [{}, { userId: '' }, { userId: ' ' }, { sessionId: '\t\n' }, { userId: 'u', sessionId: '' }, null];
      for (const key of bad) {
        await expectRejection(store.get(key as WorkingMemoryKey), ConfigurationError.isInstance, `get(${JSON.stringify(key)})`);
        await expectRejection(store.put(key as WorkingMemoryKey, {}), ConfigurationError.isInstance, `put(${JSON.stringify(key)})`);
        await expectRejection(store.delete(key as WorkingMemoryKey), ConfigurationError.isInstance, `delete(${JSON.stringify(key)})`);
      }
      await expectRejection(store.listUser(' '), ConfigurationError.isInstance, 'listUser(" ")');
      await expectRejection(store.deleteUser(''), ConfigurationError.isInstance, 'deleteUser("")');
    });

    test('an aborted signal rejects before anything is written', async () => {
      const store = await make();
      const key = { userId: newId('user') };
      const aborted = AbortSignal.abort(new Error('stop'));
      await expect(store.put(key, { v: 1 }, { signal: aborted })).rejects.toThrow();
      expect(await store.get(key)).toBeUndefined();
    });

    test('WorkingMemoryProvider on this store: updated by the tool, exported and deleted with the user', async () => {
      const store = await make();
      const userId = newId('user');
      const schema = {
        '~standard': {
          version: 1 as const,
          vendor: 'provider-tests',
          validate: (value: unknown) =>
            typeof (value as { city?: unknown }).city === 'string' || (value as { city?: unknown }).city === undefined
              ? { value }
              : { issues: [{ message: 'must be a string', path: ['city'] }] },
        },
      };
      const memory = new WorkingMemoryProvider({ schema, store });
      const client = new ScriptedChatClient({
        replies: [{ toolCalls: [{ name: 'update_working_memory', arguments: { update: { city: 'Lyon' } } }] }, 'Noted.', 'Hello.'],
      });
      const agent = createAgent({ client, contextProviders: [memory], sessionStore: new InMemorySessionStore() });
      await agent.run('I live in Lyon.', { session: agent.createSession({ userId }) });
      await agent.run('Hi', { session: agent.createSession({ userId }) });
      expect(client.calls.at(-1)!.options.instructions).toContain('"city": "Lyon"');
      const exported = await agent.exportUserData(userId);
      expect(exported.providers['working-memory']).toMatchObject({ records: [{ record: { city: 'Lyon' } }] });
      await agent.deleteUserData(userId);
      expect(await store.get({ userId })).toBeUndefined();
      expect((await agent.exportUserData(userId)).providers).toEqual({});
    });
  });
}
