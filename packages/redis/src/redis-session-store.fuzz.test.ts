/**
 * Fuzz: whatever is stored where a session lives (random text, raw bytes, JSON of any shape,
 * nesting 100,000 levels deep, `__proto__` keys, a hash missing a field, a key of the wrong Redis
 * type), `get` gives a session or a `SessionStateError`, `Object.prototype` stays clean, and
 * nothing hangs. `FUZZ_RUNS` sets the runs (default 300; the nightly run uses 20,000).
 */
import { SessionStateError } from '@ctx/core';
import { parseSessionJson } from '@ctx/core/backend';
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { FUZZ_RUNS } from '@ctx/fuzz-kit';
import { FUZZ_TEST_TIMEOUT, materialize, outcome, sessionGarbage } from '../test/garbage.js';
import { singleClient, uniquePrefix } from '../test/helpers.js';
import { RedisSessionStore } from './redis-session-store.js';

const client = singleClient();
const store = new RedisSessionStore({ client, prefix: uniquePrefix('fuzz-store') });
const sessionId = 'fuzz';
const key = store.key(sessionId);

const layout = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      json: fc.option(sessionGarbage(sessionId), { nil: undefined }),
      etag: fc.option(fc.oneof(fc.uuid(), fc.string()), { nil: undefined }),
      extra: fc.option(fc.string({ maxLength: 4 }), { nil: undefined }),
    }),
  },
  fc.record({ wrongType: fc.constantFrom('string', 'list', 'set', 'zset', 'stream') }),
);

it(
  `RedisSessionStore.get of garbage gives a session or a SessionStateError, never anything else (${FUZZ_RUNS} runs)`,
  async () => {
    await fc.assert(
      fc.asyncProperty(layout, async (stored) => {
        await client.del(key);
        if ('wrongType' in stored) {
          if (stored.wrongType === 'string') await client.set(key, '{"json":"x"}');
          else if (stored.wrongType === 'list') await client.rpush(key, 'json');
          else if (stored.wrongType === 'set') await client.sadd(key, 'json');
          else if (stored.wrongType === 'zset') await client.zadd(key, 1, 'json');
          else await client.xadd(key, '*', 'json', '{}');
        } else {
          if (stored.json !== undefined) await client.hset(key, 'json', materialize(stored.json, sessionId));
          if (stored.etag !== undefined) await client.hset(key, 'etag', stored.etag);
          if (stored.extra !== undefined) await client.hset(key, stored.extra, 'x');
        }
        const result = await outcome('get', () => store.get(sessionId));
        if ('error' in result) {
          expect(SessionStateError.isInstance(result.error), `${result.error.name}: ${result.error.message}`).toBe(true);
          expect((result.error as SessionStateError).path.startsWith(`redis:${key}`)).toBe(true);
          return;
        }
        if (result.value === undefined) return;
        const { session, etag } = result.value;
        expect(typeof etag).toBe('string');
        expect(session.sessionId).toBe(sessionId);
        expect(parseSessionJson(session)).toEqual(session);
        for (const slot of Object.values(session.state)) expect(Object.getPrototypeOf(slot)).toBe(Object.prototype);
      }),
      { numRuns: FUZZ_RUNS },
    );
    await client.del(key);
  },
  FUZZ_TEST_TIMEOUT,
);
