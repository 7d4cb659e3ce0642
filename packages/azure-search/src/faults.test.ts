import { AzureKeyCredential, SearchClient } from '@azure/search-documents';
import { startAzureSearchTestServer, testCertificate, type AzureSearchTestServer } from '@ctx/azure-search-test-server';
import { BackendUnavailableError, ConfigurationError, InMemoryHistoryProvider, Message, ProviderError, type AgentEvent } from '@ctx/core';
import type { OpenAITestServer } from '@ctx/openai-test-server';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { agentWith, citations, contextMessages, seedIndex, startLocalBackends } from '../test/helpers.js';
import { AzureAISearchContextProvider, type AzureAISearchContextProviderOptions } from './azure-search-context-provider.js';
import { SemanticQuotaError } from './connection.js';

let search: AzureSearchTestServer;
let openai: OpenAITestServer;
let indexName: string;

beforeAll(async () => {
  ({ search, openai } = await startLocalBackends());
  ({ name: indexName } = await seedIndex({
    endpoint: search.endpoint,
    apiKey: search.apiKey,
    openaiOrigin: openai.origin,
    openaiUrl: openai.url,
    openaiKey: openai.apiKey,
  }));
});

beforeEach(() => {
  search.clearFaults();
  search.setLatency(0);
});

const FIELDS = { id: 'id', content: 'content', title: 'title', url: 'url' };

function provider(options: Partial<AzureAISearchContextProviderOptions> = {}) {
  return new AzureAISearchContextProvider({
    endpoint: search.endpoint,
    indexName,
    apiKey: search.apiKey,
    clientOptions: { allowInsecureConnection: true, retryOptions: { maxRetries: 1, retryDelayInMs: 1, maxRetryDelayInMs: 2 } },
    fields: FIELDS,
    scope: () => ({ tenantId: 'acme' }),
    ...options,
  });
}

const skipped = (events: AgentEvent[]) =>
  events.filter((e): e is Extract<AgentEvent, { type: 'provider-skipped' }> => e.type === 'provider-skipped');
const diagnostics = (events: AgentEvent[]) =>
  events.filter((e): e is Extract<AgentEvent, { type: 'provider-diagnostic' }> => e.type === 'provider-diagnostic');
const searches = () => search.requests.filter((r) => r.operation === 'search');

describe('outages degrade the answer, not the run', () => {
  it('a 503 outage: the run answers without context, the provider is skipped with a typed error and a diagnostic', async () => {
    search.injectFault({ status: 503, operations: ['search'] });
    const before = searches().length;
    const { agent, chat, events } = agentWith([provider()]);
    const res = await agent.run('refund policy', { session: agent.createSession() });
    expect(res.text).toBe('I could not find anything.');
    expect(contextMessages(chat.calls[0]!.messages)).toEqual([]);
    expect(searches().length - before).toBe(2); // the first try and the one retry of the owned client
    const [skip] = skipped(events);
    expect(skip).toMatchObject({ sourceId: 'azure-search', phase: 'beforeRun' });
    expect(BackendUnavailableError.isInstance(skip!.error)).toBe(true);
    expect((skip!.error as BackendUnavailableError).backend).toBe('azure-search');
    expect((skip!.error as Error).message).toMatch(new RegExp(`^Azure AI Search index "${indexName}" is unavailable \\(503\\)`));
    const [diagnostic] = diagnostics(events);
    expect(diagnostic).toMatchObject({
      sourceId: 'azure-search',
      code: 'azure-search-failed',
      data: { indexName, queryMode: 'keyword', phase: 'before', status: 503, error: 'BackendUnavailableError' },
    });
    expect(JSON.stringify(diagnostic!.data)).not.toContain(search.apiKey);
  });

  it('the service goes away mid-conversation and comes back: nothing is lost or duplicated in history', async () => {
    const history = new InMemoryHistoryProvider();
    const { agent, chat, events } = agentWith([history, provider()]);
    const session = agent.createSession();
    await agent.run('refund policy', { session });
    search.injectFault({ status: 503 });
    await agent.run('shipping times', { session });
    search.clearFaults();
    await agent.run('warranty', { session });
    const cited = chat.calls.map(
      (call) =>
        contextMessages(call.messages)
          .flatMap((m) => citations(m))
          .map((c) => c.id)[0],
    );
    expect(cited).toEqual(['acme-refunds', undefined, 'acme-warranty']);
    expect(skipped(events)).toHaveLength(1);
    const stored = (session.state.memory?.messages ?? []) as Message[];
    expect(stored.map((m) => Message.text(m))).toEqual([
      'refund policy',
      'Based on acme-refunds.',
      'shipping times',
      'I could not find anything.',
      'warranty',
      'Based on acme-warranty.',
    ]);
    expect(new Set(stored.map((m) => m.id)).size).toBe(6);
    // Retrieved context is never stored as history.
    expect(stored.some((m) => Message.source(m)?.sourceId === 'azure-search')).toBe(false);
  });

  it("onError: 'throw' fails the run with a ProviderError around the typed cause", async () => {
    search.injectFault({ status: 503, operations: ['search'] });
    const { agent } = agentWith([provider({ onError: 'throw' })]);
    const error = await agent.run('refund policy', { session: agent.createSession() }).catch((e: unknown) => e);
    expect(ProviderError.isInstance(error)).toBe(true);
    expect(BackendUnavailableError.isInstance((error as ProviderError).cause)).toBe(true);
  });

  it('connection resets and an unreachable endpoint are BackendUnavailableError', async () => {
    search.injectFault({ reset: true, operations: ['search'] });
    const reset = agentWith([provider()]);
    await reset.agent.run('refund policy', { session: reset.agent.createSession() });
    expect((skipped(reset.events)[0]!.error as Error).message).toMatch(/could not be reached/);

    const gone = await startAzureSearchTestServer();
    const endpoint = gone.endpoint;
    await gone.close();
    const down = agentWith([provider({ endpoint, apiKey: 'k' })]);
    await down.agent.run('refund policy', { session: down.agent.createSession() });
    const [skip] = skipped(down.events);
    expect(BackendUnavailableError.isInstance(skip!.error)).toBe(true);
    expect(diagnostics(down.events)[0]!.data).toMatchObject({ status: null, error: 'BackendUnavailableError' });
  });

  it('a slow service is abandoned after timeoutMs instead of holding the turn', async () => {
    search.setLatency(5000);
    const { agent, events } = agentWith([provider({ timeoutMs: 100 })]);
    // The run ends by the timeout, not the 5 s latency: the search fails saying so.
    const res = await agent.run('refund policy', { session: agent.createSession() });
    expect(res.text).toBe('I could not find anything.');
    expect((skipped(events)[0]!.error as Error).message).toMatch(/did not answer within 100 ms/);
  });

  it('aborting the run during a slow search fails the run with the abort reason and reports nothing', async () => {
    search.setLatency(1000);
    const { agent, events } = agentWith([provider()]);
    const controller = new AbortController();
    const reason = new Error('user cancelled');
    // The abort comes once the search reached the server, which holds it for 1 s.
    const requests = search.requests;
    const record = requests.push;
    requests.push = (...recorded) => {
      if (recorded.some((r) => r.operation === 'search')) controller.abort(reason);
      return record.apply(requests, recorded);
    };
    try {
      await expect(agent.run('refund policy', { session: agent.createSession(), signal: controller.signal })).rejects.toBe(reason);
    } finally {
      requests.push = record;
    }
    expect(diagnostics(events)).toEqual([]);
    expect(skipped(events)).toEqual([]);
  });

  it('tool mode: a failing search goes back to the model as an error result, with a diagnostic; the run goes on', async () => {
    search.injectFault({ status: 503, operations: ['search'] });
    const { agent, chat, events } = agentWith([provider({ mode: 'tool' })], (_m, _o, index) =>
      index === 0 ? { toolCalls: [{ name: 'search', arguments: { query: 'refunds' } }] } : 'Sorry, search is down.',
    );
    const res = await agent.run('refund policy', { session: agent.createSession() });
    expect(res.text).toBe('Sorry, search is down.');
    const result = chat.calls[1]!.messages.flatMap((m) => m.contents).find((c) => c.type === 'function-result');
    expect(result).toMatchObject({
      isError: true,
      result: { error: expect.stringMatching(/BackendUnavailableError: Azure AI Search index .* is unavailable \(503\)/) },
    });
    expect(diagnostics(events)[0]).toMatchObject({ code: 'azure-search-failed', data: { phase: 'tool', status: 503 } });
  });
});

describe('misconfiguration is a ConfigurationError with what to fix, reported the same way', () => {
  const firstSkip = async (p: AzureAISearchContextProvider) => {
    const { agent, events } = agentWith([p]);
    await agent.run('refund policy', { session: agent.createSession() });
    return { error: skipped(events)[0]?.error as Error | undefined, diagnostic: diagnostics(events)[0] };
  };

  it('a filter the service rejects (400), a missing index (404), a wrong key (401)', async () => {
    const bad = await firstSkip(provider({ filter: `content eq 'x'` }));
    expect(ConfigurationError.isInstance(bad.error)).toBe(true);
    expect(bad.error!.message).toMatch(/rejected the query \(400\): Invalid expression: 'content' is not a filterable field/);
    expect(bad.diagnostic!.data).toMatchObject({ status: 400 });
    const missing = await firstSkip(provider({ indexName: 'no-such-index' }));
    expect(missing.error!.message).toMatch(/"no-such-index" was not found \(404\)/);
    const key = await firstSkip(provider({ apiKey: 'wrong' }));
    expect(key.error!.message).toMatch(/refused the credentials \(401\)/);
    expect(key.error!.message).not.toContain('wrong');
  });

  it('a scope that returns nothing or throws fails closed: no request is sent', async () => {
    const before = searches().length;
    const none = await firstSkip(provider({ scope: () => undefined }));
    expect(none.error!.message).toMatch(/scope returned undefined, so nothing was searched \(fail closed\)/);
    const threw = await firstSkip(
      provider({
        scope: () => {
          throw new Error('no tenant on this session');
        },
      }),
    );
    expect(threw.error!.message).toMatch(/scope threw, so nothing was searched: no tenant on this session/);
    expect(searches().length).toBe(before);
  });
});

describe('credentials', () => {
  it('endpoint + token credential: Entra ID bearer tokens over TLS reach the service', async () => {
    const secure = await startAzureSearchTestServer({ tls: true, bearerTokens: ['entra-token'] });
    try {
      await seedIndex({
        name: 'tls-kb',
        endpoint: secure.endpoint,
        apiKey: secure.apiKey,
        openaiOrigin: openai.origin,
        openaiUrl: openai.url,
        openaiKey: openai.apiKey,
        clientOptions: { tlsOptions: { ca: testCertificate } },
      });
      const credential = { getToken: async () => ({ token: 'entra-token', expiresOnTimestamp: Date.now() + 3_600_000 }) };
      const p = new AzureAISearchContextProvider({
        endpoint: secure.endpoint,
        indexName: 'tls-kb',
        credential,
        clientOptions: { tlsOptions: { ca: testCertificate } },
        fields: FIELDS,
        scope: () => ({ tenantId: 'acme' }),
      });
      const { agent, chat } = agentWith([p]);
      await agent.run('refund policy', { session: agent.createSession() });
      expect(citations(contextMessages(chat.calls[0]!.messages)[0]!)[0]!.id).toBe('acme-refunds');
      const last = secure.requests.filter((r) => r.operation === 'search').at(-1)!;
      expect(last.headers.authorization).toBe('Bearer entra-token');
      expect(last.headers['api-key']).toBeUndefined();
    } finally {
      await secure.close();
    }
  });
});

describe('every status the service may answer is a deliberate typed error saying what to do', () => {
  it.each([
    [402, '', SemanticQuotaError, 'refused the request for billing (402)', 'enable semantic ranker billing on the search service'],
    [408, '', BackendUnavailableError, 'timed out (408)', 'Retry later.'],
    [409, 'ConcurrencyConflict', BackendUnavailableError, 'reported a conflicting write (409 ConcurrencyConflict)', 'retry the operation'],
    [413, '', ConfigurationError, 'refused the request as too large (413)', 'fewer or smaller documents per request (`batchSize`)'],
    [415, '', ConfigurationError, 'refused the content type (415)', 'not a proxy that rewrites requests'],
    [422, '', BackendUnavailableError, 'is temporarily unavailable (422)', 'retry shortly'],
    [424, '', BackendUnavailableError, 'failed in a resource it depends on (424)', 'the embedding deployment of its vectorizer'],
    [429, '', BackendUnavailableError, 'is throttling requests (429)', 'Retry later or lower the request rate'],
    [451, '', ConfigurationError, 'refuses the request for legal reasons (451)', 'retrying will not help'],
    [502, '', BackendUnavailableError, 'is unavailable (502)', 'Retry later.'],
    [503, '', BackendUnavailableError, 'is unavailable (503)', 'Retry later.'],
    [504, '', BackendUnavailableError, 'is unavailable (504)', 'Retry later.'],
    [529, '', BackendUnavailableError, 'is unavailable (529)', 'Retry later.'],
  ] as const)('%i %s: %O', async (status, code, type, what, todo) => {
    search.injectFault({ status, operations: ['search'], message: 'Scripted', ...(code ? { code } : {}) });
    const { agent, events } = agentWith([provider()]);
    await agent.run('refund policy', { session: agent.createSession() });
    const error = skipped(events)[0]!.error as Error;
    expect(type.isInstance(error), String(error)).toBe(true);
    expect(error.message.startsWith(`Azure AI Search index "${indexName}" ${what}: Scripted. `)).toBe(true);
    expect(error.message).toContain(todo);
    expect(diagnostics(events)[0]!.data).toMatchObject({ status, error: type.name });
  });

  it('a search service whose free semantic ranker queries are used up (402): semantic runs are skipped with a ConfigurationError', async () => {
    const limited = await startAzureSearchTestServer({ semanticFreeQueries: 1 });
    try {
      const { name } = await seedIndex({
        endpoint: limited.endpoint,
        apiKey: limited.apiKey,
        openaiOrigin: openai.origin,
        openaiUrl: openai.url,
        openaiKey: openai.apiKey,
      });
      const semantic = provider({ endpoint: limited.endpoint, indexName: name, apiKey: limited.apiKey, queryMode: 'semantic' });
      const { agent, events } = agentWith([semantic]);
      const answered = await agent.run('refund policy', { session: agent.createSession() });
      expect(answered.text).toMatch(/^Based on acme-refunds/);
      await agent.run('refund policy', { session: agent.createSession() });
      const [skip] = skipped(events);
      expect(ConfigurationError.isInstance(skip!.error)).toBe(true);
      expect(SemanticQuotaError.isInstance(skip!.error)).toBe(true);
      expect((skip!.error as SemanticQuotaError).indexName).toBe(name);
      expect((skip!.error as Error).message).toMatch(
        new RegExp(
          `^Azure AI Search index "${name}" refused the request for billing \\(402\\): The free semantic ranker queries of this month are used up\\.`,
        ),
      );
      expect(limited.requests.filter((r) => r.operation === 'search').map((r) => r.status)).toEqual([200, 402]); // not retried
    } finally {
      await limited.close();
    }
  });
});

describe('a service under load: partial answers, throttling, coverage', () => {
  const partial = (events: AgentEvent[]) => diagnostics(events).filter((d) => d.code === 'azure-search-partial');

  it('the semantic ranker overloaded (206 baseResults): the base results are kept in their order, unscored, and reported', async () => {
    const plain = agentWith([provider()]);
    await plain.agent.run('refund policy', { session: plain.agent.createSession() });
    const baseOrder = citations(contextMessages(plain.chat.calls[0]!.messages)[0]!).map((c) => c.id);
    search.failSemanticRanker({ reason: 'capacityOverloaded', times: 1 });
    const { agent, chat, events } = agentWith([provider({ queryMode: 'semantic', minScore: 1 })]);
    await agent.run('refund policy', { session: agent.createSession() });
    expect(searches().at(-1)).toMatchObject({ status: 206, body: { semanticErrorHandling: 'partial' } });
    const cited = citations(contextMessages(chat.calls[0]!.messages)[0]!);
    expect(cited.map((c) => c.id)).toEqual(baseOrder);
    expect(cited.every((c) => c.score === undefined)).toBe(true);
    expect(partial(events)[0]!.data).toMatchObject({
      semanticResultsType: 'baseResults',
      semanticReason: 'capacityOverloaded',
      coverage: null,
    });
    // Once the ranker is back, the same provider filters on the reranker scale again.
    const again = agentWith([provider({ queryMode: 'semantic', minScore: 1 })]);
    await again.agent.run('refund policy', { session: again.agent.createSession() });
    const reranked = citations(contextMessages(again.chat.calls[0]!.messages)[0]!);
    expect(reranked.length).toBeGreaterThan(0);
    expect(reranked.every((c) => typeof c.score === 'number' && c.score >= 1)).toBe(true);
    expect(partial(again.events)).toEqual([]);
  });

  it("semantic.errorMode 'fail': the overloaded ranker is the service's 503, a BackendUnavailableError", async () => {
    search.failSemanticRanker({ reason: 'transient' });
    const { agent, events } = agentWith([provider({ queryMode: 'semantic', semantic: { errorMode: 'fail', maxWaitMs: 800 } })]);
    await agent.run('refund policy', { session: agent.createSession() });
    expect(searches().at(-1)!.body).toMatchObject({ semanticErrorHandling: 'fail', semanticMaxWaitInMilliseconds: 800 });
    expect(BackendUnavailableError.isInstance(skipped(events)[0]!.error)).toBe(true);
    expect((skipped(events)[0]!.error as Error).message).toMatch(
      /is unavailable \(503\): Semantic ranking could not be completed \(transient\)/,
    );
  });

  it.each([
    [429, { retryAfterMs: 5 }],
    [503, { retryAfterSeconds: 0 }],
  ] as const)('a %i that says when to come back is retried as the service asks, and the search succeeds', async (status, after) => {
    search.injectFault({ status, operations: ['search'], times: 1, ...after });
    const before = searches().length;
    const { agent, chat } = agentWith([
      provider({ clientOptions: { allowInsecureConnection: true, retryOptions: { maxRetries: 1, retryDelayInMs: 60_000 } } }),
    ]);
    await agent.run('refund policy', { session: agent.createSession() });
    expect(
      searches()
        .slice(before)
        .map((r) => r.status),
    ).toEqual([status, 200]);
    expect(citations(contextMessages(chat.calls[0]!.messages)[0]!).length).toBeGreaterThan(0);
  });

  it('a 429 asking for longer than timeoutMs ends the search at once, without a retry, saying how long the service asked for', async () => {
    search.injectFault({ status: 429, operations: ['search'], retryAfterSeconds: 3600 });
    const before = searches().length;
    const { agent, events } = agentWith([provider({ timeoutMs: 60_000 })]);
    await agent.run('refund policy', { session: agent.createSession() });
    expect(searches().length - before).toBe(1);
    const error = skipped(events)[0]!.error as Error;
    expect(BackendUnavailableError.isInstance(error)).toBe(true);
    expect(error.message).toMatch(
      /is throttling requests \(429\) and asks to retry after 3600000 ms, longer than timeoutMs \(60000 ms\), so the search was not retried/,
    );
  });

  it("an injected client waits as the service asks, bounded by timeoutMs and by the caller's signal", async () => {
    const client = new SearchClient<object>(search.endpoint, indexName, new AzureKeyCredential(search.apiKey), {
      allowInsecureConnection: true,
    });
    search.injectFault({ status: 429, operations: ['search'], retryAfterSeconds: 3600 });
    const timed = agentWith([provider({ client, endpoint: undefined, apiKey: undefined, indexName: undefined, timeoutMs: 200 })]);
    await timed.agent.run('refund policy', { session: timed.agent.createSession() });
    expect((skipped(timed.events)[0]!.error as Error).message).toMatch(/did not answer within 200 ms/);
    const controller = new AbortController();
    const aborted = agentWith([provider({ client, endpoint: undefined, apiKey: undefined, indexName: undefined, timeoutMs: 60_000 })]);
    const run = aborted.agent.run('refund policy', { session: aborted.agent.createSession(), signal: controller.signal });
    setTimeout(() => controller.abort(new Error('caller gave up')), 50);
    await expect(run).rejects.toThrow('caller gave up');
  });

  it('minimumCoverage: the reached share is reported below 100%, and a search below the minimum is the service 503', async () => {
    search.setCoverage(90);
    try {
      const { agent, chat, events } = agentWith([provider({ minimumCoverage: 80 })]);
      await agent.run('refund policy', { session: agent.createSession() });
      expect(contextMessages(chat.calls[0]!.messages)).toHaveLength(1);
      expect(partial(events)[0]!.data).toMatchObject({ coverage: 90, semanticResultsType: null });
      const strict = agentWith([provider({ minimumCoverage: 95 })]);
      await strict.agent.run('refund policy', { session: strict.agent.createSession() });
      expect((skipped(strict.events)[0]!.error as Error).message).toMatch(/\(503\): The search reached 90% of the index/);
    } finally {
      search.setCoverage(100);
    }
  });

  it('highlights asked for are kept in each citation', async () => {
    const { agent, chat } = agentWith([provider({ highlight: { fields: ['content'] } })]);
    await agent.run('refund policy', { session: agent.createSession() });
    const [first] = citations(contextMessages(chat.calls[0]!.messages)[0]!);
    expect(first!.metadata!['@search.highlights']).toEqual({ content: expect.arrayContaining([expect.stringMatching(/<em>[Rr]efund/)]) });
  });
});
