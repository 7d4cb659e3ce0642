import { MemoryClient } from 'mem0ai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { compileFilter, FilterError } from './filters.js';
import { startMem0TestServer } from './mem0-test-server.js';
import type { Mem0TestServer, StoredMemory } from './types.js';

let server: Mem0TestServer;
let client: MemoryClient;

beforeAll(async () => {
  server = await startMem0TestServer();
  client = new MemoryClient({ apiKey: 'test-key', host: server.url });
});
afterAll(() => server.close());
beforeEach(() => server.reset());

const add = (content: string, scope: Record<string, string>) =>
  client.add(
    [
      { role: 'user', content },
      { role: 'assistant', content: 'Noted.' },
    ],
    scope,
  );

describe('the real MemoryClient against the local platform server', () => {
  it('sends the documented paths, headers and snake_case bodies', async () => {
    await add('I live in Oslo.', { userId: 'alice', agentId: 'bot', appId: 'app', runId: 'r1' });
    await client.search('Where do I live?', { filters: { user_id: 'alice' }, topK: 3 });
    const [addReq, searchReq] = server.requests.filter((r) => r.path !== '/v1/ping/');
    expect(addReq).toMatchObject({ method: 'POST', path: '/v3/memories/add/' });
    expect(addReq!.headers.authorization).toBe('Token test-key');
    expect(addReq!.body).toMatchObject({
      user_id: 'alice',
      agent_id: 'bot',
      app_id: 'app',
      run_id: 'r1',
      messages: [
        { role: 'user', content: 'I live in Oslo.' },
        { role: 'assistant', content: 'Noted.' },
      ],
    });
    expect(searchReq).toMatchObject({
      method: 'POST',
      path: '/v3/memories/search/',
      body: { query: 'Where do I live?', filters: { user_id: 'alice' }, top_k: 3, output_format: 'v1.1' },
    });
  });

  it('ping answers ok with the key and the client refuses top-level entity ids on search', async () => {
    await expect(client.ping()).resolves.toBeUndefined();
    const bad = new MemoryClient({ apiKey: 'wrong', host: server.url });
    await expect(bad.ping()).rejects.toThrow(/Invalid API key/);
    await expect(client.search('x', { userId: 'alice' } as never)).rejects.toThrow(/Top-level entity parameters/);
  });

  it('add is asynchronous by default and extracts one memory per user message; async_mode false returns the memories', async () => {
    const queued = await add('My favourite colour is teal.', { userId: 'alice' });
    expect(queued).toMatchObject({ results: [{ status: 'PENDING' }] });
    const sync = await client.add([{ role: 'user', content: 'I have a dog called Rex.' }], { userId: 'alice', async_mode: false });
    expect(sync).toMatchObject({ results: [{ event: 'ADD', memory: 'I have a dog called Rex.' }] });
    expect(server.memories().map((m) => m.memory)).toEqual(['My favourite colour is teal.', 'I have a dog called Rex.']);
    // The same fact in the same scope is not stored twice.
    await add('My favourite colour is teal.', { userId: 'alice' });
    expect(server.memories()).toHaveLength(2);
    // infer: false stores every message verbatim.
    await client.add(
      [
        { role: 'user', content: 'raw one' },
        { role: 'assistant', content: 'raw two' },
      ],
      { userId: 'bob', infer: false },
    );
    expect(
      server
        .memories()
        .filter((m) => m.user_id === 'bob')
        .map((m) => m.memory),
    ).toEqual(['raw one', 'raw two']);
  });

  it('search ranks by similarity within the filter, honours top_k and threshold, and camelCases the reply', async () => {
    await add('My favourite colour is teal.', { userId: 'alice', agentId: 'bot' });
    await add('I live in Oslo.', { userId: 'alice' });
    await add('My favourite colour is red.', { userId: 'bob', agentId: 'bot' });
    const alice = await client.search('What is my favourite colour?', { filters: { user_id: 'alice' }, threshold: 0 });
    expect(alice.results.map((m) => m.memory)).toEqual(['My favourite colour is teal.', 'I live in Oslo.']);
    expect(alice.results[0]!.score).toBeGreaterThan(alice.results[1]!.score!);
    expect(alice.results[0]).toMatchObject({ userId: 'alice', agentId: 'bot', appId: null, runId: null });
    const defaultThreshold = await client.search('What is my favourite colour?', { filters: { user_id: 'alice' } });
    expect(defaultThreshold.results.map((m) => m.memory)).toEqual(['My favourite colour is teal.']);
    const agentWide = await client.search('favourite colour', { filters: { agent_id: 'bot' }, topK: 1, threshold: 0 });
    expect(agentWide.results).toHaveLength(1);
    const both = await client.search('favourite colour', { filters: { AND: [{ user_id: 'bob' }, { agent_id: 'bot' }] }, threshold: 0 });
    expect(both.results.map((m) => m.memory)).toEqual(['My favourite colour is red.']);
  });

  it('the wildcard "*" widens a filter to every non-null value: the reason ids must never be "*"', async () => {
    await add('Alice fact.', { userId: 'alice' });
    await add('Bob fact.', { userId: 'bob' });
    await add('Agent fact.', { agentId: 'bot' });
    const all = await client.getAll({ filters: { user_id: '*' } });
    expect(all.results.map((m) => m.memory).sort()).toEqual(['Alice fact.', 'Bob fact.']);
  });

  it('rejects searches without an entity filter, unknown filter keys and operators, and adds without a scope', async () => {
    await expect(client.search('x', {})).rejects.toThrow(/filters are required/);
    await expect(client.search('x', { filters: { categories: { in: ['a'] } } })).rejects.toThrow(/at least one of user_id/);
    await expect(client.search('x', { filters: { user_id: 'a', colour: 'red' } })).rejects.toThrow(/Invalid filter key 'colour'/);
    await expect(client.search('x', { filters: { user_id: { like: 'a%' } } })).rejects.toThrow(/Unsupported operator 'like'/);
    await expect(client.add([{ role: 'user', content: 'x' }], {})).rejects.toThrow(/At least one of user_id/);
    await expect(client.add([{ role: 'user', content: 'x' }], { userId: '*' })).rejects.toThrow(/other than '\*'/);
  });

  it('lists with pagination, gets, deletes one memory and deletes by scope', async () => {
    for (let i = 0; i < 5; i++) await add(`Fact number ${i}.`, { userId: 'carol' });
    await add('Other user.', { userId: 'dave' });
    const page = await client.getAll({ filters: { user_id: 'carol' }, page: 2, pageSize: 2 });
    expect(page.count).toBe(5);
    expect(page.results.map((m) => m.memory)).toEqual(['Fact number 2.', 'Fact number 3.']);
    expect(page.next).toContain('page=3');
    const first = server.memories()[0]!;
    expect((await client.get(first.id)).memory).toBe('Fact number 0.');
    await client.delete(first.id);
    await expect(client.get(first.id)).rejects.toThrow(/not found/i);
    await expect(client.delete(first.id)).rejects.toThrow(/not found/i);
    await client.deleteAll({ userId: 'carol' });
    expect(server.memories().map((m) => m.memory)).toEqual(['Other user.']);
  });

  it('scripted failures, latency, pause and resume', async () => {
    server.failNext({ status: 503, path: '/v3/memories/search/' });
    await expect(client.search('x', { filters: { user_id: 'a' } })).rejects.toMatchObject({ name: 'NetworkError' });
    await expect(client.search('x', { filters: { user_id: 'a' } })).resolves.toEqual({ results: [] });
    // With a latency, replies are held: two searches sent together are in flight at once.
    server.reset();
    expect(server.maxInFlight()).toBe(0);
    server.setLatency(200);
    await Promise.all([client.search('x', { filters: { user_id: 'a' } }), client.search('y', { filters: { user_id: 'a' } })]);
    expect(server.maxInFlight()).toBe(2);
    server.setLatency(0);
    await add('Kept across the outage.', { userId: 'erin' });
    await server.pause();
    await expect(client.search('x', { filters: { user_id: 'erin' } })).rejects.toThrow(/fetch failed/);
    await server.resume();
    const back = await client.search('Kept across the outage', { filters: { user_id: 'erin' } });
    expect(back.results.map((m) => m.memory)).toEqual(['Kept across the outage.']);
  });

  it('processingDelayMs makes asynchronous adds visible only later, as on the platform', async () => {
    const slow = await startMem0TestServer({ processingDelayMs: 50 });
    try {
      const c = new MemoryClient({ apiKey: 'test-key', host: slow.url });
      await c.add([{ role: 'user', content: 'Eventually consistent.' }], { userId: 'u' });
      expect((await c.search('Eventually consistent', { filters: { user_id: 'u' } })).results).toEqual([]);
      await slow.settle();
      expect((await c.search('Eventually consistent', { filters: { user_id: 'u' } })).results).toHaveLength(1);
    } finally {
      await slow.close();
    }
  });
});

describe('compileFilter', () => {
  const memory = (over: Partial<StoredMemory>): StoredMemory => ({
    id: 'm',
    memory: 'I like Tea',
    hash: 'h',
    user_id: null,
    agent_id: null,
    app_id: null,
    run_id: null,
    metadata: { topic: 'drinks' },
    categories: ['food'],
    created_at: '2026-01-02T00:00:00.000Z',
    updated_at: '2026-01-02T00:00:00.000Z',
    expiration_date: null,
    immutable: false,
    ...over,
  });
  it('evaluates logic, entity operators, time, categories, keywords and metadata', () => {
    const m = memory({ user_id: 'alice', agent_id: 'bot' });
    expect(compileFilter({ OR: [{ user_id: 'bob' }, { agent_id: { in: ['bot', 'x'] } }] })(m)).toBe(true);
    expect(compileFilter({ NOT: [{ user_id: 'alice' }] })(m)).toBe(false);
    expect(compileFilter({ user_id: 'alice', run_id: '*' })(m)).toBe(false);
    expect(compileFilter({ user_id: { ne: 'bob' } })(m)).toBe(true);
    expect(compileFilter({ created_at: { gte: '2026-01-01', lt: '2026-02-01' } })(m)).toBe(true);
    expect(compileFilter({ categories: { contains: 'foo' }, keywords: { icontains: 'tea' }, metadata: { topic: 'drinks' } })(m)).toBe(true);
    expect(compileFilter({ metadata: { topic: 'cars' } })(m)).toBe(false);
    expect(() => compileFilter({ AND: 'x' })).toThrow(FilterError);
    expect(() => compileFilter({ created_at: { gte: 'not a date' } })).toThrow(/ISO 8601/);
  });
});
