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
    expect(['gpt-4-turbo', 'gpt-3.5-turbo', 'gpt-35-turbo', 'text-embedding-3-small'].map(encodingForModel)).toEqual(
      Array(4).fill('cl100k_base'),
    );
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

describe('compaction with the exact tokenizer', () => {
  it('tokenBudget holds by the exact count and keeps calls with their results', async () => {
    const { tokenBudget } = await import('@ctx/core');
    const { hasOrphans } = await import('@ctx/core/backend');
    const t = createOpenAITokenizer({ model: 'gpt-4o' });
    const messages: Message[] = [Message.system('You are terse.')];
    for (let i = 0; i < 30; i++) {
      messages.push(Message.user(`Question ${i}: what is the status of order ${1000 + i}?`));
      messages.push(
        Message.assistant([{ type: 'function-call', callId: `c${i}`, name: 'lookup_order', arguments: JSON.stringify({ id: 1000 + i }) }]),
      );
      messages.push(
        Message.tool({
          type: 'function-result',
          callId: `c${i}`,
          name: 'lookup_order',
          result: { id: 1000 + i, status: 'shipped', items: Array.from({ length: 20 }, (_, k) => `item ${k}`) },
        }),
      );
      messages.push(Message.assistant(`Order ${1000 + i} has shipped.`));
    }
    for (const budget of [300, 1000, 4000]) {
      const out = await tokenBudget({ maxTokens: budget, tokenizer: t }).compact(messages, {});
      expect(t.countMessageTokens(out)).toBeLessThanOrEqual(budget);
      expect(hasOrphans(out)).toBe(false);
      expect(out[0]!.role).toBe('system');
      expect(out.at(-1)).toEqual(messages.at(-1));
    }
  });
});
