import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigurationError } from '../errors.js';
import { createHashEmbedding } from './hash-embedding.js';
import { cosineSimilarity } from './vectors.js';

describe('createHashEmbedding', () => {
  const embedding = createHashEmbedding({ dimensions: 128 });

  it('is deterministic and L2-normalized', async () => {
    fc.assert(
      fc.asyncProperty(fc.string({ minLength: 1 }), async (text) => {
        const [a] = await embedding.embed([text]);
        const [b] = await createHashEmbedding({ dimensions: 128 }).embed([text]);
        expect(a).toEqual(b);
        expect(a).toHaveLength(128);
        const norm = Math.hypot(...a!);
        expect(norm === 0 || Math.abs(norm - 1) < 1e-9).toBe(true);
      }),
      { numRuns: 50 },
    );
  });

  it('puts texts that share words closer than texts that do not', async () => {
    const [query, near, far] = await embedding.embed([
      'weather forecast for Paris',
      'get the weather forecast for a city',
      'refund an order payment',
    ]);
    expect(cosineSimilarity(query!, near!)).toBeGreaterThan(0.3);
    expect(cosineSimilarity(query!, near!)).toBeGreaterThan(cosineSimilarity(query!, far!) + 0.2);
  });

  it('matches word pieces through character n-grams', async () => {
    const [booking, booked, banana] = await embedding.embed(['booking', 'booked', 'banana']);
    expect(cosineSimilarity(booking!, booked!)).toBeGreaterThan(cosineSimilarity(booking!, banana!));
  });

  it('ignores stop words by default and embeds an empty text as zeros', async () => {
    const [a, b, empty] = await embedding.embed(['the weather', 'weather', 'the of and']);
    expect(cosineSimilarity(a!, b!)).toBeCloseTo(1, 9);
    expect(empty!.every((x) => x === 0)).toBe(true);
    expect(cosineSimilarity(empty!, a!)).toBe(0);
  });

  it('rejects bad options and mismatched vectors', () => {
    expect(() => createHashEmbedding({ dimensions: 0 })).toThrow(ConfigurationError);
    expect(() => cosineSimilarity([1, 0], [1, 0, 0])).toThrow(ConfigurationError);
  });
});
