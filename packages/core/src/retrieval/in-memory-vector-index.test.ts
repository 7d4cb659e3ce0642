import { describe, expect, it } from 'vitest';
import { ConfigurationError, InvalidInputError } from '../errors.js';
import type { VectorRecord } from '../contracts/vector-index.js';
import { InMemoryVectorIndex } from './in-memory-vector-index.js';

const record = (n: number, init: Partial<VectorRecord> = {}): VectorRecord => ({
  id: `r${n}`,
  text: `text ${n}`,
  userId: 'u1',
  sessionId: 's1',
  messageId: `m${n}`,
  role: 'user',
  sequence: n,
  vector: [1, n, 0],
  ...init,
});

describe('InMemoryVectorIndex', () => {
  it('maxRecords drops the records written longest ago, a rewrite counting as new', async () => {
    const index = new InMemoryVectorIndex({ maxRecords: 3 });
    await index.upsert([record(0), record(1), record(2)]);
    await index.upsert([record(0, { text: 'rewritten' })]);
    await index.upsert([record(3)]);
    expect(index.size).toBe(3);
    const left = await index.getRange({ sessionId: 's1', fromSequence: 0, toSequence: 9 });
    expect(left.map((r) => r.id)).toEqual(['r0', 'r2', 'r3']);
    const matches = await index.query({ vector: [1, 1, 0], topK: 10, filter: { userId: 'u1' } });
    expect(matches.map((m) => m.id).sort()).toEqual(['r0', 'r2', 'r3']);
  });

  it('the dimensions option refuses other lengths from the first record on', async () => {
    const index = new InMemoryVectorIndex({ dimensions: 4 });
    await expect(index.upsert([record(0)])).rejects.toSatisfy(
      (e: unknown) => InvalidInputError.isInstance(e) && /record "r0" has a vector of 3 dimensions where the index has 4/.test(String(e)),
    );
    expect(index.size).toBe(0);
    expect(() => new InMemoryVectorIndex({ maxRecords: 0 })).toThrow(ConfigurationError);
  });

  it('keeps copies: changing a record or a match afterwards changes nothing stored', async () => {
    const index = new InMemoryVectorIndex();
    const r = record(1);
    await index.upsert([r]);
    r.text = 'changed';
    r.vector[0] = -5;
    const [match] = await index.query({ vector: [1, 1, 0], topK: 1, filter: { sessionId: 's1' } });
    expect(match!.text).toBe('text 1');
    expect(match!.score).toBeCloseTo(1, 6);
    match!.text = 'changed again';
    const [again] = await index.getRange({ sessionId: 's1', fromSequence: 1, toSequence: 1 });
    expect(again!.text).toBe('text 1');
  });

  it('keeps users apart after removals move rows around', async () => {
    const index = new InMemoryVectorIndex();
    await index.upsert([record(0), record(1), record(2, { userId: 'u2', sessionId: 's2' }), record(3)]);
    await index.delete({ ids: ['r0'] });
    await index.delete({ sessionId: 's2' });
    const matches = await index.query({ vector: [1, 3, 0], topK: 10, filter: { userId: 'u1' } });
    expect(matches.map((m) => m.id)).toEqual(['r3', 'r1']);
    expect(await index.query({ vector: [1, 3, 0], topK: 10, filter: { userId: 'u2' } })).toEqual([]);
  });
});
