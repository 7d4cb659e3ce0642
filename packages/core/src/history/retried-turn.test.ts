import { describe, expect, it } from 'vitest';
import { Message } from '../messages/message.js';
import type { SourceType } from '../contracts/message.js';
import { findRetriedTurn } from './retried-turn.js';

const m = (id: string, type: SourceType) => Message.withSource(Message.user(id, { id }), type, type);

describe('findRetriedTurn', () => {
  const earlier = [m('u0', 'input'), m('r0', 'response')];

  it('finds the stored attempt: the input, the responses after it, and the context stored just before it', () => {
    const stored = [...earlier, m('doc', 'context'), m('u1', 'input'), m('u2', 'input'), m('r1', 'response'), m('r2', 'response')];
    expect(findRetriedTurn(stored, ['u1', 'u2'])).toEqual({ start: 2, end: 7 });
    expect(findRetriedTurn(stored.slice(0, 5), ['u1', 'u2'])).toEqual({ start: 2, end: 5 }); // an attempt killed before its reply
  });

  it('never takes a compaction summary before the turn into it: the summary stands for the turns before', () => {
    const summary = Message.system('Summary of the earlier conversation: ...', {
      id: 'sum',
      metadata: { ctx: { sourceId: 'compaction', sourceType: 'context', summary: { replaces: ['u0', 'r0'] } } },
    });
    const stored = [summary, m('doc', 'context'), m('u1', 'input'), m('r1', 'response')];
    expect(findRetriedTurn(stored, ['u1'])).toEqual({ start: 1, end: 4 });
  });

  it('finds an attempt that is not the newest turn, up to the next turn', () => {
    const stored = [...earlier, m('u1', 'input'), m('r1', 'response'), m('doc', 'context'), m('u2', 'input'), m('r2', 'response')];
    expect(findRetriedTurn(stored, ['u0'])).toEqual({ start: 0, end: 2 });
    expect(findRetriedTurn(stored, ['u1'])).toEqual({ start: 2, end: 4 });
    expect(findRetriedTurn(stored, ['u2'])).toEqual({ start: 4, end: 7 });
  });

  it('finds nothing for a new turn or an empty input, and nothing when the stored input says something else', () => {
    expect(findRetriedTurn(earlier, ['u1'])).toBeUndefined();
    expect(findRetriedTurn(earlier, [])).toBeUndefined();
    const same = Message.user('u0', { id: 'u0' });
    const other = Message.user('something else', { id: 'u0' });
    expect(findRetriedTurn(earlier, ['u0'], [same])).toEqual({ start: 0, end: 2 });
    expect(findRetriedTurn(earlier, ['u0'], [other])).toBeUndefined();
  });

  it('reads stored entries that are not messages without throwing', () => {
    expect(findRetriedTurn([null, 7, 'text', { id: 'u1' }], ['u1'])).toEqual({ start: 3, end: 4 });
  });
});

describe('findRetriedTurn and reused messages', () => {
  it('a turn stored with more or fewer inputs than these is another turn', () => {
    const stored = [m('u0', 'input'), m('r0', 'response'), m('u1', 'input'), m('u2', 'input'), m('r1', 'response')];
    expect(findRetriedTurn(stored, ['u0', 'u9'])).toBeUndefined();
    expect(findRetriedTurn(stored, ['u1'])).toBeUndefined();
    expect(findRetriedTurn(stored, ['u2', 'u1'])).toEqual({ start: 2, end: 5 });
  });
});
