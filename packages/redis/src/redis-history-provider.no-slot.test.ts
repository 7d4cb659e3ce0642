import { Message } from '@ctx/core';
import { describe, expect, it } from 'vitest';
import { singleClient, uniquePrefix } from '../test/helpers.js';
import { RedisHistoryProvider } from './redis-history-provider.js';

// The history lives in Redis, not in the session's state slot: a session without a slot for the
// provider (state undefined), or a call from JavaScript without the arguments object, works as with
// an empty slot, never with a TypeError.

const texts = (messages: readonly Message[]) => messages.map((m) => Message.text(m));
const client = singleClient();

/** Every history method of the contract on one session, called with `args(…)` as their arguments. */
async function everyMethod(args: <T extends object>(given: T) => T) {
  const history = new RedisHistoryProvider({ client, prefix: uniquePrefix('no-slot') });
  const [a, b, c] = [Message.user('a'), Message.assistant('b'), Message.user('c')];
  await history.saveMessages('s', [a, b, c], args({ state: {} }));
  expect(texts(await history.getMessages('s', args({ state: {} })))).toEqual(['a', 'b', 'c']);
  expect(texts(await history.popMessages('s', args({ state: {} })))).toEqual(['c']);
  expect(await history.forkMessages('s', 'fork', args({ fromState: {}, toState: {} }))).toBe(2);
  expect(texts(await history.getMessages('fork', args({ state: {} })))).toEqual(['a', 'b']);
  await history.replaceMessages('s', [b], args({ state: {} }));
  expect(texts(await history.getMessages('s', args({ state: {} })))).toEqual(['b']);
  await history.clearMessages('s', args({ state: {} }));
  expect(await history.getMessages('s', args({ state: {} }))).toEqual([]);
}

describe('RedisHistoryProvider without a state slot', () => {
  it('works with state undefined, as with an empty slot', async () => {
    await everyMethod((given) => Object.fromEntries(Object.keys(given).map((key) => [key, undefined])) as typeof given);
  });

  it('works when a JavaScript caller passes no arguments object', async () => {
    await everyMethod(() => undefined as never);
  });
});
