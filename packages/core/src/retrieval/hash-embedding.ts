import { checkOptionNames, optionNames } from '../backend/checks.js';
import { ConfigurationError } from '../errors.js';
import type { EmbeddingGenerator } from '../contracts/embedding-generator.js';
import { normalize } from './vectors.js';
import { DEFAULT_STOP_WORDS, words } from './words.js';

/** Options of `createHashEmbedding`. */
export interface HashEmbeddingOptions {
  /** Vector length. Default 512. */
  dimensions?: number;
  /** Length of the character n-grams hashed besides whole words; 0 turns them off. Default 3. */
  ngram?: number;
  /** Words left out (lower case). Default: a short list of English function words; `[]` keeps every word. */
  stopWords?: readonly string[];
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

const HASH_EMBEDDING_OPTIONS = optionNames<HashEmbeddingOptions>()({ dimensions: true, ngram: true, stopWords: true });

/**
 * A deterministic, dependency-free `EmbeddingGenerator` for tests, examples and offline demos:
 * hashed bag of words plus character n-grams of each word (signed feature hashing), L2-normalized.
 * Texts that share words or word pieces get a higher cosine similarity; it knows no synonyms.
 * Not a substitute for a real embedding model in production.
 * @throws ConfigurationError for a non-positive `dimensions` or a negative `ngram`.
 */
export function createHashEmbedding(options: HashEmbeddingOptions = {}): EmbeddingGenerator {
  checkOptionNames('createHashEmbedding', options, HASH_EMBEDDING_OPTIONS);
  const dimensions = options.dimensions ?? 512;
  const ngram = options.ngram ?? 3;
  if (!Number.isInteger(dimensions) || dimensions <= 0)
    throw new ConfigurationError(`createHashEmbedding: dimensions must be a positive integer, got ${dimensions}.`);
  if (!Number.isInteger(ngram) || ngram < 0)
    throw new ConfigurationError(`createHashEmbedding: ngram must be a non-negative integer, got ${ngram}.`);
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
    specificationVersion: 'v1',
    dimensions,
    async embed(values, embedOptions) {
      embedOptions?.signal?.throwIfAborted();
      return values.map(embedOne);
    },
  };
}
