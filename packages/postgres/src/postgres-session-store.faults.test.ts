import { join } from 'node:path';
import { BackendUnavailableError, type SessionJson, SessionStateError } from '@ctx/core';
import { type PostgresServer, startPostgresServer } from '@ctx/postgres-test-server';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endClient, openTestPool, testTmpDir } from '../test/databases.js';
import { PostgresSessionStore } from './postgres-session-store.js';
import { PostgresWorkingMemoryStore } from './postgres-working-memory-store.js';
import { idKey } from './schema.js';
import type { PgPoolClientLike, PgPoolLike } from './sql-client.js';

// Faults on a real PostgreSQL server: a server killed in the middle of a call and restarted, a pool
// exhausted while calls wait on row locks, rows written by hand that are not what the stores write,
// and hostile ids.

const session = (sessionId: string, userId = 'u1', note = 'n'): SessionJson => ({
  type: 'ctx.session',
  version: 2,
  sessionId,
  metadata: { createdAt: '2030-01-01T00:00:00.000Z', updatedAt: '2030-01-01T00:00:01.000Z', userId },
  state: { memory: { note } },
});

/** Settles `promise` and says what it did, with how long it took (checked against a generous bound, never a timing target). */
async function outcome(promise: Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = Date.now();
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  return { error, ms: Date.now() - started };
}

const keyOf = (id: string) => idKey(JSON.stringify(id));

describe('a server killed in the middle of a call', () => {
  let server: PostgresServer;
  let pool: pg.Pool;
  beforeAll(async () => {
    server = await startPostgresServer({ dir: join(testTmpDir(), 'killed') });
    pool = new pg.Pool({ connectionString: server.url, max: 4 });
    pool.on('error', () => {});
  }, 60_000);
  afterAll(async () => {
    await pool?.end();
    await server?.stop('immediate');
  });

  it('fails the call with BackendUnavailableError in bounded time, then works again with nothing lost or doubled', async () => {
    const store = new PostgresSessionStore({ client: pool, tablePrefix: 'kill_', timeoutMs: 3000 });
    const etags = new Map<string, string>();
    for (const id of ['a', 'b', 'c']) etags.set(id, await store.set(session(id)));

    // Another connection holds session "b"'s row, so the store's conditional write waits on it: the call is under way.
    const holder = new pg.Client({ connectionString: server.url });
    holder.on('error', () => {});
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query(`SELECT 1 FROM ${store.tables.sessions} WHERE id_key = $1 FOR UPDATE`, [keyOf('b')]);
    const waiting = outcome(store.set(session('b', 'u1', 'second'), { ifMatch: etags.get('b') as string }));
    // Wait until the write is blocked on the lock (bounded: 100 checks).
    for (let i = 0; i < 100; i++) {
      const { rows } = await holder.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE%'",
      );
      if ((rows[0]?.n ?? 0) > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await server.stop('immediate');
    const { error, ms } = await waiting;
    expect(error).toBeInstanceOf(BackendUnavailableError);
    expect((error as Error).message).toMatch(/set of session "b"/);
    expect(ms).toBeLessThan(10_000);
    await endClient(holder);

    // While it is down, every call fails the same way, in bounded time.
    const down = await outcome(store.get('a'));
    expect(down.error).toBeInstanceOf(BackendUnavailableError);

    await server.restart();
    // The pool drops its dead connections; the first calls after a restart may still meet one (bounded retries).
    let back: SessionJson | undefined;
    for (let i = 0; i < 5 && back === undefined; i++) back = (await store.get('a').catch(() => undefined))?.session;
    expect(back?.sessionId).toBe('a');
    // Nothing acknowledged is lost; the interrupted write did not land; nothing is listed twice.
    const b = await store.get('b');
    expect(b?.etag).toBe(etags.get('b'));
    expect(b?.session.state).toEqual({ memory: { note: 'n' } });
    const page = await store.list({ userId: 'u1', limit: 100 });
    expect(page.sessions.map((s) => s.sessionId).sort()).toEqual(['a', 'b', 'c']);
    // And it writes again, conditionally.
    const next = await store.set(session('b', 'u1', 'third'), { ifMatch: etags.get('b') as string });
    expect((await store.get('b'))?.etag).toBe(next);
  });
});

describe('a pool exhausted while calls wait on row locks', () => {
  let pool: pg.Pool;
  let holderPool: pg.Pool;
  beforeAll(() => {
    pool = openTestPool({ max: 2 });
    holderPool = openTestPool({ max: 1 });
  });
  afterAll(async () => {
    await Promise.all([pool?.end(), holderPool?.end()]);
  });

  it('fails the waiting calls with BackendUnavailableError in bounded time, without deadlock, and the pool works again', async () => {
    const store = new PostgresSessionStore({ client: pool, tablePrefix: 'exhaust_', timeoutMs: 1500 });
    for (const id of ['x', 'y']) await store.set(session(id));
    const holder = await holderPool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM ${store.tables.sessions} WHERE id_key = ANY($1) FOR UPDATE`, [[keyOf('x'), keyOf('y')]]);
      // Two writes take both pool connections and wait on the locks; four more wait for a connection.
      const calls = Array.from({ length: 6 }, (_, i) => outcome(store.set(session(i % 2 === 0 ? 'x' : 'y', 'u1', `w${i}`))));
      const results = await Promise.all(calls);
      for (const { error, ms } of results) {
        expect(error).toBeInstanceOf(BackendUnavailableError);
        // The two on a connection: the server ends their lock waits first (lock_timeout); the four without one: the caller's deadline.
        expect((error as Error).message).toMatch(/did not answer within 1500 ms|did not finish within its deadline/);
        expect(ms).toBeLessThan(10_000);
      }
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    // No write the caller was told failed lands once the locks are freed: the server gave up on the
    // waiting ones before their callers did, and the others never got a connection.
    const note = ((await store.get('x'))?.session.state.memory as { note?: string } | undefined)?.note;
    expect(note).toBe('n');
    const etag = await store.set(session('x', 'u1', 'after'));
    expect((await store.get('x'))?.etag).toBe(etag);
    expect(pool.totalCount).toBeLessThanOrEqual(2);
  });
});

describe('rows written by hand', () => {
  let pool: pg.Pool;
  beforeAll(() => {
    pool = openTestPool({ max: 4 });
  });
  afterAll(async () => {
    await pool?.end();
  });

  it('a session row that is not session JSON, or lacks its etag, or holds another id, reads as SessionStateError naming the row', async () => {
    const store = new PostgresSessionStore({ client: pool, tablePrefix: 'hand_' });
    await store.set(session('bad-json'));
    await store.set(session('no-etag'));
    await store.set(session('other-id'));
    await store.set(session('bad-meta', 'u9'));
    const { sessions } = store.tables;
    await pool.query(`UPDATE ${sessions} SET session = '{"type":' WHERE id_key = $1`, [keyOf('bad-json')]);
    await pool.query(`UPDATE ${sessions} SET etag = '' WHERE id_key = $1`, [keyOf('no-etag')]);
    await pool.query(`UPDATE ${sessions} SET session_id = '"someone else"' WHERE id_key = $1`, [keyOf('other-id')]);
    await pool.query(`UPDATE ${sessions} SET metadata = '[1]' WHERE id_key = $1`, [keyOf('bad-meta')]);
    for (const [id, field] of [
      ['bad-json', 'session'],
      ['no-etag', 'etag'],
      ['other-id', 'session_id'],
    ] as const) {
      const error = await store.get(id).catch((e: unknown) => e);
      expect(error, id).toBeInstanceOf(SessionStateError);
      expect((error as Error).message).toContain('hand_sessions');
      expect((error as Error).message).toContain(`["${id}"].${field}`);
    }
    const listed = await store.list({ userId: 'u9' }).catch((e: unknown) => e);
    expect(listed).toBeInstanceOf(SessionStateError);
    expect((listed as Error).message).toContain('["bad-meta"].metadata');
  });

  it('a working-memory row that is not a record reads as SessionStateError naming the row', async () => {
    const store = new PostgresWorkingMemoryStore({ client: pool, tablePrefix: 'hand_' });
    await store.put({ userId: 'u1' }, { a: 1 });
    await store.put({ userId: 'u1', sessionId: 's1' }, { b: 2 });
    await pool.query(`UPDATE ${store.table} SET record = 'not json' WHERE session_id IS NULL AND user_id = '"u1"'`);
    await pool.query(`UPDATE ${store.table} SET session_id = '42' WHERE session_id = '"s1"'`);
    const get = await store.get({ userId: 'u1' }).catch((e: unknown) => e);
    expect(get).toBeInstanceOf(SessionStateError);
    expect((get as Error).message).toMatch(/hand_working_memory.*\.record/);
    const list = await store.listUser('u1').catch((e: unknown) => e);
    expect(list).toBeInstanceOf(SessionStateError);
  });
});

describe('hostile ids', () => {
  let pool: pg.Pool;
  beforeAll(() => {
    pool = openTestPool({ max: 4 });
  });
  afterAll(async () => {
    await pool?.end();
  });

  const ids = ['x'.repeat(4096), 'nul\u0000end', '\u0000', 'lone \uD800 surrogate', `quote ' " \\ ; DROP TABLE x; --`, '🦜 محادثة e\u0301'];

  it('working-memory records keep 4 KB, NUL, lone-surrogate, quoted and unicode user and session ids whole and apart', async () => {
    const store = new PostgresWorkingMemoryStore({ client: pool, tablePrefix: 'hostile_' });
    for (const [i, userId] of ids.entries()) {
      for (const [j, sessionId] of ids.entries()) await store.put({ userId, sessionId }, { i, j });
      await store.put({ userId }, { i });
    }
    for (const [i, userId] of ids.entries()) {
      const entries = await store.listUser(userId);
      expect(entries).toHaveLength(ids.length + 1);
      expect(
        entries
          .filter((e) => e.sessionId !== undefined)
          .map((e) => e.sessionId)
          .sort(),
      ).toEqual([...ids].sort());
      for (const entry of entries)
        expect(entry.record).toEqual(entry.sessionId === undefined ? { i } : { i, j: ids.indexOf(entry.sessionId) });
      expect((await store.get({ userId, sessionId: ids[0] }))?.record).toEqual({ i, j: 0 });
    }
    expect(await store.deleteUser(ids[0] as string)).toBe(ids.length + 1);
    expect(await store.listUser(ids[0] as string)).toEqual([]);
    expect(await store.listUser(ids[1] as string)).toHaveLength(ids.length + 1);
  });

  it('turn leases and listings of users with hostile ids stay apart', async () => {
    const store = new PostgresSessionStore({ client: pool, tablePrefix: 'hostile_' });
    // A session's userId is at most 512 characters: the 4 KB id owns its session through a 500-character prefix.
    const owner = (id: string) => id.slice(0, 500);
    for (const id of ids) {
      expect(await store.leaseTurn(id, { turn: 't', holder: 'h1', ttlMs: 60_000 })).toBe(true);
      await store.set(session(id, owner(id)));
    }
    for (const id of ids) {
      expect(await store.leaseTurn(id, { turn: 't', holder: 'h2', ttlMs: 60_000 })).toBe(false);
      const page = await store.list({ userId: owner(id) });
      expect(page.sessions.map((s) => s.sessionId)).toEqual([id]);
      expect(page.total).toBe(1);
      expect(await store.releaseTurn(id, { turn: 't', holder: 'h1' })).toBe(true);
    }
  });
});

describe('writes as one statement on a server', () => {
  let pool: pg.Pool;
  beforeAll(() => {
    pool = openTestPool({ max: 2 });
  });
  afterAll(async () => {
    await pool?.end();
  });

  it('set, delete, leaseTurn and releaseTurn each send one statement, and keep their etags and leases', async () => {
    const sent: string[] = [];
    const recording: PgPoolLike = {
      async connect(): Promise<PgPoolClientLike> {
        const client = await pool.connect();
        return {
          query: (text: string, values?: unknown[]) => {
            sent.push(text.replace(/\s+/g, ' ').trim().slice(0, 40));
            return client.query(text, values);
          },
          release: (destroy) => client.release(destroy),
        };
      },
    };
    const store = new PostgresSessionStore({ client: recording, tablePrefix: 'one_statement_' });
    await store.get('s'); // the tables, once per client
    sent.length = 0;
    const first = await store.set(session('s'), { ifMatch: null });
    const second = await store.set(session('s', 'u1', 'two'), { ifMatch: first });
    await expect(store.set(session('s', 'u1', 'late'), { ifMatch: first })).rejects.toThrow(/etag/);
    await store.set(session('s', 'u1', 'three'));
    const lease = { turn: 't', holder: 'h1', ttlMs: 60_000 };
    expect(await store.leaseTurn('s', lease)).toBe(true);
    expect(await store.leaseTurn('s', { ...lease, holder: 'h2' })).toBe(false);
    expect(await store.releaseTurn('s', lease)).toBe(true);
    expect(await store.delete('s')).toBe(true);
    expect(sent).toHaveLength(8);
    for (const statement of sent) expect(statement).toMatch(/^WITH bound AS MATERIALIZED/);
    expect(second).not.toBe(first);
    expect(await store.get('s')).toBeUndefined();
  });

  it('a write that ends past its deadline is rolled back by the statement itself', async () => {
    const store = new PostgresSessionStore({ client: pool, tablePrefix: 'one_statement_' });
    await store.get('s'); // the tables
    const inTime = store.tables.sessions.replace('"one_statement_sessions"', '"one_statement_sessions_in_time"');
    const error = await pool.query(`SELECT ${inTime}(clock_timestamp() - interval '1 millisecond')`).catch((e: unknown) => e);
    expect((error as { code?: string }).code).toBe('57014');
  });
});
