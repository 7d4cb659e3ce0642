/**
 * Model test: random sequences of what runs do to a history (turns opened and continued, retried
 * turns with the same input messages, wherever they sit, plain appends, pops, reads of windows)
 * give the same stored conversation in PostgresHistoryProvider (on PGlite and on a server) as in core's
 * InMemoryHistoryProvider, the reference of the contract: same messages, same order, same errors.
 * `FUZZ_RUNS` scales the runs (default 300 gives 40 here; each run is a fresh session).
 */
import type { PGlite } from '@electric-sql/pglite';
import { InMemoryHistoryProvider, Message, type JsonObject } from '@ctx/core';
import { FUZZ_RUNS } from '@ctx/fuzz-kit';
import fc from 'fast-check';
import type pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openTestPGlite, openTestPool } from '../test/databases.js';
import { PostgresHistoryProvider } from './postgres-history-provider.js';

type Step =
  | { kind: 'turn'; retry: number | undefined; inputs: number; replies: number; more: number }
  | { kind: 'append'; count: number }
  | { kind: 'pop'; count: number }
  | { kind: 'read'; limit: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('turn' as const),
      retry: fc.option(fc.nat({ max: 6 }), { nil: undefined }),
      inputs: fc.integer({ min: 1, max: 2 }),
      replies: fc.integer({ min: 0, max: 3 }),
      more: fc.integer({ min: 0, max: 2 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('append' as const), count: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('pop' as const), count: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('read' as const), limit: fc.integer({ min: 1, max: 6 }) }) },
);

let db: PGlite | undefined;
let pool: pg.Pool | undefined;
beforeAll(async () => {
  db = await openTestPGlite();
  pool = openTestPool();
}, 60_000);
afterAll(async () => {
  await db?.close();
  await pool?.end();
});

/** What a call did: its result as ids, or the class of its error. */
async function outcome(call: () => Promise<unknown>): Promise<string> {
  try {
    const result = await call();
    return JSON.stringify(Array.isArray(result) ? (result as Message[]).map((m) => m.id) : null);
  } catch (error) {
    return `error ${(error as Error).name}`;
  }
}

it.each([
  ['PGlite', () => db!],
  ['a PostgreSQL server', () => pool!],
])(
  'PostgresHistoryProvider on %s stores what InMemoryHistoryProvider stores, for any sequence of turns, retries, appends and pops',
  async (_, client) => {
    const postgres = new PostgresHistoryProvider({
      client: client(),
      sourceId: `model-${Math.random().toString(36).slice(2, 8)}`,
      timeoutMs: 30_000,
    });
    const memory = new InMemoryHistoryProvider({ sourceId: 'model' });
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
        const sessionId = `model-${++run}`;
        const state: JsonObject = {};
        const turns: Message[][] = [];
        let n = 0;
        const text = (role: string) => `${role} ${++n}`;
        for (const s of steps) {
          const both = async (call: (p: PostgresHistoryProvider | InMemoryHistoryProvider) => Promise<unknown>) => {
            const [a, b] = [await outcome(() => call(postgres)), await outcome(() => call(memory))];
            expect(a, JSON.stringify(s)).toBe(b);
          };
          if (s.kind === 'turn') {
            const earlier = s.retry === undefined || turns.length === 0 ? undefined : turns[s.retry % turns.length];
            const inputs = earlier ?? Array.from({ length: s.inputs }, () => Message.user(text('q')));
            if (earlier === undefined) turns.push(inputs);
            const reply = (count: number) =>
              Array.from({ length: count }, () => Message.withSource(Message.assistant(text('a')), 'response', 'response'));
            const turn = { inputIds: inputs.map((m) => m.id), opens: true };
            const first = [...inputs, ...reply(s.replies)];
            await both((p) => p.saveMessages(sessionId, first, { state, turn }));
            if (s.more > 0) {
              const later = reply(s.more);
              await both((p) => p.saveMessages(sessionId, later, { state, turn: { ...turn, opens: false } }));
            }
          } else if (s.kind === 'append') {
            const messages = Array.from({ length: s.count }, () => Message.user(text('m')));
            await both((p) => p.saveMessages(sessionId, messages, { state }));
          } else if (s.kind === 'pop') {
            await both((p) => p.popMessages!(sessionId, { state, count: s.count }));
          } else {
            await both((p) => p.getMessages(sessionId, { state, limit: s.limit }));
          }
          const [stored, expected] = [await postgres.getMessages(sessionId), await memory.getMessages(sessionId, { state })];
          expect(
            stored.map((m) => `${m.id} ${Message.text(m)}`),
            JSON.stringify(steps),
          ).toEqual(expected.map((m) => `${m.id} ${Message.text(m)}`));
        }
      }),
      { numRuns: Math.max(20, Math.round(FUZZ_RUNS / 7.5)) },
    );
  },
  120_000,
);
