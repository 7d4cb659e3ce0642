import { Message } from '@ctx/core';
import { describe, expect, it } from 'vitest';
import { cosmosClient, uniqueId } from '../test/helpers.js';
import { CosmosHistoryProvider } from './cosmos-history-provider.js';

// The history lives in Cosmos DB, not in the session's state slot: a session without a slot for
// the provider (state undefined), or a call from JavaScript without the arguments object, works as
// with an empty slot (a `scope` resolver is given `{}`), never with a TypeError.

const texts = (messages: readonly Message[]) => messages.map((m) => Message.text(m));
const client = cosmosClient();
const databaseId = uniqueId('no-slot');

/** Every history method of the contract on one session, called with `args(…)` as their arguments; resolves to the states a scope resolver saw. */
async function everyMethod(args: <T extends object>(given: T) => T, hierarchical: boolean): Promise<unknown[]> {
  const seen: unknown[] = [];
  const history = new CosmosHistoryProvider({
    client,
    databaseId,
    containerId: uniqueId('c'),
    createIfNotExists: true,
    ...(hierarchical
      ? {
          scope: ({ state }) => {
            seen.push(state);
            return { tenantId: 't', userId: 'u' };
          },
        }
      : {}),
  });
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
  return seen;
}

describe('CosmosHistoryProvider without a state slot', () => {
  const undefinedState = <T extends object>(given: T) => Object.fromEntries(Object.keys(given).map((key) => [key, undefined])) as T;
  const noArgs = () => undefined as never;

  for (const hierarchical of [false, true]) {
    const partitioning = hierarchical ? 'hierarchical partitioning (a scope resolver)' : 'partitioned by session';
    it(`works with state undefined, as with an empty slot (${partitioning})`, async () => {
      const seen = await everyMethod(undefinedState, hierarchical);
      expect(seen.length).toBe(hierarchical ? 10 : 0);
      expect(seen.every((state) => JSON.stringify(state) === '{}')).toBe(true);
    });

    it(`works when a JavaScript caller passes no arguments object (${partitioning})`, async () => {
      const seen = await everyMethod(noArgs, hierarchical);
      expect(seen.every((state) => JSON.stringify(state) === '{}')).toBe(true);
    });
  }
});
