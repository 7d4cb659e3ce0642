import { createCharacterTokenizer, Message } from '@ctx/core';
import { describe, expect, it } from 'vitest';
import { createMemoryMessage, DEFAULT_MEMORY_HEADER, fitMemories, isMemoryMessage, renderMemories } from './memory-message.js';

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
