import { describe, expect, it } from 'vitest';
import { ConfigurationError } from '../errors.js';
import { SemanticRecallProvider } from '../recall/semantic-recall-provider.js';
import { createHashEmbedding } from '../retrieval/hash-embedding.js';
import { InMemoryVectorIndex } from '../retrieval/in-memory-vector-index.js';
import { InMemoryHistoryProvider } from '../history/in-memory-history-provider.js';
import { Message } from '../messages/message.js';
import type { AgentEvent } from '../contracts/events.js';
import { createAgent } from '../run/create-agent.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { defineTool } from '../tools/define-tool.js';
import { CompactionProvider } from './compaction-provider.js';
import { hasOrphans, isSummary } from './message-groups.js';
import { slidingWindow, toolResultCollapse, truncation } from './strategies.js';
import { summarization, summaryInfo } from './summarization.js';

const texts = (m: readonly Message[]) => m.map((x) => Message.text(x) || x.role);
const stored = (state: unknown) => (state as { messages: Message[] }).messages;

describe('summarization', () => {
  it('summarizes the oldest groups into one marked message and folds an earlier summary in', async () => {
    const summarizer = new ScriptedChatClient({ replies: ['Ann planned a trip to Oslo.', 'Ann planned Oslo, then booked a hotel.'] });
    const strategy = summarization({ client: summarizer, keepRecentGroups: 2 });
    const turns = (from: number, to: number) =>
      Array.from({ length: to - from }, (_, i) => [
        Message.user(`q${from + i}`, { id: `u${from + i}` }),
        Message.assistant(`a${from + i}`, { id: `a${from + i}` }),
      ]).flat();
    const first = await strategy.compact([Message.system('sys', { id: 's' }), ...turns(0, 4)], {});
    expect(texts(first)).toEqual(['sys', 'Summary of the earlier conversation:\nAnn planned a trip to Oslo.', 'q2', 'a2', 'q3', 'a3']);
    expect(summaryInfo(first[1]!)?.replaces).toEqual(['u0', 'a0', 'u1', 'a1']);
    expect(summarizer.calls[0]!.messages).toHaveLength(1);
    expect(Message.text(summarizer.calls[0]!.messages[0]!)).toBe('user: q0\nassistant: a0\nuser: q1\nassistant: a1');

    const second = await strategy.compact([...first, ...turns(4, 6)], {});
    expect(second.filter(isSummary)).toHaveLength(1);
    expect(summaryInfo(second[1]!)?.replaces).toEqual(['u0', 'a0', 'u1', 'a1', 'u2', 'a2', 'u3', 'a3']);
    expect(Message.text(summarizer.calls[1]!.messages[0]!)).toContain('[earlier summary] Ann planned a trip to Oslo.');
    expect(texts(second).slice(2)).toEqual(['q4', 'a4', 'q5', 'a5']);
    // nothing to do: no call, same messages
    expect(await strategy.compact(second, {})).toEqual(second);
    expect(summarizer.calls).toHaveLength(2);
  });

  it('runs once per run inside the tool loop: later calls reuse the summary', async () => {
    const summarizer = new ScriptedChatClient({ replies: ['earlier: greetings'] });
    const ping = defineTool({ name: 'ping', parameters: { type: 'object' }, execute: () => 'pong' });
    const client = new ScriptedChatClient({ replies: [{ toolCalls: [{ name: 'ping' }] }, { toolCalls: [{ name: 'ping' }] }, 'done'] });
    const agent = createAgent({ client, tools: [ping], compaction: summarization({ client: summarizer, keepRecentGroups: 1 }) });
    const history = [
      Message.user('hi'),
      Message.assistant('hello'),
      Message.user('how are you'),
      Message.assistant('fine'),
      Message.user('ping twice'),
    ];
    await agent.run(history);
    expect(summarizer.calls).toHaveLength(1);
    for (const call of client.calls) {
      expect(isSummary(call.messages[0]!)).toBe(true);
      expect(hasOrphans(call.messages)).toBe(false);
    }
    expect(texts(client.calls[2]!.messages).slice(1, 3)).toEqual(['fine', 'ping twice']);
  });
});

describe('CompactionProvider', () => {
  it('compacts the stored history and the view before the call; the audit log keeps everything', async () => {
    const client = new ScriptedChatClient({ replies: (_m, _o, i) => `answer ${i}` });
    const history = new InMemoryHistoryProvider({ sourceId: 'history' });
    const audit = new InMemoryHistoryProvider({ sourceId: 'audit', loadMessages: false });
    const agent = createAgent({
      client,
      contextProviders: [history, new CompactionProvider({ strategy: truncation({ maxMessages: 4, target: 1 }) }), audit],
    });
    const session = agent.createSession();
    for (let i = 0; i < 6; i++) await agent.run(`question ${i}`, { session });
    // the model never saw more than 4 history messages plus the input
    for (const call of client.calls) expect(call.messages.length).toBeLessThanOrEqual(5);
    expect(texts(client.calls[5]!.messages)).toEqual(['question 3', 'answer 3', 'question 4', 'answer 4', 'question 5']);
    // stored history was rewritten before the last run, then the last turn was appended
    expect(texts(stored(session.state.history))).toEqual(['question 3', 'answer 3', 'question 4', 'answer 4', 'question 5', 'answer 5']);
    expect(stored(session.state.audit)).toHaveLength(12);
    // and it still round-trips
    expect(agent.restoreSession(JSON.stringify(session)).state.history).toEqual(JSON.parse(JSON.stringify(session.state.history)));
  });

  it('works on the default in-memory history and keeps a summary through storage', async () => {
    const summarizer = new ScriptedChatClient({ replies: (_m, _o, i) => `summary ${i}` });
    const client = new ScriptedChatClient({ replies: (_m, _o, i) => `answer ${i}` });
    const agent = createAgent({
      client,
      contextProviders: [
        new CompactionProvider({ strategy: summarization({ client: summarizer, keepRecentGroups: 2, trigger: { messages: 6 } }) }),
      ],
    });
    const session = agent.createSession();
    for (let i = 0; i < 6; i++) await agent.run(`question ${i}`, { session });
    const memory = stored(session.state.memory);
    expect(memory.filter(isSummary)).toHaveLength(1);
    expect(isSummary(memory[0]!)).toBe(true);
    expect(memory.length).toBeLessThan(12);
    const lastCall = client.calls.at(-1)!.messages;
    expect(isSummary(lastCall[0]!)).toBe(true);
    // made once, stored, and reused: what the model saw is what was stored
    expect(Message.text(lastCall[0]!)).toBe(Message.text(memory[0]!));
    expect(summarizer.calls.length).toBeLessThanOrEqual(2);
    expect(Message.source(lastCall[0]!)?.sourceType).toBe('history');
    expect(texts(lastCall).at(-1)).toBe('question 5');
  });

  it('leaves stored history alone when asked', async () => {
    const client = new ScriptedChatClient({ replies: ['a', 'b', 'c'] });
    const agent = createAgent({
      client,
      contextProviders: [new CompactionProvider({ strategy: slidingWindow({ maxGroups: 1 }), rewriteStoredHistory: false })],
    });
    const session = agent.createSession();
    for (const q of ['one', 'two', 'three']) await agent.run(q, { session });
    expect(texts(stored(session.state.memory))).toEqual(['one', 'a', 'two', 'b', 'three', 'c']);
    expect(texts(client.calls[2]!.messages)).toEqual(['two', 'b', 'three']);
  });

  it('compacts after storing when placed before its history, so stored history meets the policy between runs', async () => {
    const client = new ScriptedChatClient({ replies: (_m, _o, i) => `answer ${i}` });
    const history = new InMemoryHistoryProvider({ sourceId: 'history' });
    const agent = createAgent({
      client,
      contextProviders: [new CompactionProvider({ strategy: truncation({ maxMessages: 4, target: 1 }), when: 'after-store' }), history],
    });
    const session = agent.createSession();
    for (let i = 0; i < 4; i++) {
      await agent.run(`question ${i}`, { session });
      expect(stored(session.state.history).length).toBeLessThanOrEqual(4);
    }
    expect(texts(stored(session.state.history))).toEqual(['question 2', 'answer 2', 'question 3', 'answer 3']);
    // the model saw the full stored history of the previous runs: compaction happened after storing
    expect(texts(client.calls[3]!.messages)).toEqual(['question 1', 'answer 1', 'question 2', 'answer 2', 'question 3']);
  });

  it('says how to place an after-store compaction that would run before the history stored', async () => {
    const client = new ScriptedChatClient({ replies: ['a'] });
    const strategy = truncation({ maxMessages: 4 });
    const misplaced = createAgent({
      client,
      contextProviders: [new InMemoryHistoryProvider({ sourceId: 'history' }), new CompactionProvider({ strategy, when: 'after-store' })],
    });
    await expect(misplaced.run('hi', { session: misplaced.createSession() })).rejects.toThrow(
      /must come before history provider "history"/,
    );
    const onDefault = createAgent({ client, contextProviders: [new CompactionProvider({ strategy, when: 'after-store' })] });
    await expect(onDefault.run('hi', { session: onDefault.createSession() })).rejects.toThrow(/default history always comes first/);
    expect(() => new CompactionProvider({ strategy, when: 'later' as never })).toThrow(ConfigurationError);
    expect(client.calls).toHaveLength(0);
  });

  it('keeps the history when the summarizer fails or answers blank, reports it, and the run goes on', async () => {
    for (const reply of [{ error: new Error('summarizer down') }, '   ']) {
      const events: AgentEvent[] = [];
      const summarizer = new ScriptedChatClient({ replies: [reply] });
      const client = new ScriptedChatClient({ replies: (_m, _o, i) => `answer ${i}` });
      const agent = createAgent({
        client,
        onEvent: (e) => events.push(e),
        contextProviders: [
          new InMemoryHistoryProvider({ sourceId: 'history' }),
          new CompactionProvider({ strategy: summarization({ client: summarizer, keepRecentGroups: 1, trigger: { messages: 3 } }) }),
        ],
      });
      const session = agent.createSession();
      for (let i = 0; i < 3; i++) await agent.run(`question ${i}`, { session });
      expect(summarizer.calls).toHaveLength(1);
      expect(stored(session.state.history)).toHaveLength(6); // nothing replaced by an empty summary
      expect(stored(session.state.history).some(isSummary)).toBe(false);
      expect(texts(client.calls[2]!.messages)).toEqual(['question 0', 'answer 0', 'question 1', 'answer 1', 'question 2']);
      const diagnostic = events.find((e) => e.type === 'provider-diagnostic');
      expect(diagnostic).toMatchObject({ sourceId: 'compaction', code: 'summary-failed' });
    }
  });

  it('hands a failed summary to the fallback strategy when one is configured', async () => {
    const reports: string[] = [];
    const strategy = summarization({
      client: new ScriptedChatClient({ replies: [''] }),
      keepRecentGroups: 1,
      fallback: truncation({ maxMessages: 2, target: 1 }),
    });
    const conversation = ['a', 'b', 'c'].flatMap((q) => [Message.user(q), Message.assistant(`re ${q}`)]);
    const out = await strategy.compact(conversation, { report: (d) => reports.push(d.code) });
    expect(texts(out)).toEqual(['c', 're c']);
    expect(reports).toEqual(['summary-failed']);
  });

  it("sends the uncompacted list when the agent's compaction throws, with a warning; an abort still ends the run", async () => {
    const events: AgentEvent[] = [];
    const client = new ScriptedChatClient({ replies: ['fine'] });
    const broken = { compact: () => Promise.reject(new Error('strategy bug')) };
    const agent = createAgent({ client, compaction: broken, onEvent: (e) => events.push(e) });
    const response = await agent.run([Message.user('one'), Message.assistant('two'), Message.user('three')]);
    expect(response.text).toBe('fine');
    expect(texts(client.calls[0]!.messages)).toEqual(['one', 'two', 'three']);
    expect(events.find((e) => e.type === 'warning')).toMatchObject({
      code: 'compaction-failed',
      message: expect.stringContaining('strategy bug'),
    });

    const orphaning = { compact: (m: readonly Message[]) => m.filter((x) => x.role !== 'tool') };
    const ping = defineTool({ name: 'ping', parameters: { type: 'object' }, execute: () => 'pong' });
    const looping = new ScriptedChatClient({ replies: [{ toolCalls: [{ name: 'ping' }] }, 'done'] });
    await createAgent({ client: looping, tools: [ping], compaction: orphaning }).run('go');
    expect(hasOrphans(looping.calls[1]!.messages)).toBe(false); // a list that orphans a call is not sent

    const controller = new AbortController();
    const aborting = {
      compact: () => {
        controller.abort();
        return Promise.reject(controller.signal.reason);
      },
    };
    await expect(createAgent({ client, compaction: aborting }).run('x', { signal: controller.signal })).rejects.toThrow();
  });
});

describe('compaction with archive: true', () => {
  const embeddings = createHashEmbedding();
  const functionResults = (messages: readonly Message[]) => messages.flatMap((m) => m.contents).filter((c) => c.type === 'function-result');

  /** Four turns, the first with a detail the summary leaves out, then a question about that detail answered with the recall tool. */
  async function askAfterSummary(archive: boolean) {
    const summarizer = new ScriptedChatClient({ replies: () => ({ text: 'The user shared some personal errands.' }) });
    const index = new InMemoryVectorIndex();
    const client = new ScriptedChatClient({
      replies: (messages) =>
        Message.text(messages.at(-1)!).startsWith('What was my locker code')
          ? { toolCalls: [{ name: 'recall', arguments: { query: 'locker code at the gym' } }] }
          : { text: 'noted' },
    });
    const agent = createAgent({
      client,
      contextProviders: [
        new CompactionProvider({ strategy: summarization({ client: summarizer, keepRecentGroups: 1, archive }) }),
        new SemanticRecallProvider({ embeddings, index, mode: 'tool', indexMessages: false }),
      ],
    });
    const session = agent.createSession();
    for (const text of ['My locker code at the gym is 4471.', 'I fly to Lisbon in March.', 'The plumber comes on Thursday.'])
      await agent.run(text, { session });
    await agent.run('What was my locker code at the gym?', { session });
    const toolCall = client.calls.findIndex((c) => c.messages.some((m) => m.role === 'tool'));
    return { client, index, session, answer: client.calls[toolCall]!.messages };
  }

  it('summarization archives what it replaces; the summary names the recall tool, which finds the summarized-away detail', async () => {
    const { client, index, session, answer } = await askAfterSummary(true);
    const summary = client.calls.at(-2)!.messages.find(isSummary)!;
    expect(Message.text(summary)).not.toContain('4471');
    expect(Message.text(summary)).toContain('archived: call the `recall` tool to search them');
    expect(summaryInfo(summary)?.archived).toBe(true);
    const [result] = functionResults(answer);
    expect(JSON.stringify(result!.result)).toContain('My locker code at the gym is 4471.');
    const archived = await index.getRange({ sessionId: session.sessionId, fromSequence: 0, toSequence: 1e6 });
    expect(archived.length).toBeGreaterThan(0);
    expect(archived.every((r) => r.kind === 'archive')).toBe(true);
  });

  it('without archive the summarized-away detail is gone and the summary promises nothing', async () => {
    const { client, answer } = await askAfterSummary(false);
    expect(Message.text(client.calls.at(-2)!.messages.find(isSummary)!)).not.toContain('archived');
    expect(JSON.stringify(functionResults(answer)[0]!.result)).not.toContain('4471');
  });

  it('toolResultCollapse archives the full result; the marker says so and a later question recalls the part cut away', async () => {
    const bulky = `${'Shipment log entry, nothing of note. '.repeat(20)}Tracking number for the blue parcel: ZX-90210.`;
    const lookup = defineTool<{ id: string }>({
      name: 'lookup',
      description: 'Looks up a shipment.',
      parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
      execute: ({ id }) => (id === 'blue' ? bulky : `Shipment ${id}: delivered.`),
    });
    let call = 0;
    const client = new ScriptedChatClient({
      replies: (messages) =>
        messages.at(-1)!.role === 'user' && !Message.text(messages.at(-1)!).startsWith('What')
          ? { toolCalls: [{ name: 'lookup', arguments: { id: call++ === 0 ? 'blue' : 'red' } }] }
          : { text: 'done' },
    });
    const agent = createAgent({
      client,
      tools: [lookup],
      contextProviders: [
        new CompactionProvider({ strategy: toolResultCollapse({ keepRecent: 1, archive: true }) }),
        new SemanticRecallProvider({ embeddings, scope: 'session', indexMessages: false }),
      ],
    });
    const session = agent.createSession();
    await agent.run('Check the blue shipment.', { session });
    await agent.run('Check the red shipment.', { session });
    await agent.run('What is the tracking number of the blue parcel?', { session });
    const sent = client.calls.at(-1)!.messages;
    const collapsed = functionResults(sent).find((c) => String(c.result).startsWith('[collapsed:'));
    expect(String(collapsed!.result)).toContain('lookup result, archived: exact details are recalled when relevant');
    expect(String(collapsed!.result)).not.toContain('ZX-90210');
    const recalled = sent.find((m) => Message.source(m)?.sourceId === 'recall');
    expect(Message.text(recalled!)).toContain('Tracking number for the blue parcel: ZX-90210.');
  });

  it('an archive that fails replaces nothing and is reported', async () => {
    const summarizer = new ScriptedChatClient({ replies: () => ({ text: 'summary' }) });
    const reports: string[] = [];
    const strategy = summarization({ client: summarizer, keepRecentGroups: 1, archive: true });
    const messages = ['a', 'b', 'c'].flatMap((x) => [Message.user(`q ${x}`), Message.assistant(`a ${x}`)]);
    const out = await strategy.compact(messages, {
      report: (d) => reports.push(d.code),
      archive: {
        store: async () => {
          throw new Error('index down');
        },
      },
    });
    expect(out).toEqual(messages);
    expect(reports).toEqual(['archive-failed']);
    expect(summarizer.calls).toHaveLength(0);
  });
});
