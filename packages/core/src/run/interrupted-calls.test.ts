import { describe, expect, it } from 'vitest';
import { Message } from '../messages/message.js';
import { answerInterruptedCalls, INTERRUPTED_RESULT } from './interrupted-calls.js';

const calls = (id: string, ...callIds: string[]) =>
  Message.assistant(
    callIds.map((callId) => ({ type: 'function-call' as const, callId, name: 'act', arguments: '{}' })),
    { id },
  );
const result = (callId: string) => Message.tool({ type: 'function-result', callId, name: 'act', result: 'ok' });

describe('answerInterruptedCalls', () => {
  it('answers open calls right after the message holding them, leaving answered ones and those held open alone', () => {
    const messages = [
      Message.user('go'),
      Message.withSource(calls('a1', 'x', 'y', 'z'), 'redis', 'history'),
      result('y'),
      Message.user('next'),
    ];
    const { messages: out, answered } = answerInterruptedCalls(messages, new Set(['z']));
    expect(answered).toBe(1);
    expect(out.map((m) => m.id)).toEqual([messages[0]!.id, 'a1', 'a1~interrupted', messages[2]!.id, messages[3]!.id]);
    expect(out[2]).toEqual({
      id: 'a1~interrupted',
      role: 'tool',
      contents: [{ type: 'function-result', callId: 'x', name: 'act', result: { error: INTERRUPTED_RESULT }, isError: true }],
      metadata: { ctx: { sourceId: 'redis', sourceType: 'history' } },
    });
    expect(messages).toHaveLength(4); // the input list is not changed
  });

  it('returns the same list when every call has its result, wherever it sits (the input may carry it)', () => {
    const messages = [calls('a1', 'x'), Message.user('meanwhile'), result('x')];
    expect(answerInterruptedCalls(messages)).toEqual({ messages, answered: 0 });
    expect(answerInterruptedCalls(messages).messages).toBe(messages);
  });
});
