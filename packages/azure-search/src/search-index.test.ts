import { AzureKeyCredential, SearchClient, SearchIndexClient } from '@azure/search-documents';
import type { AzureSearchTestServer } from '@ctx/azure-search-test-server';
import { BackendUnavailableError, ConfigurationError, CtxError, createHashEmbedding } from '@ctx/core';
import type { OpenAITestServer } from '@ctx/openai-test-server';
import { beforeAll, describe, expect, it } from 'vitest';
import { DIMS, embeddings, insecure, KNOWLEDGE_BASE, startLocalBackends } from '../test/helpers.js';
import { AzureAISearchRetriever } from './azure-search-retriever.js';
import { createSearchIndex, defineSearchIndex, EXAMPLE_INDEX_FIELDS, toDocumentKey, uploadSearchDocuments } from './search-index.js';

let search: AzureSearchTestServer;
let openai: OpenAITestServer;
let indexClient: SearchIndexClient;
const credential = () => new AzureKeyCredential(search.apiKey);

beforeAll(async () => {
  ({ search, openai } = await startLocalBackends());
  indexClient = new SearchIndexClient(search.endpoint, credential(), insecure);
});

describe('defineSearchIndex', () => {
  it('describes key, searchable title and content, url, scoping fields, a hidden HNSW cosine vector field with a vectorizer, and a semantic configuration', () => {
    const index = defineSearchIndex({
      name: 'kb',
      dimensions: 8,
      filterableFields: ['tenantId'],
      filterableCollections: ['groups'],
      vectorizer: { resourceUrl: 'https://aoai.example', deploymentId: 'emb' },
    });
    expect(index.fields.map((f) => [f.name, f.type])).toEqual([
      ['id', 'Edm.String'],
      ['title', 'Edm.String'],
      ['content', 'Edm.String'],
      ['url', 'Edm.String'],
      ['tenantId', 'Edm.String'],
      ['groups', 'Collection(Edm.String)'],
      ['contentVector', 'Collection(Edm.Single)'],
    ]);
    expect(index.fields.find((f) => f.name === 'contentVector')).toMatchObject({
      hidden: true,
      vectorSearchDimensions: 8,
      vectorSearchProfileName: 'ctx-vector-profile',
    });
    expect(index.vectorSearch?.vectorizers?.[0]).toMatchObject({
      kind: 'azureOpenAI',
      parameters: { resourceUrl: 'https://aoai.example', deploymentId: 'emb', modelName: 'text-embedding-3-small' },
    });
    expect(index.semanticSearch?.defaultConfigurationName).toBe('default');
    expect(defineSearchIndex({ name: 'plain', semanticConfiguration: false })).toEqual({ name: 'plain', fields: expect.any(Array) });
    expect(() => defineSearchIndex({ name: 'Bad Name' })).toThrow(ConfigurationError);
    expect(() => defineSearchIndex({ name: 'kb', dimensions: 1 })).toThrow(/dimensions must be an integer from 2 to 4096/);
    expect(() => defineSearchIndex({ name: 'kb', vectorizer: { resourceUrl: 'x', deploymentId: 'y' } })).toThrow(/needs `dimensions`/);
  });
});

describe('createSearchIndex + uploadSearchDocuments', () => {
  it('creates the index on the service and uploads documents with their embeddings; a second run updates instead of duplicating', async () => {
    const stored = await createSearchIndex(indexClient, { name: 'helper-kb', dimensions: DIMS, filterableFields: ['tenantId'] });
    expect(stored.name).toBe('helper-kb');
    const client = new SearchClient<object>(search.endpoint, 'helper-kb', credential(), insecure);
    const generator = embeddings(openai.url, openai.apiKey);
    expect(await uploadSearchDocuments(client, KNOWLEDGE_BASE, { embeddings: generator, batchSize: 4 })).toEqual({
      uploaded: KNOWLEDGE_BASE.length,
    });
    const uploads = search.requests.filter((r) => r.operation === 'index' && r.indexName === 'helper-kb');
    expect(uploads.map((r) => (r.body!.value as unknown[]).length)).toEqual([4, 4, 1]);
    const docs = search.documents('helper-kb')!;
    expect(docs).toHaveLength(KNOWLEDGE_BASE.length);
    const refunds = docs.find((d) => d.id === 'acme-refunds')!;
    expect(refunds).toMatchObject({ tenantId: 'acme', title: 'Refund policy' });
    const [expected] = await generator.embed([
      'Refund policy\nAcme refunds purchases within 30 days of delivery. A refund needs the order number and goes back to the original payment method.',
    ]);
    expect(refunds.contentVector).toEqual(expected);

    await createSearchIndex(indexClient, { name: 'helper-kb', dimensions: DIMS, filterableFields: ['tenantId', 'region'] });
    await uploadSearchDocuments(client, [{ ...KNOWLEDGE_BASE[0]!, content: 'Refunds now take 60 days.', region: 'eu' }], {
      embeddings: generator,
    });
    expect(await client.getDocumentsCount()).toBe(KNOWLEDGE_BASE.length);
    expect(await client.getDocument('acme-refunds')).toMatchObject({ content: 'Refunds now take 60 days.', region: 'eu' });
    // The uploaded vectors are the ones queries are compared with.
    const [hit] = await new AzureAISearchRetriever({
      client,
      queryMode: 'vector',
      vectorizer: generator,
      fields: { vector: EXAMPLE_INDEX_FIELDS.vector },
    }).search('Aurora kettle litres stainless steel', { topK: 1 });
    expect(hit!.id).toBe('acme-kettle-specs');
  });

  it('refuses invalid keys before sending anything; toDocumentKey makes any id a valid key', async () => {
    await createSearchIndex(indexClient, { name: 'keys-kb' });
    const client = new SearchClient<object>(search.endpoint, 'keys-kb', credential(), insecure);
    const before = search.requests.length;
    await expect(uploadSearchDocuments(client, [{ id: 'docs/a b.md', content: 'x' }])).rejects.toThrow(
      /not valid Azure AI Search keys .*"docs\/a b.md".*toDocumentKey/,
    );
    expect(search.requests.length).toBe(before);
    const key = toDocumentKey("docs/o'brien notes.md");
    expect(key).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(Buffer.from(key, 'base64url').toString('utf8')).toBe("docs/o'brien notes.md");
    await uploadSearchDocuments(client, [{ id: key, content: 'notes' }]);
    expect(await client.getDocument(key)).toMatchObject({ id: key, content: 'notes' });
  });

  it('reports a batch the service refused (unknown field, wrong vector length) and an embedder that returns too few vectors', async () => {
    await createSearchIndex(indexClient, { name: 'strict-kb', dimensions: DIMS });
    const client = new SearchClient<object>(search.endpoint, 'strict-kb', credential(), insecure);
    await expect(uploadSearchDocuments(client, [{ id: 'a', content: 'x', unknownField: 'y' }])).rejects.toSatisfy(
      (e: unknown) => ConfigurationError.isInstance(e) && /The property 'unknownField' does not exist/.test((e as Error).message),
    );
    await expect(
      uploadSearchDocuments(client, [{ id: 'a', content: 'x' }], { embeddings: createHashEmbedding({ dimensions: 3 }) }),
    ).rejects.toThrow(/Expected: '256'. Actual: '3'/);
    const broken = { embed: async () => [[1]] };
    await expect(
      uploadSearchDocuments(
        client,
        [
          { id: 'a', content: 'x' },
          { id: 'b', content: 'y' },
        ],
        { embeddings: broken },
      ),
    ).rejects.toSatisfy((e: unknown) => CtxError.isInstance(e) && /returned 1 vectors for 2 documents/.test((e as Error).message));
  });

  it('documents refused in a 207 reply: only transient statuses are a BackendUnavailableError, anything else a ConfigurationError naming them', async () => {
    // One status per document, in upload order across batches.
    const replying = (...statuses: number[]) => {
      let n = 0;
      const next = () => statuses[n++]!;
      return {
        indexName: 'kb',
        mergeOrUploadDocuments: async (rows: { id: string }[]) => ({
          results: rows.map((r) =>
            ((status) => ({
              key: r.id,
              succeeded: status === 200,
              statusCode: status,
              errorMessage: status === 200 ? undefined : 'refused',
            }))(next()),
          ),
        }),
      } as unknown as SearchClient<object>;
    };
    const docs = [
      { id: 'a', content: 'x' },
      { id: 'b', content: 'y' },
    ];
    const busy = await uploadSearchDocuments(replying(503, 429), docs).catch((e: unknown) => e);
    expect(BackendUnavailableError.isInstance(busy)).toBe(true);
    expect((busy as Error).message).toBe(
      'uploadSearchDocuments: index "kb" refused 2 document(s): a (503: refused); b (429: refused). The service refused them for the moment: upload them again (merge-or-upload is safe to repeat).',
    );
    const bad = await uploadSearchDocuments(replying(200, 400), docs).catch((e: unknown) => e);
    expect(ConfigurationError.isInstance(bad)).toBe(true);
    expect((bad as Error).message).toMatch(
      /^uploadSearchDocuments: index "kb" refused 1 document\(s\): b \(400: refused\)\. Check those documents' fields/,
    );
    expect((bad as Error).message).not.toContain('earlier batches');
    const later = await uploadSearchDocuments(replying(200, 400), docs, { batchSize: 1 }).catch((e: unknown) => e);
    expect((later as Error).message).toMatch(/b \(400: refused\)\. .* The 1 document\(s\) of earlier batches were uploaded\.$/);
  });

  it("creating an index past the tier's limit (429) and an upload too large (413) say what to change", async () => {
    search.injectFault({ status: 429, operations: ['createOrUpdateIndex'], message: 'Too many indexes.', times: 1 });
    const full = await createSearchIndex(indexClient, { name: 'one-too-many', dimensions: DIMS }).catch((e: unknown) => e);
    expect(BackendUnavailableError.isInstance(full)).toBe(true);
    expect((full as Error).message).toMatch(
      /^Azure AI Search index "one-too-many" is throttling requests \(429\): Too many indexes\. .*a 429 means the tier allows no more indexes: delete one or move to a higher tier\.$/,
    );
    await createSearchIndex(indexClient, { name: 'big-batches', dimensions: DIMS });
    const client = new SearchClient<object>(search.endpoint, 'big-batches', credential(), insecure);
    search.injectFault({ status: 413, operations: ['index'], times: 1 });
    const tooLarge = await uploadSearchDocuments(client, [{ id: 'a', content: 'x' }]).catch((e: unknown) => e);
    expect(ConfigurationError.isInstance(tooLarge)).toBe(true);
    expect((tooLarge as Error).message).toBe(
      'Azure AI Search index "big-batches" refused the request as too large (413): The request is too large. Send fewer or smaller documents per request. Upload fewer or smaller documents per request (`batchSize`), or shorten the query and the filter.',
    );
  });
});
