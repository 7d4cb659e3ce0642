import { createAgent, Message } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestPool } from '../test/databases.js';
import { PostgresHistoryProvider } from './postgres-history-provider.js';
import type { PgPoolClientLike, PgPoolLike } from './sql-client.js';

// The work of a run must not grow with the stored history: a run (load a window, store the turn)
// sends the same statements at 10,000 stored messages as at 100, and reads only the rows of its
// window however many are stored. Nothing is timed: every
// statement the provider sends is first run under EXPLAIN ANALYZE (inside a savepoint that is
// rolled back, when it writes), and the rows its scans of the messages table read are counted,
// in the state the statement itself then runs in. A call of the save function is first run in a
// transaction that is rolled back, with `auto_explain` sending the plan of each statement inside
// it as a notice.

const SMALL = 100;
const LARGE = 10_000;
const WINDOW = 20;

/** One statement the provider sent, and the rows its plan read from the messages table. */
interface Measured {
  text: string;
  rowsRead: number;
}

/** Rows a plan's scans of `table` read: what they returned plus what their filters removed, per loop. */
function rowsRead(plan: Record<string, unknown>, table: string): number {
  let rows = 0;
  if (plan['Relation Name'] === table) {
    const loops = Number(plan['Actual Loops'] ?? 1);
    rows += (Number(plan['Actual Rows'] ?? 0) + Number(plan['Rows Removed by Filter'] ?? 0)) * loops;
  }
  for (const child of (plan.Plans as Record<string, unknown>[] | undefined) ?? []) rows += rowsRead(child, table);
  return rows;
}

/** A pool whose clients measure every statement before running it. */
function measuringPool(pool: pg.Pool, table: string, log: Measured[]): PgPoolLike {
  return {
    async connect(): Promise<PgPoolClientLike> {
      const client = await pool.connect();
      let inTransaction = false;
      return {
        async query(text: string, values?: unknown[]) {
          const control = /^\s*(BEGIN|COMMIT|ROLLBACK)/i.exec(text)?.[1]?.toUpperCase();
          if (!inTransaction && /_history_save"\(/.test(text)) {
            log.push({ text, rowsRead: await nestedRowsRead(client, table, text, values) });
          } else if (control === undefined && /^\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b/i.test(text)) {
            // Outside a transaction the provider only reads, so the statement can be explained as it is.
            if (inTransaction) await client.query('SAVEPOINT measure');
            const { rows } = await client.query<{ 'QUERY PLAN': { Plan: Record<string, unknown> }[] }>(
              `EXPLAIN (ANALYZE, FORMAT JSON) ${text}`,
              values,
            );
            if (inTransaction) await client.query('ROLLBACK TO SAVEPOINT measure');
            log.push({ text, rowsRead: rowsRead(rows[0]!['QUERY PLAN'][0]!.Plan, table) });
          } else if (control !== undefined) inTransaction = control === 'BEGIN';
          return client.query(text, values);
        },
        release: (destroy) => client.release(destroy),
      };
    },
  };
}

/** Rows the statements inside a function call read from `table`, run in a transaction that is rolled back. */
async function nestedRowsRead(client: pg.PoolClient, table: string, text: string, values?: unknown[]): Promise<number> {
  const notices: string[] = [];
  const onNotice = (notice: { message?: string }) => notices.push(notice.message ?? '');
  client.on('notice', onNotice);
  try {
    await client.query(
      `BEGIN; LOAD 'auto_explain'; SET LOCAL auto_explain.log_min_duration = 0; SET LOCAL auto_explain.log_analyze = on;
       SET LOCAL auto_explain.log_nested_statements = on; SET LOCAL auto_explain.log_format = json; SET LOCAL auto_explain.log_level = notice`,
    );
    await client.query(text, values);
    await client.query('ROLLBACK');
  } finally {
    client.removeListener('notice', onNotice);
  }
  const plans = notices
    .filter((n) => n.includes('"Plan"'))
    .map((n) => JSON.parse(n.slice(n.indexOf('{'))) as { Plan: Record<string, unknown> });
  expect(plans.length).toBeGreaterThan(1);
  return plans.reduce((sum, plan) => sum + rowsRead(plan.Plan, table), 0);
}

let pool: pg.Pool | undefined;
beforeAll(() => {
  pool = openTestPool();
});
afterAll(async () => {
  await pool?.end();
});

describe('PostgresHistoryProvider work per run', () => {
  it(`a run with maxMessages ${WINDOW} sends the same statements at ${LARGE} stored messages as at ${SMALL}, and at ${LARGE} reads only the window's rows`, async () => {
    const sourceId = `work-${Math.random().toString(36).slice(2, 8)}`;
    const seeder = new PostgresHistoryProvider({ client: pool!, sourceId, timeoutMs: 30_000 });
    const table = seeder.tables.messages.split('.')[1]!.replaceAll('"', '');
    const costs: Measured[][] = [];
    for (const size of [SMALL, LARGE]) {
      const sessionId = `stored-${size}`;
      for (let i = 0; i < size; i += 1000) {
        await seeder.append(
          sessionId,
          Array.from({ length: Math.min(1000, size - i) }, (_, j) => Message.user(`m${i + j}`)),
        );
      }
      await pool!.query(`ANALYZE ${seeder.tables.messages}`);
      const log: Measured[] = [];
      const history = new PostgresHistoryProvider({
        client: measuringPool(pool!, table, log),
        sourceId,
        maxMessages: WINDOW,
        timeoutMs: 30_000,
      });
      // The tables are checked once per client, not per run: done before measuring.
      await history.countMessages(sessionId);
      log.length = 0;
      const agent = createAgent({ client: new ScriptedChatClient({ replies: ['ok'] }), contextProviders: [history] });
      const session = await agent.createSession({ sessionId });
      await agent.run('one more', { session });
      costs.push(log);
      expect(await seeder.countMessages(sessionId)).toBe(size + 2);
    }
    const [small, large] = costs as [Measured[], Measured[]];
    expect(large.map((m) => m.text)).toEqual(small.map((m) => m.text));
    // At 100 rows the planner may scan the table where an index is no cheaper; at 10,000 every
    // statement goes through the primary key or the message-key index, and the run reads the window.
    const total = large.reduce((sum, m) => sum + m.rowsRead, 0);
    expect(total, large.map((m) => `${m.rowsRead}: ${m.text.replace(/\s+/g, ' ').slice(0, 80)}`).join('\n')).toBeLessThanOrEqual(WINDOW);
  }, 60_000);
});
