import { AzureKeyCredential, SearchClient } from '@azure/search-documents';
import type { AzureSearchTestServer } from '@ctx/azure-search-test-server';
import { BackendUnavailableError, ConfigurationError, createHashEmbedding } from '@ctx/core';
import type { OpenAITestServer } from '@ctx/openai-test-server';
import { beforeAll, describe, expect, it } from 'vitest';
import { DIMS, embeddings, insecure, seedIndex, startLocalBackends } from '../test/helpers.js';
import { AzureAISearchRetriever, escapeSimpleQuery, type AzureAISearchRetrieverOptions } from './azure-search-retriever.js';

let search: AzureSearchTestServer;
let openai: OpenAITestServer;
let client: SearchClient<object>;
const FIELDS = { id: 'id', content: 'content', title: 'title', url: 'url', vector: 'contentVector' };

beforeAll(async () => {
  ({ search, openai } = await startLocalBackends());
  ({ client } = await seedIndex({
    endpoint: search.endpoint,
    apiKey: search.apiKey,
    openaiOrigin: openai.origin,
    openaiUrl: openai.url,
    openaiKey: openai.apiKey,
  }));
});

const retriever = (options: Partial<AzureAISearchRetrieverOptions> = {}) =>
  new AzureAISearchRetriever({ client, fields: FIELDS, filter: `tenantId eq 'acme'`, ...options });
const lastSearch = () => search.requests.filter((r) => r.operation === 'search').at(-1)!.body!;

describe('AzureAISearchRetriever', () => {
  it('keyword: maps id, content, title, url and score; the selected fields and @search.score go to metadata', async () => {
    const results = await retriever({ select: ['tenantId'] }).search('refund order number', { topK: 2 });
    expect(results[0]).toEqual({
      id: 'acme-refunds',
      title: 'Refund policy',
      url: 'https://acme.example/refunds',
      content:
        'Acme refunds purchases within 30 days of delivery. A refund needs the order number and goes back to the original payment method.',
      score: results[0]!.metadata!['@search.score'],
      metadata: { tenantId: 'acme', '@search.score': expect.any(Number) },
    });
    expect(lastSearch()).toEqual({
      search: 'refund order number',
      filter: `tenantId eq 'acme'`,
      select: 'id,content,title,url,tenantId',
      top: 2,
    });
  });

  it('joins several content fields, and leaves out title and url when not mapped', async () => {
    const [first] = await retriever({ fields: { content: ['title', 'content'] } }).search('warranty', { topK: 1 });
    expect(first).toEqual({
      id: 'acme-warranty',
      content: 'Warranty\nEvery Acme kettle has a two-year warranty covering defects in materials and workmanship.',
      score: expect.any(Number),
      metadata: expect.any(Object),
    });
  });

  it('escapes the simple query syntax so operators in user text are searched as words', async () => {
    expect(escapeSimpleQuery('refund -receipt "x" (a|b) c:d?*')).toBe('refund \\-receipt \\"x\\" \\(a\\|b\\) c\\:d\\?\\*');
    await retriever().search('refund -order', { topK: 3 });
    expect(lastSearch().search).toBe('refund \\-order');
  });

  it('vector with client-side embeddings sends kind: vector with k = topK and no search text', async () => {
    const results = await retriever({ queryMode: 'vector', vectorizer: embeddings(openai.url, openai.apiKey) }).search(
      'how long does express delivery take',
      { topK: 2 },
    );
    expect(results.map((r) => r.id)[0]).toBe('acme-shipping');
    const body = lastSearch();
    expect(body.search).toBeUndefined();
    expect(body.vectorQueries).toEqual([{ kind: 'vector', k: 2, fields: 'contentVector', vector: expect.any(Array) }]);
    expect((body.vectorQueries as { vector: number[] }[])[0]!.vector).toHaveLength(DIMS);
  });

  it("vectorizer 'index' sends the text (kind: text) and ranks like client-side embedding of the same model", async () => {
    const text = await retriever({ queryMode: 'vector', vectorizer: 'index' }).search('kettle price euros', { topK: 3 });
    expect(lastSearch().vectorQueries).toEqual([{ kind: 'text', text: 'kettle price euros', k: 3, fields: 'contentVector' }]);
    const local = await retriever({ queryMode: 'vector', vectorizer: embeddings(openai.url, openai.apiKey) }).search('kettle price euros', {
      topK: 3,
    });
    expect(text.map((r) => [r.id, r.score])).toEqual(local.map((r) => [r.id, r.score]));
  });

  it('hybrid sends both the text and the vector query with k = max(topK, 50); scores are RRF scores', async () => {
    const results = await retriever({ vectorizer: embeddings(openai.url, openai.apiKey) }).search('refund order number', { topK: 3 });
    const body = lastSearch();
    expect(body.search).toBe('refund order number');
    expect((body.vectorQueries as { k: number }[])[0]!.k).toBe(50);
    expect(results[0]!.id).toBe('acme-refunds');
    expect(results[0]!.score).toBeLessThanOrEqual(2 / 61); // at most rank 1 in both lists
    const custom = retriever({ vectorizer: 'index', kNearestNeighbors: 7 });
    expect(custom.queryMode).toBe('hybrid');
    await custom.search('refund', { topK: 3 });
    expect((lastSearch().vectorQueries as { k: number }[])[0]!.k).toBe(7);
  });

  it('semantic: reranker scores, captions as content, answers on their result; the request names the configuration', async () => {
    const r = retriever({
      queryMode: 'semantic',
      semantic: { configuration: 'default', captions: true, answers: 2, answerThreshold: 0.5, captionsAsContent: true },
    });
    const results = await r.search('how many days do refunds take?', { topK: 3 });
    expect(lastSearch()).toMatchObject({
      search: 'how many days do refunds take\\?',
      semanticQuery: 'how many days do refunds take?',
      queryType: 'semantic',
      semanticConfiguration: 'default',
      captions: 'extractive|highlight-true',
      answers: 'extractive|count-2,threshold-0.5',
    });
    expect(results[0]).toMatchObject({ id: 'acme-refunds', content: 'Acme refunds purchases within 30 days of delivery.' });
    expect(results[0]!.score).toBe(results[0]!.metadata!['@search.rerankerScore']);
    expect(results[0]!.metadata!['@search.answers']).toEqual([
      {
        text: 'Acme refunds purchases within 30 days of delivery.',
        highlights: expect.stringContaining('<em>'),
        score: expect.any(Number),
      },
    ]);
    const scores = results.map((x) => x.score!);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
  });

  it('joins the static filter and the per-search filter with and; keeps only the end of long queries', async () => {
    await retriever().search('refund', { topK: 1, filter: `id ne 'acme-refunds'` });
    expect(lastSearch().filter).toBe(`(tenantId eq 'acme') and (id ne 'acme-refunds')`);
    await retriever({ maxQueryLength: 20 }).search(`${'x'.repeat(100)} the refund policy`, { topK: 1 });
    expect(lastSearch().search).toBe('xx the refund policy');
  });

  it('converts dates in selected fields to ISO strings (the SDK hands them over as Date)', async () => {
    const name = `dates-${Date.now()}`;
    const { SearchIndexClient } = await import('@azure/search-documents');
    const credential = new AzureKeyCredential(search.apiKey);
    await new SearchIndexClient(search.endpoint, credential, insecure).createOrUpdateIndex({
      name,
      fields: [
        { name: 'id', type: 'Edm.String', key: true },
        { name: 'content', type: 'Edm.String', searchable: true },
        { name: 'tag', type: 'Edm.String', searchable: true },
        { name: 'updated', type: 'Edm.DateTimeOffset' },
      ],
    });
    const dated = new SearchClient<object>(search.endpoint, name, credential, insecure);
    await dated.uploadDocuments([{ id: 'd1', content: 'dated page', updated: '2024-05-01T10:00:00.000Z' }]);
    const [result] = await new AzureAISearchRetriever({ client: dated, select: ['updated'] }).search('dated', { topK: 1 });
    expect(result!.metadata!.updated).toBe('2024-05-01T10:00:00.000Z');
    expect(JSON.parse(JSON.stringify(result))).toEqual(result);
    // Missing optional values give a result without them, never "null" text.
    await dated.uploadDocuments([{ id: 'd3', tag: 'sparse', content: null, updated: null }]);
    const [sparse] = await new AzureAISearchRetriever({ client: dated, select: ['updated'] }).search('sparse', { topK: 10 });
    expect(sparse).toEqual({
      id: 'd3',
      content: '',
      score: expect.any(Number),
      metadata: { updated: null, '@search.score': expect.any(Number) },
    });
    // A result whose id field is empty is a clear error, not a citation with id "null".
    await dated.uploadDocuments([{ id: 'd2', content: 'second page' }]);
    await expect(new AzureAISearchRetriever({ client: dated, fields: { id: 'updated' } }).search('second', { topK: 1 })).rejects.toThrow(
      `Azure AI Search index "${name}" returned a result without the id field "updated"; check fields.id and that the field is retrievable.`,
    );
    // A mapped field the index does not have is the service's 400, as a ConfigurationError.
    await expect(
      new AzureAISearchRetriever({ client: dated, fields: { title: 'title' } }).search('second', { topK: 1 }),
    ).rejects.toMatchObject({
      name: 'ConfigurationError',
      message: expect.stringMatching(/Could not find a property named 'title'/),
    });
  });

  it('a vectorizer that hangs is abandoned at timeoutMs with its signal aborted; one that returns no vector is a ConfigurationError', async () => {
    let seen: AbortSignal | undefined;
    const hanging = {
      embed: (_: readonly string[], options?: { signal?: AbortSignal }) => {
        seen = options?.signal;
        return new Promise<number[][]>(() => {});
      },
    };
    const before = search.requests.length;
    const error = await retriever({ queryMode: 'vector', vectorizer: hanging, timeoutMs: 50 })
      .search('refund', { topK: 1 })
      .catch((e: unknown) => e);
    expect(BackendUnavailableError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/^Azure AI Search index ".+" did not answer within 50 ms\. The search was abandoned/);
    expect(seen?.aborted).toBe(true);
    const empty = { embed: async () => [[]] };
    await expect(retriever({ queryMode: 'vector', vectorizer: empty }).search('refund', { topK: 1 })).rejects.toSatisfy(
      (e: unknown) =>
        ConfigurationError.isInstance(e) &&
        /returned no embedding .* check that the EmbeddingGenerator given as `vectorizer`/.test((e as Error).message),
    );
    expect(search.requests.length).toBe(before);
  });

  it('an empty query searches nothing', async () => {
    const before = search.requests.length;
    expect(await retriever().search('   ', { topK: 3 })).toEqual([]);
    expect(search.requests.length).toBe(before);
  });
});

describe('retriever options', () => {
  // No backend: these only construct retrievers.
  const client = new SearchClient<object>('https://example.search.windows.net', 'docs', new AzureKeyCredential('k'));

  it('defaults to keyword, or hybrid when a vectorizer is given', () => {
    expect(new AzureAISearchRetriever({ client }).queryMode).toBe('keyword');
    expect(new AzureAISearchRetriever({ client, vectorizer: 'index', fields: { vector: 'v' } }).queryMode).toBe('hybrid');
  });

  it('refuses inconsistent modes, mappings and limits with a ConfigurationError naming the option', () => {
    const cases: [object, RegExp][] = [
      [{ queryMode: 'fuzzy' }, /queryMode must be keyword, vector, hybrid or semantic/],
      [{ queryMode: 'vector', fields: { vector: 'v' } }, /needs a `vectorizer`/],
      [{ queryMode: 'hybrid', vectorizer: 'index' }, /needs the vector field\(s\) in fields.vector/],
      [{ queryMode: 'semantic', vectorizer: createHashEmbedding() }, /needs the vector field/],
      [{ vectorizer: { nope: true } }, /must be an EmbeddingGenerator or 'index'/],
      [{ fields: { content: [] } }, /fields.content needs at least one field/],
      [{ fields: { id: "id eq 'x' or true" } }, /not a valid field name/],
      [{ select: ['ok', 'not ok'] }, /select: "not ok" is not a valid field name/],
      [{ semantic: { captions: true } }, /need queryMode "semantic"/],
      [{ queryMode: 'semantic', semantic: { captionsAsContent: true } }, /captionsAsContent needs semantic.captions/],
      [{ queryMode: 'semantic', semantic: { answers: 0 } }, /answers must be true or an integer from 1 to 10/],
      [{ kNearestNeighbors: 0 }, /kNearestNeighbors must be a positive integer/],
      [{ timeoutMs: -1 }, /timeoutMs must be a positive number/],
      [{ maxQueryLength: 1.5 }, /maxQueryLength must be a positive integer/],
      [{ minScore: { reranker: 2 } }, /minScore.reranker needs queryMode "semantic"/],
      [{ minScore: Number.NaN }, /minScore must be a finite number/],
      [{ queryMode: 'semantic', minScore: { search: 'high' } }, /minScore.search must be a finite number/],
      [{ queryMode: 'semantic', semantic: { maxWaitMs: 500 } }, /semantic.maxWaitMs must be .*700/],
      [{ queryMode: 'semantic', semantic: { errorMode: 'ignore' } }, /semantic.errorMode must be 'partial' or 'fail'/],
      [{ highlight: { fields: [] } }, /highlight.fields needs at least one searchable field/],
      [{ minimumCoverage: 101 }, /minimumCoverage must be a percentage from 0 to 100/],
    ];
    for (const [options, message] of cases) {
      expect(() => new AzureAISearchRetriever({ client, ...options } as never), JSON.stringify(options)).toThrow(message);
      expect(() => new AzureAISearchRetriever({ client, ...options } as never)).toThrow(ConfigurationError);
    }
  });
});
