import { abortable } from '../backend/deadline.js';
import { ConfigurationError } from '../errors.js';
import type { EmbeddingGenerator } from '../contracts/embedding-generator.js';
import { normalize } from './vectors.js';

/** A text to embed and the key its vector is cached under. */
export interface EmbeddingKey {
  key: string;
  text: string;
}

/**
 * Unit vectors of texts, embedded once per key and shared by every caller: concurrent requests for
 * a missing key wait on the same batch, and a failed batch is forgotten so the next call retries.
 * Internal to the providers of this folder.
 */
export class EmbeddingCache {
  readonly #generator: EmbeddingGenerator;
  readonly #vectors = new Map<string, number[] | Promise<number[]>>();

  constructor(generator: EmbeddingGenerator) {
    this.#generator = generator;
  }

  /** How many keys are cached or being embedded. */
  get size(): number {
    return this.#vectors.size;
  }

  /** Forgets a key. */
  delete(key: string): void {
    this.#vectors.delete(key);
  }

  /**
   * The unit vectors of `items`, in order. Missing keys are embedded in one batch. The batch is not
   * cancelled by `signal` (other callers may share it); an aborted caller stops waiting for it.
   */
  async vectors(items: readonly EmbeddingKey[], signal?: AbortSignal): Promise<number[][]> {
    signal?.throwIfAborted();
    const missing = new Map<string, string>();
    for (const item of items) if (!this.#vectors.has(item.key)) missing.set(item.key, item.text);
    if (missing.size) this.#embed(missing);
    const out: number[][] = new Array(items.length);
    let pending: Promise<unknown>[] | undefined;
    items.forEach((item, i) => {
      const v = this.#vectors.get(item.key)!;
      if (Array.isArray(v)) out[i] = v;
      else (pending ??= []).push(v.then((vector) => (out[i] = vector)));
    });
    if (pending) await abortable(Promise.all(pending), signal);
    return out;
  }

  #embed(missing: Map<string, string>): void {
    const keys = [...missing.keys()];
    const batch = this.#generator.embed([...missing.values()]).then((vectors) => {
      if (!Array.isArray(vectors) || vectors.length !== keys.length) {
        throw new ConfigurationError(
          `The embedding generator returned ${Array.isArray(vectors) ? vectors.length : 'no'} vectors for ${keys.length} texts.`,
        );
      }
      return vectors;
    });
    keys.forEach((key, j) => {
      const promise = batch.then((vectors) => {
        const vector = normalize(vectors[j]!);
        if (this.#vectors.get(key) === promise) this.#vectors.set(key, vector);
        return vector;
      });
      promise.catch(() => {
        if (this.#vectors.get(key) === promise) this.#vectors.delete(key);
      });
      this.#vectors.set(key, promise);
    });
  }
}
