import { ConfigurationError } from '../errors.js';

/** `vector` scaled to length 1 (a zero vector stays zero). Returns a new array. */
export function normalize(vector: readonly number[]): number[] {
  let sum = 0;
  for (const x of vector) sum += x * x;
  if (sum === 0) return [...vector];
  const scale = 1 / Math.sqrt(sum);
  return vector.map((x) => x * scale);
}

/**
 * Cosine similarity of two vectors, in [-1, 1]; 0 when either is all zeros.
 * @throws ConfigurationError when their lengths differ (embeddings from different models).
 */
export function cosineSimilarity(a: readonly number[], b: readonly number[]): number {
  if (a.length !== b.length)
    throw new ConfigurationError(
      `Cannot compare embeddings of ${a.length} and ${b.length} dimensions; use one embedding model for the index and the queries.`,
    );
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

/** Dot product of two unit vectors of the same length (internal; callers check lengths). */
export function dot(a: readonly number[], b: readonly number[]): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i]! * b[i]!;
  return sum;
}
