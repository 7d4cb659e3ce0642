import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BackendUnavailableError, createAgent, Message } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { startPostgresServer, type PostgresServer } from '@ctx/postgres-test-server';
import { describeHistoryProvider } from '@ctx/provider-tests';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresHistoryProvider } from './postgres-history-provider.js';
import { endClient } from '../test/databases.js';
import { idKey } from './schema.js';
import type { PgPoolClientLike, PgPoolLike } from './sql-client.js';

// The history on a PostgreSQL server (Debian's, through pg): the conformance suite, then the faults
// a server adds: 50 runs on one session through a pool smaller than them, and the server killed
// in the middle of a turn. This file starts a server of its own (it kills it), on loopback.

let server: PostgresServer | undefined;
let pool: pg.Pool | undefined;
let dir = '';
const thePool = (): pg.Pool => {
  if (pool === undefined) throw new Error('the server is not up yet');
  return pool;
};
/** A pool that survives the server going away: idle clients it loses are dropped, not thrown. */
const openPool = (max: number) => {
  const p = new pg.Pool({ connectionString: server!.url, max });
  p.on('error', () => {});
  return p;
};
let tag = 0;
const fresh = (name: string) => `${name}-${++tag}-${Math.random().toString(36).slice(2, 8)}`;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ctx-pg-history-'));
  server = await startPostgresServer({ dir });
  pool = openPool(10);
}, 60_000);
afterAll(async () => {
  await pool?.end();
  await server?.stop('fast');
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describeHistoryProvider('PostgresHistoryProvider on a PostgreSQL server', {
  create: (options) => new PostgresHistoryProvider({ ...options, client: thePool() }),
  capabilities: { popMessages: true, clearMessages: true },
  timeout: 30_000,
});

const turn = (i: number) => [Message.user(`q${i}`), Message.assistant(`a${i}`)];
const texts = (messages: readonly Message[]) => messages.map((m) => Message.text(m));

describe('PostgresHistoryProvider on a server, faults', () => {
  it('50 concurrent runs on one session through a pool of 3 store every message once, each turn whole and in order', async () => {
    const small = openPool(3);
    try {
      const history = new PostgresHistoryProvider({ client: small, sourceId: fresh('h'), timeoutMs: 20_000 });
      const agent = createAgent({
        client: new ScriptedChatClient({ replies: Array.from({ length: 50 }, (_, i) => `reply ${i}`) }),
        contextProviders: [history],
      });
      const session = await agent.createSession();
      await Promise.all(Array.from({ length: 50 }, (_, i) => agent.run(`turn ${i}`, { session })));
      const stored = await history.getMessages(session.sessionId);
      expect(stored).toHaveLength(100);
      expect(new Set(stored.map((m) => m.id)).size).toBe(100);
      // Every turn is its input right before its reply: no turn interleaved with another.
      for (let i = 0; i < 100; i += 2) {
        expect(stored[i]!.role).toBe('user');
        expect(stored[i + 1]!.role).toBe('assistant');
      }
      expect(new Set(texts(stored.filter((m) => m.role === 'user')))).toEqual(new Set(Array.from({ length: 50 }, (_, i) => `turn ${i}`)));
      // Sequence numbers are 1..100 with no gap or repeat.
      const { rows } = await small.query<{ seq: string }>(
        `SELECT m.seq::text AS seq FROM ${history.tables.messages} m JOIN ${history.tables.sessions} s USING (conv) WHERE s.source_id = $1 ORDER BY m.seq`,
        [JSON.stringify(history.sourceId)],
      );
      expect(rows.map((r) => Number(r.seq))).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    } finally {
      await small.end();
    }
  }, 60_000);

  it('the server killed mid-turn: the save fails with BackendUnavailableError, nothing of the turn is stored, and its retry stores it once', async () => {
    const history = new PostgresHistoryProvider({ client: thePool(), sourceId: fresh('h'), timeoutMs: 10_000 });
    const sessionId = 'killed mid-turn';
    await history.saveMessages(sessionId, turn(1), { state: {} });
    const second = [Message.user('q2'), Message.assistant('a2'), Message.user('q3')];
    // Another connection holds an uncommitted row under the key of the turn's last message, so the
    // save's INSERT waits on the unique index: the save is inside its transaction, its session row
    // locked and updated, when the server goes.
    const blocker = new pg.Client({ connectionString: server!.url });
    blocker.on('error', () => {});
    await blocker.connect();
    await blocker.query('BEGIN');
    await blocker.query(
      `INSERT INTO ${history.tables.messages} (conv, seq, message_key, message)
       SELECT conv, 1000, $2, '{}' FROM ${history.tables.sessions} WHERE session_id = $1`,
      [JSON.stringify(sessionId), idKey(JSON.stringify(second[2]!.id))],
    );
    const saving = history.saveMessages(sessionId, second, { state: {} }).then(
      () => undefined,
      (error: unknown) => error,
    );
    await waitForLockWait(thePool());
    await server!.stop('immediate');
    const error = await saving;
    expect(error).toBeInstanceOf(BackendUnavailableError);
    expect((error as Error).message).toContain('saveMessages for session "killed mid-turn"');
    await endClient(blocker);
    await server!.restart();
    // The pool hands out new connections; nothing of the interrupted turn is there.
    expect(texts(await history.getMessages(sessionId))).toEqual(['q1', 'a1']);
    await history.saveMessages(sessionId, second, { state: {} });
    await history.saveMessages(sessionId, second, { state: {} });
    expect(texts(await history.getMessages(sessionId))).toEqual(['q1', 'a1', 'q2', 'a2', 'q3']);
  }, 60_000);

  it('a save waiting on a session another transaction holds fails with BackendUnavailableError at timeoutMs, and the lock holder is not disturbed', async () => {
    const history = new PostgresHistoryProvider({ client: thePool(), sourceId: fresh('h'), timeoutMs: 300 });
    const sessionId = 'held';
    await history.saveMessages(sessionId, turn(1), { state: {} });
    const holder = await thePool().connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM ${history.tables.sessions} WHERE session_id = $1 FOR UPDATE`, [JSON.stringify(sessionId)]);
      const error = await history.saveMessages(sessionId, turn(2), { state: {} }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BackendUnavailableError);
      await holder.query('COMMIT');
    } finally {
      holder.release();
    }
    expect(texts(await history.getMessages(sessionId))).toEqual(['q1', 'a1']);
  }, 30_000);
});

/** A pool whose clients record every statement they send (one entry per round trip). */
function recordingPool(p: pg.Pool, sent: string[]): PgPoolLike {
  return {
    async connect(): Promise<PgPoolClientLike> {
      const client = await p.connect();
      return {
        query: (text: string, values?: unknown[]) => {
          sent.push(text.replace(/\s+/g, ' ').trim().slice(0, 60));
          return client.query(text, values);
        },
        release: (destroy) => client.release(destroy),
      };
    },
  };
}

describe('PostgresHistoryProvider on a server, statements per save', () => {
  it('a new turn is stored by one statement; a retried one goes through the transaction and is stored once', async () => {
    const sent: string[] = [];
    const history = new PostgresHistoryProvider({ client: recordingPool(thePool(), sent), sourceId: fresh('h') });
    await history.countMessages('s'); // the tables, once per client
    const first = turn(1);
    const args = { state: {}, turn: { inputIds: [first[0]!.id], opens: true } };
    sent.length = 0;
    await history.saveMessages('s', first, args); // a new session
    await history.saveMessages('s', turn(2)); // a stored session, no turn
    const second = turn(3);
    await history.saveMessages('s', second, { state: {}, turn: { inputIds: [second[0]!.id], opens: true } });
    expect(sent).toHaveLength(3);
    for (const statement of sent) expect(statement).toMatch(/^SELECT "public"\."ctx_history_save"\(/);
    sent.length = 0;
    // The retry finds its ids stored: nothing was written by the one statement, and the transaction stores nothing twice.
    await history.saveMessages('s', second, { state: {}, turn: { inputIds: [second[0]!.id], opens: true } });
    expect(sent[0]).toMatch(/ctx_history_save/);
    expect(sent[1]).toMatch(/^BEGIN/);
    expect(sent.at(-1)).toBe('COMMIT');
    expect(texts(await history.getMessages('s'))).toEqual(['q1', 'a1', 'q2', 'a2', 'q3', 'a3']);
  });

  it("the one-statement save looks up only the turn's input ids that are not in the batch; a batch id stored sends it to the transaction", async () => {
    const lookups: unknown[] = [];
    const pool = thePool();
    const recording: PgPoolLike = {
      async connect(): Promise<PgPoolClientLike> {
        const client = await pool.connect();
        return {
          query: (text: string, values?: unknown[]) => {
            if (/^SELECT "public"\."ctx_history_save"\(/.test(text)) lookups.push(values?.[5]);
            return client.query(text, values);
          },
          release: (destroy) => client.release(destroy),
        };
      },
    };
    const history = new PostgresHistoryProvider({ client: recording, sourceId: fresh('h') });
    const first = turn(1);
    await history.saveMessages('s', first, { state: {}, turn: { inputIds: [first[0]!.id], opens: true } });
    // A batch whose turn's input is not in it: that input is looked up (were it stored, the batch would go to its turn).
    const elsewhere = Message.user('kept elsewhere');
    await history.saveMessages('s', [Message.assistant('a2')], { state: {}, turn: { inputIds: [elsewhere.id], opens: true } });
    expect(lookups).toEqual([[], [idKey(JSON.stringify(elsewhere.id)).toString('hex')]]);
    // The opening batch again (a retry), its ids stored: the insert fails, nothing twice.
    await history.saveMessages('s', first, { state: {}, turn: { inputIds: [first[0]!.id], opens: true } });
    expect(lookups).toHaveLength(3);
    expect(texts(await history.getMessages('s'))).toEqual(['q1', 'a1', 'a2']);
  });

  it('the load, the page and the one-statement save are prepared once per connection, by name, and reused', async () => {
    const one = openPool(1);
    try {
      const history = new PostgresHistoryProvider({ client: one, sourceId: fresh('h') });
      for (let i = 1; i <= 3; i++) {
        const messages = turn(i);
        await history.saveMessages('s', messages, { state: {}, turn: { inputIds: [messages[0]!.id], opens: true } });
        await history.getMessages('s', { state: {}, limit: 4 });
        await history.listMessages('s', { limit: 2 });
      }
      expect(texts(await history.getMessages('s', { state: {}, limit: 4 }))).toEqual(['q2', 'a2', 'q3', 'a3']);
      const { rows } = await one.query<{ name: string; statement: string }>(
        "SELECT name, statement FROM pg_prepared_statements WHERE name LIKE 'ctx\\_%' ORDER BY statement",
      );
      expect(rows.map((row) => row.statement.replace(/\s+/g, ' ').slice(0, 80))).toEqual([
        expect.stringMatching(/^SELECT "public"\."ctx_history_save"\(/),
        expect.stringMatching(/^SELECT json_build_array\('owner', s\.source_id, s\.session_id\)::text AS m/),
        expect.stringMatching(/^SELECT s\.source_id, s\.session_id, m\.seq::text AS seq, m\.message/),
      ]);
      for (const row of rows) expect(row.name).toMatch(/^ctx_[0-9a-f]{24}$/);
    } finally {
      await one.end();
    }
  });

  it("a save's signal aborted while its one statement waits on a held session: the save ends with the statement, stored whole or not at all", async () => {
    const history = new PostgresHistoryProvider({ client: thePool(), sourceId: fresh('h'), timeoutMs: 400 });
    const sessionId = 'aborted while held';
    await history.saveMessages(sessionId, turn(1), { state: {} });
    const holder = await thePool().connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM ${history.tables.sessions} WHERE session_id = $1 FOR UPDATE`, [JSON.stringify(sessionId)]);
      const controller = new AbortController();
      const saving = history.saveMessages(sessionId, turn(2), { state: {}, signal: controller.signal }).catch((e: unknown) => e);
      await waitForLockWait(thePool());
      controller.abort(new Error('stop'));
      // The statement is still the server's: the save has not ended at the abort.
      await holder.query('COMMIT');
      expect(await saving).toBeUndefined();
    } finally {
      holder.release();
    }
    expect(texts(await history.getMessages(sessionId))).toEqual(['q1', 'a1', 'q2', 'a2']);
  }, 30_000);
});

describe('PostgresHistoryProvider on a server, an exhausted pool', () => {
  it('a save that gets no connection within timeoutMs fails with BackendUnavailableError, and the connection it gets later goes back to the pool', async () => {
    const one = openPool(1);
    try {
      const history = new PostgresHistoryProvider({ client: one, sourceId: fresh('h'), timeoutMs: 300 });
      await history.saveMessages('s', turn(1), { state: {} });
      const held = await one.connect();
      const error = await history.saveMessages('s', turn(2), { state: {} }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BackendUnavailableError);
      held.release();
      // The abandoned call's connection was handed back, not kept: the pool's one connection serves the next save.
      await history.saveMessages('s', turn(3), { state: {} });
      expect(texts(await history.getMessages('s'))).toEqual(['q1', 'a1', 'q3', 'a3']);
      expect(one.totalCount).toBe(1);
      expect(one.waitingCount).toBe(0);
    } finally {
      await one.end();
    }
  }, 30_000);
});

/** Resolves once a backend of the server waits on a lock (bounded: 400 checks). */
async function waitForLockWait(p: pg.Pool): Promise<void> {
  for (let i = 0; i < 400; i++) {
    const { rows } = await p.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock'`);
    if (rows[0]!.n > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error('no backend waited on a lock');
}
