import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startOpenAITestServer, type OpenAITestServer } from '@ctx/openai-test-server';
import { OpenAIEmbeddings } from './openai-embeddings.js';

let server: OpenAITestServer;
beforeAll(async () => {
  server = await startOpenAITestServer({ apiKey: 'test-key' });
});
afterAll(() => server.close());
beforeEach(() => server.reset());

const cosine = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i]!, 0) / (Math.hypot(...a) * Math.hypot(...b));

describe('OpenAIEmbeddings', () => {
  it('batches inputs, keeps their order and passes dimensions', async () => {
    const embeddings = new OpenAIEmbeddings({ baseURL: server.url, apiKey: 'test-key', dimensions: 64, batchSize: 2 });
    const texts = ['red apples', 'green apples', 'stock market crash', 'apple pie', 'bond yields'];
    const vectors = await embeddings.embed(texts);
    expect(vectors).toHaveLength(5);
    expect(vectors.every((v) => v.length === 64)).toBe(true);
    const requests = server.requests.filter((r) => r.path.endsWith('/embeddings'));
    expect(requests.map((r) => (r.body as { input: string[] }).input)).toEqual([texts.slice(0, 2), texts.slice(2, 4), texts.slice(4)]);
    expect(requests.every((r) => (r.body as { dimensions: number }).dimensions === 64)).toBe(true);
    // order preserved: each vector equals a single-text embedding of the same input
    const [single] = await embeddings.embed(['stock market crash']);
    expect(vectors[2]!.map((x) => x.toFixed(5))).toEqual(single!.map((x) => x.toFixed(5)));
    expect(cosine(vectors[0]!, vectors[1]!)).toBeGreaterThan(cosine(vectors[0]!, vectors[2]!));
  });

  it('decodes base64 (the SDK default) to the same values as floats', async () => {
    const embeddings = new OpenAIEmbeddings({ baseURL: server.url, apiKey: 'test-key', dimensions: 16 });
    const [viaSdkDefault] = await embeddings.embed(['hello world']);
    const floats = await embeddings.client.embeddings.create({
      model: 'text-embedding-3-small',
      input: 'hello world',
      dimensions: 16,
      encoding_format: 'float',
    });
    const expected = floats.data[0]!.embedding;
    expect(expected).toHaveLength(16);
    expect(viaSdkDefault).toHaveLength(16);
    expect(expected.some((x) => x !== 0)).toBe(true);
    expect(viaSdkDefault).toEqual(expected.map((x) => expect.closeTo(x, 6)));
  });
});
