import { describe, expect, it } from 'vitest';
import { ConfigurationError } from '../errors.js';
import type { EmbeddingGenerator } from '../contracts/embedding-generator.js';
import { createHashEmbedding } from './hash-embedding.js';
import { InMemoryRetriever, type RetrievalDocument } from './in-memory-retriever.js';

const docs: RetrievalDocument[] = [
  {
    id: 'returns',
    title: 'Returns',
    content: 'You can return any item within 30 days for a full refund.',
    url: 'https://shop.test/returns',
  },
  { id: 'shipping', title: 'Shipping', content: 'Orders ship within two business days. Express shipping is available.' },
  { id: 'warranty', title: 'Warranty', content: 'Electronics carry a two year warranty against defects.', metadata: { section: 7 } },
];

/** Counts the texts it embeds. */
function counting(inner: EmbeddingGenerator): EmbeddingGenerator & { texts: number } {
  const gen = {
    texts: 0,
    async embed(values: readonly string[]) {
      gen.texts += values.length;
      return inner.embed(values);
    },
  };
  return gen;
}

describe('InMemoryRetriever', () => {
  it('ranks by BM25 keyword score, best first, and leaves out documents that do not match', async () => {
    const retriever = new InMemoryRetriever({ documents: docs });
    const results = await retriever.search('how do I get a refund for a return', { topK: 5 });
    expect(results.map((r) => r.id)).toEqual(['returns']);
    expect(results[0]).toMatchObject({ title: 'Returns', url: 'https://shop.test/returns' });
    expect(results[0]!.score).toBeGreaterThan(0);
    const two = await retriever.search('two', { topK: 5 });
    expect(two.map((r) => r.id).sort()).toEqual(['shipping', 'warranty']);
    expect(await retriever.search('two', { topK: 1 })).toHaveLength(1);
  });

  it('ranks by embeddings, embedding each document once across searches', async () => {
    const embeddings = counting(createHashEmbedding());
    const retriever = new InMemoryRetriever({ documents: docs, embeddings });
    const [first] = await retriever.search('warranty for defective electronics', { topK: 1 });
    expect(first!.id).toBe('warranty');
    expect(first!.metadata).toEqual({ section: 7 });
    await Promise.all([retriever.search('express shipping', { topK: 2 }), retriever.search('refund', { topK: 2 })]);
    expect(embeddings.texts).toBe(docs.length + 3); // 3 documents once, plus one text per query
  });

  it('hybrid scoring combines both, scores between 0 and 1', async () => {
    const retriever = new InMemoryRetriever({ documents: docs, embeddings: createHashEmbedding(), scoring: 'hybrid' });
    const results = await retriever.search('refund', { topK: 3 });
    expect(results[0]!.id).toBe('returns');
    for (const r of results) expect(r.score!).toBeLessThanOrEqual(1);
  });

  it('replaces documents by id and removes them', async () => {
    const retriever = new InMemoryRetriever({ documents: docs });
    retriever.add([{ id: 'shipping', content: 'We no longer ship; pick up in store.' }]);
    expect(retriever.size).toBe(3);
    expect(await retriever.search('express', { topK: 3 })).toEqual([]);
    expect(retriever.remove(['shipping', 'nope'])).toBe(1);
    expect((await retriever.search('store pick up', { topK: 3 })).length).toBe(0);
  });

  it('honours an aborted signal and rejects embedding scoring without embeddings', async () => {
    const retriever = new InMemoryRetriever({ documents: docs });
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    await expect(retriever.search('refund', { topK: 1, signal: controller.signal })).rejects.toThrow('stop');
    expect(() => new InMemoryRetriever({ scoring: 'embedding' })).toThrow(ConfigurationError);
  });
});
