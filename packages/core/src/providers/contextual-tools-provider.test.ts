import { describe, expect, it } from 'vitest';
import { ConfigurationError, ProviderError } from '../errors.js';
import { countToolTokens } from '../policies/budget.js';
import { createHashEmbedding } from '../retrieval/hash-embedding.js';
import { createAgent } from '../run/create-agent.js';
import type { EmbeddingGenerator } from '../contracts/embedding-generator.js';
import type { Tool } from '../contracts/run-view.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { createCharacterTokenizer } from '../tokens/character-tokenizer.js';
import { defineTool } from '../tools/define-tool.js';
import { ContextualToolsProvider } from './contextual-tools-provider.js';

const DOMAINS: Array<[key: string, noun: string, detail: string]> = [
  ['weather', 'weather forecast', 'temperature, rain and wind for a city'],
  ['calendar', 'calendar event', 'meetings with a start time, attendees and a room'],
  ['email', 'email message', 'inbox mail with a subject, sender and body'],
  ['invoice', 'invoice', 'billing document with amounts due and tax'],
  ['flight', 'flight booking', 'airline seats between airports'],
  ['hotel', 'hotel reservation', 'rooms, nights and guests at a hotel'],
  ['file', 'file', 'documents stored in a folder on the drive'],
  ['repo', 'git repository', 'source code branches and pull requests'],
  ['customer', 'customer record', 'CRM account with contact details'],
  ['ticket', 'support ticket', 'helpdesk issue with priority and status'],
  ['recipe', 'recipe', 'cooking ingredients and preparation steps'],
  ['playlist', 'music playlist', 'songs and albums to play'],
  ['route', 'driving route', 'directions and travel time on a map'],
  ['stock', 'stock quote', 'share price and market data for a ticker'],
  ['translation', 'translation', 'text translated into another language'],
  ['timer', 'timer', 'countdown alarm in minutes and seconds'],
  ['note', 'note', 'short personal notes and reminders'],
  ['contact', 'phone contact', 'address book entries with phone numbers'],
  ['shipment', 'parcel shipment', 'package tracking and delivery status'],
  ['payment', 'card payment', 'charges, refunds and payment methods'],
];
const VERBS: Array<[string, string]> = [
  ['get', 'Gets a'],
  ['create', 'Creates a'],
  ['update', 'Updates a'],
  ['delete', 'Deletes a'],
  ['search', 'Searches for a'],
];

/** 100 tools: 20 domains x 5 verbs. */
const catalog: Tool[] = DOMAINS.flatMap(([key, noun, detail]) =>
  VERBS.map(([verb, phrase]) =>
    defineTool({
      name: `${key}_${verb}`,
      description: `${phrase} ${noun}: ${detail}.`,
      parameters: { type: 'object', properties: { id: { type: 'string' } } },
      execute: () => `${key}_${verb} done`,
    }),
  ),
);

/** Counts embed calls and texts. */
function counting(inner: EmbeddingGenerator = createHashEmbedding()) {
  const gen = {
    calls: 0,
    texts: 0,
    fail: 0,
    async embed(values: readonly string[]) {
      gen.calls++;
      gen.texts += values.length;
      if (gen.fail > 0) {
        gen.fail--;
        throw new Error('embedding service down');
      }
      return inner.embed(values);
    },
  };
  return gen;
}

const names = (tools: readonly Tool[] | undefined) => (tools ?? []).map((t) => t.name);
const domainOf = (name: string) => name.split('_')[0];

describe('ContextualToolsProvider', () => {
  it('advertises the most similar tools for the conversation, plus alwaysInclude', async () => {
    const client = new ScriptedChatClient({ replies: () => 'ok' });
    const provider = new ContextualToolsProvider({
      tools: catalog,
      embeddings: createHashEmbedding(),
      maxTools: 3,
      alwaysInclude: ['note_create'],
      queryFromHistory: 1,
    });
    const agent = createAgent({ client, contextProviders: [provider] });
    const session = agent.createSession();
    await agent.run('What is the weather forecast for Lisbon tomorrow? Will it rain?', { session });
    await agent.run('Book a hotel room for two nights for 2 guests', { session });
    await agent.run('Where is my parcel? Track the package delivery status', { session });

    const [first, second, third] = client.calls.map((c) => names(c.options.tools));
    expect(first![0]).toBe('note_create');
    expect(first!.slice(1).map(domainOf)).toEqual(['weather', 'weather', 'weather']);
    expect(second![0]).toBe('note_create');
    expect(second!.slice(1).map(domainOf)).toEqual(['hotel', 'hotel', 'hotel']);
    expect(third!.slice(1).map(domainOf)).toEqual(['shipment', 'shipment', 'shipment']);
    // attributed to the provider, with the similarity as priority (alwaysInclude: 2)
    const tools = client.calls[0]!.options.tools!;
    expect(tools.every((t) => (t.metadata?.ctx as { sourceId: string } | undefined)?.sourceId === 'contextual-tools')).toBe(true);
    expect(tools[0]!.metadata?.priority).toBe(2);
    const similarities = tools.slice(1).map((t) => t.metadata?.priority as number);
    expect(similarities).toEqual([...similarities].sort((a, b) => b - a));
    expect(similarities.every((s) => s > 0 && s <= 1)).toBe(true);
  });

  it('follows the recent conversation by default (last 4 messages)', async () => {
    const client = new ScriptedChatClient({ replies: () => 'Sure.' });
    const agent = createAgent({
      client,
      contextProviders: [new ContextualToolsProvider({ tools: catalog, embeddings: createHashEmbedding(), maxTools: 2 })],
    });
    const session = agent.createSession();
    await agent.run('I need to pay with my card and get a refund of a charge', { session });
    await agent.run('yes, do it', { session }); // says nothing itself: the history carries the topic
    expect(names(client.calls[1]!.options.tools).map(domainOf)).toEqual(['payment', 'payment']);
  });

  it('the selected tools run when the model calls them', async () => {
    const client = new ScriptedChatClient({ replies: [{ toolCalls: [{ name: 'timer_create', arguments: { id: '5m' } }] }, 'Timer set.'] });
    const agent = createAgent({
      client,
      contextProviders: [new ContextualToolsProvider({ tools: catalog, embeddings: createHashEmbedding(), maxTools: 3 })],
    });
    const res = await agent.run('Create a countdown timer alarm for 5 minutes');
    expect(res.text).toBe('Timer set.');
    expect(names(client.calls[0]!.options.tools)).toContain('timer_create');
    expect(res.messages.flatMap((m) => m.contents).find((c) => c.type === 'function-result')).toMatchObject({
      result: 'timer_create done',
    });
  });

  it('embeds each tool once per provider, shared by concurrent sessions', async () => {
    const embeddings = counting();
    const provider = new ContextualToolsProvider({ tools: catalog, embeddings, maxTools: 3 });
    const agent = createAgent({ client: new ScriptedChatClient({ replies: () => 'ok' }), contextProviders: [provider] });
    await Promise.all([
      agent.run('weather in Rome', { session: agent.createSession() }),
      agent.run('send an email', { session: agent.createSession() }),
    ]);
    await agent.run('create an invoice', { session: agent.createSession() });
    expect(embeddings.texts).toBe(catalog.length + 3); // 100 tool texts once, one query per run
    expect(embeddings.calls).toBe(1 + 3);
  });

  it('retries embedding the tools after a failure; onError decides the failed run', async () => {
    const embeddings = counting();
    embeddings.fail = 1;
    const provider = new ContextualToolsProvider({ tools: catalog, embeddings, maxTools: 2 });
    const client = new ScriptedChatClient({ replies: () => 'ok' });
    const agent = createAgent({ client, contextProviders: [provider] });
    expect(ProviderError.isInstance(await agent.run('weather please').catch((e: unknown) => e))).toBe(true);
    await agent.run('weather please');
    expect(names(client.calls[0]!.options.tools).map(domainOf)).toEqual(['weather', 'weather']);

    const skipping = counting();
    skipping.fail = 2;
    const soft = createAgent({
      client: new ScriptedChatClient({ replies: () => 'ok' }),
      contextProviders: [
        new ContextualToolsProvider({ tools: catalog, embeddings: skipping, onError: 'skip', alwaysInclude: ['note_get'] }),
      ],
    });
    expect((await soft.run('weather please')).text).toBe('ok');
  });

  it('holds a token budget by exact count, dropping the least similar and keeping alwaysInclude', async () => {
    const tokenizer = createCharacterTokenizer();
    const byName = new Map(catalog.map((t) => [t.name, t]));
    const free = new ScriptedChatClient({ replies: () => 'ok' });
    const query = 'Search the weather forecast: rain and wind';
    const options = { tools: catalog, embeddings: createHashEmbedding(), maxTools: 4, alwaysInclude: ['note_get'] };
    await createAgent({ client: free, contextProviders: [new ContextualToolsProvider(options)] }).run(query);
    const unbounded = names(free.calls[0]!.options.tools); // note_get, then 4 by similarity
    expect(unbounded).toHaveLength(5);
    const cost = (list: string[]) => list.reduce((sum, n) => sum + countToolTokens(byName.get(n)!, tokenizer), 0);
    const maxTokens = cost(unbounded.slice(0, 3)); // room for alwaysInclude + the 2 most similar

    const client = new ScriptedChatClient({ replies: () => 'ok' });
    await createAgent({ client, contextProviders: [new ContextualToolsProvider({ ...options, budget: { maxTokens, tokenizer } })] }).run(
      query,
    );
    const sent = client.calls[0]!.options.tools!;
    expect(sent.reduce((sum, t) => sum + countToolTokens(t, tokenizer), 0)).toBeLessThanOrEqual(maxTokens);
    expect(names(sent)).toEqual(unbounded.slice(0, 3));
  });

  it("does not re-add the agent's own tools, and takes a catalog computed per run", async () => {
    const client = new ScriptedChatClient({ replies: () => 'ok' });
    const own = catalog.find((t) => t.name === 'weather_get')!;
    let calls = 0;
    const provider = new ContextualToolsProvider({
      tools: () => {
        calls++;
        return catalog.slice(0, 10);
      },
      embeddings: createHashEmbedding(),
      maxTools: 2,
    });
    const agent = createAgent({ client, tools: [own], contextProviders: [provider] });
    await agent.run('weather forecast');
    const sent = names(client.calls[0]!.options.tools);
    expect(sent.filter((n) => n === 'weather_get')).toHaveLength(1);
    expect(sent).toHaveLength(3);
    expect(sent.every((n) => catalog.slice(0, 10).some((t) => t.name === n))).toBe(true);
    expect(calls).toBe(1);
  });

  it('is gated by when, and rejects bad configuration', async () => {
    const client = new ScriptedChatClient({ replies: () => 'ok' });
    const embeddings = counting();
    const agent = createAgent({
      client,
      contextProviders: [new ContextualToolsProvider({ tools: catalog, embeddings, when: () => false })],
    });
    await agent.run('weather');
    expect(client.calls[0]!.options.tools).toBeUndefined();
    expect(embeddings.calls).toBe(0);
    expect(() => new ContextualToolsProvider({ tools: catalog, embeddings, alwaysInclude: ['nope'] })).toThrow(ConfigurationError);
    expect(() => new ContextualToolsProvider({ tools: [catalog[0]!, catalog[0]!], embeddings })).toThrow(/two tools named/);
    expect(() => new ContextualToolsProvider({ tools: catalog, embeddings, maxTools: -1 })).toThrow(ConfigurationError);
  });
});
