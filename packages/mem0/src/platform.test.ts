import { BackendUnavailableError, ConfigurationError, createAgent, Message, type AgentEvent } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { platformBackend, uniqueId } from '../test/backends.js';
import { isMemoryMessage, Mem0ContextProvider, type Mem0ContextProviderOptions } from './index.js';

type Platform = Awaited<ReturnType<typeof platformBackend>>;

describe('platform MemoryClient against the local mem0 REST server', () => {
  let platform: Platform;
  beforeAll(async () => {
    platform = await platformBackend();
  });
  afterEach(async () => {
    platform.server.setLatency(0);
    await platform.server.resume();
  });

  const build = (options: Partial<Mem0ContextProviderOptions> = {}) => {
    const events: AgentEvent[] = [];
    const chat = new ScriptedChatClient({ replies: () => 'Noted.' });
    const provider = new Mem0ContextProvider({ client: platform.client, ...options } as Mem0ContextProviderOptions);
    const agent = createAgent({ client: chat, contextProviders: [provider], onEvent: (e) => events.push(e) });
    const session = (state: Record<string, string>) => agent.createSession({ state: { mem0: state } });
    return { agent, chat, provider, events, session };
  };
  const requestsFrom = (index: number, path: string) => platform.server.requests.slice(index).filter((r) => r.path === path);

  it('creates its own MemoryClient from apiKey and host; sends scope as filters to search and as top-level ids to add', async () => {
    const chat = new ScriptedChatClient({ replies: () => 'Noted.' });
    const provider = new Mem0ContextProvider({ apiKey: platform.server.apiKey, host: platform.server.url, agentId: 'concierge', storeScope: ['userId', 'agentId', 'runId'], searchScopes: [['userId'], ['userId', 'agentId']] });
    const agent = createAgent({ client: chat, contextProviders: [provider] });
    const userId = uniqueId('u');
    const from = platform.server.requests.length;
    await agent.run('I prefer window seats.', { session: agent.createSession({ sessionId: 'trip-1', state: { mem0: { userId } } }) });
    const searches = requestsFrom(from, '/v3/memories/search/');
    expect(searches.map((r) => r.body?.filters)).toEqual([{ user_id: userId }, { AND: [{ user_id: userId }, { agent_id: 'concierge' }] }]);
    expect(searches.every((r) => r.headers.authorization === 'Token test-key' && r.body?.top_k === 5 && r.body?.query === 'I prefer window seats.')).toBe(true);
    const [add] = requestsFrom(from, '/v3/memories/add/');
    expect(add!.body).toEqual({ messages: [{ role: 'user', content: 'I prefer window seats.' }, { role: 'assistant', content: 'Noted.' }], user_id: userId, agent_id: 'concierge', run_id: 'trip-1' });
    expect(platform.server.memories().filter((m) => m.user_id === userId)).toMatchObject([{ memory: 'I prefer window seats.', agent_id: 'concierge', run_id: 'trip-1', app_id: null }]);
    await agent.run('Which seats do I prefer?', { session: agent.createSession({ state: { mem0: { userId } } }) });
    // Found by both scopes, injected once.
    const memory = chat.calls[1]!.messages.find(isMemoryMessage)!;
    expect(Message.text(memory).match(/window seats/g)).toHaveLength(1);
  });

  it('runs the scope searches in parallel: three scopes at 150 ms of latency take about one', async () => {
    const scopes = { agentId: 'bot', appId: 'web', searchScopes: [['userId'], ['agentId'], ['appId']], writeMode: 'background' } as const;
    const par = build(scopes);
    const seq = build({ ...scopes, searchConcurrency: 'sequential' });
    const timed = async (b: ReturnType<typeof build>) => {
      const started = performance.now();
      await b.agent.run('hello there', { session: b.session({ userId: uniqueId('u') }) });
      return performance.now() - started;
    };
    try {
      await timed(par); // warm the connections
      platform.server.setLatency(150);
      expect(await timed(par)).toBeLessThan(400); // one after another: >= 450
      expect(await timed(seq)).toBeGreaterThanOrEqual(440);
    } finally {
      platform.server.setLatency(0);
      await Promise.all([par.provider.flush(), seq.provider.flush()]);
    }
  });

  it('a wrong API key is a ConfigurationError in the provider-skipped event', async () => {
    const { MemoryClient } = await import('mem0ai');
    const errors = console.error;
    console.error = () => {}; // MemoryClient logs its failed ping on construction
    try {
      const chat = new ScriptedChatClient({ replies: () => 'Noted.' });
      const events: AgentEvent[] = [];
      const agent = createAgent({ client: chat, contextProviders: [new Mem0ContextProvider({ client: new MemoryClient({ apiKey: 'wrong', host: platform.server.url }) })], onEvent: (e) => events.push(e) });
      await agent.run('hi', { session: agent.createSession({ state: { mem0: { userId: 'u' } } }) });
      const skipped = events.find((e) => e.type === 'provider-skipped') as { error: Error };
      expect(ConfigurationError.isInstance(skipped.error)).toBe(true);
      expect(skipped.error.message).toMatch(/was refused \(HTTP 401\): check the mem0 API key/);
    } finally {
      console.error = errors;
    }
  });

  it('a request mem0 rejects (400) is a ConfigurationError; 429 and 5xx are BackendUnavailableError', async () => {
    const { agent, events, session } = build();
    for (const status of [400, 429, 502]) {
      platform.server.failNext({ status, path: '/v3/memories/search/' });
      await agent.run('hi', { session: session({ userId: uniqueId('u') }) });
    }
    const errors = events.filter((e) => e.type === 'provider-skipped').map((e) => (e as { error: unknown }).error);
    expect(errors.map((e) => [ConfigurationError.isInstance(e), BackendUnavailableError.isInstance(e)])).toEqual([[true, false], [false, true], [false, true]]);
    expect((errors[1] as Error).message).toMatch(/HTTP 429/);
  });

  it('mem0 goes away mid-conversation and comes back: background writes during the outage are reported, nothing is duplicated', async () => {
    const { agent, provider, chat, session, events } = build({ writeMode: 'background', searchTimeoutMs: 2000, writeTimeoutMs: 2000 });
    const userId = uniqueId('u');
    const s = session({ userId });
    await agent.run('My sister is called Ingrid.', { session: s });
    await provider.flush();
    // mem0 starts failing: the search of this turn still answers, its background write gets a 503.
    platform.server.failNext({ status: 503, path: '/v3/memories/add/' });
    await agent.run('My brother is called Olav.', { session: s });
    const { settled, failed } = await provider.flush();
    expect(settled).toBe(1);
    expect(failed).toHaveLength(1);
    expect(events.filter((e) => e.type === 'provider-diagnostic')).toMatchObject([{ code: 'background-write-failed', error: failed[0]!.error }]);
    expect(BackendUnavailableError.isInstance(failed[0]!.error)).toBe(true);
    expect(failed[0]!.error.message).toMatch(/HTTP 503/);
    // Then it is gone altogether: the next run is answered without memory (provider skipped) and stores nothing.
    await platform.server.pause();
    await agent.run('What is my sister called?', { session: s });
    expect(events.filter((e) => e.type === 'provider-skipped')).toMatchObject([{ phase: 'beforeRun' }]);
    expect((events.find((e) => e.type === 'provider-skipped') as { error: Error }).error.message).toMatch(/failed \(unreachable\): .*fetch failed/);
    expect(chat.calls.at(-1)!.messages.some(isMemoryMessage)).toBe(false);
    await platform.server.resume();
    expect(await provider.flush()).toEqual({ settled: 0, failed: [] });
    await agent.run('What is my sister called?', { session: s });
    await provider.flush();
    expect(chat.calls.at(-1)!.messages.filter(isMemoryMessage).map((m) => Message.text(m)).join()).toContain('Ingrid');
    const stored = platform.server.memories().filter((m) => m.user_id === userId).map((m) => m.memory);
    expect(stored).toEqual(['My sister is called Ingrid.', 'What is my sister called?']);
  });

  it('concurrent runs on one session: every turn reaches mem0 exactly once', async () => {
    const userId = uniqueId('u');
    const { agent, provider, session } = build({ writeMode: 'background' });
    const s = session({ userId });
    const from = platform.server.requests.length;
    await Promise.all(Array.from({ length: 12 }, (_, i) => agent.run(`Fact number ${i}.`, { session: s })));
    await provider.flush();
    const adds = requestsFrom(from, '/v3/memories/add/').map((r) => (r.body?.messages as { content: string }[])[0]!.content);
    expect(adds.sort()).toEqual(Array.from({ length: 12 }, (_, i) => `Fact number ${i}.`).sort());
    expect(platform.server.memories().filter((m) => m.user_id === userId)).toHaveLength(12);
  });
});
