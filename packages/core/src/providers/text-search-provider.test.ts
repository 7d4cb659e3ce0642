import { describe, expect, it } from 'vitest';
import { ConfigurationError, ProviderError } from '../errors.js';
import { Message } from '../messages/message.js';
import { InMemoryRetriever } from '../retrieval/in-memory-retriever.js';
import { createAgent } from '../run/create-agent.js';
import type { AgentEvent } from '../contracts/events.js';
import type { RetrievalResult, Retriever } from '../contracts/retriever.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { createCharacterTokenizer } from '../tokens/character-tokenizer.js';
import { TextSearchProvider } from './text-search-provider.js';

const tokenizer = createCharacterTokenizer();
const fromSource = (messages: readonly Message[], sourceId = 'text-search') =>
  messages.filter((m) => Message.source(m)?.sourceId === sourceId);

const kb = new InMemoryRetriever({
  documents: [
    { id: 'returns', title: 'Returns', content: 'Items can be returned within 30 days for a refund.', url: 'https://shop.test/returns' },
    { id: 'shipping', title: 'Shipping', content: 'Orders ship within two business days.' },
    { id: 'lisbon', title: 'Lisbon store', content: 'Our Lisbon store opens at 9 and closes at 19.' },
  ],
});

/** A retriever that returns fixed results and records its queries. */
function fixed(results: RetrievalResult[]): Retriever & { queries: string[] } {
  const queries: string[] = [];
  return {
    queries,
    search: async (query, { topK }) => {
      queries.push(query);
      return results.slice(0, topK);
    },
  };
}

describe('TextSearchProvider, before mode', () => {
  it('injects the results as one attributed context message with citations, before the input', async () => {
    const client = new ScriptedChatClient({ replies: ['You have 30 days [1].'] });
    const agent = createAgent({ client, contextProviders: [new TextSearchProvider({ retriever: kb })] });
    await agent.run('Can I get a refund on returned items?', { session: agent.createSession() });
    const messages = client.calls[0]!.messages;
    const [injected] = fromSource(messages);
    expect(fromSource(messages)).toHaveLength(1);
    expect(messages.at(-1)!.metadata?.ctx).toEqual({ sourceId: 'input', sourceType: 'input' });
    expect(Message.source(injected!)).toEqual({ sourceId: 'text-search', sourceType: 'context' });
    expect(injected!.role).toBe('user');
    expect(Message.text(injected!)).toContain('[1] Returns (https://shop.test/returns)\nItems can be returned within 30 days');
    expect(injected!.metadata?.citations).toEqual([
      { n: 1, id: 'returns', title: 'Returns', url: 'https://shop.test/returns', score: expect.any(Number) },
    ]);
  });

  it('keeps the injected message within the budget by exact count, dropping the lowest-ranked results', async () => {
    const results = [0, 1, 2, 3, 4].map((i) => ({ id: `doc${i}`, content: `Passage number ${i}. `.padEnd(80, 'x'), score: 1 - i / 10 }));
    // The budget is the size of the message holding the best three results: three fit, four do not.
    const probe = new ScriptedChatClient({ replies: ['ok'] });
    await createAgent({ client: probe, contextProviders: [new TextSearchProvider({ retriever: fixed(results.slice(0, 3)) })] }).run('q');
    const three = tokenizer.countMessageTokens(fromSource(probe.calls[0]!.messages));

    const client = new ScriptedChatClient({ replies: ['ok'] });
    const agent = createAgent({
      client,
      contextProviders: [new TextSearchProvider({ retriever: fixed(results), budget: { maxTokens: three, tokenizer } })],
    });
    await agent.run('q');
    const [injected] = fromSource(client.calls[0]!.messages);
    expect(tokenizer.countMessageTokens([injected!])).toBeLessThanOrEqual(three);
    expect((injected!.metadata!.citations as Array<{ id: string }>).map((c) => c.id)).toEqual(['doc0', 'doc1', 'doc2']);
    expect(Message.text(injected!)).not.toContain('Passage number 3');

    const tiny = new ScriptedChatClient({ replies: ['ok'] });
    await createAgent({
      client: tiny,
      contextProviders: [new TextSearchProvider({ retriever: fixed(results), budget: { maxTokens: 10, tokenizer } })],
    }).run('q');
    expect(fromSource(tiny.calls[0]!.messages)).toHaveLength(0); // not even one fits: nothing injected
  });

  it('queries with the input, or the last N conversation messages with queryFromHistory', async () => {
    const plain = fixed([]);
    const recent = fixed([]);
    const client = new ScriptedChatClient({ replies: () => 'Lisbon is lovely.' });
    const agent = createAgent({
      client,
      contextProviders: [
        new TextSearchProvider({ retriever: plain, sourceId: 'plain' }),
        new TextSearchProvider({ retriever: recent, sourceId: 'recent', queryFromHistory: 3 }),
      ],
    });
    const session = agent.createSession();
    await agent.run('Tell me about the Lisbon store', { session });
    await agent.run('When does it open?', { session });
    expect(plain.queries).toEqual(['Tell me about the Lisbon store', 'When does it open?']);
    expect(recent.queries[1]).toBe('Tell me about the Lisbon store\nLisbon is lovely.\nWhen does it open?');
  });

  it('leaves out results below minScore and never asks for more than topK', async () => {
    const retriever = fixed([
      { id: 'a', content: 'A', score: 0.9 },
      { id: 'b', content: 'B', score: 0.2 },
      { id: 'c', content: 'C', score: 0.8 },
    ]);
    const client = new ScriptedChatClient({ replies: ['ok'] });
    await createAgent({ client, contextProviders: [new TextSearchProvider({ retriever, minScore: 0.5, topK: 2 })] }).run('q');
    expect((fromSource(client.calls[0]!.messages)[0]!.metadata!.citations as Array<{ id: string }>).map((c) => c.id)).toEqual(['a']);
  });

  it('skips a failing retriever by default with a provider-skipped event; throws when asked', async () => {
    const broken: Retriever = {
      search: async () => {
        throw new Error('index offline');
      },
    };
    const events: AgentEvent[] = [];
    const client = new ScriptedChatClient({ replies: ['answer without context'] });
    const agent = createAgent({
      client,
      contextProviders: [new TextSearchProvider({ retriever: broken })],
      onEvent: (e) => events.push(e),
    });
    expect((await agent.run('q')).text).toBe('answer without context');
    const skipped = events.find((e) => e.type === 'provider-skipped');
    expect(skipped).toMatchObject({ sourceId: 'text-search', phase: 'beforeRun' });
    expect(String((skipped as { error: unknown }).error)).toContain('index offline');

    const strict = createAgent({
      client: new ScriptedChatClient({ replies: ['x'] }),
      contextProviders: [new TextSearchProvider({ retriever: broken, onError: 'throw' })],
    });
    expect(ProviderError.isInstance(await strict.run('q').catch((e: unknown) => e))).toBe(true);
  });

  it('is gated by when: a declined run does not search', async () => {
    const retriever = fixed([{ id: 'a', content: 'A' }]);
    const client = new ScriptedChatClient({ replies: () => 'ok' });
    const agent = createAgent({
      client,
      contextProviders: [new TextSearchProvider({ retriever, when: (context) => Message.text(context.inputMessages[0]!).endsWith('?') })],
    });
    await agent.run('thanks');
    await agent.run('what about returns?');
    expect(retriever.queries).toEqual(['what about returns?']);
    expect(fromSource(client.calls[0]!.messages)).toHaveLength(0);
    expect(fromSource(client.calls[1]!.messages)).toHaveLength(1);
  });
});

describe('TextSearchProvider, tool mode', () => {
  it('advertises a search tool instead of injecting, and the model gets results it can cite', async () => {
    const client = new ScriptedChatClient({
      replies: [
        { toolCalls: [{ name: 'search', arguments: { query: 'Lisbon store opening hours' }, callId: 'c1' }] },
        'It opens at 9 [1].',
      ],
    });
    const agent = createAgent({
      client,
      contextProviders: [new TextSearchProvider({ retriever: kb, mode: 'tool', budget: { maxTokens: 60, tokenizer } })],
    });
    const res = await agent.run('When does the Lisbon store open?', { session: agent.createSession() });
    expect(res.text).toBe('It opens at 9 [1].');
    const first = client.calls[0]!;
    expect(fromSource(first.messages)).toHaveLength(0);
    expect(first.options.tools?.map((t) => [t.name, (t.metadata?.ctx as { sourceId: string } | undefined)?.sourceId])).toEqual([
      ['search', 'text-search'],
    ]);
    const result = client.calls[1]!.messages.flatMap((m) => m.contents).find((c) => c.type === 'function-result');
    expect(result).toMatchObject({
      callId: 'c1',
      result: { results: [{ n: 1, id: 'lisbon', title: 'Lisbon store', content: expect.stringContaining('opens at 9') }] },
    });
    expect(
      tokenizer.countTokens(JSON.stringify({ results: (result as unknown as { result: { results: unknown[] } }).result.results })),
    ).toBeLessThanOrEqual(60);
  });

  it('rejects invalid options', () => {
    expect(() => new TextSearchProvider({ retriever: kb, topK: 0 })).toThrow(ConfigurationError);
    expect(() => new TextSearchProvider({ retriever: kb, queryFromHistory: -1 })).toThrow(ConfigurationError);
    expect(() => new TextSearchProvider({ retriever: {} as Retriever })).toThrow(ConfigurationError);
  });

  it('takes a timeout: a retriever that never answers is skipped, and the run goes on', async () => {
    const hung: Retriever = { search: () => new Promise<never>(() => {}) };
    const events: AgentEvent[] = [];
    const client = new ScriptedChatClient({ replies: ['answered without documents'] });
    const agent = createAgent({
      client,
      onEvent: (e) => events.push(e),
      contextProviders: [new TextSearchProvider({ retriever: hung, timeoutMs: 30 })],
    });
    expect(await agent.run('q')).toMatchObject({ text: 'answered without documents' });
    expect(events.find((e) => e.type === 'provider-skipped')).toMatchObject({
      phase: 'beforeRun',
      error: expect.objectContaining({ message: expect.stringContaining('within 30 ms') }),
    });
  });
});
