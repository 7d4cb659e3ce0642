import { describe, expect, it } from 'vitest';
import { Message } from '../messages/message.js';
import { pairResults } from './pair-results.js';

const calls = (id: string, ...callIds: string[]) =>
  Message.assistant(
    callIds.map((callId) => ({ type: 'function-call' as const, callId, name: 'f', arguments: '{}' })),
    { id },
  );
const results = (id: string, ...callIds: string[]) =>
  Message.tool(
    callIds.map((callId) => ({ type: 'function-result' as const, callId, name: 'f', result: callId })),
    { id },
  );
const ids = (messages: Message[]) => messages.map((m) => m.id);

describe('pairResults', () => {
  it('returns the list itself when every result already follows its calls', () => {
    const list = [
      Message.user('q', { id: 'u' }),
      calls('a', 'c1', 'c2'),
      results('t1', 'c1'),
      results('t2', 'c2'),
      Message.user('next', { id: 'u2' }),
    ];
    expect(pairResults(list)).toBe(list);
  });

  it('moves results that came after later messages up to follow their calls, after those already there, in order', () => {
    const list = [
      calls('a', 'c1', 'c2', 'c3'),
      results('t1', 'c1'),
      Message.user('meanwhile', { id: 'u' }),
      results('t2', 'c2'),
      results('t3', 'c3'),
      Message.assistant('done', { id: 'r' }),
    ];
    expect(ids(pairResults(list))).toEqual(['a', 't1', 't2', 't3', 'u', 'r']);
  });

  it('places each group of results after its own calls and leaves results without their calls where they are', () => {
    const list = [
      results('orphan', 'c0'),
      calls('a', 'c1'),
      Message.user('u1', { id: 'u1' }),
      calls('b', 'c2'),
      Message.user('u2', { id: 'u2' }),
      results('t2', 'c2'),
      results('t1', 'c1'),
    ];
    expect(ids(pairResults(list))).toEqual(['orphan', 'a', 't1', 'u1', 'b', 't2', 'u2']);
  });
});
