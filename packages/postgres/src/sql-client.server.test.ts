import { BackendUnavailableError } from '@ctx/core';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestPool } from '../test/databases.js';
import { type SqlDatabase, sqlDatabase, toCtxError } from './sql-client.js';

// A write abandoned at its deadline while it waits on a row lock must never be applied when the lock
// frees: the caller was told it failed and may try again (or give up).
describe('sqlDatabase on a PostgreSQL server: calls abandoned at their deadline', () => {
  let pool: pg.Pool;
  let holder: pg.Pool;
  let db: SqlDatabase;
  const table = 'ctx_sql_client_deadline';

  beforeAll(async () => {
    pool = openTestPool();
    holder = openTestPool({ max: 1 });
    db = sqlDatabase(pool, 5000);
    await pool.query(`DROP TABLE IF EXISTS ${table}`);
    await pool.query(`CREATE TABLE ${table} (id int PRIMARY KEY, v text NOT NULL)`);
  });
  afterAll(async () => {
    await pool.query(`DROP TABLE IF EXISTS ${table}`);
    await Promise.all([pool.end(), holder.end()]);
  });

  /** Waits (bounded) until no other backend is still running a statement containing `marker`. */
  const untilNoBackendRuns = async (marker: string) => {
    for (let i = 0; i < 200; i++) {
      const { rows } = await pool.query(
        'SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND query LIKE $1 AND state <> $2',
        [`%${marker}%`, 'idle'],
      );
      if (rows[0].n === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`a backend still runs the statement marked ${marker}`);
  };

  const abandonedWhileLocked = async (id: number, write: (marker: string) => Promise<unknown>) => {
    await pool.query(`INSERT INTO ${table} (id, v) VALUES ($1, 'before')`, [id]);
    const lock = await holder.connect();
    const marker = `late_${id}`;
    try {
      await lock.query('BEGIN');
      await lock.query(`SELECT 1 FROM ${table} WHERE id = $1 FOR UPDATE`, [id]);
      await expect(write(marker)).rejects.toBeInstanceOf(BackendUnavailableError);
      await lock.query('COMMIT');
    } finally {
      lock.release();
    }
    await untilNoBackendRuns(marker);
    const { rows } = await pool.query(`SELECT v FROM ${table} WHERE id = $1`, [id]);
    return rows[0].v as string;
  };

  it('run: an UPDATE abandoned while it waits on a row lock is not applied when the lock frees', async () => {
    const value = await abandonedWhileLocked(1, (marker) =>
      db.run(`UPDATE ${table} SET v = '${marker}' WHERE id = $1`, [1], { operation: 'test update', timeoutMs: 300 }),
    );
    expect(value).toBe('before');
  });

  it("run: an UPDATE abandoned by the caller's signal is not applied when the lock frees", async () => {
    const value = await abandonedWhileLocked(2, (marker) => {
      const controller = new AbortController();
      setTimeout(() => controller.abort(new BackendUnavailableError('postgres', 'stopped by the caller')), 300);
      return db.run(`UPDATE ${table} SET v = '${marker}' WHERE id = $1`, [2], {
        operation: 'test update',
        signal: controller.signal,
        timeoutMs: 60_000,
      });
    });
    expect(value).toBe('before');
  });

  it('transaction: the server cancels a statement waiting on a lock by the deadline, so the lock holder is not kept behind it', async () => {
    await pool.query(`INSERT INTO ${table} (id, v) VALUES (3, 'before')`);
    const lock = await holder.connect();
    try {
      await lock.query('BEGIN');
      await lock.query(`SELECT 1 FROM ${table} WHERE id = 3 FOR UPDATE`);
      await expect(
        db.transaction((tx) => tx.query(`UPDATE ${table} SET v = 'late_3' WHERE id = 3`), { operation: 'test update', timeoutMs: 300 }),
      ).rejects.toBeInstanceOf(BackendUnavailableError);
      // While the lock is still held, the server itself has given up on the waiting statement.
      await untilNoBackendRuns('late_3');
      await lock.query('COMMIT');
    } finally {
      lock.release();
    }
    expect((await pool.query(`SELECT v FROM ${table} WHERE id = 3`)).rows[0].v).toBe('before');
  });

  it('a write with the longest deadline a timer allows runs (statement_timeout stays within its range)', async () => {
    await pool.query(`INSERT INTO ${table} (id, v) VALUES (4, 'before')`);
    const long = sqlDatabase(pool, 2_147_483_647);
    await long.run(`UPDATE ${table} SET v = 'after' WHERE id = $1`, [4], { operation: 'test update' });
    expect((await pool.query(`SELECT v FROM ${table} WHERE id = 4`)).rows[0].v).toBe('after');
  });

  it('a statement the server cancelled (57014) is a BackendUnavailableError that names the deadline', () => {
    const cancelled = Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' });
    const error = toCtxError(cancelled, 'saveMessages for session "s1"');
    expect(error).toBeInstanceOf(BackendUnavailableError);
    expect(error.message).toMatch(/saveMessages for session "s1" did not finish within its deadline/);
  });
});
