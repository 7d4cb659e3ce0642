/**
 * Fuzz: whatever item is stored where a session lives (session JSON of any shape, any JSON, nesting
 * up to 1,500 levels, `__proto__` keys, a wrong or missing session id), `get` gives a session or a
 * `SessionStateError`, `Object.prototype` stays clean, and nothing hangs. `FUZZ_RUNS` sets the runs
 * (default 300; the nightly run uses 20,000).
 */
import { AgentSession, SessionStateError } from '@ctx/core';
import { parseSessionJson } from '@ctx/core/backend';
import fc from 'fast-check';
import { expect, it } from 'vitest';
import { FUZZ_RUNS, json, jsonOrDeep, materialize, sessionLike, validSession } from '@ctx/fuzz-kit';
import { FUZZ_TEST_TIMEOUT, outcome } from '../test/garbage.js';
import { cosmosClient, uniqueId } from '../test/helpers.js';
import { CosmosSessionStore } from './cosmos-session-store.js';

const store = new CosmosSessionStore({ client: cosmosClient(), databaseId: uniqueId('fuzz'), createIfNotExists: true });
/** Session ids: plain, dot-only and path-like ones (item ids go into request URLs), and any non-blank string. */
const sessionIdArb = fc.oneof(
  fc.constantFrom('fuzz', '.', '..', '...', 'a/..', '%2e%2e', '.%2e', '~x'),
  fc.string({ minLength: 1, maxLength: 6 }).filter((id) => id.trim() !== ''),
);

/** A session id and what is stored under its item id (or nothing). */
const stored = sessionIdArb.chain((sessionId) =>
  fc.record({
    sessionId: fc.constant(sessionId),
    item: fc.option(
      fc.record(
        {
          sessionId: fc.oneof({ weight: 4, arbitrary: fc.constant(sessionId) }, json),
          session: fc.oneof(
            { weight: 3, arbitrary: validSession(sessionId) },
            { weight: 3, arbitrary: sessionLike(sessionId) },
            jsonOrDeep,
          ),
          writeId: fc.oneof(fc.uuid(), json),
          updatedAt: fc.oneof(fc.constant('2026-01-01T00:00:00.000Z'), json),
          ['__proto__']: json,
        },
        { requiredKeys: [] },
      ),
      { nil: undefined, freq: 8 },
    ),
  }),
);

const sentinel = new AgentSession({ sessionId: 'sentinel', state: { s: { kept: true } } }).toJSON();

it(
  `CosmosSessionStore.get of garbage gives a session or a SessionStateError, never anything else (${FUZZ_RUNS} runs)`,
  async () => {
    await store.set(sentinel);
    await fc.assert(
      fc.asyncProperty(stored, async ({ sessionId, item }) => {
        const id = store.itemId(sessionId);
        if (item !== undefined) await store.container.items.upsert({ ...(materialize(item) as object), id });
        const result = await outcome('get', () => store.get(sessionId));
        await outcome('delete', () => store.delete(sessionId));
        // Nothing reached another session (an id like ".." once addressed the whole container).
        expect((await store.get('sentinel'))?.session).toEqual(sentinel);
        if ('error' in result) {
          expect(SessionStateError.isInstance(result.error), `${result.error.name}: ${result.error.message}`).toBe(true);
          expect(
            (result.error as SessionStateError).path.startsWith(`cosmos:${store.container.database.id}/sessions[${JSON.stringify(id)}]`),
          ).toBe(true);
          return;
        }
        if (result.value === undefined) {
          expect(item).toBeUndefined();
          return;
        }
        const { session, etag } = result.value;
        expect(typeof etag).toBe('string');
        expect(session.sessionId).toBe(sessionId);
        expect(parseSessionJson(session)).toEqual(session);
        for (const slot of Object.values(session.state)) expect(Object.getPrototypeOf(slot)).toBe(Object.prototype);
      }),
      { numRuns: FUZZ_RUNS },
    );
    await store.delete('sentinel');
  },
  FUZZ_TEST_TIMEOUT,
);
