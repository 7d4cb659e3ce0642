/**
 * Fuzz: whatever is stored where a conversation lives (random text, raw bytes, JSON of any shape,
 * nesting 100,000 levels deep, `__proto__` keys, keys of the wrong Redis type, a corrupt id set),
 * every read gives messages or a `SessionStateError`, `Object.prototype` stays clean, and nothing
 * hangs. `FUZZ_RUNS` sets the runs (default 300; the nightly run uses 20,000).
 */
import { Message, SessionStateError } from '@ctx/core';
import { findNonJson } from '@ctx/core/backend';
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { FUZZ_RUNS } from '@ctx/fuzz-kit';
import { FUZZ_TEST_TIMEOUT, materialize, messageGarbage, outcome } from '../test/garbage.js';
import { singleClient, uniquePrefix } from '../test/helpers.js';
import { RedisHistoryProvider } from './redis-history-provider.js';

const client = singleClient();
const provider = new RedisHistoryProvider({ client, prefix: uniquePrefix('fuzz-history') });
const sessionId = 'fuzz';
const keys = provider.keys(sessionId);

type WrongType = 'string' | 'hash' | 'set' | 'zset' | 'list' | 'stream';
const wrongType = (...types: WrongType[]) => fc.record({ wrongType: fc.constantFrom(...types) });

/** Writes a key of another Redis type than the one the provider expects there. */
async function writeWrongType(key: string, type: WrongType): Promise<void> {
  if (type === 'string') await client.set(key, 'not a list');
  else if (type === 'hash') await client.hset(key, 'f', 'v');
  else if (type === 'set') await client.sadd(key, 'm');
  else if (type === 'zset') await client.zadd(key, 1, 'm');
  else if (type === 'list') await client.rpush(key, 'x');
  else await client.xadd(key, '*', 'f', 'v');
}

const score = fc.oneof(
  fc.integer({ min: -5, max: 20 }).map(String),
  fc.double({ noNaN: true, min: -1e6, max: 1e6 }).map(String),
  fc.constantFrom('inf', '-inf', '+inf', '9007199254740993', '1e300'),
);

const layout = fc.record({
  list: fc.oneof(
    { weight: 6, arbitrary: fc.array(messageGarbage, { maxLength: 6 }) },
    wrongType('string', 'hash', 'set', 'zset', 'stream'),
  ),
  ids: fc.oneof(
    fc.constant('absent' as const),
    { weight: 3, arbitrary: fc.array(fc.tuple(fc.string({ maxLength: 3 }), score), { maxLength: 4 }) },
    wrongType('string', 'hash', 'set', 'list', 'stream'),
  ),
  limit: fc.integer({ min: 1, max: 8 }),
  cursor: fc.option(fc.nat({ max: 12 }), { nil: undefined }),
  pageSize: fc.integer({ min: 1, max: 4 }),
});

/** Every outcome of a read: messages that are messages, each id once, or a SessionStateError. */
function check(name: string, result: { value: Message[] } | { error: Error }): void {
  if ('error' in result) {
    expect(SessionStateError.isInstance(result.error), `${name}: ${result.error.name}: ${result.error.message}`).toBe(true);
    const path = (result.error as SessionStateError).path;
    expect(path.startsWith(`redis:${keys.messages}`) || path === `redis:${keys.ids}`, path).toBe(true);
    return;
  }
  for (const m of result.value) {
    expect(Message.isMessage(m), name).toBe(true);
    // What a read gives back can be saved again as it is: plain JSON within the depth limit.
    expect(findNonJson(m), name).toBeUndefined();
    expect(Object.getPrototypeOf(m)).toBe(Object.prototype);
    if (m.metadata) expect(Object.getPrototypeOf(m.metadata)).toBe(Object.prototype);
  }
  expect(new Set(result.value.map((m) => m.id)).size, `${name}: ids once`).toBe(result.value.length);
}

it(
  `RedisHistoryProvider reads of garbage give messages or a SessionStateError, never anything else (${FUZZ_RUNS} runs)`,
  async () => {
    await fc.assert(
      fc.asyncProperty(layout, async ({ list, ids, limit, cursor, pageSize }) => {
        await client.del(keys.messages, keys.ids);
        if (Array.isArray(list)) {
          if (list.length > 0) await client.rpush(keys.messages, ...list.map((g) => materialize(g)));
        } else await writeWrongType(keys.messages, list.wrongType);
        if (Array.isArray(ids)) {
          for (const [member, at] of ids) await client.zadd(keys.ids, at, member);
        } else if (ids !== 'absent') await writeWrongType(keys.ids, ids.wrongType);

        const state = {};
        check('getMessages', await outcome('getMessages', () => provider.getMessages(sessionId, { state })));
        check('getMessages with a limit', await outcome('getMessages', () => provider.getMessages(sessionId, { state, limit })));
        const page = await outcome('listMessages', () =>
          provider.listMessages(sessionId, { limit, ...(cursor === undefined ? {} : { cursor: String(cursor) }) }),
        );
        check('listMessages', 'value' in page ? { value: page.value.messages } : page);
        const exported = await outcome('exportMessages', async () => {
          const out: Message[] = [];
          for await (const m of provider.exportMessages(sessionId, { pageSize })) {
            out.push(m);
            if (out.length > 100) throw new Error('exportMessages did not end');
          }
          return out;
        });
        check('exportMessages', exported);
      }),
      { numRuns: FUZZ_RUNS },
    );
    await client.del(keys.messages, keys.ids);
  },
  FUZZ_TEST_TIMEOUT,
);
