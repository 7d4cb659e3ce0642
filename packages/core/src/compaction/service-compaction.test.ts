import { describe, expect, it } from 'vitest';
import { Message } from '../messages/message.js';
import type { Content } from '../contracts/message.js';
import { ScriptedChatClient } from '../testing/scripted-chat-client.js';
import { createCharacterTokenizer } from '../tokens/character-tokenizer.js';
import { flattenGroups, groupMessages, hasOrphans, sentMessagesOf, splitProtected } from './message-groups.js';
import { COMPACTION_WINDOW, isCompactionItem, newestCompactionIndex, withoutCompacted } from './service-compaction.js';
import { slidingWindow, tokenBudget, toolResultCollapse, truncation } from './strategies.js';
import { summarization } from './summarization.js';
import { compactWhen } from './triggers.js';

const tokenizer = createCharacterTokenizer();
const compaction = (id: string): Content => ({
  type: 'hosted-tool',
  item: { id, type: 'compaction', encrypted_content: `gAAAAAB${id}` },
});
const words = (n: number, word = 'lorem') => Array.from({ length: n }, () => word).join(' ');
const ids = (messages: readonly Message[]) => messages.map((m) => m.id);

/**
 * Six turns; the service compacted at the end of the third answer (`a3` holds its compaction item),
 * so `u1` to `a3` are what the item stands for: long turns before it, short ones after.
 */
function conversation(): Message[] {
  const long = words(400);
  return [
    Message.user(`first ${long}`, { id: 'u1' }),
    Message.assistant(`answer ${long}`, { id: 'a1' }),
    Message.user(`second ${long}`, { id: 'u2' }),
    Message.assistant(`answer ${long}`, { id: 'a2' }),
    Message.user(`third ${long}`, { id: 'u3' }),
    Message.assistant([{ type: 'text', text: `answer ${long}` }, compaction('cmp_1')], { id: 'a3' }),
    Message.user('fourth', { id: 'u4' }),
    Message.assistant('answer four', { id: 'a4' }),
    Message.user('fifth', { id: 'u5' }),
    Message.assistant('answer five', { id: 'a5' }),
    Message.user('sixth', { id: 'u6' }),
  ];
}

/** Whether the result keeps a message the compaction item stands for while dropping the item. */
function resurrects(result: readonly Message[]): boolean {
  const replaced = new Set(['u1', 'a1', 'u2', 'a2', 'u3']);
  return !result.some((m) => m.id === 'a3') && result.some((m) => replaced.has(m.id));
}

describe('service compaction items', () => {
  it('recognizes a hosted-tool item of type compaction, and nothing else', () => {
    expect(isCompactionItem(compaction('cmp_1'))).toBe(true);
    expect(isCompactionItem({ type: 'hosted-tool', item: { type: 'web_search_call', id: 'ws_1' } })).toBe(false);
    expect(isCompactionItem({ type: 'reasoning', text: '', encrypted: 'x' })).toBe(false);
  });

  it('withoutCompacted keeps the newest compaction item and what follows it, plus context and its window', () => {
    const messages = conversation();
    expect(newestCompactionIndex(messages)).toBe(5);
    expect(ids(withoutCompacted(messages))).toEqual(['a3', 'u4', 'a4', 'u5', 'a5', 'u6']);
    const context = Message.user('retrieved: Oslo is in Norway', {
      id: 'ctx',
      metadata: { ctx: { sourceId: 'rag', sourceType: 'context' } },
    });
    const summary = Message.system('Summary of the earlier conversation:\nhello', {
      id: 'sum',
      metadata: { ctx: { sourceId: 'compaction', sourceType: 'context', summary: { replaces: ['x'], createdAt: '2026-01-01T00:00:00Z' } } },
    });
    const windowed = Message.user('kept by the compact call', { id: 'win', metadata: { [COMPACTION_WINDOW]: 'cmp_1' } });
    const staleWindow = Message.user('an older window', { id: 'old', metadata: { [COMPACTION_WINDOW]: 'cmp_0' } });
    const list = [context, summary, staleWindow, windowed, ...messages];
    expect(ids(withoutCompacted(list))).toEqual(['ctx', 'win', 'a3', 'u4', 'a4', 'u5', 'a5', 'u6']);
    expect(ids(withoutCompacted(messages.slice(6)))).toEqual(['u4', 'a4', 'u5', 'a5', 'u6']);
  });

  it('groups the compaction item with everything before it, and counts only what is sent', () => {
    const messages = conversation();
    const groups = groupMessages(messages);
    expect(groups[0]!.kind).toBe('compaction');
    expect(ids(groups[0]!.messages)).toEqual(['u1', 'a1', 'u2', 'a2', 'u3', 'a3']);
    expect(ids(sentMessagesOf(groups[0]!))).toEqual(['a3']);
    expect(flattenGroups(groups)).toEqual(messages);
    expect(ids(splitProtected(groups).recent.flatMap((g) => g.messages))).toEqual(['u6']);
  });

  it('keeps a tool exchange that spans the compaction item in its group, and protects the turn in progress', () => {
    const messages = [
      Message.user('old', { id: 'u0' }),
      Message.assistant('old answer', { id: 'a0' }),
      Message.user('look it up', { id: 'u1' }),
      Message.assistant([compaction('cmp_9'), { type: 'function-call', callId: 'c1', name: 'search', arguments: '{}' }], { id: 'a1' }),
      Message.tool({ type: 'function-result', callId: 'c1', result: 'found' }, { id: 't1' }),
    ];
    const groups = groupMessages(messages);
    expect(groups).toHaveLength(1);
    expect(ids(groups[0]!.messages)).toEqual(['u0', 'a0', 'u1', 'a1', 't1']);
    expect(splitProtected(groups).recent).toEqual(groups);
    expect(truncation({ maxMessages: 1 }).compact(messages, {})).toEqual(messages);
  });
});

describe('built-in strategies never cut a compaction item from what it stands for', () => {
  it('truncation counts only what is sent, so a short window after the item is left alone', () => {
    const messages = conversation();
    expect(tokenizer.countMessageTokens(messages)).toBeGreaterThan(2000);
    const strategy = truncation({ maxTokens: 1500, tokenizer });
    expect(strategy.compact(messages, {})).toEqual(messages);
  });

  it('truncation drops the compaction item together with what it stands for, never the item alone', () => {
    const result = truncation({ maxMessages: 4, target: 1 }).compact(conversation(), {}) as Message[];
    expect(resurrects(result)).toBe(false);
    expect(ids(result)).toEqual(['a4', 'u5', 'a5', 'u6']);
    expect(ids(truncation({ maxMessages: 6, target: 1 }).compact(conversation(), {}) as Message[])).toEqual(ids(conversation()));
  });

  it('slidingWindow keeps or drops the item with its messages as one group', () => {
    expect(ids(slidingWindow({ maxGroups: 6 }).compact(conversation(), {}) as Message[])).toEqual(ids(conversation()));
    const narrow = slidingWindow({ maxGroups: 3 }).compact(conversation(), {}) as Message[];
    expect(resurrects(narrow)).toBe(false);
    expect(ids(narrow)).toEqual(['u5', 'a5', 'u6']);
  });

  it('toolResultCollapse leaves the compaction group as it is', () => {
    const big = 'x'.repeat(1000);
    const messages = [
      Message.user('q', { id: 'u1' }),
      Message.assistant({ type: 'function-call', callId: 'c1', name: 'fetch', arguments: '{}' }, { id: 'a1' }),
      Message.tool({ type: 'function-result', callId: 'c1', name: 'fetch', result: big }, { id: 't1' }),
      Message.assistant([{ type: 'text', text: 'done' }, compaction('cmp_2')], { id: 'a2' }),
      Message.user('next', { id: 'u2' }),
      Message.assistant({ type: 'function-call', callId: 'c2', name: 'fetch', arguments: '{}' }, { id: 'a3' }),
      Message.tool({ type: 'function-result', callId: 'c2', name: 'fetch', result: big }, { id: 't2' }),
      Message.assistant({ type: 'function-call', callId: 'c3', name: 'fetch', arguments: '{}' }, { id: 'a4' }),
      Message.tool({ type: 'function-result', callId: 'c3', name: 'fetch', result: big }, { id: 't3' }),
      Message.user('again', { id: 'u3' }),
    ];
    const result = toolResultCollapse({ keepRecent: 1 }).compact(messages, {}) as Message[];
    expect(result[2]).toBe(messages[2]);
    expect(String((result[6]!.contents[0] as { result: unknown }).result)).toMatch(/^\[collapsed:/);
    expect(result[8]).toBe(messages[8]);
    expect(hasOrphans(result)).toBe(false);
  });

  it('summarization keeps the item and puts the summary after it, where the service still reads it', async () => {
    const summarizer = new ScriptedChatClient({ replies: ['The user asked four and five.'] });
    const strategy = summarization({ client: summarizer, keepRecentGroups: 0 });
    const result = await strategy.compact(conversation(), {});
    expect(ids(result).slice(0, 6)).toEqual(['u1', 'a1', 'u2', 'a2', 'u3', 'a3']);
    expect(result[6]!.metadata?.ctx).toMatchObject({ summary: { replaces: ['u4', 'a4', 'u5', 'a5'] } });
    expect(ids(result).slice(7)).toEqual(['u6']);
    expect(ids(withoutCompacted(result))).toEqual(['a3', result[6]!.id, 'u6']);
    const asked = Message.text(summarizer.calls[0]!.messages[0]!);
    expect(asked).toContain('fourth');
    expect(asked).not.toContain('first');
  });

  it('summarization with nothing after the item leaves the conversation unchanged', async () => {
    const summarizer = new ScriptedChatClient({ replies: ['unused'] });
    const messages = conversation().slice(0, 7);
    expect(await summarization({ client: summarizer, keepRecentGroups: 0 }).compact(messages, {})).toEqual(messages);
    expect(summarizer.calls).toHaveLength(0);
  });

  it('tokenBudget and token triggers count only what is sent', async () => {
    const messages = conversation();
    expect(await tokenBudget({ maxTokens: 1500, tokenizer }).compact(messages, {})).toEqual(messages);
    const tight = await tokenBudget({ maxTokens: 20, target: 1, tokenizer }).compact(messages, {});
    expect(resurrects(tight)).toBe(false);
    let ran = 0;
    const spy = {
      compact: (m: readonly Message[]) => {
        ran++;
        return [...m];
      },
    };
    await compactWhen({ tokens: 1500, tokenizer }, spy).compact(messages, {});
    expect(ran).toBe(0);
    await compactWhen({ messages: 5 }, spy).compact(messages, {});
    expect(ran).toBe(1);
  });
});
