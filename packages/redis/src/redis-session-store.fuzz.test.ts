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

const listing = store.indexKeys();
const isoOrGarbage = fc.oneof(
  fc.date({ min: new Date(0), max: new Date(Date.UTC(9999, 0, 1)), noInvalidDate: true }).map((d) => d.toISOString()),
  fc.string({ maxLength: 30 }),
  fc.constantFrom('2026-02-30T00:00:00.000Z', '2026-01-01T24:00:00.000Z', '2026-01-01', 1, null),
);
const metadataLike = fc.record(
  {
    createdAt: isoOrGarbage,
    updatedAt: isoOrGarbage,
    title: fc.oneof(fc.string({ maxLength: 300 }), fc.integer()),
    userId: fc.oneof(fc.string({ maxLength: 10 }), fc.constant(' ')),
    custom: fc.oneof(fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 3 })), fc.string()),
  },
  { requiredKeys: [] },
);
/** One listing entry: the session id, its score, and what its metadata hash holds for it. */
const entry = fc.record({
  sessionId: fc.oneof(fc.string({ minLength: 1, maxLength: 8 }), fc.string({ unit: 'binary', minLength: 1, maxLength: 8 })),
  score: fc.oneof(fc.integer({ min: -62_000_000_000_000, max: 253_000_000_000_000 }).map(String), fc.constantFrom('inf', '-inf', '0')),
  meta: fc.option(
    fc.oneof(
      { weight: 3, arbitrary: fc.tuple(fc.nat(), metadataLike).map(([rev, m]) => `${rev} ${JSON.stringify(m)}`) },
      fc.tuple(fc.nat(), sessionGarbage(sessionId)).map(([rev, g]) => `${rev} ${materialize(g, sessionId)}`),
      fc.string(),
      fc.uint8Array({ maxLength: 16 }).map((b) => Buffer.from(b)),
    ),
    { nil: undefined },
  ),
});
const listingLayout = fc.oneof(
  { weight: 8, arbitrary: fc.array(entry, { maxLength: 6 }) },
  fc.record({ wrongType: fc.constantFrom('order', 'meta', 'expires') }),
);

it(
  `RedisSessionStore.list of a listing holding garbage gives a page or a SessionStateError, never anything else (${FUZZ_RUNS} runs)`,
  async () => {
    await fc.assert(
      fc.asyncProperty(listingLayout, fc.integer({ min: 1, max: 4 }), async (stored, limit) => {
        await client.del(listing.order, listing.meta, listing.expires);
        if ('wrongType' in stored) {
          await client.set(listing[stored.wrongType], 'x');
        } else {
          for (const { sessionId: id, score, meta } of stored) {
            await client.zadd(listing.order, score, id);
            if (meta !== undefined) await client.hset(listing.meta, id, meta);
          }
        }
        let cursor: string | undefined;
        for (let page = 0; page < 10; page++) {
          const result = await outcome('list', () => store.list({ limit, ...(cursor ? { cursor } : {}) }));
          if ('error' in result) {
            expect(SessionStateError.isInstance(result.error), `${result.error.name}: ${result.error.message}`).toBe(true);
            expect((result.error as SessionStateError).path).toMatch(/^redis:t-fuzz-store-[a-z0-9]+:sessions:\{all\}:(meta|order)/);
            return;
          }
          for (const summary of result.value.sessions) {
            expect(
              parseSessionJson({ type: 'ctx.session', version: 2, sessionId: summary.sessionId, metadata: summary.metadata, state: {} })
                .metadata,
            ).toEqual(summary.metadata);
          }
          cursor = result.value.nextCursor;
          if (cursor === undefined) return;
        }
      }),
      { numRuns: FUZZ_RUNS },
    );
    await client.del(listing.order, listing.meta, listing.expires);
  },
  FUZZ_TEST_TIMEOUT,
);
