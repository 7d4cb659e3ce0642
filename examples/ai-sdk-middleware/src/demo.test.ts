import type { Message } from '@ctx/core';
import { describe, expect, it } from 'vitest';
import { runDemo } from './demo.js';

describe('ai-sdk-middleware demo', () => {
  it('keeps the conversation, retrieves the help page, and runs both kinds of tool', async () => {
    const { turns, store } = await runDemo('customer-7');
    expect(turns.map((t) => t.reply)).toEqual([
      'Order A7 shipped on Monday. Shipping to Norway takes 5 working days. (I see 0 earlier user messages.)',
      'I opened ticket T-1001 for the broken order.',
      'Items can be returned within 30 days with the receipt. (I see 2 earlier user messages.)',
    ]);
    // Turn 1: ctx ran the provider's order tool inside the call; the help page came from retrieval.
    expect(turns[0]!.ctx.modelCalls).toBe(2);
    expect(turns[0]!.ctx.added['help-pages']).toEqual({ messages: 1, instructions: 0, tools: 0 });
    expect(turns[0]!.prompt.map((l) => l.role)).toEqual(['system', 'user', 'user', 'assistant', 'tool']);
    expect(turns[2]!.ctx.added).toMatchObject({ memory: { messages: 8 }, 'help-pages': { messages: 1 } });
    // Turn 3 (streamed) saw the first two turns from history, the AI SDK's ticket tool loop included.
    const third = turns[2]!.prompt.map((l) => `${l.role}: ${l.text.slice(0, 24)}`);
    expect(third).toContain('assistant: [calls openTicket({"subj');
    expect(third.at(-1)).toBe('user: Can it be returned inste');
    // The store holds each message of the three turns once; retrieved pages are not part of it.
    const saved = await store.get('customer-7');
    const messages = saved!.session.state.memory!.messages as unknown as Message[];
    expect(messages.map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
      'user',
      'assistant',
      'tool',
      'assistant',
      'user',
      'assistant',
    ]);
  });
});
