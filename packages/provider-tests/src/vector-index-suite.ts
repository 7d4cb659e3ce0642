import { InvalidInputError, type IndexedMessage, type VectorIndex, type VectorRecord } from '@ctx/core';
import { afterAll, afterEach, beforeAll, describe, expect } from 'vitest';
import { expectRejection } from './fixtures.js';
import {
  checkCapability,
  createRegistrar,
  expectDeclared,
  randomTag,
  type ConformanceSuiteOptions,
  type MaybePromise,
} from './suite-options.js';

/** What a vector index can do; the suite adapts the tests that depend on it. */
export interface VectorIndexCapabilities {
  /**
   * The index has `list`. True: the listing test runs, and an index without it fails it. False: it
   * is skipped (an index that has `list` all the same fails the declaration test). Default
   * (undeclared): decided by whether the index has it, so one that lost it only skips the test.
   */
  list?: boolean;
}

/** Options of `describeVectorIndex`. */
export interface VectorIndexSuiteOptions<I extends VectorIndex = VectorIndex> extends ConformanceSuiteOptions<I> {
  /**
   * Creates the index under test, for vectors of `dimensions`. Called once or more per test; an
   * index may share data with earlier ones (the suite uses fresh random user and session ids).
   */
  create: (options: { dimensions: number }) => MaybePromise<I>;
  /** Vector length of the suite's records. Default 8. */
  dimensions?: number;
  /**
   * Runs after every write, before the suite reads: wait until an index that makes writes visible
   * later (a search service's refresh) shows them. Default: nothing, writes are visible at once.
   */
  settle?: (index: I) => MaybePromise<void>;
  /** What the index can do. Undeclared capabilities are decided by the methods the index has. */
  capabilities?: VectorIndexCapabilities;
  /**
   * How many records the filtered-search test writes (over 10 users, 2 sessions each), so that its
   * filters select a minority of many: 10% by user, 5% by session. Default 2000. An index that
   * searches approximately (HNSW) and filters afterwards returns fewer than `topK` there; raise it
   * until your database's planner uses its approximate index for the suite's queries.
   */
  filteredSearchRecords?: number;
}

/** Ids that break naive filters and keys: quotes (OData, SQL), separators, wildcards, Unicode. */
const HOSTILE_IDS = [
  "o'brien",
  'a,b',
  'x eq y',
  '*',
  'a/b',
  'a%2Fb',
  '"quoted"',
  '🦜 user',
  '\u00e9',
  'e\u0301',
  'CaseSensitive',
  'casesensitive',
];

/**
 * Defines a vitest suite that checks a `VectorIndex` against the contract of `@ctx/core`: exact
 * cosine k-NN with scores, `topK`, `minScore`, filters by user and session, `excludeMessageIds`,
 * `getRange` for neighbours, replacing upserts, deletes by id and by scope, refusals of bad input
 * (nothing of a bad batch stored), abort signals and hostile ids. Call it at the top level of a test file.
 */
export function describeVectorIndex<I extends VectorIndex>(name: string, options: VectorIndexSuiteOptions<I>): void {
  const dimensions = options.dimensions ?? 8;
  const filteredSearchRecords = options.filteredSearchRecords ?? 2000;
  if (!Number.isSafeInteger(filteredSearchRecords) || filteredSearchRecords < 200)
    throw new Error(
      `@ctx/provider-tests: describeVectorIndex(${name}): filteredSearchRecords must be an integer of at least 200, got ${String(filteredSearchRecords)}.`,
    );

  describe(`${name} (VectorIndex conformance)`, options.timeout === undefined ? {} : { timeout: options.timeout }, () => {
    const { test, finish } = createRegistrar(name, options.expectedFailures);
    afterAll(finish);
    const tag = randomTag();
    let counter = 0;
    const created: I[] = [];
    const newId = (kind: string) => `${kind}-${tag}-${++counter}`;

    if (options.setup) beforeAll(() => options.setup!());
    if (options.teardown) afterAll(() => options.teardown!());
    afterEach(async () => {
      const list = created.splice(0);
      if (options.cleanup) for (const index of list) await options.cleanup(index);
    });

    const make = async (): Promise<I> => {
      const index = await options.create({ dimensions });
      created.push(index);
      return index;
    };
    const write = async (index: I, records: readonly VectorRecord[]) => {
      await index.upsert(records);
      await options.settle?.(index);
    };
    const settled = async (index: I) => {
      await options.settle?.(index);
    };

    /** A deterministic pseudo-random vector of the suite's length. */
    const vectorOf = (seed: number): number[] => {
      let x = (seed * 2654435761) >>> 0 || 1;
      return Array.from({ length: dimensions }, () => {
        x ^= x << 13;
        x >>>= 0;
        x ^= x >>> 17;
        x ^= x << 5;
        x >>>= 0;
        return (x / 0xffffffff) * 2 - 1;
      });
    };
    /** The unit vector along dimension `d`, optionally mixed with dimension `e`. */
    const axis = (d: number, e?: number, weight = 0): number[] =>
      Array.from({ length: dimensions }, (_, i) => (i === d ? 1 : i === e ? weight : 0));
    const record = (init: Partial<VectorRecord> & { sessionId: string; sequence: number }): VectorRecord => {
      const messageId = init.messageId ?? newId('message');
      return {
        id: `${init.sessionId}/${messageId}`,
        text: `text of ${messageId}`,
        messageId,
        role: 'user',
        vector: vectorOf(counter),
        ...init,
      };
    };
    const cosine = (a: readonly number[], b: readonly number[]) => {
      let dot = 0;
      let na = 0;
      let nb = 0;
      for (let i = 0; i < a.length; i++) {
        dot += a[i]! * b[i]!;
        na += a[i]! * a[i]!;
        nb += b[i]! * b[i]!;
      }
      return dot / Math.sqrt(na * nb);
    };
    const ids = (matches: readonly IndexedMessage[]) => matches.map((m) => m.id);

    describe('querying', () => {
      test('query returns the closest records first, with their cosine similarity as score', async () => {
        const index = await make();
        const userId = newId('user');
        const sessionId = newId('session');
        await write(index, [
          record({ userId, sessionId, sequence: 0, messageId: 'far', vector: axis(1) }),
          record({ userId, sessionId, sequence: 1, messageId: 'near', vector: axis(0, 1, 0.2) }),
          record({ userId, sessionId, sequence: 2, messageId: 'same', vector: axis(0).map((x) => x * 3) }),
          record({ userId, sessionId, sequence: 3, messageId: 'opposite', vector: axis(0).map((x) => -x) }),
        ]);
        const matches = await index.query({ vector: axis(0), topK: 4, filter: { userId } });
        expect(matches.map((m) => m.messageId)).toEqual(['same', 'near', 'far', 'opposite']);
        expect(matches[0]!.score).toBeCloseTo(1, 5);
        expect(matches[1]!.score).toBeCloseTo(1 / Math.sqrt(1.04), 5);
        expect(matches[2]!.score).toBeCloseTo(0, 5);
        expect(matches[3]!.score).toBeCloseTo(-1, 5);
      });

      test('query is exact k-NN: the topK of 200 records are those a brute-force cosine ranks first', async () => {
        const index = await make();
        const userId = newId('user');
        const sessionId = newId('session');
        const records = Array.from({ length: 200 }, (_, i) => record({ userId, sessionId, sequence: i, vector: vectorOf(1000 + i) }));
        await write(index, records);
        for (const seed of [1, 2, 3]) {
          const query = vectorOf(seed);
          const expected = records
            .map((r) => ({ id: r.id, score: cosine(r.vector, query) }))
            .sort((a, b) => b.score - a.score)
            .slice(0, 10);
          const matches = await index.query({ vector: query, topK: 10, filter: { userId } });
          expect(ids(matches)).toEqual(expected.map((e) => e.id));
          matches.forEach((m, i) => expect(m.score).toBeCloseTo(expected[i]!.score, 4));
        }
      });

      test('query returns at most topK matches, and fewer when the scope holds fewer', async () => {
        const index = await make();
        const userId = newId('user');
        const sessionId = newId('session');
        await write(
          index,
          Array.from({ length: 5 }, (_, i) => record({ userId, sessionId, sequence: i })),
        );
        expect(await index.query({ vector: vectorOf(7), topK: 3, filter: { userId } })).toHaveLength(3);
        expect(await index.query({ vector: vectorOf(7), topK: 50, filter: { userId } })).toHaveLength(5);
        expect(await index.query({ vector: vectorOf(7), topK: 3, filter: { userId: newId('user') } })).toEqual([]);
      });

      test('minScore leaves out matches below it', async () => {
        const index = await make();
        const userId = newId('user');
        const sessionId = newId('session');
        await write(index, [
          record({ userId, sessionId, sequence: 0, messageId: 'close', vector: axis(0, 1, 0.1) }),
          record({ userId, sessionId, sequence: 1, messageId: 'half', vector: axis(0, 1, 1.7320508) }),
          record({ userId, sessionId, sequence: 2, messageId: 'far', vector: axis(1) }),
        ]);
        const matches = await index.query({ vector: axis(0), topK: 3, filter: { userId }, minScore: 0.4 });
        expect(matches.map((m) => m.messageId)).toEqual(['close', 'half']);
      });

      test('a filter by user never returns another user; by session never another session', async () => {
        const index = await make();
        const [alice, bob] = [newId('user'), newId('user')];
        const [a1, a2, b1] = [newId('session'), newId('session'), newId('session')];
        const vector = axis(2);
        await write(index, [
          record({ userId: alice, sessionId: a1, sequence: 0, vector }),
          record({ userId: alice, sessionId: a2, sequence: 0, vector }),
          record({ userId: bob, sessionId: b1, sequence: 0, vector }),
          record({ sessionId: newId('session'), sequence: 0, vector }),
        ]);
        const byUser = await index.query({ vector, topK: 10, filter: { userId: alice } });
        expect(new Set(byUser.map((m) => m.sessionId))).toEqual(new Set([a1, a2]));
        expect(byUser.every((m) => m.userId === alice)).toBe(true);
        const bySession = await index.query({ vector, topK: 10, filter: { sessionId: a2 } });
        expect(bySession.map((m) => m.sessionId)).toEqual([a2]);
        const both = await index.query({ vector, topK: 10, filter: { userId: bob, sessionId: a1 } });
        expect(both).toEqual([]);
      });

      test('a filter selecting a minority of many records still gets the exact topK of its scope (an index that searches, then filters, returns fewer)', async () => {
        const index = await make();
        const users = Array.from({ length: 10 }, () => newId('user'));
        const sessions = users.map(() => [newId('session'), newId('session')] as const);
        const records = Array.from({ length: filteredSearchRecords }, (_, i) => {
          const u = i % users.length;
          const s = Math.floor(i / users.length) % 2;
          return record({ userId: users[u]!, sessionId: sessions[u]![s]!, sequence: i, vector: vectorOf(50_000 + i) });
        });
        for (let at = 0; at < records.length; at += 200) await index.upsert(records.slice(at, at + 200));
        await settled(index);
        const topK = 10;
        const filters = [{ userId: users[0]! }, { sessionId: sessions[0]![1] }, { userId: users[0]!, sessionId: sessions[0]![0] }];
        for (const seed of [11, 12, 13]) {
          const query = vectorOf(seed);
          for (const filter of filters) {
            const scope = records.filter(
              (r) =>
                (filter.userId === undefined || r.userId === filter.userId) &&
                (filter.sessionId === undefined || r.sessionId === filter.sessionId),
            );
            const expected = scope
              .map((r) => ({ id: r.id, score: cosine(r.vector, query) }))
              .sort((a, b) => b.score - a.score)
              .slice(0, topK);
            const matches = await index.query({ vector: query, topK, filter });
            const what = `query ${seed} with filter ${JSON.stringify(filter)} (${scope.length} of ${records.length} records)`;
            expect(
              matches.length,
              `${what}: ${matches.length} matches where ${topK} were asked for${matches.length < topK ? ' (an index that searches approximately, then filters, loses the matches of a small scope)' : ''}`,
            ).toBe(topK);
            expect(ids(matches), `${what}: the exact ${topK} nearest of the scope`).toEqual(expected.map((e) => e.id));
          }
        }
      });

      test('excludeMessageIds leaves those messages out and still fills topK from the rest', async () => {
        const index = await make();
        const userId = newId('user');
        const sessionId = newId('session');
        await write(index, [
          record({ userId, sessionId, sequence: 0, messageId: 'm0', vector: axis(0) }),
          record({ userId, sessionId, sequence: 1, messageId: 'm1', vector: axis(0, 1, 0.5) }),
          record({ userId, sessionId, sequence: 2, messageId: 'm2', vector: axis(0, 1, 1) }),
          record({ userId, sessionId, sequence: 3, messageId: 'm3', vector: axis(0, 1, 2) }),
        ]);
        const matches = await index.query({ vector: axis(0), topK: 2, filter: { userId, excludeMessageIds: ['m0', 'm1'] } });
        expect(matches.map((m) => m.messageId)).toEqual(['m2', 'm3']);
      });

      test('matches carry every field as stored, and no vector', async () => {
        const index = await make();
        const userId = newId('user');
        const sessionId = newId('session');
        const stored = record({
          userId,
          sessionId,
          sequence: 41,
          role: 'assistant',
          text: 'The parcel left the depot on Tuesday.',
          createdAt: '2026-11-02T10:00:00.000Z',
          kind: 'archive',
        });
        await write(index, [stored, record({ sessionId, sequence: 42, role: 'tool' })]);
        const [match] = await index.query({ vector: stored.vector, topK: 1, filter: { userId } });
        const { vector: _vector, ...fields } = stored;
        expect(match).toEqual({ ...fields, score: expect.any(Number) });
        const [plain] = await index.getRange({ sessionId, fromSequence: 42, toSequence: 42 });
        expect(plain).not.toHaveProperty('userId');
        expect(plain).not.toHaveProperty('kind');
        expect(plain).not.toHaveProperty('vector');
        expect(plain!.role).toBe('tool');
      });
    });

    describe('neighbours and writes', () => {
      test('getRange returns the records of one session within the sequences, in order', async () => {
        const index = await make();
        const userId = newId('user');
        const [s1, s2] = [newId('session'), newId('session')];
        const order = [5, 2, 9, 3, 4, 0, 6];
        await write(index, [
          ...order.map((sequence) => record({ userId, sessionId: s1, sequence, messageId: `s1-${sequence}` })),
          record({ userId, sessionId: s2, sequence: 4, messageId: 's2-4' }),
        ]);
        const range = await index.getRange({ sessionId: s1, fromSequence: 2, toSequence: 5 });
        expect(range.map((r) => r.messageId)).toEqual(['s1-2', 's1-3', 's1-4', 's1-5']);
        expect((await index.getRange({ sessionId: s1, fromSequence: 7, toSequence: 8 })).length).toBe(0);
        expect(await index.getRange({ sessionId: s1, userId: newId('user'), fromSequence: 0, toSequence: 9 })).toEqual([]);
        expect((await index.getRange({ sessionId: s1, userId, fromSequence: 0, toSequence: 0 })).map((r) => r.messageId)).toEqual(['s1-0']);
      });

      test('upsert with an id already stored replaces the record: one match, the new text and vector', async () => {
        const index = await make();
        const userId = newId('user');
        const sessionId = newId('session');
        const first = record({ userId, sessionId, sequence: 0, text: 'old text', vector: axis(0) });
        await write(index, [first]);
        await write(index, [{ ...first, text: 'new text', vector: axis(1) }]);
        const matches = await index.query({ vector: axis(1), topK: 5, filter: { userId } });
        expect(matches).toHaveLength(1);
        expect(matches[0]!.text).toBe('new text');
        expect(matches[0]!.score).toBeCloseTo(1, 5);
      });

      test('delete by ids removes those records only; unknown ids are no error', async () => {
        const index = await make();
        const userId = newId('user');
        const sessionId = newId('session');
        const records = [0, 1, 2].map((sequence) => record({ userId, sessionId, sequence }));
        await write(index, records);
        await index.delete({ ids: [records[1]!.id, 'no-such-record'] });
        await settled(index);
        const left = await index.getRange({ sessionId, fromSequence: 0, toSequence: 2 });
        expect(ids(left)).toEqual([records[0]!.id, records[2]!.id]);
      });

      test('delete by session removes that session only; delete by user removes every session of the user', async () => {
        const index = await make();
        const [alice, bob] = [newId('user'), newId('user')];
        const [a1, a2, b1] = [newId('session'), newId('session'), newId('session')];
        await write(index, [
          record({ userId: alice, sessionId: a1, sequence: 0 }),
          record({ userId: alice, sessionId: a2, sequence: 0 }),
          record({ userId: bob, sessionId: b1, sequence: 0 }),
        ]);
        await index.delete({ sessionId: a1 });
        await settled(index);
        expect(await index.getRange({ sessionId: a1, fromSequence: 0, toSequence: 0 })).toEqual([]);
        expect(await index.getRange({ sessionId: a2, fromSequence: 0, toSequence: 0 })).toHaveLength(1);
        await index.delete({ userId: alice });
        await settled(index);
        expect(await index.query({ vector: vectorOf(1), topK: 5, filter: { userId: alice } })).toEqual([]);
        expect(await index.query({ vector: vectorOf(1), topK: 5, filter: { userId: bob } })).toHaveLength(1);
        await index.delete({ userId: alice }); // idempotent
      });

      test("delete by user and session removes that user's records of the session, never another user's records of the same session id", async () => {
        const index = await make();
        const [alice, bob] = [newId('user'), newId('user')];
        const [shared, other] = [newId('session'), newId('session')];
        const vector = axis(4);
        const alices = [0, 1].map((sequence) => record({ userId: alice, sessionId: shared, sequence, vector }));
        const bobs = [0, 1].map((sequence) => record({ userId: bob, sessionId: shared, sequence, vector }));
        const kept = record({ userId: alice, sessionId: other, sequence: 0, vector });
        await write(index, [...alices, ...bobs, kept]);
        await index.delete({ userId: alice, sessionId: shared });
        await settled(index);
        expect(await index.query({ vector, topK: 10, filter: { userId: alice, sessionId: shared } })).toEqual([]);
        expect(
          ids(await index.getRange({ sessionId: shared, userId: bob, fromSequence: 0, toSequence: 1 })),
          "bob's records of the session id alice's delete named",
        ).toEqual(ids(bobs));
        expect(ids(await index.query({ vector, topK: 10, filter: { userId: bob } })).sort()).toEqual(ids(bobs).sort());
        expect(ids(await index.query({ vector, topK: 10, filter: { userId: alice } })), "alice's other session").toEqual([kept.id]);
        await index.delete({ userId: alice, sessionId: shared }); // idempotent
      });

      test('list (optional) returns every record of the scope without vectors, by session and sequence, never another scope', async (context) => {
        const index = await make();
        checkCapability(context, {
          suite: name,
          capability: 'list',
          declared: options.capabilities?.list,
          present: typeof index.list === 'function',
          methods: 'list',
        });
        if (typeof index.list !== 'function') return;
        const [alice, bob] = [newId('user'), newId('user')];
        const [a1, a2, b1] = [`${tag}-a1`, `${tag}-a2`, newId('session')];
        await write(index, [
          record({ userId: alice, sessionId: a2, sequence: 1, messageId: 'a2-1', kind: 'archive' }),
          record({ userId: alice, sessionId: a1, sequence: 7, messageId: 'a1-7', createdAt: '2026-11-02T10:04:00.000Z' }),
          record({ userId: alice, sessionId: a2, sequence: 0, messageId: 'a2-0' }),
          record({ userId: alice, sessionId: a1, sequence: 2, messageId: 'a1-2', role: 'assistant' }),
          record({ userId: bob, sessionId: b1, sequence: 0, messageId: 'b1-0' }),
        ]);
        const listed = await index.list({ userId: alice });
        expect(listed.map((r) => r.messageId)).toEqual(['a1-2', 'a1-7', 'a2-0', 'a2-1']);
        for (const r of listed) expect(r).not.toHaveProperty('vector');
        expect(listed[0]).toMatchObject({ userId: alice, sessionId: a1, role: 'assistant', text: 'text of a1-2', sequence: 2 });
        expect(listed[1]!.createdAt).toBe('2026-11-02T10:04:00.000Z');
        expect(listed[3]!.kind).toBe('archive');
        expect((await index.list({ sessionId: a2 })).map((r) => r.messageId)).toEqual(['a2-0', 'a2-1']);
        expect(await index.list({ userId: alice, sessionId: b1 })).toEqual([]);
        expect(await index.list({ userId: newId('user') })).toEqual([]);
        await expectRejection(index.list({}), InvalidInputError.isInstance, 'list({})');
      });

      test('hostile user, session and message ids are stored, filtered and deleted exactly', async () => {
        const index = await make();
        const vector = axis(3);
        const records = HOSTILE_IDS.map((hostile) =>
          record({ userId: `${hostile}-${tag}`, sessionId: `${hostile}-${tag}`, messageId: hostile, sequence: 0, vector }),
        );
        await write(index, records);
        for (const r of records) {
          const matches = await index.query({ vector, topK: 5, filter: { userId: r.userId! } });
          expect(matches.map((m) => [m.id, m.messageId])).toEqual([[r.id, r.messageId]]);
          expect(ids(await index.getRange({ sessionId: r.sessionId, fromSequence: 0, toSequence: 0 }))).toEqual([r.id]);
        }
        await index.delete({ sessionId: records[0]!.sessionId });
        await index.delete({ ids: [records[1]!.id] });
        await settled(index);
        for (const [i, r] of records.entries()) {
          const left = await index.query({ vector, topK: 5, filter: { sessionId: r.sessionId } });
          expect(left.length, JSON.stringify(r.sessionId)).toBe(i < 2 ? 0 : 1);
        }
      });
    });

    describe('capabilities', () => {
      test('declares its optional capabilities (list) as it has them', async () => {
        const index = await make();
        expectDeclared([
          {
            suite: name,
            capability: 'list',
            declared: options.capabilities?.list,
            present: typeof index.list === 'function',
            methods: 'list',
          },
        ]);
      });
    });

    describe('bad input and aborts', () => {
      test('a query or delete without userId or sessionId is an InvalidInputError', async () => {
        const index = await make();
        await write(index, [record({ sessionId: newId('session'), sequence: 0 })]);
        await expectRejection(
          index.query({ vector: vectorOf(1), topK: 1, filter: {} }),
          InvalidInputError.isInstance,
          'query({ filter: {} })',
        );
        await expectRejection(index.delete({}), InvalidInputError.isInstance, 'delete({})');
      });

      test('a batch with one malformed record is an InvalidInputError and stores nothing of the batch', async () => {
        const index = await make();
        const sessionId = newId('session');
        const good = record({ sessionId, sequence: 0 });
        const bad: VectorRecord[] = [
          { ...record({ sessionId, sequence: 1 }), vector: [...vectorOf(1), 1] },
          { ...record({ sessionId, sequence: 1 }), vector: vectorOf(1).map((x, i) => (i ? x : Number.NaN)) },
          { ...record({ sessionId, sequence: 1 }), id: '' },
          { ...record({ sessionId, sequence: 1 }), sequence: -1 },
          { ...record({ sessionId, sequence: 1 }), sequence: 1.5 },
        ];
        for (const [i, b] of bad.entries()) {
          const error = await expectRejection(index.upsert([good, b]), InvalidInputError.isInstance, `upsert of bad record ${i}`);
          expect(String((error as Error).message).length).toBeGreaterThan(20);
        }
        await settled(index);
        expect(await index.getRange({ sessionId, fromSequence: 0, toSequence: 5 })).toEqual([]);
      });

      test('a query whose vector has the wrong length is an InvalidInputError', async () => {
        const index = await make();
        const userId = newId('user');
        await write(index, [record({ userId, sessionId: newId('session'), sequence: 0 })]);
        await expectRejection(
          index.query({ vector: [...vectorOf(1), 0.5], topK: 1, filter: { userId } }),
          InvalidInputError.isInstance,
          'query with a longer vector',
        );
      });

      test('an aborted signal rejects with its reason and stores nothing', async () => {
        const index = await make();
        const userId = newId('user');
        const sessionId = newId('session');
        const controller = new AbortController();
        const reason = new Error('stop now');
        controller.abort(reason);
        const { signal } = controller;
        await expect(index.upsert([record({ userId, sessionId, sequence: 0 })], { signal })).rejects.toBe(reason);
        await expect(index.query({ vector: vectorOf(1), topK: 1, filter: { userId } }, { signal })).rejects.toBe(reason);
        await expect(index.getRange({ sessionId, fromSequence: 0, toSequence: 1 }, { signal })).rejects.toBe(reason);
        await expect(index.delete({ userId }, { signal })).rejects.toBe(reason);
        await settled(index);
        expect(await index.query({ vector: vectorOf(1), topK: 1, filter: { userId } })).toEqual([]);
      });
    });
  });
}
