/**
 * Fuzz: whatever items are stored where a conversation lives (messages of any shape, any JSON,
 * nesting up to 1,500 levels, `__proto__` keys, a `seq` of any type, an item id that does not
 * match its message), every read gives messages or a `SessionStateError`, `Object.prototype`
 * stays clean, and nothing hangs. `FUZZ_RUNS` sets the runs (default 300; the nightly run uses 20,000).
 */
import { Message, SessionStateError } from '@ctx/core';
import { findNonJson } from '@ctx/core/backend';
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { FUZZ_RUNS, json, jsonOrDeep, materialize, messageLike, validMessage } from '@ctx/fuzz-kit';
import { FUZZ_TEST_TIMEOUT, outcome } from '../test/garbage.js';
import { cosmosClient, uniqueId } from '../test/helpers.js';
import { CosmosHistoryProvider } from './cosmos-history-provider.js';

const provider = new CosmosHistoryProvider({ client: cosmosClient(), databaseId: uniqueId('fuzz'), createIfNotExists: true });
const sessionId = 'fuzz';
const state = {};
const { head } = await provider.itemIds(sessionId, 'x');
await provider.countMessages(sessionId); // creates the container
const where = `cosmos:${provider.container.database.id}/history[`;

const item = fc.record(
  {
    /** Whether the item id is the one the provider would give this message (else a made-up one). */
    matchingId: fc.boolean(),
    kind: fc.oneof({ weight: 8, arbitrary: fc.constant('message') }, json),
    sourceId: fc.oneof({ weight: 8, arbitrary: fc.constant('cosmos') }, json),
    seq: fc.oneof(
      { weight: 4, arbitrary: fc.integer({ min: -3, max: 20 }) },
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      jsonOrDeep,
    ),
    message: fc.oneof({ weight: 3, arbitrary: validMessage }, { weight: 3, arbitrary: messageLike }, jsonOrDeep),
    ['__proto__']: json,
  },
  { requiredKeys: ['matchingId'] },
);

const layout = fc.record({
  items: fc.array(item, { maxLength: 5 }),
  limit: fc.integer({ min: 1, max: 6 }),
});

/** Every outcome of a read: messages that are messages, or a SessionStateError naming an item. */
function check(name: string, result: { value: Message[] } | { error: Error }): void {
  if ('error' in result) {
    expect(SessionStateError.isInstance(result.error), `${name}: ${result.error.name}: ${result.error.message}`).toBe(true);
    expect((result.error as SessionStateError).path.startsWith(where), (result.error as SessionStateError).path).toBe(true);
    return;
  }
  for (const m of result.value) {
    expect(Message.isMessage(m), name).toBe(true);
    // What a read gives back can be saved again as it is: plain JSON within the depth limit.
    expect(findNonJson(m), name).toBeUndefined();
    expect(Object.getPrototypeOf(m)).toBe(Object.prototype);
    if (m.metadata) expect(Object.getPrototypeOf(m.metadata)).toBe(Object.prototype);
  }
}

it(
  `CosmosHistoryProvider reads of garbage give messages or a SessionStateError, never anything else (${FUZZ_RUNS} runs)`,
  async () => {
    const partitionKey = provider.partitionValue(sessionId);
    await fc.assert(
      fc.asyncProperty(layout, async ({ items, limit }) => {
        const { resources: old } = await provider.container.items.query<string>('SELECT VALUE c.id FROM c').fetchAll();
        for (const oldId of old) await provider.container.item(oldId, partitionKey).delete();
        for (const [i, { matchingId, ...fields }] of items.entries()) {
          const messageId = (fields.message as { id?: unknown } | undefined)?.id;
          const id =
            matchingId && typeof messageId === 'string' ? (await provider.itemIds(sessionId, messageId)).message : `${head}:garbage-${i}`;
          await provider.container.items.upsert({ ...(materialize(fields) as object), id, sessionKey: partitionKey });
        }
        check('getMessages', await outcome('getMessages', () => provider.getMessages(sessionId, { state })));
        check('getMessages with a limit', await outcome('getMessages', () => provider.getMessages(sessionId, { state, limit })));
        const page = await outcome('listMessages', () => provider.listMessages(sessionId, { limit }));
        check('listMessages', 'value' in page ? { value: page.value.messages } : page);
      }),
      { numRuns: FUZZ_RUNS },
    );
  },
  FUZZ_TEST_TIMEOUT,
);
