import { describe, expect, it } from 'vitest';
import { Message } from '../messages/message.js';
import { createCharacterTokenizer } from './character-tokenizer.js';

describe('createCharacterTokenizer', () => {
  it('estimates text and message tokens with per-message overhead', () => {
    const t = createCharacterTokenizer({ charsPerToken: 4, perMessageOverhead: 3 });
    expect(t.countTokens('12345678')).toBe(2);
    expect(t.countTokens('123456789')).toBe(3);
    expect(t.countMessageTokens([Message.user('12345678'), Message.assistant('')])).toBe(2 + 3 + 3);
  });
});
