import { BackendUnavailableError, ConfigurationError, createAgent, Message, type AgentEvent } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import type { MemoryClient } from 'mem0ai';
import type { Memory } from 'mem0ai/oss';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { extractionReply, ossBackend, ossConfig, platformBackend, uniqueId } from '../test/backends.js';
import {
  createOssAdapter,
  createPlatformAdapter,
  isMemoryMessage,
  Mem0ContextProvider,
  platformFilters,
  type Mem0ContextProviderOptions,
  type Mem0UserDataExport,
  type MemoryClientLike,
  type OssMemoryLike,
} from './index.js';

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
    const provider = new Mem0ContextProvider({
      apiKey: platform.server.apiKey,
      host: platform.server.url,
      agentId: 'concierge',
      storeScope: ['userId', 'agentId', 'runId'],
      searchScopes: [['userId'], ['userId', 'agentId']],
    });
    const agent = createAgent({ client: chat, contextProviders: [provider] });
    const userId = uniqueId('u');
    const from = platform.server.requests.length;
    await agent.run('I prefer window seats.', { session: agent.createSession({ sessionId: 'trip-1', state: { mem0: { userId } } }) });
    const searches = requestsFrom(from, '/v3/memories/search/');
    expect(searches.map((r) => r.body?.filters)).toEqual([{ user_id: userId }, { AND: [{ user_id: userId }, { agent_id: 'concierge' }] }]);
    expect(
      searches.every(
        (r) => r.headers.authorization === 'Token test-key' && r.body?.top_k === 5 && r.body?.query === 'I prefer window seats.',
      ),
    ).toBe(true);
    const [add] = requestsFrom(from, '/v3/memories/add/');
    expect(add!.body).toEqual({
      messages: [
        { role: 'user', content: 'I prefer window seats.' },
        { role: 'assistant', content: 'Noted.' },
      ],
      user_id: userId,
      agent_id: 'concierge',
      run_id: 'trip-1',
    });
    expect(platform.server.memories().filter((m) => m.user_id === userId)).toMatchObject([
      { memory: 'I prefer window seats.', agent_id: 'concierge', run_id: 'trip-1', app_id: null },
    ]);
    await agent.run('Which seats do I prefer?', { session: agent.createSession({ state: { mem0: { userId } } }) });
    // Found by both scopes, injected once.
    const memory = chat.calls[1]!.messages.find(isMemoryMessage)!;
    expect(Message.text(memory).match(/window seats/g)).toHaveLength(1);
  });

  it('runs the scope searches in parallel: with a latency, the three searches of a run are at the server at once', async () => {
    const scopes = { agentId: 'bot', appId: 'web', searchScopes: [['userId'], ['agentId'], ['appId']], writeMode: 'background' } as const;
    const par = build(scopes);
    const seq = build({ ...scopes, searchConcurrency: 'sequential' });
    const peakOf = async (b: ReturnType<typeof build>) => {
      await Promise.all([par.provider.flush(), seq.provider.flush()]); // no write of an earlier run in flight
      platform.server.reset();
      await b.agent.run('hello there', { session: b.session({ userId: uniqueId('u') }) });
      return platform.server.maxInFlight();
    };
    try {
      // A first run of each pings the client (detection) and opens the connections.
      await peakOf(par);
      await peakOf(seq);
      platform.server.setLatency(150);
      expect(await peakOf(par)).toBe(3);
      expect(await peakOf(seq)).toBe(1);
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
      const agent = createAgent({
        client: chat,
        contextProviders: [new Mem0ContextProvider({ client: new MemoryClient({ apiKey: 'wrong', host: platform.server.url }) })],
        onEvent: (e) => events.push(e),
      });
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
    expect(errors.map((e) => [ConfigurationError.isInstance(e), BackendUnavailableError.isInstance(e)])).toEqual([
      [true, false],
      [false, true],
      [false, true],
    ]);
    expect((errors[1] as Error).message).toMatch(/HTTP 429/);
  });

  it('402, 413, 415, 451, another 4xx and 529 from the platform are deliberate: quota and 5xx pass, the others need a change', async () => {
    const { agent, events, session } = build();
    const statuses = [402, 413, 415, 451, 405, 529];
    for (const status of statuses) {
      platform.server.failNext({ status, path: '/v3/memories/search/' });
      await agent.run('hi', { session: session({ userId: uniqueId('u') }) });
    }
    const errors = events.filter((e) => e.type === 'provider-skipped').map((e) => (e as { error: Error }).error);
    expect(errors.map((e) => e.name)).toEqual([
      'BackendUnavailableError',
      'ConfigurationError',
      'ConfigurationError',
      'ConfigurationError',
      'ConfigurationError',
      'BackendUnavailableError',
    ]);
    expect(errors[0]!.message).toMatch(/failed \(HTTP 402\): .* Check the plan and billing of the mem0 project/);
    expect(errors[1]!.message).toMatch(/was refused as too large \(HTTP 413\): store shorter turns/);
    expect(errors[1]!.message).toContain('MemoryQuotaExceededError'); // what mem0ai calls a 413
    expect(errors[4]!.message).toMatch(/was rejected \(HTTP 405\): check `host`, the mem0ai version/);
    expect(errors[5]!.message).toMatch(/failed \(HTTP 529\): .* Retry later\.$/);
  });

  it('flush({ signal }) stops waiting when the signal aborts; the write carries on and a later flush reports it', async () => {
    const { agent, provider, session } = build({ writeMode: 'background', searchTimeoutMs: 2000, writeTimeoutMs: 5000 });
    const s = session({ userId: uniqueId('u') });
    platform.server.setLatency(300);
    try {
      await agent.run('My cat is called Mia.', { session: s });
      await expect(provider.flush({ signal: AbortSignal.timeout(20) })).rejects.toThrow(/timeout|abort/i);
      await expect(agent.flush({ signal: AbortSignal.timeout(20) })).rejects.toThrow(/timeout|abort/i);
    } finally {
      platform.server.setLatency(0);
    }
    expect(await provider.flush()).toEqual({ settled: 1, failed: [] });
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
    expect(events.filter((e) => e.type === 'provider-diagnostic')).toMatchObject([
      { code: 'background-write-failed', error: failed[0]!.error },
    ]);
    expect(BackendUnavailableError.isInstance(failed[0]!.error)).toBe(true);
    expect(failed[0]!.error.message).toMatch(/HTTP 503/);
    // Then it is gone altogether: the next run is answered without memory (provider skipped) and stores nothing.
    await platform.server.pause();
    await agent.run('What is my sister called?', { session: s });
    expect(events.filter((e) => e.type === 'provider-skipped')).toMatchObject([{ phase: 'beforeRun' }]);
    expect((events.find((e) => e.type === 'provider-skipped') as { error: Error }).error.message).toMatch(
      /failed \(unreachable\): .*fetch failed/,
    );
    expect(chat.calls.at(-1)!.messages.some(isMemoryMessage)).toBe(false);
    await platform.server.resume();
    expect(await provider.flush()).toEqual({ settled: 0, failed: [] });
    await agent.run('What is my sister called?', { session: s });
    await provider.flush();
    expect(
      chat.calls
        .at(-1)!
        .messages.filter(isMemoryMessage)
        .map((m) => Message.text(m))
        .join(),
    ).toContain('Ingrid');
    const stored = platform.server
      .memories()
      .filter((m) => m.user_id === userId)
      .map((m) => m.memory);
    expect(stored).toEqual(['My sister is called Ingrid.', 'What is my sister called?']);
  });

  it('exportUserData pages the list (100 a page); deleteUserData is one DELETE with the scope as query parameters', async () => {
    const { agent, provider } = build({ appId: 'web', storeScope: ['userId', 'appId'] });
    const userId = uniqueId('u');
    const texts = Array.from({ length: 105 }, (_, i) => `fact number ${i}`);
    await platform.client.add(
      texts.map((content) => ({ role: 'user' as const, content })),
      { userId, appId: 'web', infer: false, async_mode: false },
    );
    await platform.client.add([{ role: 'user', content: 'from another app' }], { userId, appId: 'ios', infer: false, async_mode: false });
    const from = platform.server.requests.length;
    const args = { agent, userId, signal: new AbortController().signal };
    const exported = (await provider.exportUserData(args)) as unknown as Mem0UserDataExport;
    expect(exported.memories.map((m) => m.text).sort()).toEqual([...texts].sort());
    const lists = requestsFrom(from, '/v3/memories/');
    expect(lists.map((r) => [r.method, r.query.page, r.query.page_size, r.body?.filters])).toEqual([
      ['POST', '1', '100', { AND: [{ user_id: userId }, { app_id: 'web' }] }],
      ['POST', '2', '100', { AND: [{ user_id: userId }, { app_id: 'web' }] }],
    ]);
    await provider.deleteUserData(args);
    const deletes = platform.server.requests.slice(from).filter((r) => r.method === 'DELETE');
    expect(deletes.map((r) => [r.path, r.query])).toEqual([['/v1/memories/', { user_id: userId, app_id: 'web' }]]);
    expect(
      platform.server
        .memories()
        .filter((m) => m.user_id === userId)
        .map((m) => m.memory),
    ).toEqual(['from another app']);
  });

  it('a failing delete is typed like any call (a 503 is a BackendUnavailableError naming the user) and deletes nothing', async () => {
    const { agent, provider } = build();
    const userId = uniqueId('u');
    await platform.client.add([{ role: 'user', content: 'keep me' }], { userId, infer: false, async_mode: false });
    platform.server.failNext({ status: 503, path: '/v1/memories/' });
    const error = await provider.deleteUserData({ agent, userId, signal: new AbortController().signal }).catch((e: unknown) => e);
    expect(BackendUnavailableError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(new RegExp(`^mem0 \\(platform\\) delete for user "${userId}" failed \\(HTTP 503\\)`));
    expect(platform.server.memories().filter((m) => m.user_id === userId)).toHaveLength(1);
  });

  it('concurrent runs on one session: every turn reaches mem0 exactly once', async () => {
    const userId = uniqueId('u');
    const { agent, provider, session } = build({ writeMode: 'background' });
    const s = session({ userId });
    const from = platform.server.requests.length;
    await Promise.all(Array.from({ length: 12 }, (_, i) => agent.run(`Fact number ${i}.`, { session: s })));
    await provider.flush();
    const adds = requestsFrom(from, '/v3/memories/add/').map((r) => (r.body!.messages as { content: string }[])[0]!.content);
    expect(adds.sort()).toEqual(Array.from({ length: 12 }, (_, i) => `Fact number ${i}.`).sort());
    expect(platform.server.memories().filter((m) => m.user_id === userId)).toHaveLength(12);
  });
});

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
  const memoryText = (messages: Message[]) =>
    messages
      .filter(isMemoryMessage)
      .map((m) => Message.text(m))
      .join('\n');

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
    expect(extractionReply(extraction)?.text).toBe(
      JSON.stringify({ memory: [{ id: '0', text: 'My cat is called Miso.', attributed_to: 'user' }] }),
    );
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

  it("deleteUserData with an appId (a metadata field in OSS) deletes that app's memories of the user one by one, not the others", async () => {
    const web = build({ appId: 'web', storeScope: ['userId', 'appId'] });
    const ios = build({ appId: 'ios', storeScope: ['userId', 'appId'] });
    const userId = uniqueId('u');
    await web.agent.run('I use the web app.', { session: web.agent.createSession({ userId }) });
    await web.agent.run('I like dark mode.', { session: web.agent.createSession({ userId }) });
    await ios.agent.run('I use the phone app.', { session: ios.agent.createSession({ userId }) });
    const args = { agent: web.agent, userId, signal: new AbortController().signal };
    const exported = (await web.provider.exportUserData(args)) as unknown as Mem0UserDataExport;
    expect(exported.memories.map((m) => [m.text, m.appId, m.metadata]).sort()).toEqual([
      ['I like dark mode.', 'web', undefined],
      ['I use the web app.', 'web', undefined],
    ]);
    await web.provider.deleteUserData(args);
    const left = (await oss.client.getAll({ filters: { user_id: userId } })) as { results: { memory: string }[] };
    expect(left.results.map((m) => m.memory)).toEqual(['I use the phone app.']);
  });

  it('an appId-only scope is refused for OSS with a ConfigurationError (skipped, not widened)', async () => {
    const { agent, events } = build({ appId: 'shop', searchScopes: [['appId']] });
    await agent.run('hi', { session: agent.createSession() });
    const skipped = events.find((e) => e.type === 'provider-skipped') as { error: Error };
    expect(ConfigurationError.isInstance(skipped.error)).toBe(true);
    expect(skipped.error.message).toMatch(/appId alone is only supported by the platform/);
  });

  it("the extraction LLM's account out of credit (402) skips the write with a BackendUnavailableError that says to check billing", async () => {
    const userId = uniqueId('u');
    const { agent, events } = build({ writeTimeoutMs: 10_000 });
    const quiet = console.error;
    console.error = () => {}; // mem0 OSS logs the failed extraction
    try {
      oss.openai.respondWith(() => ({ error: { status: 402, message: 'Insufficient credits.' } }));
      await agent.run('I moved to Oslo.', { session: agent.createSession({ state: { mem0: { userId } } }) });
    } finally {
      console.error = quiet;
      oss.openai.respondWith(extractionReply);
    }
    const [skipped] = events.filter((e) => e.type === 'provider-skipped') as { phase: string; error: Error }[];
    expect(skipped!.phase).toBe('afterRun');
    expect(BackendUnavailableError.isInstance(skipped!.error)).toBe(true);
    expect(skipped!.error.message).toMatch(
      /^mem0 \(oss\) add for session .+ failed \(HTTP 402\): .* Check the plan and billing .*of its LLM or embedder account/,
    );
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
        await expect(
          agent.run('I moved to Oslo.', { session: agent.createSession({ state: { mem0: { userId } } }) }),
        ).resolves.toMatchObject({ text: 'Noted.' });
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
    expect((await (oss.client as Memory).getAll({ filters: { user_id: userId } })).results.map((m) => m.memory)).toEqual([
      'I live in Bergen.',
    ]);
  });
});

describe.each([
  ['platform MemoryClient', platformBackend],
  ['OSS Memory', ossBackend],
] as const)('user data and session deletes through the real %s', (_name, start) => {
  let backend: Awaited<ReturnType<typeof start>>;
  beforeAll(async () => {
    backend = await start();
  });

  /** What mem0 holds for a user, read with the client itself (not through the provider). */
  const stored = async (userId: string): Promise<{ text: string; runId?: string; agentId?: string }[]> => {
    const reply = (backend.name === 'platform'
      ? await (backend.client as MemoryClient).getAll({ filters: { user_id: userId }, pageSize: 1000 })
      : await (backend.client as Memory).getAll({ filters: { user_id: userId }, topK: 1000 })) as unknown as {
      results: Record<string, unknown>[];
    };
    return reply.results.map((m) => ({
      text: m.memory as string,
      runId: (m.runId ?? m.run_id) as string,
      agentId: (m.agentId ?? m.agent_id) as string,
    }));
  };

  const build = (options: Partial<Mem0ContextProviderOptions> = {}) => {
    const provider = new Mem0ContextProvider({ client: backend.client, ...options } as Mem0ContextProviderOptions);
    const agent = createAgent({ client: new ScriptedChatClient({ replies: () => 'Noted.' }), contextProviders: [provider] });
    const say = (userId: string, text: string, sessionId = uniqueId('s')) => {
      const session = agent.createSession({ sessionId, userId });
      return agent.run(text, { session }).then(() => session);
    };
    const userArgs = (userId: string) => ({ agent, userId, signal: new AbortController().signal });
    return { agent, provider, say, userArgs };
  };

  it("exportUserData returns the user's memories and nobody else's; deleteUserData removes them and nobody else's", async () => {
    const { provider, say, userArgs } = build({ agentId: 'bot', storeScope: ['userId', 'agentId'] });
    const [ann, bob] = [uniqueId('ann'), uniqueId('bob')];
    await say(ann, 'I like green tea.');
    await say(bob, 'I like orange juice.');
    await say(ann, 'I live in Oslo.');
    const exported = (await provider.exportUserData(userArgs(ann))) as unknown as Mem0UserDataExport;
    expect(exported.scope).toEqual({ userId: ann, agentId: 'bot' });
    expect(exported.memories.map((m) => m.text).sort()).toEqual(['I like green tea.', 'I live in Oslo.']);
    expect(exported.memories.every((m) => m.userId === ann && m.agentId === 'bot' && typeof m.id === 'string' && m.createdAt)).toBe(true);
    expect(JSON.parse(JSON.stringify(exported))).toEqual(exported); // plain JSON

    await provider.deleteUserData(userArgs(ann));
    expect(await stored(ann)).toEqual([]);
    expect((await stored(bob)).map((m) => m.text)).toEqual(['I like orange juice.']);
    expect(await provider.exportUserData(userArgs(ann))).toBeUndefined();
    await provider.deleteUserData(userArgs(ann)); // idempotent
  });

  it('forgetOnSessionDelete deletes the memories of that session only; without it they stay', async () => {
    const forget = build({ storeScope: ['userId', 'runId'], forgetOnSessionDelete: true });
    const keep = build({ storeScope: ['userId', 'runId'] });
    const ann = uniqueId('ann');
    const first = await forget.say(ann, 'I have a dog.');
    const second = await forget.say(ann, 'I play chess.');
    await keep.provider.onSessionDeleted({
      agent: keep.agent,
      session: first,
      state: first.stateOf('mem0'),
      signal: new AbortController().signal,
    });
    expect((await stored(ann)).map((m) => m.text).sort()).toEqual(['I have a dog.', 'I play chess.']);
    await forget.provider.onSessionDeleted({
      agent: forget.agent,
      session: first,
      state: first.stateOf('mem0'),
      signal: new AbortController().signal,
    });
    expect(await stored(ann)).toEqual([{ text: 'I play chess.', runId: second.sessionId, agentId: undefined }]);
  });
});

describe('adapters without a backend', () => {
  it('platform filters: one equality, or AND of equalities in a fixed order; never an empty filter', () => {
    expect(platformFilters({ runId: 'r', userId: 'u' })).toEqual({ AND: [{ user_id: 'u' }, { run_id: 'r' }] });
    expect(() => platformFilters({})).toThrow(ConfigurationError);
  });

  it('OSS list: getAll has no pages, so it asks for 1000, then twice as many while the reply is full', async () => {
    const topKs: number[] = [];
    const oss = createOssAdapter({
      search: async () => ({ results: [] }),
      add: async () => {},
      getAll: async ({ topK = 20 }) => {
        topKs.push(topK);
        return { results: Array.from({ length: Math.min(topK, 2500) }, (_, i) => ({ id: `m${i}`, memory: `fact ${i}` })) };
      },
      reset: async () => {},
    } as OssMemoryLike);
    const page = await oss.list!({ scope: { userId: 'u' } });
    expect(topKs).toEqual([1000, 2000, 4000]);
    expect(page.memories).toHaveLength(2500);
    expect(page.cursor).toBeUndefined();
  });

  it('a search reply without a results list is a BackendUnavailableError naming the client kind', async () => {
    const platform = createPlatformAdapter({
      ping: async () => {},
      search: async () => ({ memories: [] }),
      add: async () => {},
    } as MemoryClientLike);
    const oss = createOssAdapter({
      search: async () => null,
      add: async () => {},
      getAll: async () => ({}),
      reset: async () => {},
    } as OssMemoryLike);
    const request = { query: 'q', scope: { userId: 'u' }, topK: 1 };
    const [p, o] = await Promise.all([platform.search(request).catch((e: unknown) => e), oss.search(request).catch((e: unknown) => e)]);
    expect(BackendUnavailableError.isInstance(p)).toBe(true);
    expect((p as BackendUnavailableError).backend).toBe('mem0');
    expect((p as Error).message).toMatch(
      /^mem0 \(platform\) answered a search with an object without a results list instead of \{ results: \[\.\.\.\] \}; check/,
    );
    expect(BackendUnavailableError.isInstance(o)).toBe(true);
    expect((o as Error).message).toMatch(/^mem0 \(oss\) answered a search with null/);
  });
});
