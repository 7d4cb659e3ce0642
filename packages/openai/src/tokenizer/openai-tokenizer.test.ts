import { describe, expect, it } from 'vitest';
import { Message } from '@ctx/core';
import { createOpenAITokenizer, encodingForModel } from './openai-tokenizer.js';

describe('createOpenAITokenizer', () => {
  it('encodes exactly as tiktoken does', () => {
    const cl100k = createOpenAITokenizer({ model: 'gpt-4' });
    expect(cl100k.encoding).toBe('cl100k_base');
    // the reference example of OpenAI's token counting guide
    expect(cl100k.encode('tiktoken is great!')).toEqual([83, 1609, 5963, 374, 2294, 0]);
    const o200k = createOpenAITokenizer({ model: 'gpt-4o-mini' });
    expect(o200k.encoding).toBe('o200k_base');
    expect(o200k.countTokens('hello world')).toBe(2);
    expect(o200k.countTokens('')).toBe(0);
  });

  it('maps models to encodings', () => {
    expect(['gpt-4o', 'gpt-4.1-nano', 'o3-mini', 'gpt-5', 'o4-mini'].map(encodingForModel)).toEqual(Array(5).fill('o200k_base'));
    expect(['gpt-4-turbo', 'gpt-3.5-turbo', 'gpt-35-turbo', 'text-embedding-3-small'].map(encodingForModel)).toEqual(Array(4).fill('cl100k_base'));
  });

  it('counts chat framing: 3 per message plus the role, 1 per name, 3 to prime the reply', () => {
    const t = createOpenAITokenizer({ model: 'gpt-4o' });
    const text = 'The quick brown fox jumps over the lazy dog.';
    const body = t.countTokens(text);
    expect(t.countMessageTokens([])).toBe(3);
    expect(t.countMessageTokens([Message.user(text)])).toBe(3 + 3 + 1 + body);
    expect(t.countMessageTokens([Message.user(text, { authorName: 'ann' })])).toBe(3 + 3 + 1 + body + 1 + t.countTokens('ann'));
    expect(t.countMessageTokens([Message.system('a'), Message.assistant('b')])).toBe(3 + (3 + 1 + 1) * 2);
  });
});
