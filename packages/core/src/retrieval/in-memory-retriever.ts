import { checkOptionNames, optionNames } from '../backend/checks.js';
import { abortable } from '../backend/deadline.js';
import { ConfigurationError } from '../errors.js';
import type { EmbeddingGenerator } from '../contracts/embedding-generator.js';
import type { JsonObject } from '../contracts/json.js';
import type { RetrievalResult, Retriever, RetrieverSearchOptions } from '../contracts/retriever.js';
import { EmbeddingCache } from './embedding-cache.js';
import { dot, normalize } from './vectors.js';
import { DEFAULT_STOP_WORDS, words } from './words.js';

/** A document an `InMemoryRetriever` indexes. */
export interface RetrievalDocument {
  /** Unique id; adding it again replaces the document. */
  id: string;
  /** The text searched and returned. */
  content: string;
  /** Searched with the content, and returned. */
  title?: string;
  /** Returned for citations. */
  url?: string;
  /** Returned as is. */
  metadata?: JsonObject;
}

/** How an `InMemoryRetriever` scores documents against a query. */
export type InMemoryScoring = 'keyword' | 'embedding' | 'hybrid';

/** Options of `InMemoryRetriever`. */
export interface InMemoryRetrieverOptions {
  /** Documents to start with. */
  documents?: readonly RetrievalDocument[];
  /** Needed for `embedding` and `hybrid` scoring (`createHashEmbedding()` works offline). */
  embeddings?: EmbeddingGenerator;
  /**
   * `keyword`: BM25 over the words of title and content. `embedding`: cosine similarity of
   * embeddings. `hybrid`: the mean of BM25 scaled to the best hit (0..1) and the cosine similarity.
   * Default `embedding` with `embeddings`, else `keyword`.
   */
  scoring?: InMemoryScoring;
  /** Results scoring at or below this are left out. Default 0. */
  minScore?: number;
  /** Words keyword scoring ignores (lower case). Default: a short list of English function words. */
  stopWords?: readonly string[];
}

interface Indexed {
  doc: RetrievalDocument;
  terms: Map<string, number>;
  length: number;
}

const K1 = 1.2;
const B = 0.75;

const IN_MEMORY_RETRIEVER_OPTIONS = optionNames<InMemoryRetrieverOptions>()({
  documents: true,
  embeddings: true,
  scoring: true,
  minScore: true,
  stopWords: true,
});

/**
 * A `Retriever` over documents held in memory: keyword (BM25), embedding or hybrid scoring.
 * Document embeddings are computed once, lazily at the first search after they were added, and
 * shared by concurrent searches. For tests, examples and small corpora (every search scores every
 * document).
 * @throws ConfigurationError (constructor) for `embedding`/`hybrid` scoring without `embeddings`.
 */
export class InMemoryRetriever implements Retriever {
  /** How documents are scored. */
  readonly scoring: InMemoryScoring;
  readonly #minScore: number;
  readonly #docs = new Map<string, Indexed>();
  readonly #df = new Map<string, number>();
  #totalLength = 0;
  readonly #cache: EmbeddingCache | undefined;
  readonly #embeddings: EmbeddingGenerator | undefined;
  readonly #stop: ReadonlySet<string>;

  constructor(options: InMemoryRetrieverOptions = {}) {
    checkOptionNames('InMemoryRetriever', options, IN_MEMORY_RETRIEVER_OPTIONS);
    this.scoring = options.scoring ?? (options.embeddings ? 'embedding' : 'keyword');
    if (this.scoring !== 'keyword' && !options.embeddings)
      throw new ConfigurationError(`InMemoryRetriever: "${this.scoring}" scoring needs an \`embeddings\` generator.`);
    this.#embeddings = options.embeddings;
    this.#cache = options.embeddings && new EmbeddingCache(options.embeddings);
    this.#minScore = options.minScore ?? 0;
    this.#stop = new Set(options.stopWords ?? DEFAULT_STOP_WORDS);
    if (options.documents) this.add(options.documents);
  }

  /** How many documents are indexed. */
  get size(): number {
    return this.#docs.size;
  }

  /** Adds documents; a document with an id already indexed replaces it. */
  add(documents: readonly RetrievalDocument[]): void {
    for (const doc of documents) {
      if (typeof doc?.id !== 'string' || typeof doc.content !== 'string')
        throw new ConfigurationError('InMemoryRetriever: every document needs a string `id` and `content`.');
      this.remove([doc.id]);
      const terms = new Map<string, number>();
      const list = this.#terms(`${doc.title ?? ''} ${doc.content}`);
      for (const w of list) terms.set(w, (terms.get(w) ?? 0) + 1);
      for (const w of terms.keys()) this.#df.set(w, (this.#df.get(w) ?? 0) + 1);
      this.#totalLength += list.length;
      this.#docs.set(doc.id, { doc: { ...doc }, terms, length: list.length });
    }
  }

  /** Removes documents by id. Returns how many were indexed. */
  remove(ids: readonly string[]): number {
    let n = 0;
    for (const id of ids) {
      const old = this.#docs.get(id);
      if (!old) continue;
      for (const w of old.terms.keys()) {
        const df = this.#df.get(w)! - 1;
        if (df) this.#df.set(w, df);
        else this.#df.delete(w);
      }
      this.#totalLength -= old.length;
      this.#docs.delete(id);
      this.#cache?.delete(cacheKey(old.doc));
      n++;
    }
    return n;
  }

  /** The best `topK` documents for `query`, best first, each with its `score`. */
  async search(query: string, options: RetrieverSearchOptions): Promise<RetrievalResult[]> {
    const { topK, signal } = options;
    signal?.throwIfAborted();
    if (!(topK > 0) || this.#docs.size === 0) return [];
    const docs = [...this.#docs.values()];
    let scores: number[];
    if (this.scoring === 'keyword') scores = this.#bm25(query, docs);
    else {
      const cosine = await this.#cosine(query, docs, signal);
      if (this.scoring === 'embedding') scores = cosine;
      else {
        const bm25 = this.#bm25(query, docs);
        const best = Math.max(0, ...bm25);
        scores = cosine.map((c, i) => ((best > 0 ? bm25[i]! / best : 0) + Math.max(0, c)) / 2);
      }
    }
    const ranked = docs.map((d, i) => ({ d, score: scores[i]! })).filter((r) => r.score > this.#minScore);
    ranked.sort((a, b) => b.score - a.score);
    return ranked.slice(0, topK).map(({ d, score }) => ({ ...d.doc, score }));
  }

  #bm25(query: string, docs: readonly Indexed[]): number[] {
    const terms = [...new Set(this.#terms(query))];
    const n = this.#docs.size;
    const avg = this.#totalLength / n || 1;
    const idf = terms.map((t) => {
      const df = this.#df.get(t) ?? 0;
      return Math.log(1 + (n - df + 0.5) / (df + 0.5));
    });
    return docs.map((d) => {
      let score = 0;
      terms.forEach((t, i) => {
        const tf = d.terms.get(t);
        if (tf) score += (idf[i]! * tf * (K1 + 1)) / (tf + K1 * (1 - B + (B * d.length) / avg));
      });
      return score;
    });
  }

  #terms(text: string): string[] {
    return words(text).filter((w) => !this.#stop.has(w));
  }

  async #cosine(query: string, docs: readonly Indexed[], signal: AbortSignal | undefined): Promise<number[]> {
    const [queryVector] = await abortable(this.#embeddings!.embed([query], signal ? { signal } : undefined), signal);
    const q = normalize(queryVector ?? []);
    const vectors = await this.#cache!.vectors(
      docs.map((d) => ({ key: cacheKey(d.doc), text: `${d.doc.title ?? ''}\n${d.doc.content}` })),
      signal,
    );
    return vectors.map((v) => {
      if (v.length !== q.length)
        throw new ConfigurationError(
          `InMemoryRetriever: the query embedding has ${q.length} dimensions and the documents ${v.length}; use one embedding model.`,
        );
      return dot(q, v);
    });
  }
}

function cacheKey(doc: RetrievalDocument): string {
  return `${doc.id}\u0000${doc.title ?? ''}\u0000${doc.content}`;
}
