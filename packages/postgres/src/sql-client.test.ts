import { BackendUnavailableError, ConfigurationError } from '@ctx/core';
import type { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestPGlite } from '../test/databases.js';
import { type PostgresClient, type SqlDatabase, sqlDatabase } from './sql-client.js';

describe('sqlDatabase: what it accepts as a client', () => {
  it('refuses a single pg Client with a ConfigurationError that says to pass a Pool', async () => {
    const client = new pg.Client({ host: '127.0.0.1', port: 1 });
    expect(() => sqlDatabase(client as unknown as PostgresClient)).toThrow(ConfigurationError);
    expect(() => sqlDatabase(client as unknown as PostgresClient)).toThrow(/single pg Client.*pass a (pg )?Pool/);
  });

  it("refuses a pool's client (one connection checked out of a Pool) the same way", async () => {
    const pool = new pg.Pool({ host: '127.0.0.1', port: 1 });
    // What pool.connect() hands out: a Client with release(); it is one connection too.
    const checkedOut = Object.assign(new pg.Client({ host: '127.0.0.1', port: 1 }), { release: () => {} });
    expect(() => sqlDatabase(checkedOut as unknown as PostgresClient)).toThrow(ConfigurationError);
    expect(sqlDatabase(pool).engine).toBe('server');
    await pool.end();
  });

  it('refuses something that is no client at all', () => {
    expect(() => sqlDatabase({} as PostgresClient)).toThrow(ConfigurationError);
    expect(() => sqlDatabase(undefined as unknown as PostgresClient)).toThrow(ConfigurationError);
  });
});

// PGlite is one connection: a call abandoned at its deadline is still queued or running there. What
// it would write must not land after the caller was told it failed.
describe('sqlDatabase on PGlite: calls abandoned at their deadline', () => {
  let lite: PGlite;
  let db: SqlDatabase;
  beforeAll(async () => {
    lite = await openTestPGlite();
    db = sqlDatabase(lite, 5000);
    await lite.query('CREATE TABLE abandoned (id int PRIMARY KEY, v text NOT NULL)');
    await lite.query("INSERT INTO abandoned VALUES (1, 'before'), (2, 'before')");
  });
  afterAll(async () => {
    await lite?.close();
  });

  /** Holds PGlite's one connection in a transaction until the returned function is called. */
  const hold = async () => {
    let free: () => void = () => {};
    const freed = new Promise<void>((resolve) => {
      free = resolve;
    });
    let started: () => void = () => {};
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    const holder = lite.transaction(async () => {
      started();
      await freed;
    });
    await running;
    return async () => {
      free();
      await holder;
    };
  };
  const storedValue = async (id: number) => (await lite.query<{ v: string }>('SELECT v FROM abandoned WHERE id = $1', [id])).rows[0]?.v;

  it('run: a write queued behind another transaction and abandoned at its deadline is not applied when its turn comes', async () => {
    const release = await hold();
    await expect(
      db.run("UPDATE abandoned SET v = 'late' WHERE id = 1", [], { operation: 'test update', timeoutMs: 100 }),
    ).rejects.toBeInstanceOf(BackendUnavailableError);
    await release();
    // Queued after the abandoned write: once it answers, that write has had its turn.
    expect(await storedValue(1)).toBe('before');
  });

  it('transaction: one abandoned at its deadline while it works is rolled back, not committed when its work ends', async () => {
    let go: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      go = resolve;
    });
    let wrote: () => void = () => {};
    const written = new Promise<void>((resolve) => {
      wrote = resolve;
    });
    const call = db.transaction(
      async (tx) => {
        await tx.query("UPDATE abandoned SET v = 'late' WHERE id = 2");
        wrote();
        await gate;
        return tx.query('SELECT 1');
      },
      { operation: 'test turn', timeoutMs: 100 },
    );
    await written;
    await expect(call).rejects.toBeInstanceOf(BackendUnavailableError);
    go();
    expect(await storedValue(2)).toBe('before');
  });
});
