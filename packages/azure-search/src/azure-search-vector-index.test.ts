import { AzureKeyCredential, SearchClient, SearchIndexClient } from '@azure/search-documents';
import { ConfigurationError, createHashEmbedding, InMemoryVectorIndex, InvalidInputError } from '@ctx/core';
import { describeVectorIndex } from '@ctx/provider-tests';
import { beforeAll, describe, expect, it } from 'vitest';
import { env, insecure, uniqueIndexName } from '../test/helpers.js';
import { AzureSearchVectorIndex, createVectorIndex, defineVectorIndex } from './azure-search-vector-index.js';

const credential = () => new AzureKeyCredential(env.searchKey);
let indexClient: SearchIndexClient;
beforeAll(() => {
  indexClient = new SearchIndexClient(env.searchEndpoint, credential(), insecure);
});

/** A fresh index on the local server, created through `createVectorIndex`. */
async function freshIndex(dimensions: number, algorithm?: 'hnsw' | 'exhaustiveKnn'): Promise<AzureSearchVectorIndex> {
  const name = uniqueIndexName('recall');
  await createVectorIndex(indexClient, { name, dimensions, ...(algorithm ? { algorithm } : {}) });
  return new AzureSearchVectorIndex({ client: new SearchClient<object>(env.searchEndpoint, name, credential(), insecure), dimensions });
}

describeVectorIndex('AzureSearchVectorIndex (hnsw, exhaustive queries)', {
  create: ({ dimensions }) => freshIndex(dimensions),
  capabilities: { list: true },
});
describeVectorIndex('AzureSearchVectorIndex (exhaustiveKnn)', {
  create: ({ dimensions }) => freshIndex(dimensions, 'exhaustiveKnn'),
  capabilities: { list: true },
});

describe('AzureSearchVectorIndex', () => {
  it('defines a key, filterable user, session, message and sortable sequence, and a hidden cosine vector field', () => {
    const index = defineVectorIndex({ name: 'recall', dimensions: 16, algorithm: 'exhaustiveKnn' });
    expect(index.fields.filter((f) => 'filterable' in f && f.filterable).map((f) => f.name)).toEqual([
      'key',
      'userId',
      'sessionId',
      'messageId',
      'sequence',
      'kind',
    ]);
    expect(index.fields.find((f) => f.name === 'vector')).toMatchObject({ hidden: true, vectorSearchDimensions: 16 });
    expect(index.vectorSearch?.algorithms?.[0]).toMatchObject({ kind: 'exhaustiveKnn', parameters: { metric: 'cosine' } });
    expect(() => defineVectorIndex({ name: 'Bad', dimensions: 16 })).toThrow(ConfigurationError);
    expect(() => defineVectorIndex({ name: 'ok', dimensions: 1 })).toThrow(/dimensions must be an integer from 2 to 4096, got 1/);
    expect(() => new AzureSearchVectorIndex({ endpoint: env.searchEndpoint, indexName: 'x', apiKey: 'k', dimensions: 0 })).toThrow(
      ConfigurationError,
    );
  });

  it('ranks hashed-word embeddings exactly as InMemoryVectorIndex does, with the same cosine scores', async () => {
    const embed = createHashEmbedding({ dimensions: 64 });
    const texts = Array.from(
      { length: 60 },
      (_, i) => `note ${i} about ${['kettles', 'refunds', 'trains', 'gardens'][i % 4]} and item ${i % 7}`,
    );
    const vectors = await embed.embed(texts);
    const records = texts.map((text, i) => ({
      id: `r${i}`,
      text,
      userId: 'u',
      sessionId: `s${i % 3}`,
      messageId: `m${i}`,
      role: 'user' as const,
      sequence: i,
      vector: vectors[i]!,
    }));
    const azure = await freshIndex(64);
    const memory = new InMemoryVectorIndex({ dimensions: 64 });
    await azure.upsert(records);
    await memory.upsert(records);
    const [query] = await embed.embed(['refunds for item 3']);
    const request = { vector: query!, topK: 5, filter: { userId: 'u', excludeMessageIds: ['m1'] } };
    const [a, b] = [await azure.query(request), await memory.query(request)];
    expect(a.map((m) => m.score)).toEqual(b.map((m) => expect.closeTo(m.score, 5)));
    expect(new Set(a.map((m) => m.id))).toEqual(new Set(b.map((m) => m.id)));
    await expect(azure.query({ ...request, topK: 1001 })).rejects.toThrow(InvalidInputError);
  });
  it('refuses a scan of more records than the service pages through, before reading or deleting any, instead of cutting it short', async () => {
    const name = uniqueIndexName('recall');
    await createVectorIndex(indexClient, { name, dimensions: 2 });
    const client = new SearchClient<object>(env.searchEndpoint, name, credential(), insecure);
    const index = new AzureSearchVectorIndex({ client, dimensions: 2 });
    const records = Array.from({ length: 3 }, (_, i) => ({
      id: `r${i}`,
      text: `note ${i}`,
      userId: 'ana',
      sessionId: 's1',
      messageId: `m${i}`,
      role: 'user' as const,
      sequence: i,
      vector: [1, i],
    }));
    await index.upsert(records);
    expect(await index.list({ userId: 'ana' })).toHaveLength(3);
    // The service counts what the filter matches on the first page; this one reports more than a scan reaches.
    const search = client.search.bind(client);
    client.search = (async (...args: Parameters<typeof search>) => ({ ...(await search(...args)), count: 100_001 })) as typeof search;
    for (const call of [() => index.list({ userId: 'ana' }), () => index.delete({ userId: 'ana' })]) {
      const error = await call().catch((e: unknown) => e);
      expect(InvalidInputError.isInstance(error)).toBe(true);
      expect((error as InvalidInputError).limit).toBe('scanRecords');
      expect((error as Error).message).toMatch(/100001 records .* more than the 100000/);
    }
    client.search = search;
    expect(await index.list({ userId: 'ana' })).toHaveLength(3);
  });
});
