import { AzureKeyCredential, SearchClient } from '@azure/search-documents';
import { budgetReportOf, createCharacterTokenizer, Message, type BudgetReport, type ContextProvider } from '@ctx/core';
import { beforeAll, describe, expect, it } from 'vitest';
import { agentWith, citations, contextMessages, embeddings, env, insecure, seedIndex } from '../test/helpers.js';
import { AzureAISearchContextProvider, type AzureAISearchContextProviderOptions } from './azure-search-context-provider.js';

let indexName: string;
let client: SearchClient<object>;
const FIELDS = { id: 'id', content: 'content', title: 'title', url: 'url', vector: 'contentVector' };
const acme = { tenantId: 'acme' };

beforeAll(async () => {
  ({ name: indexName, client } = await seedIndex());
});

function provider(options: Partial<AzureAISearchContextProviderOptions> = {}) {
  return new AzureAISearchContextProvider({ client, fields: FIELDS, select: ['tenantId'], scope: () => acme, ...options });
}

const modes: [string, () => Partial<AzureAISearchContextProviderOptions>][] = [
  ['keyword', () => ({ queryMode: 'keyword' })],
  ['vector, embedded client-side by OpenAIEmbeddings', () => ({ queryMode: 'vector', vectorizer: embeddings() })],
  ["vector, embedded by the index's vectorizer", () => ({ queryMode: 'vector', vectorizer: 'index' })],
  ['hybrid', () => ({ queryMode: 'hybrid', vectorizer: embeddings() })],
  ['semantic', () => ({ queryMode: 'semantic' })],
  ['semantic hybrid', () => ({ queryMode: 'semantic', vectorizer: 'index' })],
];

describe('before mode: RAG answers carry the right documents', () => {
  for (const [name, options] of modes) {
    it(`${name}: one attributed context message before the input, the refund policy cited first`, async () => {
      const { agent, chat } = agentWith([provider({ topK: 3, ...options() })]);
      const res = await agent.run('How many days do I have to get a refund?', { session: agent.createSession() });
      const sent = chat.calls[0]!.messages;
      const injected = contextMessages(sent);
      expect(injected).toHaveLength(1);
      expect(sent.indexOf(injected[0]!)).toBeLessThan(sent.findIndex((m) => Message.source(m)?.sourceType === 'input'));
      expect(injected[0]!.role).toBe('user');
      const cited = citations(injected[0]!);
      expect(cited[0]).toMatchObject({ n: 1, id: 'acme-refunds', title: 'Refund policy', url: 'https://acme.example/refunds' });
      expect(cited.length).toBeLessThanOrEqual(3);
      expect(cited.every((c) => c.metadata?.tenantId === 'acme')).toBe(true);
      expect(Message.text(injected[0]!)).toContain(
        '[1] Refund policy (https://acme.example/refunds)\nAcme refunds purchases within 30 days of delivery.',
      );
      expect(res.text).toMatch(/^Based on acme-refunds/);
    });
  }

  it('semantic answers and captions: the answer leads the cited passage; captions and reranker scores are in the citation', async () => {
    const { agent, chat } = agentWith([
      provider({ queryMode: 'semantic', topK: 2, semantic: { captions: true, answers: true, answerThreshold: 0.5 } }),
    ]);
    await agent.run('How many days do refunds take?', { session: agent.createSession() });
    const [injected] = contextMessages(chat.calls[0]!.messages);
    const [first] = citations(injected!);
    expect(first!.id).toBe('acme-refunds');
    expect(first!.metadata).toMatchObject({
      '@search.answers': [{ text: 'Acme refunds purchases within 30 days of delivery.' }],
      '@search.captions': [
        { text: 'Acme refunds purchases within 30 days of delivery.', highlights: expect.stringContaining('<em>refunds</em>') },
      ],
    });
    expect(first!.score).toBe(first!.metadata!['@search.rerankerScore']);
    expect(Message.text(injected!)).toContain(
      '[1] Refund policy (https://acme.example/refunds)\nAnswer: Acme refunds purchases within 30 days of delivery.\n',
    );
  });

  it('queryFromHistory: "and what about its price?" retrieves the kettle price list only with the conversation', async () => {
    const question = 'And what about its price?';
    const ask = async (queryFromHistory: number | undefined) => {
      const { agent, chat } = agentWith([provider({ topK: 1, ...(queryFromHistory ? { queryFromHistory } : {}) })]);
      const session = agent.createSession();
      await agent.run('Tell me about the Aurora kettle.', { session });
      await agent.run(question, { session });
      return citations(contextMessages(chat.calls[1]!.messages)[0]!).map((c) => c.id);
    };
    expect(await ask(undefined)).toEqual(['acme-price-match']);
    expect(await ask(3)).toEqual(['acme-price-list']);
  });

  it('minScore drops weak matches on the scale of the mode (here the reranker, 0-4)', async () => {
    const { agent, chat } = agentWith([provider({ queryMode: 'semantic', topK: 5, minScore: 2 })]);
    await agent.run('refund order number payment method', { session: agent.createSession() });
    const cited = citations(contextMessages(chat.calls[0]!.messages)[0]!);
    expect(cited.map((c) => c.id)).toEqual(['acme-refunds']);
    expect(cited[0]!.score).toBeGreaterThanOrEqual(2);
  });
});

describe('scoping: a tenant only ever sees its own documents', () => {
  const tenantProvider = (mode: 'before' | 'tool' = 'before') =>
    provider({ mode, topK: 10, scope: ({ session }) => ({ tenantId: session.state.profile?.tenantId as string }) });
  const run = async (tenant: string, question = 'refund policy') => {
    const { agent, chat } = agentWith([tenantProvider()]);
    await agent.run(question, { session: agent.createSession({ state: { profile: { tenantId: tenant } } }) });
    return contextMessages(chat.calls[0]!.messages).flatMap((m) => citations(m));
  };

  it('tenant A and tenant B get their own refund policies from the same index and provider', async () => {
    const a = await run('acme');
    const b = await run('globex');
    expect(a.map((c) => c.id)).toContain('acme-refunds');
    expect(a.every((c) => c.metadata?.tenantId === 'acme')).toBe(true);
    expect(b.map((c) => c.id).sort()).toEqual(['globex-merger', 'globex-refunds']);
    // Unscoped, the same query does find both tenants' documents: the filter is what separates them.
    const unscoped = new SearchClient(env.searchEndpoint, indexName, new AzureKeyCredential(env.searchKey), insecure);
    const ids: string[] = [];
    for await (const r of (await unscoped.search('refund policy', { select: ['id'] as never[] })).results)
      ids.push((r.document as { id: string }).id);
    expect(ids).toEqual(expect.arrayContaining(['acme-refunds', 'globex-refunds']));
  });

  it('hostile tenant ids with quotes can never widen the filter; a real quote in an id still matches exactly', async () => {
    for (const hostile of [
      "acme' or tenantId ne 'x",
      "x') or (tenantId ne '",
      "' or true or '",
      "globex'' or ''1'' eq ''1",
      'acme\\',
      "acme'",
    ]) {
      expect(await run(hostile)).toEqual([]);
    }
    const obrien = await run("o'brien");
    expect(obrien.map((c) => c.id)).toEqual(['obrien-refunds']);
  });

  it('concurrent runs of different tenants on one provider instance stay apart', async () => {
    const p = tenantProvider();
    const { agent, chat } = agentWith([p]);
    const tenants = ['acme', 'globex', "o'brien", 'acme', 'globex', "o'brien"];
    await Promise.all(
      tenants.map((tenant) =>
        agent.run(`refund policy for ${tenant}`, { session: agent.createSession({ state: { profile: { tenantId: tenant } } }) }),
      ),
    );
    for (const call of chat.calls) {
      const input = Message.text(call.messages.at(-1)!);
      const tenant = input.replace('refund policy for ', '');
      const cited = contextMessages(call.messages).flatMap((m) => citations(m));
      expect(cited.length).toBeGreaterThan(0);
      expect(cited.every((c) => c.metadata?.tenantId === tenant)).toBe(true);
    }
  });

  it('concurrent runs on one session each search with their own input and scope', async () => {
    const { agent, chat } = agentWith([tenantProvider()]);
    const session = agent.createSession({ state: { profile: { tenantId: 'acme' } } });
    await Promise.all([
      agent.run('express delivery', { session }),
      agent.run('kettle warranty', { session }),
      agent.run('refund order number', { session }),
    ]);
    const firstByInput = new Map(
      chat.calls.map((call) => [Message.text(call.messages.at(-1)!), citations(contextMessages(call.messages)[0]!)[0]!.id]),
    );
    expect(Object.fromEntries(firstByInput)).toEqual({
      'express delivery': 'acme-shipping',
      'kettle warranty': 'acme-warranty',
      'refund order number': 'acme-refunds',
    });
  });

  it('the scope applies to the search tool too', async () => {
    const { agent, chat } = agentWith([tenantProvider('tool')], (_messages, _options, index) =>
      index === 0 ? { toolCalls: [{ name: 'search', arguments: { query: 'confidential merger plan' } }] } : 'done',
    );
    await agent.run('What is the merger plan?', { session: agent.createSession({ state: { profile: { tenantId: 'acme' } } }) });
    const result = chat.calls[1]!.messages.flatMap((m) => m.contents).find((c) => c.type === 'function-result');
    expect(result).toMatchObject({ type: 'function-result', result: { results: [] } });
  });
});

describe('tool mode: the model searches when it needs to', () => {
  it('advertises a search tool, injects nothing up front, and returns cited passages to the model', async () => {
    const { agent, chat } = agentWith([provider({ mode: 'tool', topK: 2 })], (messages, _options, index) => {
      if (index === 0) return { toolCalls: [{ name: 'search', arguments: { query: 'express delivery days' }, callId: 'c1' }] };
      const result = messages.flatMap((m) => m.contents).find((c) => c.type === 'function-result');
      const first = (result as unknown as { result: { results: { id: string }[] } }).result.results[0]!;
      return `Express delivery takes 1 day [${first.id}].`;
    });
    const res = await agent.run('How fast is express delivery?', { session: agent.createSession() });
    const first = chat.calls[0]!;
    expect(first.options.tools?.map((t) => t.name)).toEqual(['search']);
    expect(first.options.tools![0]!.metadata).toMatchObject({ ctx: { sourceId: 'azure-search' } });
    expect(contextMessages(first.messages)).toEqual([]);
    const result = chat.calls[1]!.messages.flatMap((m) => m.contents).find((c) => c.type === 'function-result')!;
    expect(result).toMatchObject({ callId: 'c1' });
    const results = (result as unknown as { result: { results: Record<string, unknown>[] } }).result.results;
    expect(results).toHaveLength(2);
    expect(results[0]).toMatchObject({
      n: 1,
      id: 'acme-shipping',
      title: 'Shipping times',
      url: 'https://acme.example/shipping',
      content: expect.stringContaining('express delivery takes 1 day'),
      metadata: { tenantId: 'acme' },
    });
    expect(res.text).toBe('Express delivery takes 1 day [acme-shipping].');
  });

  it('a model that does not call the tool causes no search at all', async () => {
    let searches = 0;
    const p = provider({ mode: 'tool' });
    const original = p.retriever.searchResponse.bind(p.retriever);
    p.retriever.searchResponse = async (...args) => {
      searches++;
      return original(...args);
    };
    const { agent } = agentWith([p], () => 'Hello!');
    await agent.run('hi', { session: agent.createSession() });
    expect(searches).toBe(0);
  });
});

describe('gating', () => {
  it('when() declining means no search request and no message', async () => {
    let searches = 0;
    const p = provider({ when: (context) => !/^(hi|thanks)/i.test(Message.text(context.inputMessages[0]!)) });
    const original = p.retriever.searchResponse.bind(p.retriever);
    p.retriever.searchResponse = async (...args) => {
      searches++;
      return original(...args);
    };
    const { agent, chat } = agentWith([p]);
    const session = agent.createSession();
    await agent.run('Thanks a lot!', { session });
    await agent.run('refund policy', { session });
    expect(searches).toBe(1);
    expect(contextMessages(chat.calls[0]!.messages)).toEqual([]);
    expect(contextMessages(chat.calls[1]!.messages)).toHaveLength(1);
  });

  it('tool mode: when() declining means no tool is advertised in that run; the next open run has it', async () => {
    const p = provider({ mode: 'tool', when: (context) => !/^(hi|thanks)/i.test(Message.text(context.inputMessages[0]!)) });
    const { agent, chat } = agentWith([p], () => 'ok');
    const session = agent.createSession();
    await agent.run('Thanks a lot!', { session });
    await agent.run('refund policy', { session });
    expect(chat.calls[0]!.options.tools ?? []).toEqual([]);
    expect(chat.calls[1]!.options.tools?.map((t) => t.name)).toEqual(['search']);
  });
});

describe('budget: the lowest-ranked results are trimmed first', () => {
  it('keeps the top-ranked prefix that fits, records what was dropped, and never exceeds the cap', async () => {
    const question = 'Aurora kettle price warranty refund';
    const full = agentWith([provider({ topK: 5 })]);
    await full.agent.run(question, { session: full.agent.createSession() });
    const ranked = citations(contextMessages(full.chat.calls[0]!.messages)[0]!).map((c) => c.id);
    expect(ranked.length).toBe(5);

    const tokenizer = createCharacterTokenizer();
    const reports: (BudgetReport | undefined)[] = [];
    const audit: ContextProvider = {
      sourceId: 'audit',
      beforeRun: ({ context }) => void reports.push(budgetReportOf(context.metadata, 'azure-search')),
    };
    const maxTokens = 120;
    const budgeted = agentWith([provider({ topK: 5, budget: { maxTokens, tokenizer } }), audit]);
    await budgeted.agent.run(question, { session: budgeted.agent.createSession() });
    const [message] = contextMessages(budgeted.chat.calls[0]!.messages);
    const kept = citations(message!).map((c) => c.id);
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.length).toBeLessThan(5);
    expect(kept).toEqual(ranked.slice(0, kept.length));
    expect(tokenizer.countMessageTokens([message!])).toBeLessThanOrEqual(maxTokens);
    expect(reports[0]).toEqual({ maxTokens, tokens: tokenizer.countMessageTokens([message!]), dropped: 5 - kept.length });
  });

  it('keeps exactly the best results that fit: a cap of the two-result message keeps two, one token less keeps one', async () => {
    const question = 'Aurora kettle price warranty refund';
    const tokenizer = createCharacterTokenizer();
    const run = async (options: Partial<AzureAISearchContextProviderOptions>) => {
      const reports: (BudgetReport | undefined)[] = [];
      const audit: ContextProvider = {
        sourceId: 'audit',
        beforeRun: ({ context }) => void reports.push(budgetReportOf(context.metadata, 'azure-search')),
      };
      const { agent, chat } = agentWith([provider(options), audit]);
      await agent.run(question, { session: agent.createSession() });
      const [message] = contextMessages(chat.calls[0]!.messages);
      return { message: message!, ids: citations(message!).map((c) => c.id), report: reports[0] };
    };
    const two = await run({ topK: 2 });
    const five = await run({ topK: 5 });
    expect(five.ids.slice(0, 2)).toEqual(two.ids);
    const cap = tokenizer.countMessageTokens([two.message]);
    const atCap = await run({ topK: 5, budget: { maxTokens: cap, tokenizer } });
    expect(atCap.ids).toEqual(two.ids);
    expect(Message.text(atCap.message)).toBe(Message.text(two.message));
    expect(atCap.report).toEqual({ maxTokens: cap, tokens: cap, dropped: 3 });
    const below = await run({ topK: 5, budget: { maxTokens: cap - 1, tokenizer } });
    expect(below.ids).toEqual(two.ids.slice(0, 1));
    expect(below.report).toMatchObject({ maxTokens: cap - 1, dropped: 4 });
    expect(below.report!.tokens).toBeLessThan(cap);
  });

  it('tool mode: each search result is trimmed to the budget lowest-ranked first, with how many were omitted', async () => {
    const question = 'Aurora kettle price warranty refund';
    const results = async (budget?: { maxTokens: number }) => {
      const { agent, chat } = agentWith([provider({ mode: 'tool', topK: 5, ...(budget ? { budget } : {}) })], (_m, _o, index) =>
        index === 0 ? { toolCalls: [{ name: 'search', arguments: { query: question }, callId: 'c1' }] } : 'done',
      );
      await agent.run(question, { session: agent.createSession() });
      const result = chat.calls[1]!.messages.flatMap((m) => m.contents).find((c) => c.type === 'function-result')!;
      return (result as unknown as { result: { results: { id: string }[]; omitted?: number } }).result;
    };
    const full = await results();
    expect(full.results).toHaveLength(5);
    expect(full.omitted).toBeUndefined();
    const tokenizer = createCharacterTokenizer();
    const maxTokens = tokenizer.countTokens(JSON.stringify({ results: full.results.slice(0, 2) }));
    const trimmed = await results({ maxTokens });
    expect(trimmed.results.map((r) => r.id)).toEqual(full.results.slice(0, 2).map((r) => r.id));
    expect(trimmed.omitted).toBe(3);
  });
});
