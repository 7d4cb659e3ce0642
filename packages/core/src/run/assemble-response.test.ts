import { describe, expect, it } from 'vitest';
import { Message } from '../messages/message.js';
import { addUsage, assembleResponse } from './assemble-response.js';

let n = 0;
const newId = () => `gen-${++n}`;

describe('assembleResponse', () => {
  it('joins text deltas and merges function-call argument pieces by callId', () => {
    const res = assembleResponse(
      [
        { messageId: 'm1', role: 'assistant', contents: [{ type: 'reasoning', text: 'think', id: 'r' }] },
        { messageId: 'm1', contents: [{ type: 'reasoning', text: 'ing', id: 'r', encrypted: 'enc' }] },
        { messageId: 'm1', contents: [{ type: 'text', text: 'Hel' }] },
        { messageId: 'm1', contents: [{ type: 'text', text: 'lo' }] },
        { messageId: 'm1', contents: [{ type: 'function-call', callId: 'c1', name: 'f', arguments: '{"a"' }] },
        { messageId: 'm1', contents: [{ type: 'function-call', callId: 'c2', name: 'g', arguments: '{}' }] },
        { messageId: 'm1', contents: [{ type: 'function-call', callId: 'c1', name: '', arguments: ':1}' }] },
        { contents: [], finishReason: 'tool-calls', usage: { inputTokens: 3 }, conversationId: 'conv' },
        { contents: [], usage: { inputTokens: 2, outputTokens: 1 } },
      ],
      newId,
    );
    expect(res.messages).toHaveLength(1);
    expect(res.messages[0]!.contents).toEqual([
      { type: 'reasoning', text: 'thinking', id: 'r', encrypted: 'enc' },
      { type: 'text', text: 'Hello' },
      { type: 'function-call', callId: 'c1', name: 'f', arguments: '{"a":1}' },
      { type: 'function-call', callId: 'c2', name: 'g', arguments: '{}' },
    ]);
    expect(res).toMatchObject({ finishReason: 'tool-calls', conversationId: 'conv', usage: { inputTokens: 5, outputTokens: 1 } });
  });

  it('starts a new message on a new id or role', () => {
    const res = assembleResponse(
      [
        { role: 'assistant', contents: [{ type: 'text', text: 'a' }] },
        { role: 'assistant', contents: [{ type: 'text', text: 'b' }] },
        { role: 'tool', contents: [{ type: 'function-result', callId: 'c', result: 1 }] },
        { messageId: 'x', role: 'assistant', contents: [{ type: 'text', text: 'c' }] },
      ],
      newId,
    );
    expect(res.messages.map((m) => [m.role, Message.text(m)])).toEqual([
      ['assistant', 'ab'],
      ['tool', ''],
      ['assistant', 'c'],
    ]);
  });

  it('addUsage sums what is present', () => {
    expect(addUsage(undefined, undefined)).toBeUndefined();
    expect(addUsage({ inputTokens: 1 }, { outputTokens: 2 })).toEqual({ inputTokens: 1, outputTokens: 2 });
  });
});
