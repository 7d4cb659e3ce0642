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
  | 'list-ignores-session'
  | 'delete-ignores-user-with-session'
  | 'filters-after-search'
  | 'declares-missing-list'
  | 'declares-absent-list';

/** Candidates an approximate (HNSW-like) search visits, as pgvector's default `hnsw.ef_search`. */
const EF_SEARCH = 40;

class FaultyIndex implements VectorIndex {
  readonly #inner: InMemoryVectorIndex;

  constructor(
    readonly fault: IndexFault,
    dimensions: number,
  ) {
    this.#inner = new InMemoryVectorIndex({ dimensions });
    // An index that lost a capability it declares: the method is gone from the instance.
    if (fault === 'declares-missing-list') Object.assign(this, { list: undefined });
  }

  /** Every stored record, for the global search of `filters-after-search`. */
  readonly #all = new Map<string, VectorRecord>();

  async upsert(records: readonly VectorRecord[], options?: VectorIndexCallOptions): Promise<void> {
    if (this.fault === 'filters-after-search') {
      await this.#inner.upsert(records, options);
      for (const r of records) this.#all.set(r.id, r);
      return;
    }
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
    if (this.fault === 'filters-after-search') {
      // An approximate index with the filter applied after the search: the EF_SEARCH nearest of
      // every record are the candidates, and the filter keeps those of the scope among them.
      const candidates = new Set(
        [...this.#all.values()]
          .map((r) => ({ id: r.id, score: cosine(r.vector, q.vector) }))
          .sort((a, b) => b.score - a.score)
          .slice(0, Math.max(q.topK, EF_SEARCH))
          .map((c) => c.id),
      );
      const ranked = await this.#inner.query({ ...q, topK: Math.max(1, this.#all.size) }, options);
      return ranked.filter((m) => candidates.has(m.id)).slice(0, q.topK);
    }
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
    if (this.fault === 'delete-ignores-user-with-session' && 'sessionId' in target && target.sessionId !== undefined)
      return this.#inner.delete({ sessionId: target.sessionId }, options);
    if (this.fault === 'filters-after-search') {
      await this.#inner.delete(target, options);
      for (const r of [...this.#all.values()]) {
        const gone =
          'ids' in target
            ? target.ids.includes(r.id)
            : (target.userId === undefined || r.userId === target.userId) &&
              (target.sessionId === undefined || r.sessionId === target.sessionId);
        if (gone) this.#all.delete(r.id);
      }
      return;
    }
    return this.#inner.delete(target, this.fault === 'ignores-signal' ? {} : options);
  }
}

function cosine(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return dot / Math.sqrt(na * nb);
}

const MUST_FAIL: Record<IndexFault, string[]> = {
  'ignores-exclude': ['excludeMessageIds leaves those messages out and still fills topK from the rest'],
  'ignores-min-score': ['minScore leaves out matches below it'],
  'drops-session-when-user-set': [
    'a filter by user never returns another user; by session never another session',
    'a filter selecting a minority of many records still gets the exact topK of its scope (an index that searches, then filters, returns fewer)',
    "delete by user and session removes that user's records of the session, never another user's records of the same session id",
  ],
  'partial-batch': ['a batch with one malformed record is an InvalidInputError and stores nothing of the batch'],
  'ignores-signal': ['an aborted signal rejects with its reason and stores nothing'],
  'range-unsorted': [
    'getRange returns the records of one session within the sequences, in order',
    'delete by ids removes those records only; unknown ids are no error',
    "delete by user and session removes that user's records of the session, never another user's records of the same session id",
  ],
  'list-ignores-session': [
    'list (optional) returns every record of the scope without vectors, by session and sequence, never another scope',
  ],
  'delete-ignores-user-with-session': [
    "delete by user and session removes that user's records of the session, never another user's records of the same session id",
  ],
  'filters-after-search': [
    'a filter selecting a minority of many records still gets the exact topK of its scope (an index that searches, then filters, returns fewer)',
  ],
  'declares-missing-list': [
    'list (optional) returns every record of the scope without vectors, by session and sequence, never another scope',
    'declares its optional capabilities (list) as it has them',
  ],
  'declares-absent-list': ['declares its optional capabilities (list) as it has them'],
  'one-too-many': [
    'query is exact k-NN: the topK of 200 records are those a brute-force cosine ranks first',
    'query returns at most topK matches, and fewer when the scope holds fewer',
    'a filter selecting a minority of many records still gets the exact topK of its scope (an index that searches, then filters, returns fewer)',
  ],
};

for (const [fault, titles] of Object.entries(MUST_FAIL) as [IndexFault, string[]][]) {
  describeVectorIndex(`VectorIndex with fault ${fault}`, {
    create: ({ dimensions }) => new FaultyIndex(fault, dimensions),
    // Declared as a first-party index declares what it has; the list faults declare it wrongly.
    capabilities: { list: fault !== 'declares-absent-list' },
    expectedFailures: titles,
  });
}
