import type { JsonObject } from './json.js';

/** One search hit: a piece of text and where it came from. Plain JSON. */
export interface RetrievalResult {
  /** Stable id of the document or chunk. */
  id: string;
  /** The text to show the model. */
  content: string;
  /** A title to show with the content. */
  title?: string;
  /** Where the content comes from, for citations. */
  url?: string;
  /** Relevance, higher is better; its scale is the retriever's own. */
  score?: number;
  /** Any JSON the retriever keeps with the document. */
  metadata?: JsonObject;
}

/** What `Retriever.search` receives besides the query. */
export interface RetrieverSearchOptions {
  /** Return at most this many results. */
  topK: number;
  /** Aborts the search. */
  signal?: AbortSignal;
}

/**
 * Anything that finds text for a query: an in-memory index (`InMemoryRetriever`), a search service
 * (`@ctx/azure-search`), your own database. `TextSearchProvider` works over any of them.
 */
export interface Retriever {
  /** The contract version this retriever implements. Absent means `'v1'`. */
  readonly specificationVersion?: 'v1';
  /** The best results for `query`, best first, at most `topK`. Honour `signal`. */
  search(query: string, options: RetrieverSearchOptions): Promise<RetrievalResult[]>;
}
