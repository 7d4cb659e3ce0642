import { AzureKeyCredential, SearchClient, SearchIndexClient } from '@azure/search-documents';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { recordedRetrieveExample, startAzureSearchTestServer, type AzureSearchTestServer, type JsonObject } from './index.js';

let server: AzureSearchTestServer;
const noRetry = { allowInsecureConnection: true, retryOptions: { maxRetries: 0 } };

const DOCS = [
  { id: 'a1', tenantId: 'acme', title: 'Refunds', content: 'Acme refunds purchases within 30 days.' },
  { id: 'a2', tenantId: 'acme', title: 'Shipping', content: 'Acme ships orders within 2 days.' },
  { id: 'g1', tenantId: 'globex', title: 'Refunds', content: 'Globex refunds unopened boxes within 14 days.' },
];

async function seed(): Promise<void> {
  const credential = new AzureKeyCredential(server.apiKey);
  const indexes = new SearchIndexClient(server.endpoint, credential, noRetry);
  await indexes.createIndex({
    name: 'policies',
    fields: [
      { name: 'id', type: 'Edm.String', key: true, filterable: true },
      { name: 'tenantId', type: 'Edm.String', filterable: true },
      { name: 'title', type: 'Edm.String', searchable: true },
      { name: 'content', type: 'Edm.String', searchable: true },
    ],
    semanticSearch: {
      defaultConfigurationName: 'sem',
      configurations: [{ name: 'sem', prioritizedFields: { titleField: { name: 'title' }, contentFields: [{ name: 'content' }] } }],
    },
  });
  await new SearchClient(server.endpoint, 'policies', credential, noRetry).uploadDocuments(DOCS);
  server.createKnowledgeBase({ name: 'kb', knowledgeSources: [{ name: 'ks-policies', indexName: 'policies' }] });
}

async function post(body: unknown, apiVersion = '2026-04-01', name = 'kb'): Promise<{ status: number; json: JsonObject }> {
  const reply = await fetch(`${server.endpoint}/knowledgebases('${name}')/retrieve?api-version=${apiVersion}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'api-key': server.apiKey },
    body: JSON.stringify(body),
  });
  return { status: reply.status, json: (await reply.json()) as JsonObject };
}

beforeAll(async () => {
  server = await startAzureSearchTestServer();
});
afterAll(async () => {
  await server.close();
});
beforeEach(async () => {
  server.reset();
  await seed();
});

const intent = (search: string) => ({ type: 'semantic', search });
const acme = { knowledgeSourceName: 'ks-policies', kind: 'searchIndex', filterAddOn: "tenantId eq 'acme'" };
const errorMessage = (json: JsonObject) => (json.error as JsonObject).message as string;

describe('retrieve: the request is checked against the api-version schema', () => {
  it('accepts the recorded example requests of each version, and answers them by replay', async () => {
    for (const name of ['KnowledgeBaseRetrieve', 'KnowledgeBaseRetrieveWithIntents', 'KnowledgeBaseRetrieve.2026-05-01-preview'] as const) {
      const example = recordedRetrieveExample(name);
      server.replay({ operation: 'retrieve', status: 206, body: example.responses['206']! });
      const { status, json } = await post(example.request, example.parameters['api-version'] as string);
      expect(status, name).toBe(206);
      expect(json).toEqual(example.responses['206']);
    }
  });

  it.each([
    [
      { intents: [intent('x')], unknownField: 1 },
      '2026-04-01',
      /parameter 'unknownField' .* not a valid parameter for the operation 'retrieve'/,
    ],
    [{ messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }] }] }, '2026-04-01', /parameter 'messages'/],
    [{ intents: [intent('x')], maxOutputSize: 10 }, '2026-04-01', /parameter 'maxOutputSize'/],
    [{ intents: [intent('x')], maxOutputSizeInTokens: 10 }, '2026-05-01-preview', /parameter 'maxOutputSizeInTokens'/],
    [{ intents: [{ type: 'semantic' }] }, '2026-04-01', /'intents\[0\]\.search' is required/],
    [{ intents: [{ type: 'keyword', search: 'x' }] }, '2026-04-01', /type 'keyword' of 'intents\[0\]' is not valid/],
    [{ intents: [intent('x')], maxRuntimeInSeconds: 1.5 }, '2026-04-01', /'maxRuntimeInSeconds' must be an integer/],
    [{ intents: [intent('x')], knowledgeSourceParams: [{ kind: 'searchIndex' }] }, '2026-04-01', /knowledgeSourceName' is required/],
    [{ intents: [intent('x')], knowledgeSourceParams: [{ ...acme, filterAddOn: 3 }] }, '2026-04-01', /filterAddOn' must be a string/],
    [
      { intents: [intent('x')], knowledgeSourceParams: [{ ...acme, failOnError: true }] },
      '2026-04-01',
      /'knowledgeSourceParams\[0\]\.failOnError'/,
    ],
    [{ intents: [intent('x')], retrievalReasoningEffort: { kind: 'huge' } }, '2026-05-01-preview', /kind 'huge'/],
    [{ intents: [intent('x')] }, '2025-09-01', /unsupported api-version '2025-09-01'/],
  ])('400 for %j on %s', async (body, version, message) => {
    const { status, json } = await post(body, version);
    expect(status).toBe(400);
    expect(errorMessage(json)).toMatch(message);
  });

  it('404 for an unknown knowledge base, 400 for a knowledge source it does not have', async () => {
    expect((await post({ intents: [intent('x')] }, '2026-04-01', 'nope')).status).toBe(404);
    const { status, json } = await post({ intents: [intent('x')], knowledgeSourceParams: [{ ...acme, knowledgeSourceName: 'other' }] });
    expect(status).toBe(400);
    expect(errorMessage(json)).toMatch(/'other' is not part of knowledge base 'kb'/);
  });
});

describe('retrieve: answers derived from the documents', () => {
  it('runs each intent with the filterAddOn, with references, source data and activity', async () => {
    const { status, json } = await post({
      intents: [intent('refunds')],
      includeActivity: true,
      knowledgeSourceParams: [{ ...acme, includeReferences: true, includeReferenceSourceData: true }],
    });
    expect(status).toBe(200);
    const references = json.references as JsonObject[];
    expect(references.map((r) => r.docKey)).toEqual(['a1', 'a2'].filter((k) => references.some((r) => r.docKey === k)));
    expect(references.every((r) => (r.sourceData as JsonObject).tenantId === 'acme')).toBe(true);
    expect(references[0]).toMatchObject({ type: 'searchIndex', id: '0', activitySource: 0, docKey: 'a1' });
    expect(typeof references[0]!.rerankerScore).toBe('number');
    const activity = json.activity as JsonObject[];
    expect(activity[0]).toMatchObject({
      type: 'searchIndex',
      id: 0,
      knowledgeSourceName: 'ks-policies',
      count: references.length,
      searchIndexArguments: { search: 'refunds', filter: "tenantId eq 'acme'" },
    });
    const text = ((json.response as JsonObject[])[0]!.content as JsonObject[])[0]!.text as string;
    expect(JSON.parse(text)[0]).toEqual({ ref_id: 0, title: 'Refunds', content: DOCS[0]!.content });
  });

  it('rerankerThreshold drops what scores below it; includeReferences false leaves references out', async () => {
    const low = await post({ intents: [intent('refunds')], knowledgeSourceParams: [{ ...acme, rerankerThreshold: 1 }] });
    expect((low.json.references as JsonObject[]).map((r) => r.docKey)).toEqual(['a1']);
    const high = await post({ intents: [intent('refunds')], knowledgeSourceParams: [{ ...acme, rerankerThreshold: 4.5 }] });
    expect(high.json.references).toEqual([]);
    expect((high.json.activity as JsonObject[])[0]!.count).toBe(0);
    const none = await post({ intents: [intent('refunds')], knowledgeSourceParams: [{ ...acme, includeReferences: false }] });
    expect(none.json.references).toEqual([]);
    expect(((none.json.activity as JsonObject[])[0]!.count as number) > 0).toBe(true);
  });

  it('preview: plans from the messages and reports planning, reasoning and synthesis', async () => {
    const { status, json } = await post(
      {
        messages: [{ role: 'user', content: [{ type: 'text', text: 'refunds' }] }],
        retrievalReasoningEffort: { kind: 'low' },
        outputMode: 'answerSynthesis',
        knowledgeSourceParams: [acme],
      },
      '2026-05-01-preview',
    );
    expect(status).toBe(200);
    expect((json.activity as JsonObject[]).map((a) => a.type)).toEqual([
      'modelQueryPlanning',
      'searchIndex',
      'agenticReasoning',
      'modelAnswerSynthesis',
    ]);
  });

  it('206 when a knowledge source fails: its activity carries the error, the rest is answered', async () => {
    server.createKnowledgeBase({
      name: 'kb',
      knowledgeSources: [
        { name: 'ks-policies', indexName: 'policies' },
        { name: 'ks-gone', indexName: 'missing-index' },
      ],
    });
    const { status, json } = await post({ intents: [intent('refunds')], knowledgeSourceParams: [acme] });
    expect(status).toBe(206);
    const failed = (json.activity as JsonObject[]).find((a) => a.knowledgeSourceName === 'ks-gone')!;
    expect(failed.error).toMatchObject({ code: '404' });
    expect((json.references as JsonObject[]).length).toBeGreaterThan(0);
    server.failKnowledgeSource('ks-policies');
    expect((await post({ intents: [intent('refunds')], knowledgeSourceParams: [acme] })).status).toBe(206);
  });
});
