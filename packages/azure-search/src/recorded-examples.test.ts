/**
 * Microsoft's own recorded examples of `Documents_SearchPost` (api-version 2026-04-01, in
 * tooling/azure-search-test-server/fixtures), served byte for byte to the real
 * `@azure/search-documents` SDK by the local server's `replay`, which first checks the request ctx
 * sent against the service's schema. What ctx makes of each body is asserted field by field.
 */
import { recordedExample, startAzureSearchTestServer, type AzureSearchTestServer, type JsonObject } from '@ctx/azure-search-test-server';
import type { AgentEvent } from '@ctx/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentWith, citations, contextMessages } from '../test/helpers.js';
import { AzureAISearchContextProvider, type AzureAISearchContextProviderOptions } from './azure-search-context-provider.js';
import { AzureAISearchRetriever, type AzureAISearchRetrieverOptions } from './azure-search-retriever.js';

let server: AzureSearchTestServer;
beforeAll(async () => {
  server = await startAzureSearchTestServer();
});
afterAll(async () => {
  await server.close();
});

const post = recordedExample('SearchIndexSearchDocumentsPost');
const semantic = recordedExample('SearchIndexSearchDocumentsSemanticPost');
type Hit = JsonObject & { id: string; '@search.score': number; '@search.rerankerScore': number };
const recordedHits = (body: JsonObject) => body.value as Hit[];

/** The POST example's index: `name` is the title, `description` the content. */
const POST_OPTIONS = {
  indexName: 'test-index',
  queryMode: 'semantic',
  fields: { id: 'id', title: 'name', content: 'description' },
  select: ['category', 'ownerId'],
  semantic: { configuration: 'testconfig', captions: true, answers: true },
  highlight: { fields: ['category'], preTag: '</em>', postTag: '</em>' },
  minimumCoverage: 100,
} as const satisfies Partial<AzureAISearchRetrieverOptions>;

function retriever(options: Partial<AzureAISearchRetrieverOptions>) {
  return new AzureAISearchRetriever({
    endpoint: server.endpoint,
    indexName: 'test-index',
    apiKey: server.apiKey,
    clientOptions: { allowInsecureConnection: true, retryOptions: { maxRetries: 0 } },
    ...options,
  });
}

function provider(options: Partial<AzureAISearchContextProviderOptions>) {
  return new AzureAISearchContextProvider({
    endpoint: server.endpoint,
    indexName: 'test-index',
    apiKey: server.apiKey,
    clientOptions: { allowInsecureConnection: true, retryOptions: { maxRetries: 0 } },
    ...options,
  });
}

const lastSearch = () => server.requests.filter((r) => r.operation === 'search').at(-1)!;
const partialDiagnostics = (events: AgentEvent[]) =>
  events.filter(
    (e): e is Extract<AgentEvent, { type: 'provider-diagnostic' }> => e.type === 'provider-diagnostic' && e.code === 'azure-search-partial',
  );

/** The 206 the service sends when the semantic ranker is overloaded, made from the recorded 206: base results only. */
function baseResultsBody(): JsonObject {
  const body = structuredClone(post.responses['206']!);
  body.value = recordedHits(body)
    .map(({ '@search.rerankerScore': _r, '@search.rerankerBoostedScore': _b, '@search.captions': _c, ...rest }) => rest)
    .sort((a, b) => (b['@search.score'] as number) - (a['@search.score'] as number));
  body['@search.semanticPartialResponseType'] = 'baseResults';
  body['@search.semanticPartialResponseReason'] = 'capacityOverloaded';
  return body;
}

describe('SearchIndexSearchDocumentsPost (semantic hybrid, 200 and 206)', () => {
  it('200: every result in the recorded order with the reranker score, highlights, boosted score and captions kept', async () => {
    server.replay({ status: 200, body: post.responses['200']! });
    const response = await retriever(POST_OPTIONS).searchResponse('purple', { topK: 10 });
    const hits = recordedHits(post.responses['200']!);
    expect(lastSearch().status).toBe(200); // the request ctx sent passed the 2026-04-01 schema check
    expect(lastSearch().body).toMatchObject({
      queryType: 'semantic',
      semanticConfiguration: 'testconfig',
      semanticErrorHandling: 'partial',
      captions: 'extractive|highlight-true',
      answers: 'extractive|count-1',
      highlight: 'category',
      highlightPreTag: '</em>',
      highlightPostTag: '</em>',
      minimumCoverage: 100,
      top: 10,
      select: 'id,description,name,category,ownerId',
    });
    expect(response.semanticPartial).toBeUndefined();
    expect(response.coverage).toBe(100);
    expect(response.belowMinScore).toBe(0);
    expect(response.results.map((r) => r.id)).toEqual(hits.map((h) => h.id));
    expect(response.results.map((r) => r.score)).toEqual(hits.map((h) => h['@search.rerankerScore']));
    const first = response.results[0]!;
    expect(first).toEqual({
      id: '10',
      title: 'test',
      content: 'test10 hello',
      score: 1.7178425788879395,
      metadata: {
        category: 'purple',
        ownerId: 'benny',
        '@search.score': 0.015625,
        '@search.rerankerScore': 1.7178425788879395,
        '@search.rerankerBoostedScore': 1.7178425788879395,
        '@search.highlights': { category: ['</em>purple</em>'] },
        '@search.captions': [{ text: 'test10 hello.' }],
      },
    });
    // A caption with highlights keeps them; the recorded empty "highlights" is left out.
    expect(response.results[1]!.metadata!['@search.captions']).toEqual([{ text: 'no vector.', highlights: '</em>no vector.</em>' }]);
    // `@search.answers: []`: no result gets an answer.
    expect(response.results.some((r) => r.metadata!['@search.answers'] !== undefined)).toBe(false);
  });

  it('200 through the provider: citations carry the highlights and the boosted score; a reranker minScore filters on the reranker scale', async () => {
    server.replay({ status: 200, body: post.responses['200']! });
    const { agent, chat, events } = agentWith([provider({ ...POST_OPTIONS, topK: 10, minScore: 1.69 })]);
    await agent.run('purple', { session: agent.createSession() });
    const cited = citations(contextMessages(chat.calls[0]!.messages)[0]!);
    const expected = recordedHits(post.responses['200']!).filter((h) => h['@search.rerankerScore'] >= 1.69);
    expect(cited.map((c) => c.id)).toEqual(expected.map((h) => h.id));
    expect(cited.length).toBe(7);
    expect(cited[0]!.metadata).toMatchObject({
      '@search.highlights': { category: ['</em>purple</em>'] },
      '@search.rerankerBoostedScore': 1.7178425788879395,
    });
    expect(partialDiagnostics(events)).toEqual([]);
  });

  it('the recorded 206 still carries reranker scores and no partial type: ctx treats it as reranked, by its fields, not its status', async () => {
    server.replay({ status: 206, body: post.responses['206']! });
    const response = await retriever(POST_OPTIONS).searchResponse('purple', { topK: 10 });
    expect(lastSearch().status).toBe(206);
    expect(response.semanticPartial).toBeUndefined();
    expect(response.results.map((r) => r.score)).toEqual(recordedHits(post.responses['206']!).map((h) => h['@search.rerankerScore']));
  });

  it('206 baseResults: a reranker-scale minScore is never compared with @search.score; base results are kept and reported', async () => {
    const body = baseResultsBody();
    server.replay({ status: 206, body });
    const { agent, chat, events } = agentWith([provider({ ...POST_OPTIONS, topK: 10, minScore: 1.5 })]);
    await agent.run('purple', { session: agent.createSession() });
    const cited = citations(contextMessages(chat.calls[0]!.messages)[0]!);
    // Before: @search.score (about 0.012-0.017) was compared with 1.5 and every result was dropped.
    expect(cited.map((c) => c.id)).toEqual(recordedHits(body).map((h) => h.id));
    expect(cited.every((c) => c.score === undefined && typeof c.metadata!['@search.score'] === 'number')).toBe(true);
    expect(cited.some((c) => '@search.rerankerScore' in c.metadata!)).toBe(false);
    const [diagnostic] = partialDiagnostics(events);
    expect(diagnostic).toMatchObject({
      sourceId: 'azure-search',
      data: {
        indexName: 'test-index',
        semanticResultsType: 'baseResults',
        semanticReason: 'capacityOverloaded',
        coverage: 100,
        results: 10,
        belowMinScore: 0,
      },
    });
    expect(diagnostic!.message).toMatch(/answered partially: the semantic ranker returned baseResults \(capacityOverloaded\)/);
  });

  it('206 baseResults with a search-scale threshold: base results are filtered by @search.score, on their own scale', async () => {
    const body = baseResultsBody();
    server.replay({ status: 206, body });
    const response = await retriever({ ...POST_OPTIONS, minScore: { reranker: 1.5, search: 0.0125 } }).searchResponse('purple', {
      topK: 10,
    });
    const kept = recordedHits(body).filter((h) => h['@search.score'] >= 0.0125);
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.length).toBeLessThan(10);
    expect(response.results.map((r) => r.id)).toEqual(kept.map((h) => h.id));
    expect(response.belowMinScore).toBe(10 - kept.length);
    expect(response.semanticPartial).toEqual({ resultsType: 'baseResults', reason: 'capacityOverloaded' });
  });
});

describe('SearchIndexSearchDocumentsSemanticPost (answers, captions, a continuation)', () => {
  const options = {
    indexName: 'myindex',
    queryMode: 'semantic',
    fields: { id: 'id', title: 'title', content: 'content' },
    select: ['locations'],
    semantic: { configuration: 'my-semantic-config', captions: true, answers: 3, captionsAsContent: true },
  } as const satisfies Partial<AzureAISearchRetrieverOptions>;

  it.each(['200', '206'])(
    '%s: the answer lands on the result it was extracted from; the caption is the content; the continuation is not followed past topK',
    async (status) => {
      const body = semantic.responses[status]!;
      server.replay({ status: Number(status), body });
      const before = server.requests.length;
      const response = await retriever(options).searchResponse('how do clouds form', { topK: 1 });
      expect(server.requests.length - before).toBe(1);
      expect(lastSearch().body).toMatchObject({
        answers: 'extractive|count-3',
        captions: 'extractive|highlight-true',
        queryType: 'semantic',
      });
      const hit = recordedHits(body)[0]!;
      const caption = (hit['@search.captions'] as JsonObject[])[0]!;
      const answer = (body['@search.answers'] as JsonObject[])[0]!;
      expect(response.results).toEqual([
        {
          id: '4123',
          title: 'Earth Atmosphere',
          content: caption.text,
          score: 1.0321671911515296,
          metadata: {
            locations: ['Pacific Northwest', 'North America', 'Vancouver'],
            '@search.score': 0.5479723,
            '@search.rerankerScore': 1.0321671911515296,
            '@search.captions': [{ text: caption.text, highlights: caption.highlights }],
            '@search.answers': [{ text: answer.text, highlights: answer.highlights, score: 0.94639826 }],
          },
        },
      ]);
      expect(response.semanticPartial).toBeUndefined();
    },
  );

  it('the provider shows the extracted answer first in the passage the model reads', async () => {
    server.replay({ status: 200, body: semantic.responses['200']! });
    const { agent, chat } = agentWith([provider({ ...options, topK: 1 })]);
    await agent.run('how do clouds form', { session: agent.createSession() });
    const [message] = contextMessages(chat.calls[0]!.messages);
    const answer = (semantic.responses['200']!['@search.answers'] as JsonObject[])[0]!.text as string;
    expect(message!.contents[0]).toMatchObject({ type: 'text' });
    expect((message!.contents[0] as { text: string }).text).toContain(`[1] Earth Atmosphere\nAnswer: ${answer}\nLike all clouds, it forms`);
  });
});
