/**
 * The VectorIndex suite must fail for indexes that break the contract. `InMemoryVectorIndex` passes
 * every test; each variant below wraps it with exactly one fault and lists the tests that must fail
 * because of it (run as `it.fails`, so a test that wrongly passes turns this file red) while every
 * other test still passes.
 */
// @module-tag seeded-fault
import {
  type IndexedMessage,
  InMemoryVectorIndex,
  type VectorDeleteTarget,
  type VectorIndex,
  type VectorIndexCallOptions,
  type VectorMatch,
  type VectorQuery,
  type VectorRange,
  type VectorRecord,
  type VectorScope,
} from '@ctx/core';
import { describeVectorIndex } from './index.js';

type IndexFault =
  | 'ignores-exclude'
  | 'ignores-min-score'
  | 'drops-session-when-user-set'
  | 'partial-batch'
  | 'ignores-signal'
  | 'range-unsorted'
  | 'one-too-many'
  | 'list-ignores-session';

class FaultyIndex implements VectorIndex {
  readonly #inner: InMemoryVectorIndex;

  constructor(
    readonly fault: IndexFault,
    dimensions: number,
  ) {
    this.#inner = new InMemoryVectorIndex({ dimensions });
  }

  async upsert(records: readonly VectorRecord[], options?: VectorIndexCallOptions): Promise<void> {
    if (this.fault === 'ignores-signal') return this.#inner.upsert(records);
    if (this.fault === 'partial-batch') {
      for (const r of records) await this.#inner.upsert([r], options);
      return;
    }
    return this.#inner.upsert(records, options);
  }

  async query(query: VectorQuery, options?: VectorIndexCallOptions): Promise<VectorMatch[]> {
    let q = query;
    if (this.fault === 'ignores-signal') options = {};
    if (this.fault === 'ignores-exclude')
      q = {
        ...q,
        filter: {
          ...(q.filter.userId ? { userId: q.filter.userId } : {}),
          ...(q.filter.sessionId ? { sessionId: q.filter.sessionId } : {}),
        },
      };
    if (this.fault === 'ignores-min-score') {
      const { minScore: _minScore, ...rest } = q;
      q = rest;
    }
    if (this.fault === 'drops-session-when-user-set' && q.filter.userId && q.filter.sessionId)
      q = { ...q, filter: { userId: q.filter.userId } };
    if (this.fault === 'one-too-many') q = { ...q, topK: q.topK + 1 };
    return this.#inner.query(q, options);
  }

  async getRange(range: VectorRange, options?: VectorIndexCallOptions): Promise<IndexedMessage[]> {
    const records = await this.#inner.getRange(range, this.fault === 'ignores-signal' ? {} : options);
    return this.fault === 'range-unsorted' ? records.reverse() : records;
  }

  async list(scope: VectorScope, options?: VectorIndexCallOptions): Promise<IndexedMessage[]> {
    const records = await this.#inner.list(
      scope.userId && this.fault === 'list-ignores-session' ? { userId: scope.userId } : scope,
      options,
    );
    return records;
  }

  async delete(target: VectorDeleteTarget, options?: VectorIndexCallOptions): Promise<void> {
    return this.#inner.delete(target, this.fault === 'ignores-signal' ? {} : options);
  }
}

const MUST_FAIL: Record<IndexFault, string[]> = {
  'ignores-exclude': ['excludeMessageIds leaves those messages out and still fills topK from the rest'],
  'ignores-min-score': ['minScore leaves out matches below it'],
  'drops-session-when-user-set': ['a filter by user never returns another user; by session never another session'],
  'partial-batch': ['a batch with one malformed record is an InvalidInputError and stores nothing of the batch'],
  'ignores-signal': ['an aborted signal rejects with its reason and stores nothing'],
  'range-unsorted': [
    'getRange returns the records of one session within the sequences, in order',
    'delete by ids removes those records only; unknown ids are no error',
  ],
  'list-ignores-session': [
    'list (optional) returns every record of the scope without vectors, by session and sequence, never another scope',
  ],
  'one-too-many': [
    'query is exact k-NN: the topK of 200 records are those a brute-force cosine ranks first',
    'query returns at most topK matches, and fewer when the scope holds fewer',
  ],
};

for (const [fault, titles] of Object.entries(MUST_FAIL) as [IndexFault, string[]][]) {
  describeVectorIndex(`VectorIndex with fault ${fault}`, {
    create: ({ dimensions }) => new FaultyIndex(fault, dimensions),
    expectedFailures: titles,
  });
}
