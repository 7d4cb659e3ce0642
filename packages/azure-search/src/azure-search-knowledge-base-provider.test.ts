import * as searchSdk from '@azure/search-documents';
import { AzureKeyCredential, SearchClient, SearchIndexClient } from '@azure/search-documents';
import { startAzureSearchTestServer, type AzureSearchTestServer, type JsonObject } from '@ctx/azure-search-test-server';
import { BackendUnavailableError, ConfigurationError, createAgent, Message, type AgentEvent } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  AzureAISearchKnowledgeBaseProvider,
  type AzureAISearchKnowledgeBaseProviderOptions,
} from './azure-search-knowledge-base-provider.js';

let server: AzureSearchTestServer;
/** `@azure/search-documents` 13 has a `KnowledgeRetrievalClient` (the GA calls go through it); 12 has none (they go as REST). */
const KnowledgeRetrievalClient = (searchSdk as unknown as { KnowledgeRetrievalClient?: new (...args: unknown[]) => never })
  .KnowledgeRetrievalClient;
const GA_VIA = KnowledgeRetrievalClient ? 'sdk' : 'rest';
const insecure = { allowInsecureConnection: true, retryOptions: { maxRetries: 0 } } as const;

const DOCS = [
  {
    id: 'acme-refunds',
    tenantId: 'acme',
    title: 'Refund policy',
    url: 'https://acme.example/refunds',
    content: 'Acme refunds purchases within 30 days.',
  },
  {
    id: 'acme-shipping',
    tenantId: 'acme',
    title: 'Shipping',
    url: 'https://acme.example/shipping',
    content: 'Acme ships refund labels and orders within 2 days.',
  },
  {
    id: 'globex-refunds',
    tenantId: 'globex',
    title: 'Refund policy',
    url: 'https://globex.example/refunds',
    content: 'Globex refunds unopened boxes within 14 days.',
  },
  {
    id: 'globex-merger',
    tenantId: 'globex',
    title: 'Merger plan',
    url: 'https://globex.example/merger',
    content: 'Confidential: Globex refunds move to Initech after the merger.',
  },
  {
    id: 'obrien-refunds',
    tenantId: "o'brien",
    title: 'Refunds',
    url: 'https://obrien.example/refunds',
    content: "O'Brien refunds repairs within 7 days.",
  },
];
const TENANT_OF = new Map(DOCS.map((d) => [d.id, d.tenantId]));

beforeAll(async () => {
  server = await startAzureSearchTestServer({ bearerTokens: ['user-token-1'] });
});
afterAll(async () => {
  await server.close();
});
beforeEach(async () => {
  server.reset();
  const credential = new AzureKeyCredential(server.apiKey);
  await new SearchIndexClient(server.endpoint, credential, insecure).createIndex({
    name: 'policies',
    fields: [
      { name: 'id', type: 'Edm.String', key: true, filterable: true },
      { name: 'tenantId', type: 'Edm.String', filterable: true },
      { name: 'title', type: 'Edm.String', searchable: true },
      { name: 'url', type: 'Edm.String' },
      { name: 'content', type: 'Edm.String', searchable: true },
    ],
    semanticSearch: {
      defaultConfigurationName: 'sem',
      configurations: [{ name: 'sem', prioritizedFields: { titleField: { name: 'title' }, contentFields: [{ name: 'content' }] } }],
    },
  });
  await new SearchClient(server.endpoint, 'policies', credential, insecure).uploadDocuments(DOCS);
  server.createKnowledgeBase({ name: 'support', knowledgeSources: [{ name: 'ks-policies', indexName: 'policies' }] });
});

function provider(options: Partial<AzureAISearchKnowledgeBaseProviderOptions> = {}) {
  return new AzureAISearchKnowledgeBaseProvider({
    endpoint: server.endpoint,
    apiKey: server.apiKey,
    knowledgeBaseName: 'support',
    clientOptions: insecure,
    knowledgeSources: [{ name: 'ks-policies' }],
    citationFields: ['tenantId'],
    ...options,
  });
}

function agentWith(p: AzureAISearchKnowledgeBaseProvider, replies?: ConstructorParameters<typeof ScriptedChatClient>[0]['replies']) {
  const events: AgentEvent[] = [];
  const chat = new ScriptedChatClient({ replies: replies ?? ((messages) => `seen ${messages.length}`) });
  const agent = createAgent({ client: chat, contextProviders: [p], onEvent: (e) => events.push(e) });
  return { agent, chat, events };
}

const retrieves = () => server.requests.filter((r) => r.operation === 'retrieve');
const injected = (messages: readonly Message[], sourceId = 'azure-search-knowledge-base') =>
  messages.filter((m) => Message.source(m)?.sourceId === sourceId);
const citedIds = (message: Message) => ((message.metadata?.citations ?? []) as JsonObject[]).map((c) => c.id as string);
const diagnostic = (events: AgentEvent[], code: string) =>
  events.find((e): e is Extract<AgentEvent, { type: 'provider-diagnostic' }> => e.type === 'provider-diagnostic' && e.code === code);

describe('tenant isolation: one user’s filter never returns another’s references', () => {
  const scoped = (mode: 'before' | 'tool' = 'before') =>
    provider({ mode, scope: ({ session }) => ({ tenantId: session?.state.profile?.tenantId as string }) });

  it.each(['acme', 'globex', "o'brien"])('tenant %s only ever sees its own documents, whatever it asks', async (tenant) => {
    const { agent, chat } = agentWith(scoped());
    for (const question of ['refund policy', 'Globex merger plan', 'refunds shipping merger Initech', "O'Brien repairs"]) {
      await agent.run(question, { session: agent.createSession({ state: { profile: { tenantId: tenant } } }) });
    }
    const cited = chat.calls.flatMap((c) => injected(c.messages).flatMap(citedIds));
    expect(cited.length).toBeGreaterThan(0);
    expect(cited.every((id) => TENANT_OF.get(id) === tenant)).toBe(true);
    for (const request of retrieves())
      expect((request.body!.knowledgeSourceParams as JsonObject[])[0]!.filterAddOn).toBe(`tenantId eq '${tenant.replace(/'/g, "''")}'`);
  });

  it('a hostile tenant id is quoted, so it cannot widen the filter to another tenant', async () => {
    const { agent, chat } = agentWith(scoped());
    const hostile = "x' or tenantId eq 'globex";
    await agent.run('refund policy merger', { session: agent.createSession({ state: { profile: { tenantId: hostile } } }) });
    expect(chat.calls.flatMap((c) => injected(c.messages).flatMap(citedIds))).toEqual([]);
    expect((retrieves()[0]!.body!.knowledgeSourceParams as JsonObject[])[0]!.filterAddOn).toBe("tenantId eq 'x'' or tenantId eq ''globex'");
  });

  it('tool mode keeps the filter: the model’s own query cannot reach another tenant', async () => {
    const p = scoped('tool');
    const { agent, chat } = agentWith(p, [{ toolCalls: [{ name: 'retrieve', arguments: { query: 'Globex merger refunds' } }] }, 'done']);
    await agent.run('anything', { session: agent.createSession({ state: { profile: { tenantId: 'acme' } } }) });
    const result = chat.calls[1]!.messages.find((m) => m.role === 'tool')!;
    const output = JSON.stringify(result);
    expect(output).toContain('acme-refunds');
    expect(output).not.toContain('globex');
    expect(retrieves()[0]!.body!.intents).toEqual([{ search: 'Globex merger refunds', type: 'semantic' }]);
  });

  it('a scope returning undefined refuses the retrieval (fail closed) and says so', async () => {
    const p = provider({ scope: () => undefined });
    const { agent, events } = agentWith(p);
    await agent.run('refund policy');
    expect(retrieves()).toEqual([]);
    expect(diagnostic(events, 'azure-search-knowledge-failed')!.message).toMatch(
      /scope returned undefined, so nothing was retrieved \(fail closed\)/,
    );
    expect(events.some((e) => e.type === 'provider-skipped' && e.sourceId === p.sourceId)).toBe(true);
  });
});

describe('requests', () => {
  it('2026-04-01: the recent user turns are the intents; the context is attributed with citations', async () => {
    const p = provider({ citationFields: ['tenantId'], knowledgeSources: [{ name: 'ks-policies', filterAddOn: "tenantId eq 'acme'" }] });
    const { agent, chat } = agentWith(p);
    const session = agent.createSession();
    await agent.run('How do refunds work?', { session });
    await agent.run('And shipping?', { session });
    expect(retrieves().map((r) => r.body!.intents)).toEqual([
      [{ search: 'How do refunds work?', type: 'semantic' }],
      [
        { search: 'How do refunds work?', type: 'semantic' },
        { search: 'And shipping?', type: 'semantic' },
      ],
    ]);
    const [context] = injected(chat.calls[0]!.messages);
    expect(context!.role).toBe('user');
    expect((context!.metadata!.citations as JsonObject[])[0]).toMatchObject({
      n: 1,
      id: 'acme-refunds',
      type: 'searchIndex',
      knowledgeSourceName: 'ks-policies',
      title: 'Refund policy',
      url: 'https://acme.example/refunds',
      metadata: { tenantId: 'acme' },
    });
    expect(Message.text(context!)).toContain('Acme refunds purchases within 30 days.');
  });

  it('2026-05-01-preview: the conversation goes as messages with the reasoning effort, over REST', async () => {
    const p = provider({ apiVersion: '2026-05-01-preview', reasoningEffort: 'low', recentMessages: 3 });
    expect(p.via).toBe('rest');
    const { agent } = agentWith(p);
    const session = agent.createSession();
    await agent.run('refunds?', { session });
    await agent.run('and for shipping?', { session });
    const body = retrieves()[1]!.body!;
    expect(body.messages).toEqual([
      { role: 'user', content: [{ text: 'refunds?', type: 'text' }] },
      { role: 'assistant', content: [{ text: expect.stringMatching(/^seen/), type: 'text' }] },
      { role: 'user', content: [{ text: 'and for shipping?', type: 'text' }] },
    ]);
    expect(body.retrievalReasoningEffort).toEqual({ kind: 'low' });
    expect(body.intents).toBeUndefined();
  });

  it('x-ms-query-source-authorization is passed through on both transports, and absent when not given', async () => {
    for (const apiVersion of ['2026-04-01', '2026-05-01-preview'] as const) {
      const p = provider({ apiVersion, querySourceAuthorization: ({ session }) => session?.state.auth?.token as string | undefined });
      const { agent } = agentWith(p);
      await agent.run('refunds', { session: agent.createSession({ state: { auth: { token: 'user-obo-token' } } }) });
      await agent.run('refunds', { session: agent.createSession() });
      const [given, absent] = retrieves().slice(-2);
      expect(given!.headers['x-ms-query-source-authorization'], apiVersion).toBe('user-obo-token');
      expect(absent!.headers['x-ms-query-source-authorization'], apiVersion).toBeUndefined();
    }
  });

  it('a token credential authenticates the REST call with a bearer token', async () => {
    const token = { getToken: async () => ({ token: 'user-token-1', expiresOnTimestamp: Date.now() + 3_600_000 }) };
    const p = provider({ apiKey: undefined, credential: token, apiVersion: '2026-05-01-preview' });
    expect((await p.retrieve({ queries: ['refunds'] })).citations.length).toBeGreaterThan(0);
    expect(retrieves().at(-1)!.headers.authorization).toBe('Bearer user-token-1');
  });

  it.skipIf(!KnowledgeRetrievalClient)('an injected KnowledgeRetrievalClient (@azure/search-documents 13) is used as it is', async () => {
    const client = new KnowledgeRetrievalClient!(server.endpoint, 'support', new AzureKeyCredential(server.apiKey), insecure);
    const injectedClient = new AzureAISearchKnowledgeBaseProvider({ client, knowledgeSources: [{ name: 'ks-policies' }] });
    expect(injectedClient.via).toBe('sdk');
    expect((await injectedClient.retrieve({ queries: ['refunds'] })).citations.length).toBeGreaterThan(0);
  });
});

describe('events, partial answers and errors', () => {
  it('the activity goes into the run’s events, as the service sent it', async () => {
    const p = provider({ knowledgeSources: [{ name: 'ks-policies', filterAddOn: "tenantId eq 'acme'" }] });
    const { agent, events } = agentWith(p);
    await agent.run('refunds');
    const event = diagnostic(events, 'azure-search-knowledge-activity')!;
    expect(event.sourceId).toBe('azure-search-knowledge-base');
    expect(event.data).toMatchObject({ knowledgeBaseName: 'support', apiVersion: '2026-04-01', status: 200, searches: 1 });
    const activity = (event.data!.activity as JsonObject[])[0]!;
    expect(activity).toMatchObject({
      type: 'searchIndex',
      knowledgeSourceName: 'ks-policies',
      searchIndexArguments: { search: 'refunds', filter: "tenantId eq 'acme'" },
    });
    expect(event.data!.documents).toBe(activity.count);
  });

  it('206: a diagnostic names the failed knowledge source; what the other source returned is used', async () => {
    server.createKnowledgeBase({
      name: 'support',
      knowledgeSources: [
        { name: 'ks-policies', indexName: 'policies' },
        { name: 'ks-wiki', indexName: 'wiki' },
      ],
    });
    server.failKnowledgeSource('ks-wiki', { code: '503', message: 'The wiki index is unavailable.' });
    const p = provider({ knowledgeSources: [{ name: 'ks-policies' }, { name: 'ks-wiki' }] });
    const { agent, chat, events } = agentWith(p);
    await agent.run('refunds');
    expect(diagnostic(events, 'azure-search-knowledge-partial')!.message).toBe(
      'Knowledge base "support" answered partially (206): knowledge source "ks-wiki" failed (503 The wiki index is unavailable.). The context from the other sources is used.',
    );
    expect(citedIds(injected(chat.calls[0]!.messages)[0]!)).toContain('acme-refunds');
  });

  it.each([
    ['2026-04-01', GA_VIA],
    ['2026-05-01-preview', 'rest'],
  ] as const)('errors map as the search provider’s (%s, %s)', async (apiVersion, via) => {
    expect(provider({ apiVersion }).via).toBe(via);
    const missing = provider({ apiVersion, knowledgeBaseName: 'nope' });
    const notFound = await missing.retrieve({ queries: ['x'] }).catch((e: unknown) => e);
    expect(ConfigurationError.isInstance(notFound)).toBe(true);
    expect((notFound as Error).message).toMatch(/Azure AI Search knowledge base "?nope"? was not found \(404\).*knowledgeBaseName/);
    const badKey = await provider({ apiVersion, apiKey: 'wrong' })
      .retrieve({ queries: ['x'] })
      .catch((e: unknown) => e);
    expect(ConfigurationError.isInstance(badKey)).toBe(true);
    expect((badKey as Error).message).toMatch(/refused the credentials \(401\)/);
    expect((badKey as Error).message).not.toContain('wrong');
    server.injectFault({ status: 503, times: 1, operations: ['retrieve'] });
    const down = await provider({ apiVersion })
      .retrieve({ queries: ['x'] })
      .catch((e: unknown) => e);
    expect(BackendUnavailableError.isInstance(down)).toBe(true);
    expect((down as Error).message).toMatch(/is unavailable \(503\).*Retry later/);
    server.injectFault({ status: 429, times: 1, operations: ['retrieve'], retryAfterMs: 1 });
    const retried = await provider({
      apiVersion,
      clientOptions: { ...insecure, retryOptions: { maxRetries: 1, retryDelayInMs: 1 } },
    }).retrieve({
      queries: ['refunds'],
    });
    expect(retried.status).toBe(200);
  });

  it("onError 'skip' (default): a failed retrieval leaves the run without grounding, with a diagnostic naming the knowledge base", async () => {
    server.injectFault({ status: 500, operations: ['retrieve'] });
    const p = provider();
    const { agent, chat, events } = agentWith(p);
    const response = await agent.run('refunds');
    expect(response.text).toMatch(/^seen/);
    expect(injected(chat.calls[0]!.messages)).toEqual([]);
    expect(diagnostic(events, 'azure-search-knowledge-failed')!.data).toMatchObject({ knowledgeBaseName: 'support', status: 500 });
    server.clearFaults();
  });
});

describe('options', () => {
  it.each([
    [{ reasoningEffort: 'low' }, /reasoningEffort needs apiVersion "2026-05-01-preview"/],
    [{ knowledgeSources: [{ name: 'ks', failOnError: true }] }, /failOnError of "ks" need apiVersion/],
    [{ scope: () => ({}), knowledgeSources: undefined }, /scope needs `knowledgeSources`/],
    [{ scope: () => ({}), knowledgeSources: [{ name: 'web', kind: 'web' }] }, /scope cannot filter knowledge source "web"/],
    [{ apiVersion: '2025-09-01' }, /apiVersion must be "2026-04-01" or "2026-05-01-preview"/],
    [{ clientOptions: {} }, /is not https/],
    [{ maxRuntimeInSeconds: 0 }, /maxRuntimeInSeconds must be a positive integer/],
    [{ knowledgeBase: 'x' }, /unknown option "knowledgeBase"\. Known options: client, endpoint, knowledgeBaseName/],
  ] as [Record<string, unknown>, RegExp][])('%j is refused at construction', (options, message) => {
    expect(() => provider(options as Partial<AzureAISearchKnowledgeBaseProviderOptions>)).toThrow(message);
  });
});
