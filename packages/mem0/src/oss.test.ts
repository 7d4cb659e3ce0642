import { BackendUnavailableError, ConfigurationError, createAgent, Message, type AgentEvent } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import type { Memory } from 'mem0ai/oss';
import { beforeAll, describe, expect, it } from 'vitest';
import { extractionReply, ossBackend, ossConfig, uniqueId } from '../test/backends.js';
import { isMemoryMessage, Mem0ContextProvider, type Mem0ContextProviderOptions } from './index.js';

type Oss = Awaited<ReturnType<typeof ossBackend>>;

describe('mem0 OSS Memory, fully offline (in-memory vector store, no history, local OpenAI-protocol server)', () => {
  let oss: Oss;
  beforeAll(async () => {
    oss = await ossBackend();
  });

  const build = (options: Partial<Mem0ContextProviderOptions> = {}) => {
    const events: AgentEvent[] = [];
    const chat = new ScriptedChatClient({ replies: () => 'Noted.' });
    const provider = new Mem0ContextProvider({ client: oss.client, ...options } as Mem0ContextProviderOptions);
    const agent = createAgent({ client: chat, contextProviders: [provider], onEvent: (e) => events.push(e) });
    return { agent, chat, provider, events };
  };
  const memoryText = (messages: Message[]) => messages.filter(isMemoryMessage).map((m) => Message.text(m)).join('\n');

  it('creates its own Memory from the `oss` option and recalls across sessions', async () => {
    const chat = new ScriptedChatClient({ replies: () => 'Noted.' });
    const agent = createAgent({ client: chat, contextProviders: [new Mem0ContextProvider({ oss: ossConfig(oss.openai) })] });
    const userId = uniqueId('u');
    await agent.run('I am allergic to peanuts.', { session: agent.createSession({ state: { mem0: { userId } } }) });
    await agent.run('Am I allergic to anything?', { session: agent.createSession({ state: { mem0: { userId } } }) });
    expect(memoryText(chat.calls[1]!.messages)).toContain('- I am allergic to peanuts.');
  });

  it("the search embeds the query only (no LLM call); the add runs mem0's extraction on the turn", async () => {
    const { agent } = build();
    const userId = uniqueId('u');
    const from = oss.openai.requests.length;
    await agent.run('My cat is called Miso.', { session: agent.createSession({ state: { mem0: { userId } } }) });
    const routes = oss.openai.requests.slice(from).map((r) => r.route);
    expect(routes[0]).toBe('/embeddings'); // the search
    expect(routes.filter((r) => r === '/chat/completions')).toHaveLength(1); // one extraction for the add
    const extraction = oss.openai.requests.slice(from).find((r) => r.route === '/chat/completions')!;
    expect(extraction.body?.response_format).toEqual({ type: 'json_object' });
    expect(extractionReply(extraction)?.text).toBe(JSON.stringify({ memory: [{ id: '0', text: 'My cat is called Miso.', attributed_to: 'user' }] }));
    const stored = (await (oss.client as Memory).getAll({ filters: { user_id: userId } })).results;
    expect(stored.map((m) => m.memory)).toEqual(['My cat is called Miso.']);
    // Saying it again adds nothing: mem0 OSS de-duplicates by hash within the scope.
    await agent.run('My cat is called Miso.', { session: agent.createSession({ state: { mem0: { userId } } }) });
    expect((await (oss.client as Memory).getAll({ filters: { user_id: userId } })).results).toHaveLength(1);
  });

  it('appId, which OSS lacks, is stored as metadata.app_id and separates apps when searched', async () => {
    const userId = uniqueId('u');
    const shop = build({ appId: 'shop', storeScope: ['userId', 'appId'], searchScopes: [['userId', 'appId']] });
    await shop.agent.run('I wear size 42 shoes.', { session: shop.agent.createSession({ state: { mem0: { userId } } }) });
    const stored = (await (oss.client as Memory).getAll({ filters: { user_id: userId } })).results;
    expect(stored[0]!.metadata).toMatchObject({ app_id: 'shop' });
    const bank = build({ appId: 'bank', searchScopes: [['userId', 'appId']] });
    await bank.agent.run('What shoe size do I wear?', { session: bank.agent.createSession({ state: { mem0: { userId } } }) });
    expect(memoryText(bank.chat.calls[0]!.messages)).toBe('');
    await shop.agent.run('What shoe size do I wear?', { session: shop.agent.createSession({ state: { mem0: { userId } } }) });
    expect(memoryText(shop.chat.calls[1]!.messages)).toContain('size 42');
  });

  it('an appId-only scope is refused for OSS with a ConfigurationError (skipped, not widened)', async () => {
    const { agent, events } = build({ appId: 'shop', searchScopes: [['appId']] });
    await agent.run('hi', { session: agent.createSession() });
    const skipped = events.find((e) => e.type === 'provider-skipped') as { error: Error };
    expect(ConfigurationError.isInstance(skipped.error)).toBe(true);
    expect(skipped.error.message).toMatch(/appId alone is only supported by the platform/);
  });

  it('a failing extraction LLM fails the awaited write (afterRun skipped): 400 as ConfigurationError, 503 as BackendUnavailableError', async () => {
    const userId = uniqueId('u');
    const { agent, events } = build({ writeTimeoutMs: 10_000 });
    await agent.run('I live in Bergen.', { session: agent.createSession({ state: { mem0: { userId } } }) });
    const quiet = console.error;
    console.error = () => {}; // mem0 OSS logs the failed extraction
    try {
      for (const status of [400, 503]) {
        oss.openai.respondWith(() => ({ error: { status, message: `Scripted ${status}.`, headers: { 'retry-after-ms': '1' } } }));
        await expect(agent.run('I moved to Oslo.', { session: agent.createSession({ state: { mem0: { userId } } }) })).resolves.toMatchObject({ text: 'Noted.' });
      }
    } finally {
      console.error = quiet;
      oss.openai.respondWith(extractionReply);
    }
    const skipped = events.filter((e) => e.type === 'provider-skipped') as { phase: string; error: Error }[];
    expect(skipped.map((e) => e.phase)).toEqual(['afterRun', 'afterRun']);
    // mem0 OSS wraps the LLM failure in its LLMError; the HTTP status is found on its cause.
    expect(ConfigurationError.isInstance(skipped[0]!.error)).toBe(true);
    expect(skipped[0]!.error.message).toMatch(/mem0 \(oss\) add for session .+ was rejected \(HTTP 400\)/);
    expect(BackendUnavailableError.isInstance(skipped[1]!.error)).toBe(true);
    expect(skipped[1]!.error.message).toMatch(/failed \(HTTP 503\)/);
    expect((await (oss.client as Memory).getAll({ filters: { user_id: userId } })).results.map((m) => m.memory)).toEqual(['I live in Bergen.']);
  });
});
