import { ConfigurationError } from '../errors.js';
import type { EmbeddingGenerator } from '../embeddings.js';

/** Options of `createHashEmbedding`. */
export interface HashEmbeddingOptions {
  /** Vector length. Default 512. */
  dimensions?: number;
  /** Length of the character n-grams hashed besides whole words; 0 turns them off. Default 3. */
  ngram?: number;
  /** Words left out (lower case). Default: a short list of English function words; `[]` keeps every word. */
  stopWords?: readonly string[];
}

/** Short list of English function words left out of hashing and keyword scoring by default (internal). */
export const DEFAULT_STOP_WORDS: readonly string[] = [
  'a', 'an', 'and', 'are', 'as', 'at', 'be', 'by', 'can', 'do', 'for', 'from', 'has', 'have', 'i', 'in', 'is', 'it', 'its',
  'me', 'my', 'of', 'on', 'or', 'our', 'please', 'so', 'that', 'the', 'this', 'to', 'us', 'was', 'we', 'what', 'when',
  'which', 'will', 'with', 'would', 'you', 'your',
];

const WORD = /[\p{L}\p{N}]+/gu;

/** Lower-case words of `text` (letters and digits), for keyword scoring and hashing. */
export function words(text: string): string[] {
  return text.toLowerCase().match(WORD) ?? [];
}

/** A plural `s` off (`refunds` -> `refund`), so singular and plural hash alike. */
function stem(word: string): string {
  return word.length > 3 && word.endsWith('s') && !word.endsWith('ss') ? word.slice(0, -1) : word;
}

/** 32-bit FNV-1a. */
function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * A deterministic, dependency-free `EmbeddingGenerator` for tests, examples and offline demos:
 * hashed bag of words plus character n-grams of each word (signed feature hashing), L2-normalized.
 * Texts that share words or word pieces get a higher cosine similarity; it knows no synonyms.
 * Not a substitute for a real embedding model in production.
 * @throws ConfigurationError for a non-positive `dimensions` or a negative `ngram`.
 */
export function createHashEmbedding(options: HashEmbeddingOptions = {}): EmbeddingGenerator {
  const dimensions = options.dimensions ?? 512;
  const ngram = options.ngram ?? 3;
  if (!Number.isInteger(dimensions) || dimensions <= 0) throw new ConfigurationError(`createHashEmbedding: dimensions must be a positive integer, got ${dimensions}.`);
  if (!Number.isInteger(ngram) || ngram < 0) throw new ConfigurationError(`createHashEmbedding: ngram must be a non-negative integer, got ${ngram}.`);
  const stop = new Set(options.stopWords ?? DEFAULT_STOP_WORDS);
  const add = (vector: number[], feature: string, weight: number) => {
    const h = fnv1a(feature);
    vector[h % dimensions]! += (h & 0x80000000 ? -1 : 1) * weight;
  };
  const embedOne = (text: string): number[] => {
    const vector = new Array<number>(dimensions).fill(0);
    for (const w of words(text)) {
      if (stop.has(w)) continue;
      const word = stem(w);
      add(vector, `w:${word}`, 1);
      if (ngram === 0) continue;
      const padded = `^${word}$`;
      const count = padded.length - ngram + 1;
      if (count <= 1) continue;
      for (let i = 0; i < count; i++) add(vector, `g:${padded.slice(i, i + ngram)}`, 1 / count);
    }
    return normalize(vector);
  };
  return {
    dimensions,
    async embed(values, embedOptions) {
      embedOptions?.signal?.throwIfAborted();
      return values.map(embedOne);
    },
  };
}

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
  if (a.length !== b.length) throw new ConfigurationError(`Cannot compare embeddings of ${a.length} and ${b.length} dimensions; use one embedding model for the index and the queries.`);
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
