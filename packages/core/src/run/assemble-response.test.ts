import { describe, expect, it } from 'vitest';
import { Message } from '../messages/message.js';
import { createAgentResponse } from './agent-response.js';
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

  it('appends a delta to the last text piece only when it continues it (same message, role, phase, no annotations)', () => {
    const note = { type: 'url-citation', url: 'https://example.com', title: 'ex', startIndex: 0, endIndex: 2 } as const;
    const res = assembleResponse(
      [
        { messageId: 'm1', role: 'assistant', contents: [{ type: 'text', text: 'a' }] },
        { messageId: 'm1', role: 'assistant', contents: [{ type: 'text', text: 'b' }] },
        { messageId: 'm1', contents: [{ type: 'text', text: 'c', annotations: [note] }] },
        { contents: [{ type: 'text', text: 'd' }], usage: { outputTokens: 4 } },
        { messageId: 'm1', contents: [{ type: 'text', text: 'p', phase: 'commentary' }] },
        { messageId: 'm2', contents: [{ type: 'text', text: 'x' }] },
        { messageId: 'm1', contents: [{ type: 'text', text: 'q', phase: 'commentary' }] },
        { messageId: 'm1', role: 'user', contents: [{ type: 'text', text: 'u' }] },
        { messageId: 'm2', role: 'assistant', contents: [{ type: 'text', text: 'y' }], finishReason: 'stop' },
      ],
      newId,
    );
    expect(res.messages.map((m) => [m.id, m.role, m.contents])).toEqual([
      [
        'm1',
        'assistant',
        [
          { type: 'text', text: 'abcd', annotations: [note] },
          { type: 'text', text: 'pq', phase: 'commentary' },
        ],
      ],
      ['m2', 'assistant', [{ type: 'text', text: 'xy' }]],
      [expect.any(String), 'user', [{ type: 'text', text: 'u' }]],
    ]);
    expect(res).toMatchObject({ finishReason: 'stop', usage: { outputTokens: 4 } });
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

  it('keeps phases apart, joins annotations and refusals, keeps hosted tool items in order', () => {
    const cite = (url: string) => ({ type: 'url-citation' as const, url, startIndex: 0, endIndex: 1 });
    const item = { id: 'ws_1', type: 'web_search_call', status: 'completed' };
    const res = assembleResponse(
      [
        { messageId: 'r', role: 'assistant', contents: [{ type: 'text', text: 'Let me ', phase: 'commentary' }] },
        { messageId: 'r', contents: [{ type: 'text', text: 'look.', phase: 'commentary' }] },
        { messageId: 'r', contents: [{ type: 'hosted-tool', item }] },
        { messageId: 'r', contents: [{ type: 'text', text: 'Oslo', phase: 'final-answer' }] },
        { messageId: 'r', contents: [{ type: 'text', text: ' is cold.', phase: 'final-answer', annotations: [cite('a')] }] },
        { messageId: 'r', contents: [{ type: 'text', text: '', phase: 'final-answer', annotations: [cite('b')] }] },
        { messageId: 'r', contents: [{ type: 'refusal', refusal: 'I will ' }] },
        { messageId: 'r', contents: [{ type: 'refusal', refusal: 'not.' }] },
      ],
      newId,
    );
    expect(res.messages[0]!.contents).toEqual([
      { type: 'text', text: 'Let me look.', phase: 'commentary' },
      { type: 'hosted-tool', item },
      { type: 'text', text: 'Oslo is cold.', phase: 'final-answer', annotations: [cite('a'), cite('b')] },
      { type: 'refusal', refusal: 'I will not.' },
    ]);
  });

  it('puts interleaved message ids (several choices) each in its own message', () => {
    const res = assembleResponse(
      [
        { messageId: 'c0', role: 'assistant', contents: [{ type: 'text', text: 'A' }] },
        { messageId: 'c1', role: 'assistant', contents: [{ type: 'text', text: 'B' }] },
        { messageId: 'c0', role: 'assistant', contents: [{ type: 'text', text: 'a' }] },
        { messageId: 'c1', role: 'assistant', contents: [{ type: 'text', text: 'b' }] },
      ],
      newId,
    );
    expect(res.messages.map((m) => [m.id, Message.text(m)])).toEqual([
      ['c0', 'Aa'],
      ['c1', 'Bb'],
    ]);
  });

  it('addUsage sums what is present', () => {
    expect(addUsage(undefined, undefined)).toBeUndefined();
    expect(addUsage({ inputTokens: 1 }, { outputTokens: 2 })).toEqual({ inputTokens: 1, outputTokens: 2 });
    expect(addUsage({ inputTokens: 10, cachedInputTokens: 4 }, { inputTokens: 5, cachedInputTokens: 1, reasoningTokens: 3 })).toEqual({
      inputTokens: 15,
      cachedInputTokens: 5,
      reasoningTokens: 3,
    });
  });
});

describe('assembleResponse and message metadata', () => {
  it("merges each update's metadata into its message, also metadata sent before the first content", () => {
    let n = 0;
    const response = assembleResponse(
      [
        { messageId: 'a', role: 'assistant', contents: [], metadata: { serviceMessageId: 'chatcmpl-1' } },
        { messageId: 'a', contents: [{ type: 'text', text: 'Hel' }] },
        { messageId: 'a', contents: [{ type: 'text', text: 'lo' }], metadata: { extra: 1 } },
        { messageId: 'b', role: 'assistant', contents: [{ type: 'text', text: 'B' }], metadata: { serviceMessageId: 'chatcmpl-1:1' } },
        { messageId: 'a', contents: [], finishReason: 'stop' },
      ],
      () => `new-${++n}`,
    );
    expect(response.messages.map(({ id, metadata, contents }) => ({ id, metadata, contents }))).toEqual([
      { id: 'a', metadata: { serviceMessageId: 'chatcmpl-1', extra: 1 }, contents: [{ type: 'text', text: 'Hello' }] },
      { id: 'b', metadata: { serviceMessageId: 'chatcmpl-1:1' }, contents: [{ type: 'text', text: 'B' }] },
    ]);
  });
});

describe('the response text', () => {
  it("leaves out the model's commentary and keeps its final answer", () => {
    const response = createAgentResponse([
      Message.assistant([
        { type: 'text', text: 'Let me check the docs.', phase: 'commentary' },
        { type: 'text', text: 'The answer is 42.', phase: 'final-answer' },
      ]),
      Message.assistant('Plain text counts too.'),
    ]);
    expect(response.text).toBe('The answer is 42.Plain text counts too.');
  });
});
