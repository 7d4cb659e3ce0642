import {
  type AgentSession,
  CompactionProvider,
  ConfigurationError,
  createAgent,
  defineTool,
  InMemoryHistoryProvider,
  isCompactionItem,
  Message,
} from '@ctx/core';
import { type JsonObject, type OpenAITestServer, recordedBody, startOpenAITestServer } from '@ctx/openai-test-server';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { OpenAIResponsesClient } from './openai-responses-client.js';
import { serviceCompaction } from './responses-compaction.js';

// Server-side compaction (context_management) and the standalone compact call, through the real SDK
// against the local OpenAI test server: the recorded compaction response replayed, then turns the
// server compacts itself, with the session saved and loaded as JSON between turns.

let server: OpenAITestServer;
beforeAll(async () => {
  server = await startOpenAITestServer();
});
afterAll(() => server.close());
beforeEach(() => server.reset());

type Item = JsonObject & { type: string };
const client = (compactThreshold?: number) =>
  new OpenAIResponsesClient({
    baseURL: server.url,
    apiKey: 'test-key',
    model: 'gpt-5.2',
    maxRetries: 0,
    ...(compactThreshold === undefined ? {} : { compactThreshold }),
  });
const created = () => server.requests.filter((r) => r.route === '/responses').map((r) => r.body as JsonObject & { input: Item[] });
/** Each item's type; an assistant message goes in the short form (`{ role, content }`, no type). */
const types = (input: Item[]) => input.map((i) => i.type ?? (i.role === undefined ? undefined : 'message'));
const inputTexts = (input: Item[]) =>
  input.flatMap((i) => (i.type === 'message' || i.role !== undefined ? [JSON.stringify(i.content)] : [`<${i.type}>`])).join(' | ');
const long = (word: string) => `${word} `.repeat(300).trim();

/** Saves the session as JSON text and loads it back, as an app does between requests. */
function reload(agent: ReturnType<typeof createAgent>, session: AgentSession): AgentSession {
  return agent.restoreSession(JSON.parse(JSON.stringify(agent.serializeSession(session))));
}

describe('server-side compaction (compactThreshold)', () => {
  it('keeps the recorded compaction item in history, sends it back byte for byte, and not what it stands for', async () => {
    const recorded = recordedBody('responses-compaction.json');
    const recordedItem = (recorded.output as Item[]).find((i) => i.type === 'compaction')!;
    const agent = createAgent({ client: client(200) });
    let session = agent.createSession();
    const store = { options: { store: false } };

    server.enqueue({ replay: { status: 200, body: recorded } });
    const first = await agent.run('Compare unit, integration and E2E tests.', { session, ...store });
    expect(created()[0]!.context_management).toEqual([{ type: 'compaction', compact_threshold: 200 }]);
    const kept = first.messages[0]!.contents.find(isCompactionItem);
    expect(kept?.item).toEqual(recordedItem);

    session = reload(agent, session);
    await agent.run('Which should I write first?', { session, ...store });
    const second = created()[1]!.input;
    expect(types(second)).toEqual(['compaction', 'message']);
    expect(JSON.stringify(second[0])).toBe(JSON.stringify(recordedItem));
    expect(inputTexts(second)).not.toContain('Compare unit');

    // The next turn is long: the server compacts it (its input passes 200 tokens) and returns a new item.
    session = reload(agent, session);
    const third = await agent.run(long('integration'), { session, ...store });
    expect(types(created()[2]!.input)).toEqual(['compaction', 'message', 'message', 'message']);
    const newer = third.messages[0]!.contents.find(isCompactionItem)!;
    expect(newer.item.id).not.toBe(recordedItem.id);

    session = reload(agent, session);
    const fourth = await agent.run('And E2E?', { session, ...store });
    const input = created()[3]!.input;
    expect(types(input)).toEqual(['compaction', 'message']);
    expect(input[0]).toEqual(newer.item);
    expect(inputTexts(input)).not.toContain('integration integration');
    expect(fourth.text).toContain('And E2E?');
    // The stored history keeps every message; only what is sent is pruned.
    expect((session.state.memory as { messages: unknown[] }).messages).toHaveLength(8);
  });

  it('streams the compaction item into the stored message and sends it back next turn', async () => {
    const agent = createAgent({ client: client(50) });
    let session = agent.createSession();
    const stream = agent.runStream(long('stream'), { session, options: { store: false } });
    for await (const _ of stream) void _;
    const first = await stream.response;
    const item = first.messages[0]!.contents.find(isCompactionItem);
    expect(item?.item.type).toBe('compaction');
    session = reload(agent, session);
    await agent.run('next', { session, options: { store: false } });
    const input = created()[1]!.input;
    expect(types(input)).toEqual(['compaction', 'message']);
    expect(input[0]).toEqual(item!.item);
  });

  it('keeps a call before the compaction item when its output follows, so the pair is sent together', async () => {
    const lookup = defineTool({
      name: 'lookup',
      description: 'Looks a word up.',
      parameters: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
      execute: ({ word }: { word: string }) => `${word}: a test`,
    });
    server.enqueue({ toolCalls: [{ name: 'lookup', arguments: { word: 'e2e' } }] }, { text: 'E2E is a test.' });
    const agent = createAgent({ client: client(50), tools: [lookup] });
    const res = await agent.run(long('define'), { options: { store: false } });
    expect(res.text).toBe('E2E is a test.');
    const [, loop] = created();
    expect(types(loop!.input)).toEqual(['function_call', 'compaction', 'function_call_output']);
  });

  it('sends context_management on a previous_response_id chain and prunes nothing there', async () => {
    const agent = createAgent({ client: client(50) });
    const session = agent.createSession();
    await agent.run(long('chain'), { session });
    await agent.run('more', { session });
    const [first, second] = created();
    expect(first!.context_management).toEqual([{ type: 'compaction', compact_threshold: 50 }]);
    expect(second!.previous_response_id).toEqual(expect.stringMatching(/^resp_/));
    expect(types(second!.input)).toEqual(['message']);
  });

  it('refuses a threshold that is not a positive integer, naming the option', () => {
    expect(() => client(0)).toThrow(ConfigurationError);
    expect(() => client(1.5)).toThrow(/compactThreshold/);
  });
});

describe('standalone compaction (compact, serviceCompaction)', () => {
  it('compact returns the window: the user messages as they were, then the compaction item', async () => {
    const u1 = Message.user('I am Ann.');
    const u2 = Message.user('I live in Oslo.');
    const window = await client().compact([u1, Message.assistant('Hello Ann.'), u2], { instructions: 'Keep names.' });
    expect(window.messages.map((m) => m.id).slice(0, 2)).toEqual([u1.id, u2.id]);
    const last = window.messages[2]!;
    expect(last.role).toBe('assistant');
    const item = last.contents.find(isCompactionItem)!;
    expect(window.messages.slice(0, 2).map((m) => m.metadata?.compactionWindow)).toEqual([item.item.id, item.item.id]);
    const request = server.requests.find((r) => r.route === '/responses/compact')!;
    expect(request.body).toMatchObject({ model: 'gpt-5.2', instructions: 'Keep names.' });
    expect(window.usage?.totalTokens).toBeGreaterThan(0);
  });

  it('serviceCompaction replaces stored history with the window, which is then sent as is, over turns saved as JSON', async () => {
    const responses = client();
    const agent = createAgent({
      client: responses,
      contextProviders: [
        new InMemoryHistoryProvider(),
        new CompactionProvider({ strategy: serviceCompaction({ client: responses, trigger: { turns: 1 } }) }),
      ],
    });
    const store = { options: { store: false } };
    let session = agent.createSession();
    await agent.run('I am Ann.', { session, ...store });
    session = reload(agent, session);
    await agent.run('I live in Oslo.', { session, ...store });
    session = reload(agent, session);
    await agent.run('Where do I live?', { session, ...store });
    const compactCalls = () => server.requests.filter((r) => r.route === '/responses/compact');
    expect(compactCalls()).toHaveLength(1);
    const third = created()[2]!.input;
    // The window (the first user message, unpruned), the compaction item, then the newest stored turn
    // (kept word for word) and the new message; the first answer is what the item stands for.
    expect(types(third)).toEqual(['message', 'compaction', 'message', 'message', 'message']);
    expect(inputTexts(third)).toContain('I am Ann.');
    expect(inputTexts(third)).not.toContain('You said: I am Ann.');
    expect(inputTexts(third)).toContain('You said: I live in Oslo.');

    session = reload(agent, session);
    await agent.run('And my name?', { session, ...store });
    expect(compactCalls()).toHaveLength(2);
    // The second compaction is given the first window and item, and keeps both user messages.
    expect(types((compactCalls()[1]!.body as { input: Item[] }).input)).toEqual(['message', 'compaction', 'message', 'message']);
    const fourth = created()[3]!.input;
    expect(types(fourth)).toEqual(['message', 'message', 'compaction', 'message', 'message', 'message']);
    expect(inputTexts(fourth.slice(0, 2))).toContain('I live in Oslo.');
  });
});
