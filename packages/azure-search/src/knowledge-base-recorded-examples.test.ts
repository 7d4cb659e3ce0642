/**
 * Microsoft's recorded examples of `KnowledgeRetrieval_Retrieve` (2026-04-01 and
 * 2026-05-01-preview, in tooling/azure-search-test-server/fixtures), replayed through the provider:
 * the request it sends for the same options is compared with the example's request (parsed and
 * deeply, canonically serialized, and on the REST path byte for byte; see fixtures/SOURCES.md), the
 * server checks it against the version's schema, and the example's 200 and 206 bodies are what the
 * provider reads.
 */
import {
  recordedRetrieveExample,
  startAzureSearchTestServer,
  type AzureSearchTestServer,
  type JsonObject,
  type JsonValue,
  type RecordedRetrieveExampleName,
} from '@ctx/azure-search-test-server';
import * as searchSdk from '@azure/search-documents';
import { createAgent, Message, type AgentEvent } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AzureAISearchKnowledgeBaseProvider,
  type AzureAISearchKnowledgeBaseProviderOptions,
  type KnowledgeBaseCitation,
} from './azure-search-knowledge-base-provider.js';

let server: AzureSearchTestServer;
/** `@azure/search-documents` 13 sends the GA call through its `KnowledgeRetrievalClient`; with 12 ctx sends it as REST. */
const GA_VIA =
  typeof (searchSdk as unknown as { KnowledgeRetrievalClient?: unknown }).KnowledgeRetrievalClient === 'function' ? 'sdk' : 'rest';
beforeAll(async () => {
  server = await startAzureSearchTestServer();
});
afterAll(async () => {
  await server.close();
});

/** Keys sorted at every depth, no whitespace: the serialization that does not depend on member order. */
function canonical(value: JsonValue | undefined): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`)
      .join(',')}}`;
  return JSON.stringify(value);
}

/** The provider options an example's request implies. */
function optionsFor(name: RecordedRetrieveExampleName): AzureAISearchKnowledgeBaseProviderOptions {
  const { parameters, request } = recordedRetrieveExample(name);
  const params = (request.knowledgeSourceParams as JsonObject[])[0]!;
  const preview = parameters['api-version'] === '2026-05-01-preview';
  return {
    endpoint: server.endpoint,
    apiKey: server.apiKey,
    clientOptions: { allowInsecureConnection: true, retryOptions: { maxRetries: 0 } },
    knowledgeBaseName: parameters.knowledgeBaseName as string,
    apiVersion: parameters['api-version'] as '2026-04-01',
    maxRuntimeInSeconds: request.maxRuntimeInSeconds as number,
    maxOutputSizeInTokens: (preview ? request.maxOutputSize : request.maxOutputSizeInTokens) as number,
    includeActivity: request.includeActivity as boolean,
    citationFields: ['id'],
    knowledgeSources: [
      {
        name: params.knowledgeSourceName as string,
        kind: 'searchIndex',
        filterAddOn: params.filterAddOn as string,
        includeReferences: params.includeReferences as boolean,
        includeReferenceSourceData: params.includeReferenceSourceData as boolean,
        rerankerThreshold: params.rerankerThreshold as number,
        ...(preview ? { alwaysQuerySource: params.alwaysQuerySource as boolean, failOnError: params.failOnError as boolean } : {}),
      },
    ],
    ...(preview
      ? {
          reasoningEffort: (request.retrievalReasoningEffort as JsonObject).kind as 'low',
          outputMode: request.outputMode as 'answerSynthesis',
          maxOutputDocuments: request.maxOutputDocuments as number,
        }
      : {}),
  };
}

const lastRetrieve = () => server.requests.filter((r) => r.operation === 'retrieve').at(-1)!;
const diagnostics = (events: AgentEvent[], code: string) =>
  events.filter((e): e is Extract<AgentEvent, { type: 'provider-diagnostic' }> => e.type === 'provider-diagnostic' && e.code === code);

/** The citations the example's references become. */
const RECORDED_CITATIONS: Partial<KnowledgeBaseCitation>[] = [
  { n: 1, id: 'myDocKey1', referenceId: '83dd7d40', type: 'searchIndex', title: 'high_doc', score: 3.5, metadata: { id: 'myDocKey1' } },
  { n: 2, id: 'myDocKey2', referenceId: '83dd7d41', type: 'searchIndex', title: 'low_doc', score: 2.7, metadata: { id: 'myDocKey2' } },
];

async function runAgent(provider: AzureAISearchKnowledgeBaseProvider, input: string) {
  const events: AgentEvent[] = [];
  const chat = new ScriptedChatClient({ replies: ['ok'] });
  const agent = createAgent({ client: chat, contextProviders: [provider], onEvent: (e) => events.push(e) });
  await agent.run(input);
  const context = chat.calls[0]!.messages.filter((m) => Message.source(m)?.sourceId === provider.sourceId);
  return { events, context };
}

describe('2026-04-01 KnowledgeBaseRetrieve (no intents), through the SDK (13) or REST (12)', () => {
  const example = recordedRetrieveExample('KnowledgeBaseRetrieve');

  it('sends the example request for the same options (deeply equal, canonical bytes equal) and reads the 200 body losslessly', async () => {
    const provider = new AzureAISearchKnowledgeBaseProvider(optionsFor('KnowledgeBaseRetrieve'));
    expect(provider.via).toBe(GA_VIA);
    server.replay({ operation: 'retrieve', status: 200, body: example.responses['200']! });
    const retrieval = await provider.retrieve({});
    const sent = lastRetrieve();
    expect(sent.status).toBe(200); // passed the 2026-04-01 schema check
    expect(sent.path).toBe(`/knowledgebases('base-example-index')/retrieve`);
    expect(sent.query['api-version']).toBe('2026-04-01');
    expect(sent.headers['x-ms-query-source-authorization']).toBeUndefined();
    expect(sent.body).toEqual(example.request);
    expect(canonical(JSON.parse(sent.rawBody))).toBe(canonical(example.request));
    if (GA_VIA === 'rest') expect(sent.rawBody).toBe(JSON.stringify(example.request));
    // The SDK's serializer writes the definition's member order (filterAddOn last), the example filterAddOn first.
    else
      expect(Object.keys((sent.body!.knowledgeSourceParams as JsonObject[])[0]!)).toEqual([
        'knowledgeSourceName',
        'includeReferences',
        'includeReferenceSourceData',
        'rerankerThreshold',
        'kind',
        'filterAddOn',
      ]);
    expect(retrieval.status).toBe(200);
    expect(retrieval.text).toBe('[{...}]');
    expect(retrieval.citations).toEqual(RECORDED_CITATIONS.map((c) => ({ ...c, knowledgeSourceName: 'ks-example-index' })));
    // Every activity field as the service sent it (the SDK 13.0.0 deserializer keeps only id, type and error).
    expect(retrieval.activity).toEqual(example.responses['200']!.activity);
    expect(retrieval.failedSources).toEqual([]);
  });

  it('206: the failed web source is named, the references are still cited', async () => {
    const provider = new AzureAISearchKnowledgeBaseProvider(optionsFor('KnowledgeBaseRetrieve'));
    server.replay({ operation: 'retrieve', status: 206, body: example.responses['206']! });
    const retrieval = await provider.retrieve({});
    expect(retrieval.status).toBe(206);
    expect(retrieval.failedSources).toEqual([
      { knowledgeSourceName: 'ks-preview-web', type: 'web', code: '403', message: 'The error message' },
    ]);
    expect(retrieval.citations.map((c) => c.id)).toEqual(['myDocKey1', 'myDocKey2']);
  });
});

describe('2026-04-01 KnowledgeBaseRetrieveWithIntents, through a run', () => {
  const example = recordedRetrieveExample('KnowledgeBaseRetrieveWithIntents');

  it('the input "foo" is sent as the example intent; the grounding and citations reach the model, the activity the events', async () => {
    const provider = new AzureAISearchKnowledgeBaseProvider(optionsFor('KnowledgeBaseRetrieveWithIntents'));
    server.replay({ operation: 'retrieve', status: 200, body: example.responses['200']! });
    const { events, context } = await runAgent(provider, 'foo');
    const sent = lastRetrieve();
    expect(sent.status).toBe(200);
    expect(sent.body).toEqual(example.request);
    expect(canonical(JSON.parse(sent.rawBody))).toBe(canonical(example.request));
    expect(context).toHaveLength(1);
    expect(Message.text(context[0]!)).toContain('[{...}]');
    expect(context[0]!.metadata?.citations).toEqual(RECORDED_CITATIONS.map((c) => ({ ...c, knowledgeSourceName: 'ks-example-index' })));
    const [activity] = diagnostics(events, 'azure-search-knowledge-activity');
    expect(activity!.data).toMatchObject({
      knowledgeBaseName: 'base-example-index',
      status: 200,
      searches: 1,
      documents: 2,
      reasoningTokens: 37,
      elapsedMs: 1234,
      references: 2,
      activity: example.responses['200']!.activity,
    });
    expect(diagnostics(events, 'azure-search-knowledge-partial')).toEqual([]);
  });

  it('206 in a run: a partial diagnostic names ks-preview-web and the context is still added', async () => {
    const provider = new AzureAISearchKnowledgeBaseProvider(optionsFor('KnowledgeBaseRetrieveWithIntents'));
    server.replay({ operation: 'retrieve', status: 206, body: example.responses['206']! });
    const { events, context } = await runAgent(provider, 'foo');
    const [partial] = diagnostics(events, 'azure-search-knowledge-partial');
    expect(partial!.message).toBe(
      'Knowledge base "base-example-index" answered partially (206): knowledge source "ks-preview-web" failed (403 The error message). The context from the other sources is used.',
    );
    expect(partial!.data).toMatchObject({ status: 206, references: 2 });
    expect(context).toHaveLength(1);
    expect((context[0]!.metadata!.citations as JsonObject[]).map((c) => c.id)).toEqual(['myDocKey1', 'myDocKey2']);
    expect(events.some((e) => e.type === 'provider-skipped')).toBe(false);
  });
});

describe('2026-05-01-preview KnowledgeBaseRetrieve (messages, reasoning effort), over REST', () => {
  const example = recordedRetrieveExample('KnowledgeBaseRetrieve.2026-05-01-preview');

  it('the run sends the example request byte for byte', async () => {
    const provider = new AzureAISearchKnowledgeBaseProvider(optionsFor('KnowledgeBaseRetrieve.2026-05-01-preview'));
    expect(provider.via).toBe('rest');
    server.replay({ operation: 'retrieve', status: 200, body: example.responses['200']! });
    const { events, context } = await runAgent(provider, 'hello world');
    const sent = lastRetrieve();
    expect(sent.status).toBe(200); // passed the preview schema check
    expect(sent.query['api-version']).toBe('2026-05-01-preview');
    expect(sent.path).toBe(`/knowledgebases('base-preview-test')/retrieve`);
    expect(sent.rawBody).toBe(JSON.stringify(example.request));
    expect(context).toHaveLength(1);
    const [activity] = diagnostics(events, 'azure-search-knowledge-activity');
    expect(activity!.data).toMatchObject({
      planningInputTokens: 11,
      planningOutputTokens: 22,
      reasoningTokens: 74,
      synthesisInputTokens: 664,
      synthesisOutputTokens: 1328,
      searches: 2,
      documents: 4,
      elapsedMs: 10 + 1234 + 1234 + 10,
    });
  });

  it('206: the diagnostic names the failed source and the grounding is used', async () => {
    const provider = new AzureAISearchKnowledgeBaseProvider(optionsFor('KnowledgeBaseRetrieve.2026-05-01-preview'));
    server.replay({ operation: 'retrieve', status: 206, body: example.responses['206']! });
    const { events, context } = await runAgent(provider, 'hello world');
    expect(diagnostics(events, 'azure-search-knowledge-partial')[0]!.data).toMatchObject({
      failedSources: [{ knowledgeSourceName: 'ks-preview-web', type: 'web', code: '403', message: 'The error message' }],
    });
    expect(context).toHaveLength(1);
  });
});
