import { ConfigurationError, SessionStateError } from '@ctx/core';
import { describe, expect, it } from 'vitest';
import { platformFilters } from './mem0-adapter.js';
import { checkMem0Id, isValidMem0Id, MAX_MEM0_ID_LENGTH, pickScope, resolveIds, scopeKey } from './scope.js';

describe('checkMem0Id: an id can never widen a mem0 filter', () => {
  it.each([
    ['*', /"\*"/],
    ['alice*', /"\*"/],
    ['', /empty/],
    [' alice', /whitespace/],
    ['alice ', /whitespace/],
    ['al ice', /whitespace/],
    ['alice\n', /whitespace/],
    ['alice\u0000', /control/],
    ['alice\u2028', /whitespace/],
    ['\ud800alice', /lone surrogate/],
    ['x'.repeat(MAX_MEM0_ID_LENGTH + 1), /at most 256/],
    [{ in: ['alice', 'bob'] }, /must be a string, got object/],
    [['alice'], /got array/],
    [42, /got number/],
    [null, /got null/],
    [undefined, /got undefined/],
  ])('%j is refused', (value, problem) => {
    expect(checkMem0Id(value)).toMatch(problem);
    expect(isValidMem0Id(value)).toBe(false);
  });

  it.each([
    'alice',
    'ALICE',
    'user-42',
    'a@example.com',
    'tenant:7/user:9',
    '__proto__',
    'Ünïcødé',
    '👩‍💻',
    'x'.repeat(MAX_MEM0_ID_LENGTH),
    '{"in":["a"]}',
  ])('%j is accepted as the literal string it is', (value) => {
    expect(checkMem0Id(value)).toBeUndefined();
    expect(platformFilters({ userId: value })).toEqual({ user_id: value });
  });
});

describe('scopes', () => {
  it('state ids override defaults, one by one; a bad state id is a SessionStateError naming its path', () => {
    expect(resolveIds({ userId: 'u', agentId: 'a' }, { agentId: 'b', other: 1 }, '$.state.mem0')).toEqual({ userId: 'u', agentId: 'b' });
    const error = (() => {
      try {
        resolveIds({}, { userId: '*' }, '$.state.mem0');
      } catch (e) {
        return e;
      }
    })();
    expect(SessionStateError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ path: '$.state.mem0.userId' });
    expect((error as Error).message).toMatch(/"\*" must not contain "\*"/);
  });

  it('pickScope takes exactly the keys asked for, all or nothing; runId falls back to a valid session id', () => {
    const ids = { userId: 'u', agentId: 'a' };
    expect(pickScope(['userId'], ids, 's1')).toEqual({ userId: 'u' });
    expect(pickScope(['userId', 'appId'], ids, 's1')).toBeUndefined();
    expect(pickScope(['agentId', 'runId'], ids, 's1')).toEqual({ agentId: 'a', runId: 's1' });
    expect(() => pickScope(['runId'], ids, 'a b')).toThrow(ConfigurationError);
    expect(pickScope(['userId'], ids, 'a b')).toEqual({ userId: 'u' }); // the session id is only checked when needed
    expect(scopeKey({ userId: 'u' })).not.toBe(scopeKey({ agentId: 'u' }));
  });
});
