import { createCharacterTokenizer, Message } from '@ctx/core';
import { describe, expect, it } from 'vitest';
import { createMemoryMessage, DEFAULT_MEMORY_HEADER, fitMemories, isMemoryMessage, renderMemories } from './memory-message.js';
import { turnMessages } from './mem0-context-provider.js';
import { SessionContext } from '@ctx/core';

const m = (id: string, text: string) => ({ id, text, score: 1 });

describe('the memory message', () => {
  it('is the header and one "- " line per memory, most relevant first, marked with the memory ids', () => {
    const message = createMemoryMessage([m('a', 'Likes tea.'), m('b', 'Lives\nin   Oslo.')], 'user', (ms) => renderMemories(ms));
    expect(Message.text(message)).toBe(`${DEFAULT_MEMORY_HEADER}\n- Likes tea.\n- Lives in Oslo.`);
    expect(message.role).toBe('user');
    expect(message.metadata).toEqual({ mem0: { memoryIds: ['a', 'b'] } });
    expect(isMemoryMessage(message)).toBe(true);
    expect(isMemoryMessage(JSON.parse(JSON.stringify(Message.withSource(message, 'mem0', 'input'))))).toBe(true); // survives a round trip and re-attribution
    expect(isMemoryMessage(Message.user('hi', { metadata: { mem0: 'x' } }))).toBe(false);
  });

  it('fitMemories keeps the longest fitting prefix, measuring the whole message', () => {
    const tokenizer = createCharacterTokenizer();
    const memories = [m('a', 'a'.repeat(100)), m('b', 'b'.repeat(10)), m('c', 'c'.repeat(10))];
    const build = (ms: readonly { id: string; text: string }[]) => createMemoryMessage(ms, 'user', (x) => renderMemories(x, 'H'));
    const all = fitMemories(memories, build, tokenizer);
    expect(all.kept).toHaveLength(3);
    expect(all.tokens).toBe(tokenizer.countMessageTokens([all.message!]));
    const two = tokenizer.countMessageTokens([build(memories.slice(0, 2))]);
    expect(fitMemories(memories, build, tokenizer, two).kept.map((x) => x.id)).toEqual(['a', 'b']);
    expect(fitMemories(memories, build, tokenizer, two - 1).kept.map((x) => x.id)).toEqual(['a']);
    // The first memory alone is too big: nothing is kept, not even the smaller ones ranked below it.
    expect(fitMemories(memories, build, tokenizer, 10)).toEqual({ kept: [], message: undefined, tokens: 0 });
  });
});

describe('turnMessages', () => {
  it('takes the user input and the assistant reply text only, by attribution', () => {
    const memory = createMemoryMessage([m('a', 'Likes tea.')], 'user', (ms) => renderMemories(ms));
    const context = new SessionContext({ sessionId: 's', inputMessages: [Message.user('I like tea.'), memory, Message.system('be brief')] });
    context.extendMessages('mem0', [memory]);
    context.extendMessages('history', [Message.user('old turn')], 'history');
    context.response = {
      messages: [
        Message.assistant([{ type: 'text', text: 'Checking.' }, { type: 'function-call', callId: 'c', name: 'f', arguments: '{}' }]),
        Message.tool({ type: 'function-result', callId: 'c', result: 'tool output' }),
        Message.withSource(Message.assistant('injected echo'), 'rag', 'context'),
        Message.assistant([{ type: 'reasoning', text: 'thinking' }, { type: 'text', text: 'Tea it is.' }]),
      ],
      text: 'Tea it is.',
    } as never;
    expect(turnMessages(context)).toEqual([
      { role: 'user', content: 'I like tea.' },
      { role: 'assistant', content: 'Tea it is.' },
    ]);
  });
});
