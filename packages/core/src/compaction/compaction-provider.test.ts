import { describe, expect, it } from 'vitest';
import { InMemoryHistoryProvider } from '../history/in-memory-history-provider.js';
import { Message } from '../messages/message.js';
import { createAgent } from '../run/create-agent.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { defineTool } from '../tools/define-tool.js';
import { CompactionProvider } from './compaction-provider.js';
import { hasOrphans, isSummary } from './message-groups.js';
import { slidingWindow, truncation } from './strategies.js';
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
      contextProviders: [history, new CompactionProvider({ strategy: truncation({ maxMessages: 4 }) }), audit],
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
});
