import { describe, expect, it } from 'vitest';
import { Message } from '../messages/message.js';
import type { SourceType } from '../spec/message.js';
import { findRetriedTurn } from './retried-turn.js';

const m = (id: string, type: SourceType) => Message.withSource(Message.user(id, { id }), type, type);

describe('findRetriedTurn', () => {
  const earlier = [m('u0', 'input'), m('r0', 'response')];

  it('finds the stored attempt: the input, the responses after it, and the context stored just before it', () => {
    const stored = [...earlier, m('doc', 'context'), m('u1', 'input'), m('u2', 'input'), m('r1', 'response'), m('r2', 'response')];
    expect(findRetriedTurn(stored, ['u1', 'u2'])).toBe(2);
    expect(findRetriedTurn(stored.slice(0, 4), ['u1', 'u2'])).toBe(2); // an attempt killed before its reply
  });

  it('finds nothing for a new turn, an empty input, or an input id stored before another turn', () => {
    expect(findRetriedTurn(earlier, ['u1'])).toBeUndefined();
    expect(findRetriedTurn(earlier, [])).toBeUndefined();
    expect(findRetriedTurn([...earlier, m('u1', 'input'), m('r1', 'response')], ['u0'])).toBeUndefined();
    expect(findRetriedTurn([m('u1', 'input'), m('x', 'history'), m('r1', 'response')], ['u1'])).toBeUndefined();
  });

  it('reads stored entries that are not messages without throwing', () => {
    expect(findRetriedTurn([null, 7, 'text', { id: 'u1' }], ['u1'])).toBe(3);
  });
});
