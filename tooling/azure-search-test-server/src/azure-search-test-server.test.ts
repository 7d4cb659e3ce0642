import { AzureKeyCredential, SearchClient, SearchIndexClient, odata, type SearchIndex } from '@azure/search-documents';
import { deterministicEmbedding, startOpenAITestServer, type OpenAITestServer } from '@ctx/openai-test-server';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RRF_K, startAzureSearchTestServer, testCertificate, type AzureSearchTestServer } from './index.js';

type Credential = ConstructorParameters<typeof SearchClient>[2];

const DIMS = 64;
let server: AzureSearchTestServer;
let openai: OpenAITestServer;
let indexClient: SearchIndexClient;
const noRetry = { allowInsecureConnection: true, retryOptions: { maxRetries: 0 } };

interface Doc {
  id: string;
  title?: string | null;
  content?: string | null;
  tenantId?: string | null;
  tags?: string[] | null;
  rating?: number | null;
  updated?: string | null;
  secret?: string | null;
  vec?: number[] | null;
}

function embed(text: string): number[] {
  return deterministicEmbedding(text, DIMS);
}

function definition(name: string): SearchIndex {
  return {
    name,
    fields: [
      { name: 'id', type: 'Edm.String', key: true, filterable: true },
      { name: 'title', type: 'Edm.String', searchable: true },
      { name: 'content', type: 'Edm.String', searchable: true },
      { name: 'tenantId', type: 'Edm.String', filterable: true, facetable: true },
      { name: 'tags', type: 'Collection(Edm.String)', filterable: true },
      { name: 'rating', type: 'Edm.Int32', filterable: true, sortable: true, facetable: true },
      { name: 'updated', type: 'Edm.DateTimeOffset', filterable: true },
      { name: 'secret', type: 'Edm.String', hidden: true },
      {
        name: 'vec',
        type: 'Collection(Edm.Single)',
        searchable: true,
        vectorSearchDimensions: DIMS,
        vectorSearchProfileName: 'p',
        hidden: true,
      },
    ],
    vectorSearch: {
      algorithms: [{ name: 'hnsw', kind: 'hnsw', parameters: { metric: 'cosine' } }],
      profiles: [{ name: 'p', algorithmConfigurationName: 'hnsw', vectorizerName: 'aoai' }],
      vectorizers: [
        {
          vectorizerName: 'aoai',
          kind: 'azureOpenAI',
          parameters: { resourceUrl: openai.origin, deploymentId: 'embed', modelName: 'text-embedding-3-small', apiKey: openai.apiKey },
        },
      ],
    },
    semanticSearch: {
      defaultConfigurationName: 'sem',
      configurations: [{ name: 'sem', prioritizedFields: { titleField: { name: 'title' }, contentFields: [{ name: 'content' }] } }],
    },
  };
}

const DOCS: Doc[] = [
  {
    id: 'refunds',
    title: 'Refund policy',
    content: 'Refunds are issued within 14 days. A refund needs the original receipt.',
    tenantId: 'acme',
    tags: ['billing'],
    rating: 5,
    updated: '2024-03-01T00:00:00Z',
    secret: 's1',
  },
  {
    id: 'shipping',
    title: 'Shipping',
    content: 'We ship worldwide. Shipping takes 3 to 5 days.',
    tenantId: 'acme',
    tags: ['logistics'],
    rating: 4,
    updated: '2023-01-01T00:00:00Z',
    secret: 's2',
  },
  {
    id: 'warranty',
    title: 'Warranty',
    content: 'The warranty covers defects for two years. Refunds for defects are handled by the warranty team.',
    tenantId: "o'brien",
    tags: ['billing', 'support'],
    rating: 3,
    updated: '2024-06-01T00:00:00Z',
    secret: 's3',
  },
  {
    id: 'pricing',
    title: 'Pricing',
    content: 'The premium plan costs 20 euros a month.',
    tenantId: 'globex',
    tags: [],
    rating: null,
    updated: null,
    secret: 's4',
  },
];

let counter = 0;
async function freshIndex(docs: Doc[] = DOCS): Promise<SearchClient<Doc>> {
  const name = `idx-${++counter}`;
  await indexClient.createOrUpdateIndex(definition(name));
  const client = new SearchClient<Doc>(server.endpoint, name, new AzureKeyCredential(server.apiKey), noRetry);
  if (docs.length) await client.uploadDocuments(docs.map((d) => ({ ...d, vec: embed(`${d.title} ${d.content}`) })));
  return client;
}

async function all<T extends object>(
  client: SearchClient<T>,
  text: string | undefined,
  options: Parameters<SearchClient<T>['search']>[1] = {},
) {
  const response = await client.search(text, options);
  const results = [];
  for await (const r of response.results) results.push(r);
  return { response, results };
}

beforeAll(async () => {
  openai = await startOpenAITestServer();
  server = await startAzureSearchTestServer();
  indexClient = new SearchIndexClient(server.endpoint, new AzureKeyCredential(server.apiKey), noRetry);
});

afterAll(async () => {
  await server.close();
  await openai.close();
});

beforeEach(() => {
  server.clearFaults();
  server.setLatency(0);
  server.setCoverage(100);
});

describe('indexes', () => {
  it('creates, reads, lists and deletes an index through the SDK; a missing index is the service 404', async () => {
    const created = await indexClient.createOrUpdateIndex(definition('lifecycle'));
    expect(created.name).toBe('lifecycle');
    // SDK 13.0.0 declares `etag` but hands the service's `@odata.etag` over as `eTag`.
    expect((created as unknown as { eTag?: string }).eTag).toMatch(/^"0x/);
    const id = created.fields.find((f) => f.name === 'id')!;
    expect(id).toMatchObject({ key: true, type: 'Edm.String' });
    const fetched = await indexClient.getIndex('lifecycle');
    expect(fetched.fields.map((f) => f.name)).toEqual(['id', 'title', 'content', 'tenantId', 'tags', 'rating', 'updated', 'secret', 'vec']);
    expect(fetched.semanticSearch?.defaultConfigurationName).toBe('sem');
    const names: string[] = [];
    for await (const n of indexClient.listIndexesNames()) names.push(n);
    expect(names).toContain('lifecycle');
    await expect(indexClient.createIndex(definition('lifecycle'))).rejects.toMatchObject({ statusCode: 409 });
    await indexClient.deleteIndex('lifecycle');
    const error = await indexClient.getIndex('lifecycle').catch((e: unknown) => e);
    expect(error).toMatchObject({ statusCode: 404, message: "The index 'lifecycle' for service 'local-search' was not found." });
    const search = new SearchClient(server.endpoint, 'lifecycle', new AzureKeyCredential(server.apiKey), noRetry);
    await expect(search.search('x')).rejects.toMatchObject({ statusCode: 404 });
  });

  it('rejects invalid definitions with 400', async () => {
    await expect(indexClient.createOrUpdateIndex({ name: 'nokey', fields: [{ name: 'a', type: 'Edm.String' }] })).rejects.toMatchObject({
      statusCode: 400,
      message: expect.stringMatching(/exactly one key field/),
    });
    await expect(
      indexClient.createOrUpdateIndex({ name: 'Bad_Name', fields: [{ name: 'id', type: 'Edm.String', key: true }] }),
    ).rejects.toMatchObject({ statusCode: 400 });
    await expect(
      indexClient.createOrUpdateIndex({
        name: 'noprofile',
        fields: [
          { name: 'id', type: 'Edm.String', key: true },
          { name: 'v', type: 'Collection(Edm.Single)', searchable: true, vectorSearchDimensions: 3, vectorSearchProfileName: 'missing' },
        ],
      }),
    ).rejects.toMatchObject({ statusCode: 400, message: expect.stringMatching(/vector search profile/) });
  });
});

describe('documents', () => {
  it('upload, merge, mergeOrUpload and delete report per-document status codes; lookup, hidden fields and $count', async () => {
    const client = await freshIndex([]);
    const up = await client.uploadDocuments([
      { id: 'a', content: 'alpha', secret: 'x' },
      { id: 'b', content: 'beta' },
    ]);
    expect(up.results.map((r) => [r.key, r.succeeded, r.statusCode])).toEqual([
      ['a', true, 201],
      ['b', true, 201],
    ]);
    const merged = await client.mergeDocuments([
      { id: 'a', title: 'A' },
      { id: 'zz', title: 'missing' },
    ]);
    expect(merged.results.map((r) => [r.key, r.succeeded, r.statusCode])).toEqual([
      ['a', true, 200],
      ['zz', false, 404],
    ]);
    expect(merged.results[1]!.errorMessage).toBe('Document not found.');
    const mou = await client.mergeOrUploadDocuments([
      { id: 'b', title: 'B' },
      { id: 'c', content: 'gamma' },
    ]);
    expect(mou.results.map((r) => r.statusCode)).toEqual([200, 201]);
    expect(await client.getDocumentsCount()).toBe(3);
    const a = await client.getDocument('a');
    expect(a).toMatchObject({ id: 'a', title: 'A', content: 'alpha' });
    expect(a).not.toHaveProperty('secret'); // hidden (retrievable: false)
    expect(await client.getDocument('b', { selectedFields: ['title'] })).toEqual({ title: 'B' });
    await client.deleteDocuments('id', ['a', 'never-existed']);
    expect(await client.getDocumentsCount()).toBe(2);
    await expect(client.getDocument('a')).rejects.toMatchObject({ statusCode: 404 });
  });

  it('rejects a batch with an unknown property, a wrong type or a wrong vector length; flags invalid keys per document', async () => {
    const client = await freshIndex([]);
    await expect(client.uploadDocuments([{ id: 'a', nope: 1 } as Doc])).rejects.toMatchObject({
      statusCode: 400,
      message: expect.stringMatching(/The property 'nope' does not exist/),
    });
    await expect(client.uploadDocuments([{ id: 'a', rating: 'five' } as unknown as Doc])).rejects.toMatchObject({
      statusCode: 400,
      message: expect.stringMatching(/Cannot convert the literal 'five'/),
    });
    await expect(client.uploadDocuments([{ id: 'a', vec: [1, 2, 3] }])).rejects.toMatchObject({
      statusCode: 400,
      message: expect.stringMatching(/Expected: '64'. Actual: '3'/),
    });
    const result = await client.uploadDocuments([{ id: "bad'key" }, { id: 'good=key_1' }]);
    expect(result.results.map((r) => [r.succeeded, r.statusCode])).toEqual([
      [false, 400],
      [true, 201],
    ]);
    expect(server.requests.at(-1)!.status).toBe(207);
    expect(server.documents(client.indexName)!.map((d) => d.id)).toEqual(['good=key_1']);
  });
});

describe('filters over the wire', () => {
  it('evaluates eq, ne, comparisons, and/or/not, search.in and any() against the stored documents', async () => {
    const client = await freshIndex();
    const ids = async (filter: string) => (await all(client, '*', { filter, select: ['id'] })).results.map((r) => r.document.id).sort();
    expect(await ids(`tenantId eq 'acme'`)).toEqual(['refunds', 'shipping']);
    expect(await ids(`tenantId ne 'acme'`)).toEqual(['pricing', 'warranty']);
    expect(await ids(`rating ge 4 and not (id eq 'shipping')`)).toEqual(['refunds']);
    expect(await ids(`rating lt 4 or rating eq null`)).toEqual(['pricing', 'warranty']);
    expect(await ids(`updated gt 2024-01-01T00:00:00Z`)).toEqual(['refunds', 'warranty']);
    expect(await ids(`search.in(tenantId, 'globex|acme', '|')`)).toEqual(['pricing', 'refunds', 'shipping']);
    expect(await ids(`tags/any(t: t eq 'billing')`)).toEqual(['refunds', 'warranty']);
    expect(await ids(odata`tenantId eq ${"o'brien"}`)).toEqual(['warranty']);
  });

  it('a hostile tenant id, escaped, matches nothing; pasted unescaped, it widens the filter (why escaping matters)', async () => {
    const client = await freshIndex();
    const hostile = "acme' or tenantId ne 'x";
    const escaped = `tenantId eq '${hostile.replace(/'/g, "''")}'`;
    expect((await all(client, '*', { filter: escaped })).results).toEqual([]);
    // Pasted in unescaped, the same id is valid OData that widens the filter to every tenant:
    // the server evaluates filters for real, so this is what a missing escape would cost.
    const widened = await all(client, '*', { filter: `tenantId eq '${hostile}'`, select: ['id'] });
    expect(widened.results).toHaveLength(4);
    const broken = await all(client, '*', { filter: `tenantId eq 'a'b'` }).catch((e: unknown) => e);
    expect(broken).toMatchObject({
      statusCode: 400,
      message: `Invalid expression: There is an unterminated string literal at position 16 in 'tenantId eq 'a'b''.\r\nParameter name: $filter`,
    });
  });

  it('rejects filters on unknown or non-filterable fields with the service message', async () => {
    const client = await freshIndex();
    await expect(all(client, '*', { filter: `nope eq 'x'` })).rejects.toMatchObject({
      statusCode: 400,
      message: expect.stringMatching(/Could not find a property named 'nope' on type 'search.document'/),
    });
    await expect(all(client, '*', { filter: `content eq 'x'` })).rejects.toMatchObject({
      statusCode: 400,
      message: expect.stringMatching(/'content' is not a filterable field/),
    });
  });
});

describe('keyword search (BM25)', () => {
  it('ranks by BM25 over the searchable fields, honours searchMode, searchFields, count, top and skip', async () => {
    const client = await freshIndex();
    const { response, results } = await all(client, 'refund receipt', { includeTotalCount: true, select: ['id', 'title'] });
    expect(results.map((r) => r.document.id)).toEqual(['refunds']);
    expect(response.count).toBe(1);
    expect(results[0]!.score).toBeGreaterThan(0);
    // "refunds" is a different term than "refund" (no stemming, like standard.lucene).
    const plural = await all(client, 'refunds defects', { select: ['id'] });
    expect(plural.results.map((r) => r.document.id)).toEqual(['warranty', 'refunds']);
    const allMode = await all(client, 'refunds defects', { searchMode: 'all', select: ['id'] });
    expect(allMode.results.map((r) => r.document.id)).toEqual(['warranty']);
    const titleOnly = await all(client, 'shipping', { searchFields: ['title'], select: ['id'] });
    expect(titleOnly.results.map((r) => r.document.id)).toEqual(['shipping']);
    const paged = await all(client, '*', { top: 2, skip: 1, includeTotalCount: true, select: ['id'] });
    expect(paged.results.map((r) => r.document.id)).toEqual(['shipping', 'warranty']);
    expect(paged.response.count).toBe(4);
    expect(paged.results.every((r) => r.score === 1)).toBe(true);
  });

  it('scores exactly by Lucene BM25 (k1 1.2, b 0.75, idf with +1)', async () => {
    const client = await freshIndex([
      { id: 'x', content: 'apple apple banana' },
      { id: 'y', content: 'apple cherry' },
      { id: 'z', content: 'durian' },
    ]);
    const { results } = await all(client, 'banana', { searchFields: ['content'], select: ['id'] });
    const idf = Math.log(1 + (3 - 1 + 0.5) / (1 + 0.5));
    const avg = (3 + 2 + 1) / 3;
    const expected = (idf * (1 * 2.2)) / (1 + 1.2 * (1 - 0.75 + (0.75 * 3) / avg));
    expect(results[0]!.score).toBeCloseTo(expected, 10);
  });

  it('orders by a sortable field with orderBy', async () => {
    const client = await freshIndex();
    const { results } = await all(client, '*', { orderBy: ['rating desc'], select: ['id'] });
    expect(results.map((r) => r.document.id)).toEqual(['refunds', 'shipping', 'warranty', 'pricing']);
  });
});

describe('vector search', () => {
  it('finds the k nearest neighbours by cosine, scored 1 / (2 - cosine), pre-filtered by default', async () => {
    const client = await freshIndex();
    const query = embed('how long does shipping take');
    const { results } = await all(client, undefined, {
      vectorSearchOptions: { queries: [{ kind: 'vector', vector: query, kNearestNeighborsCount: 2, fields: ['vec'] }] },
      select: ['id'],
    });
    expect(results).toHaveLength(2);
    expect(results[0]!.document.id).toBe('shipping');
    const doc = DOCS.find((d) => d.id === 'shipping')!;
    const v = embed(`${doc.title} ${doc.content}`);
    const cosine =
      v.reduce((s, x, i) => s + x * query[i]!, 0) / Math.sqrt(v.reduce((s, x) => s + x * x, 0) * query.reduce((s, x) => s + x * x, 0));
    expect(results[0]!.score).toBeCloseTo(1 / (2 - cosine), 5);
    const filtered = await all(client, undefined, {
      filter: `tenantId eq 'globex'`,
      vectorSearchOptions: { queries: [{ kind: 'vector', vector: query, kNearestNeighborsCount: 2, fields: ['vec'] }] },
      select: ['id'],
    });
    expect(filtered.results.map((r) => r.document.id)).toEqual(['pricing']);
    const post = await all(client, undefined, {
      filter: `tenantId eq 'globex'`,
      vectorSearchOptions: {
        filterMode: 'postFilter',
        queries: [{ kind: 'vector', vector: query, kNearestNeighborsCount: 1, fields: ['vec'] }],
      },
      select: ['id'],
    });
    expect(post.results).toEqual([]); // the nearest one overall is not globex's
  });

  it("embeds kind: 'text' queries with the index's Azure OpenAI vectorizer (a real HTTP call)", async () => {
    const client = await freshIndex();
    const before = openai.requests.length;
    const text = await all(client, undefined, {
      vectorSearchOptions: { queries: [{ kind: 'text', text: 'premium plan price', kNearestNeighborsCount: 3, fields: ['vec'] }] },
      select: ['id'],
    });
    const vector = await all(client, undefined, {
      vectorSearchOptions: {
        queries: [{ kind: 'vector', vector: embed('premium plan price'), kNearestNeighborsCount: 3, fields: ['vec'] }],
      },
      select: ['id'],
    });
    expect(text.results.map((r) => [r.document.id, r.score])).toEqual(vector.results.map((r) => [r.document.id, r.score]));
    expect(text.results[0]!.document.id).toBe('pricing');
    const call = openai.requests.slice(before).find((r) => r.route === '/embeddings')!;
    expect(call).toMatchObject({
      deployment: 'embed',
      headers: { 'api-key': openai.apiKey },
      body: { input: ['premium plan price'], dimensions: DIMS },
    });
  });

  it('rejects a vector of the wrong length and a text query on a field without a vectorizer', async () => {
    const client = await freshIndex();
    await expect(
      all(client, undefined, { vectorSearchOptions: { queries: [{ kind: 'vector', vector: [1, 2], fields: ['vec'] }] } }),
    ).rejects.toMatchObject({ statusCode: 400, message: expect.stringMatching(/dimensionality \('2'\)/) });
    const name = `novec-${++counter}`;
    const def = definition(name);
    def.vectorSearch!.profiles = [{ name: 'p', algorithmConfigurationName: 'hnsw' }];
    def.vectorSearch!.vectorizers = [];
    await indexClient.createOrUpdateIndex(def);
    const bare = new SearchClient<Doc>(server.endpoint, name, new AzureKeyCredential(server.apiKey), noRetry);
    await expect(
      all(bare, undefined, { vectorSearchOptions: { queries: [{ kind: 'text', text: 'x', fields: ['vec'] }] } }),
    ).rejects.toMatchObject({ statusCode: 400, message: expect.stringMatching(/does not have a vectorizer/) });
  });
});

describe('hybrid search', () => {
  it('fuses keyword and vector rankings by reciprocal rank fusion (k = 60)', async () => {
    const client = await freshIndex();
    const text = 'refunds warranty defects';
    const vector = embed('how long does shipping take');
    const keyword = (await all(client, text, { select: ['id'] })).results.map((r) => r.document.id);
    const knn = (
      await all(client, undefined, {
        vectorSearchOptions: { queries: [{ kind: 'vector', vector, kNearestNeighborsCount: 4, fields: ['vec'] }] },
        select: ['id'],
      })
    ).results.map((r) => r.document.id);
    const { results } = await all(client, text, {
      vectorSearchOptions: { queries: [{ kind: 'vector', vector, kNearestNeighborsCount: 4, fields: ['vec'] }] },
      select: ['id'],
    });
    const expected = new Map<string, number>();
    for (const list of [keyword, knn]) list.forEach((id, i) => expected.set(id, (expected.get(id) ?? 0) + 1 / (RRF_K + i + 1)));
    const ranked = [...expected].sort((a, b) => b[1] - a[1]);
    expect(results.map((r) => r.document.id)).toEqual(ranked.map(([id]) => id));
    results.forEach((r, i) => expect(r.score).toBeCloseTo(ranked[i]![1], 12));
  });
});

describe('semantic ranking', () => {
  it('reranks with @search.rerankerScore and returns captions and answers when asked', async () => {
    const client = await freshIndex();
    const { response, results } = await all(client, 'how many days do refunds take', {
      queryType: 'semantic',
      semanticSearchOptions: {
        configurationName: 'sem',
        captions: { captionType: 'extractive', highlight: true },
        answers: { answerType: 'extractive', count: 2, threshold: 0.5 },
      },
      select: ['id'],
    });
    expect(results[0]!.document.id).toBe('refunds');
    const scores = results.map((r) => r.rerankerScore!);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    expect(scores[0]).toBeGreaterThan(0);
    expect(scores[0]).toBeLessThanOrEqual(4);
    expect(results[0]!.captions?.[0]).toMatchObject({
      text: 'Refunds are issued within 14 days.',
      highlights: '<em>Refunds</em> are issued within 14 <em>days</em>.',
    });
    expect(response.answers?.[0]).toMatchObject({ key: 'refunds', text: 'Refunds are issued within 14 days.' });
    expect(response.answers![0]!.score).toBeGreaterThanOrEqual(0.5);
    const request = server.requests.at(-1)!.body!;
    expect(request).toMatchObject({
      queryType: 'semantic',
      semanticConfiguration: 'sem',
      captions: 'extractive|highlight-true',
      answers: 'extractive|count-2,threshold-0.5',
    });
  });

  it('uses the default configuration, and refuses captions without semantic ranking', async () => {
    const client = await freshIndex();
    const { results } = await all(client, 'premium plan', { queryType: 'semantic', semanticSearchOptions: {}, select: ['id'] });
    expect(results[0]!.document.id).toBe('pricing');
    expect(results[0]!.captions).toBeUndefined();
    // The SDK's types forbid this; the service refuses it too.
    await expect(all(client, 'x', { semanticSearchOptions: { captions: { captionType: 'extractive' } } } as never)).rejects.toMatchObject({
      statusCode: 400,
    });
    await expect(all(client, '*', { queryType: 'semantic', semanticSearchOptions: {} })).rejects.toMatchObject({
      statusCode: 400,
      message: expect.stringMatching(/needs a query/),
    });
  });
});

describe('faults, latency and auth', () => {
  it('plays 503s in the service format, counted per request (SDK retries included), then recovers with the data intact', async () => {
    const client = await freshIndex();
    const retrying = new SearchClient<Doc>(server.endpoint, client.indexName, new AzureKeyCredential(server.apiKey), {
      allowInsecureConnection: true,
      retryOptions: { maxRetries: 2, retryDelayInMs: 1, maxRetryDelayInMs: 2 },
    });
    server.injectFault({ status: 503, operations: ['search'] });
    const before = server.requests.length;
    const error = await all(retrying, 'refund').catch((e: unknown) => e);
    expect(error).toMatchObject({ statusCode: 503, message: 'Service Unavailable' });
    expect(server.requests.slice(before).map((r) => r.status)).toEqual([503, 503, 503]);
    expect(await client.getDocumentsCount()).toBe(4); // other operations are not affected
    server.clearFaults();
    expect((await all(client, 'refund', { select: ['id'] })).results.map((r) => r.document.id)).toEqual(['refunds']);
    server.injectFault({ status: 503, times: 1 });
    expect((await all(retrying, 'refund', { select: ['id'] })).results).toHaveLength(1); // one failure, one retry
  });

  it('plays a fault with its code and the usual text of 402, 409 and 413', async () => {
    const client = await freshIndex();
    server.injectFault({ status: 409, code: 'ConcurrencyConflict', operations: ['search'], times: 1 });
    await expect(all(client, 'refund')).rejects.toMatchObject({
      statusCode: 409,
      code: 'ConcurrencyConflict',
      message: 'The request conflicts with another write to the same resource. Retry the operation.',
    });
    server.injectFault({ status: 413, operations: ['index'], times: 1 });
    await expect(client.uploadDocuments([{ id: 'z' }])).rejects.toMatchObject({
      statusCode: 413,
      message: expect.stringMatching(/too large/),
    });
    server.injectFault({ status: 402, times: 1 });
    await expect(client.getDocumentsCount()).rejects.toMatchObject({
      statusCode: 402,
      message: expect.stringMatching(/semantic ranker billing/),
    });
  });

  it('answers semantic queries with 402 once the free semantic queries are used up; other queries still work', async () => {
    const limited = await startAzureSearchTestServer({ semanticFreeQueries: 2 });
    try {
      const credential = new AzureKeyCredential(limited.apiKey);
      await new SearchIndexClient(limited.endpoint, credential, noRetry).createOrUpdateIndex(definition('sem-quota'));
      const client = new SearchClient<Doc>(limited.endpoint, 'sem-quota', credential, noRetry);
      await client.uploadDocuments(DOCS);
      const semantic = () => all(client, 'refunds', { queryType: 'semantic', semanticSearchOptions: { configurationName: 'sem' } });
      await semantic();
      await semantic();
      await expect(semantic()).rejects.toMatchObject({
        statusCode: 402,
        message:
          'The free semantic ranker queries of this month are used up. Enable semantic ranker billing to keep using semantic search: https://aka.ms/SemanticPriceDocPage',
      });
      expect((await all(client, 'refunds', { select: ['id'] })).results.length).toBeGreaterThan(0);
      limited.reset();
      await new SearchIndexClient(limited.endpoint, credential, noRetry).createOrUpdateIndex(definition('sem-quota'));
      await expect(semantic()).resolves.toBeDefined();
    } finally {
      await limited.close();
    }
  });

  it('drops connections on a reset fault, and delays answers with setLatency', async () => {
    const client = await freshIndex();
    server.injectFault({ reset: true, times: 1 });
    await expect(all(client, 'refund')).rejects.toMatchObject({
      name: 'RestError',
      code: expect.stringMatching(/ECONNRESET|REQUEST_SEND_ERROR/),
    });
    // With a latency, answers wait: a second request, sent once the first is at the server, gets
    // there while the first is still held.
    server.setLatency(1000);
    const requests = server.requests;
    const record = requests.push;
    let firstAnswered = false;
    let heldWhenSecondArrived: boolean | undefined;
    let second: Promise<number> | undefined;
    requests.push = (...recorded) => {
      if (second === undefined) second = client.getDocumentsCount();
      else heldWhenSecondArrived ??= !firstAnswered;
      return record.apply(requests, recorded);
    };
    try {
      await all(client, 'refund').then(() => {
        firstAnswered = true;
      });
      await second;
    } finally {
      requests.push = record;
      server.setLatency(0);
    }
    expect(heldWhenSecondArrived).toBe(true);
  });

  it('answers a missing or wrong key with 401, lets query keys only read (403 otherwise), and accepts Entra ID bearer tokens over TLS', async () => {
    const wrong = new SearchClient(server.endpoint, 'whatever', new AzureKeyCredential('nope'), noRetry);
    await expect(wrong.getDocumentsCount()).rejects.toMatchObject({ statusCode: 401 });
    const missing = await fetch(`${server.endpoint}/indexes('whatever')/docs/$count?api-version=2026-04-01`);
    expect(missing.status).toBe(401);
    expect(((await missing.json()) as { error: { message: string } }).error.message).toMatch(/no api-key header/);

    const secure = await startAzureSearchTestServer({ tls: true, queryKeys: ['query-key'], bearerTokens: ['entra-token'] });
    try {
      const tls = { tlsOptions: { ca: testCertificate }, retryOptions: { maxRetries: 0 } };
      await new SearchIndexClient(secure.endpoint, new AzureKeyCredential(secure.apiKey), tls).createOrUpdateIndex(definition('secure'));
      const scopes: string[] = [];
      const credential: Credential = {
        getToken: async (scope: string | string[]) => {
          scopes.push(...(Array.isArray(scope) ? scope : [scope]));
          return { token: 'entra-token', expiresOnTimestamp: Date.now() + 3_600_000 };
        },
      };
      const byToken = new SearchClient<Doc>(secure.endpoint, 'secure', credential, tls);
      await byToken.uploadDocuments([{ id: 'a', content: 'hello token' }]);
      expect(secure.requests.at(-1)!.headers.authorization).toBe('Bearer entra-token');
      expect(scopes).toEqual(['https://search.azure.com/.default']);
      const query = new SearchClient<Doc>(secure.endpoint, 'secure', new AzureKeyCredential('query-key'), tls);
      expect(await query.getDocumentsCount()).toBe(1);
      await expect(query.uploadDocuments([{ id: 'b' }])).rejects.toMatchObject({ statusCode: 403 });
      expect(secure.endpoint).toMatch(/^https:\/\/127\.0\.0\.1:/);
    } finally {
      await secure.close();
    }
  });

  it('records what the SDK sends: routes, api-version, api-key, and the search body', async () => {
    const client = await freshIndex();
    await all(client, 'refund', { filter: `tenantId eq 'acme'`, select: ['id', 'title'], top: 3, includeTotalCount: true });
    const last = server.requests.at(-1)!;
    expect(last).toMatchObject({
      method: 'POST',
      operation: 'search',
      indexName: client.indexName,
      status: 200,
      path: `/indexes('${client.indexName}')/docs/search.post.search`,
    });
    expect(last.query['api-version']).toBe('2026-04-01');
    expect(last.headers['api-key']).toBe(server.apiKey);
    expect(last.body).toEqual({ count: true, filter: `tenantId eq 'acme'`, search: 'refund', select: 'id,title', top: 3 });
    await expect(all(client, 'x', { facets: ['tags'] })).rejects.toMatchObject({
      statusCode: 400,
      message: expect.stringMatching(/The field 'tags' is not facetable/),
    });
    await expect(all(client, 'x', { facets: ['rating,interval:1'] })).rejects.toMatchObject({
      statusCode: 400,
      message: expect.stringMatching(/not supported by the Azure AI Search test server/),
    });
  });
});

describe('what the real service sends besides results', () => {
  /** POSTs a raw search body (what the SDK cannot send) and returns the status and JSON reply. */
  async function post(indexName: string, body: object, apiVersion = '2026-04-01') {
    const res = await fetch(`${server.endpoint}/indexes('${indexName}')/docs/search.post.search?api-version=${apiVersion}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'api-key': server.apiKey },
      body: JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> & { error?: { message: string } } };
  }

  it('pages like the service: 50 results and a continuation without top, 1000 per page above it; the SDK follows it', async () => {
    const docs = Array.from({ length: 63 }, (_, i) => ({ id: `d${i}`, content: `paging document ${i}`, rating: i }));
    const client = await freshIndex(docs);
    const first = await post(client.indexName, { search: 'paging', count: true });
    expect(first.status).toBe(200);
    expect((first.json.value as unknown[]).length).toBe(50);
    expect(first.json['@odata.count']).toBe(63);
    expect(first.json['@search.nextPageParameters']).toEqual({ search: 'paging', count: true, skip: 50 });
    expect(first.json['@odata.nextLink']).toBe(
      `${server.endpoint}/indexes('${client.indexName}')/docs/search.post.search?api-version=2026-04-01`,
    );
    const second = await post(client.indexName, first.json['@search.nextPageParameters'] as object);
    expect((second.json.value as unknown[]).length).toBe(13);
    expect(second.json['@odata.nextLink']).toBeUndefined();
    const capped = await post(client.indexName, { search: 'paging', top: 10 });
    expect((capped.json.value as unknown[]).length).toBe(10);
    expect(capped.json['@search.nextPageParameters']).toBeUndefined();

    const { results } = await all(client, 'paging');
    expect(results).toHaveLength(63);
    expect(new Set(results.map((r) => r.document.id)).size).toBe(63);
    expect(server.requests.filter((r) => r.operation === 'search').at(-1)!.body).toMatchObject({ skip: 50 });
  });

  it('highlights matches with the given tags and counts facets over every match', async () => {
    const client = await freshIndex();
    const { response, results } = await all(client, 'refund', {
      highlightFields: 'content,title',
      highlightPreTag: '<b>',
      highlightPostTag: '</b>',
      facets: ['tenantId', 'rating,metric:sum'],
      top: 1,
    });
    expect(results[0]!.highlights).toEqual({
      content: ['A <b>refund</b> needs the original receipt.'],
      title: ['<b>Refund</b> policy'],
    });
    const matches = await all(client, 'refund');
    const tenants = new Map<string, number>();
    for (const r of matches.results) tenants.set(r.document.tenantId!, (tenants.get(r.document.tenantId!) ?? 0) + 1);
    const plain = (facets: object[] | undefined) =>
      facets?.map(({ additionalProperties, ...rest }: { additionalProperties?: unknown }) => rest);
    expect(plain(response.facets!.tenantId)).toEqual(
      [...tenants].map(([value, count]) => ({ value, count })).sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : 1)),
    );
    expect(plain(response.facets!.rating)).toEqual([{ sum: matches.results.reduce((n, r) => n + (r.document.rating ?? 0), 0) }]);
  });

  it('reports @search.coverage when minimumCoverage is set, and fails below it with a 503', async () => {
    const client = await freshIndex();
    expect((await post(client.indexName, { search: 'refund' })).json['@search.coverage']).toBeUndefined();
    expect((await post(client.indexName, { search: 'refund', minimumCoverage: 100 })).json['@search.coverage']).toBe(100);
    server.setCoverage(80);
    expect((await post(client.indexName, { search: 'refund', minimumCoverage: 50 })).json['@search.coverage']).toBe(80);
    const below = await post(client.indexName, { search: 'refund', minimumCoverage: 90 });
    expect(below.status).toBe(503);
    expect(below.json.error!.message).toMatch(/reached 80% of the index, less than the requested minimumCoverage of 90%/);
    server.setCoverage(100);
  });

  it('answers 206 with base results when the semantic ranker fails and the request allows partial results, else 503', async () => {
    const client = await freshIndex();
    const semantic = {
      queryType: 'semantic',
      semanticSearchOptions: { captions: { captionType: 'extractive' }, answers: { answerType: 'extractive' } },
    } as const;
    const reranked = await all(client, 'refund receipt', semantic);
    expect(reranked.response.semanticSearchResultsType).toBeUndefined();
    server.failSemanticRanker({ reason: 'capacityOverloaded', times: 1 });
    const partial = await all(client, 'refund receipt', {
      ...semantic,
      semanticSearchOptions: { ...semantic.semanticSearchOptions, errorMode: 'partial' },
    });
    expect(server.requests.at(-1)!.status).toBe(206);
    expect(partial.response.semanticSearchResultsType).toBe('baseResults');
    expect(partial.response.semanticErrorReason).toBe('capacityOverloaded');
    expect(partial.response.answers).toEqual([]);
    expect(partial.results.every((r) => r.rerankerScore === undefined && r.captions === undefined)).toBe(true);
    const keyword = await all(client, 'refund receipt');
    expect(partial.results.map((r) => [r.document.id, r.score])).toEqual(keyword.results.map((r) => [r.document.id, r.score]));

    server.failSemanticRanker({ reason: 'transient', times: 1 });
    await expect(all(client, 'refund receipt', semantic)).rejects.toMatchObject({ statusCode: 503 });
    expect((await all(client, 'refund receipt', semantic)).results[0]!.rerankerScore).toEqual(expect.any(Number));
  });

  it('returns an empty @search.answers when answers are asked for and none qualifies', async () => {
    const client = await freshIndex();
    const reply = await post(client.indexName, {
      search: 'refund',
      queryType: 'semantic',
      answers: 'extractive|count-3,threshold-1',
      semanticQuery: 'refund zebra giraffe',
    });
    expect(reply.status).toBe(200);
    expect(reply.json['@search.answers']).toEqual([]);
  });

  it('rejects what api-version 2026-04-01 does not have, checked against the service schema; accepts what it has', async () => {
    const client = await freshIndex();
    const rejected: [object, RegExp][] = [
      [{ search: 'x', queryLanguage: 'en-us' }, /The parameter 'queryLanguage' in the request payload is not a valid parameter/],
      [{ search: 'x', hybridSearch: { maxTextRecallSize: 10 } }, /'hybridSearch' .* not a valid parameter/],
      [
        { vectorQueries: [{ kind: 'vector', vector: embed('x'), fields: 'vec', threshold: { kind: 'vectorSimilarity', value: 0.5 } }] },
        /'vectorQueries\[0\]\.threshold' in the request payload is not a valid parameter/,
      ],
      [{ vectorQueries: [{ kind: 'vector', vector: embed('x'), fields: 'vec', filterOverride: "tenantId eq 'a'" }] }, /filterOverride/],
      [{ search: 'x', vectorFilterMode: 'strictPostFilter' }, /'vectorFilterMode' has an invalid value 'strictPostFilter'/],
      [{ search: 'x', queryType: 'semantic', semanticMaxWaitInMilliseconds: 500 }, /must be at least 700/],
      [{ search: 'x', queryType: 'semantic', answers: 'extractive|count-many' }, /Invalid value 'extractive\|count-many' for 'answers'/],
      [{ search: 'x', top: 'ten' }, /'top' must be an integer/],
      [{ search: 'x', vectorQueries: [{ kind: 'image', fields: 'vec' }] }, /kind 'image'/],
    ];
    for (const [body, message] of rejected) {
      const reply = await post(client.indexName, body);
      expect(reply.status, JSON.stringify(body)).toBe(400);
      expect(reply.json.error!.message).toMatch(message);
    }
    const accepted = await post(client.indexName, {
      search: 'refund',
      count: true,
      highlight: 'content',
      highlightPreTag: '<em>',
      highlightPostTag: '</em>',
      minimumCoverage: 100,
      scoringStatistics: 'global',
      sessionId: 'user-1',
      searchMode: 'any',
      queryType: 'semantic',
      semanticErrorHandling: 'partial',
      semanticMaxWaitInMilliseconds: 780,
      answers: 'extractive|count-3',
      captions: 'extractive|highlight-true',
      facets: ['tenantId'],
      vectorQueries: [{ kind: 'vector', vector: embed('refund'), fields: 'vec', k: 5, exhaustive: true, weight: 0.5 }],
      vectorFilterMode: 'preFilter',
      top: 3,
    });
    expect(accepted.status, JSON.stringify(accepted.json)).toBe(200);
    // Older api-versions are not checked against the 2026-04-01 schema: a preview parameter is refused as unsupported here instead.
    const older = await post(client.indexName, { search: 'x', queryLanguage: 'en-us' }, '2025-09-01');
    expect(older.json.error!.message).toMatch(/'queryLanguage' is not supported by the Azure AI Search test server/);
  });

  it('replays a recorded reply after checking the request, and sends retry-after-ms with faults', async () => {
    server.replay({
      status: 206,
      body: { value: [{ '@search.score': 1, id: 'x' }], '@search.semanticPartialResponseType': 'baseResults' },
    });
    const client = new SearchClient<Doc>(server.endpoint, 'no-such-index', new AzureKeyCredential(server.apiKey), noRetry);
    const replayed = await all(client, 'anything');
    expect(replayed.response.semanticSearchResultsType).toBe('baseResults');
    expect(replayed.results.map((r) => r.document.id)).toEqual(['x']);
    await expect(all(client, 'anything')).rejects.toMatchObject({ statusCode: 404 });
    server.injectFault({ status: 429, retryAfterMs: 1, times: 1 });
    const throttled = await fetch(`${server.endpoint}/indexes('x')/docs/$count?api-version=2026-04-01`, {
      headers: { 'api-key': server.apiKey },
    });
    expect(throttled.status).toBe(429);
    expect(throttled.headers.get('retry-after-ms')).toBe('1');
  });
});
