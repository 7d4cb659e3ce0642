import type { PGlite } from '@electric-sql/pglite';
import { ConfigurationError, InvalidInputError, Message, SessionStateError } from '@ctx/core';
import { describeHistoryProvider } from '@ctx/provider-tests';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestPGlite } from '../test/databases.js';
import { PostgresHistoryProvider, type PostgresHistoryProviderOptions } from './postgres-history-provider.js';

// Everything on embedded PGlite: the conformance suite and the provider's own behaviour. One PGlite
// for the whole file (creating one takes seconds); tests keep apart by source id, session id or
// table prefix. The same suite runs on a PostgreSQL server in postgres-history-provider.server.test.ts.

let db: PGlite | undefined;
const client = (): PGlite => {
  if (db === undefined) throw new Error('PGlite is not open yet');
  return db;
};
let tag = 0;
const fresh = (name: string) => `${name}-${++tag}-${Math.random().toString(36).slice(2, 8)}`;

beforeAll(async () => {
  db ??= await openTestPGlite();
}, 60_000);
afterAll(async () => {
  await db?.close();
});

describeHistoryProvider('PostgresHistoryProvider on PGlite', {
  create: (options) => new PostgresHistoryProvider({ ...options, client: client() }),
  capabilities: { popMessages: true, clearMessages: true },
  timeout: 30_000,
});

const provider = (options: Partial<PostgresHistoryProviderOptions> = {}) =>
  new PostgresHistoryProvider({ client: client(), sourceId: fresh('h'), ...options });
const turn = (i: number) => [Message.user(`q${i}`), Message.assistant(`a${i}`)];
const texts = (messages: readonly Message[]) => messages.map((m) => Message.text(m));

describe('PostgresHistoryProvider options', () => {
  it('refuses an option it does not know, a bad timeout and a blank source id with ConfigurationError', () => {
    const c = {} as PGlite;
    expect(() => new PostgresHistoryProvider({ client: client(), maxmessages: 5 } as never)).toThrow(/unknown option "maxmessages"/);
    expect(() => new PostgresHistoryProvider({ client: client(), timeoutMs: 0 })).toThrow(ConfigurationError);
    expect(() => new PostgresHistoryProvider({ client: client(), sourceId: '  ' })).toThrow(ConfigurationError);
    expect(() => new PostgresHistoryProvider({ client: c })).toThrow(ConfigurationError);
    expect(new PostgresHistoryProvider({ client: client() }).sourceId).toBe('postgres');
  });
});

describe('PostgresHistoryProvider rows', () => {
  it('keeps one row per message in order, with the ids whole, under its table prefix', async () => {
    const h = provider({ tablePrefix: 'rows_' });
    await h.saveMessages('s1', [...turn(1), ...turn(2)], { state: {} });
    expect(h.tables.messages).toBe('"public"."rows_history_messages"');
    const { rows } = await client().query<{ seq: number; message: string }>(
      `SELECT m.seq::int AS seq, m.message FROM ${h.tables.messages} m JOIN ${h.tables.sessions} s USING (conv) WHERE s.source_id = $1 ORDER BY m.seq`,
      [JSON.stringify(h.sourceId)],
    );
    expect(rows.map((r) => r.seq)).toEqual([1, 2, 3, 4]);
    expect(rows.map((r) => Message.text(JSON.parse(r.message)))).toEqual(['q1', 'a1', 'q2', 'a2']);
  });

  it('a row that is not JSON, or JSON that is not a message, is a SessionStateError naming the table, session and seq', async () => {
    const h = provider();
    await h.saveMessages('bad', turn(1), { state: {} });
    const conv = await convOf(h, 'bad');
    await client().query(`UPDATE ${h.tables.messages} SET message = '{"id": "x", oops' WHERE conv = $1 AND seq = 2`, [conv]);
    const error = await h.getMessages('bad').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SessionStateError);
    expect((error as Error).message).toContain(`postgres:${h.tables.messages}[session "bad", seq 2]`);
    expect((error as Error).message).toContain('is not JSON');
    await client().query(
      `UPDATE ${h.tables.messages} SET message = '{"id": "x", "role": "robot", "contents": []}' WHERE conv = $1 AND seq = 2`,
      [conv],
    );
    const second = await h.getMessages('bad').catch((e: unknown) => e);
    expect(second).toBeInstanceOf(SessionStateError);
    expect((second as Error).message).toContain(`[session "bad", seq 2].message`);
    // A window that does not reach the bad row loads; popping it refuses and removes nothing.
    await h.saveMessages('bad', turn(2), { state: {} });
    expect(texts(await h.getMessages('bad', { state: {}, limit: 2 }))).toEqual(['q2', 'a2']);
    await expect(h.popMessages('bad', { state: {}, count: 3 })).rejects.toBeInstanceOf(SessionStateError);
    expect(await h.countMessages('bad')).toBe(4);
  });

  it("the load returns one value per message, the session ids only when they are not this session's", async () => {
    const h = provider();
    await h.saveMessages('shape', [...turn(1), ...turn(2)], { state: {} });
    const results: { text: string; rows: unknown[] }[] = [];
    const recording = {
      query: async (text: string, params?: unknown[]) => {
        const result = await client().query(text, params);
        results.push({ text, rows: result.rows });
        return result;
      },
      transaction: client().transaction.bind(client()),
    };
    const loader = new PostgresHistoryProvider({ client: recording as unknown as PGlite, sourceId: h.sourceId });
    expect(texts(await loader.getMessages('shape'))).toEqual(['q1', 'a1', 'q2', 'a2']);
    const load = results.at(-1)!;
    expect(load.text).toMatch(/UNION ALL/);
    expect(load.rows).toHaveLength(4);
    for (const row of load.rows) expect(Object.keys(row as object)).toEqual(['m']);
    // A message row that is not one JSON value is named, not read as two values.
    const conv = await convOf(h, 'shape');
    await client().query(`UPDATE ${h.tables.messages} SET message = '1, 2' WHERE conv = $1 AND seq = 3`, [conv]);
    await expect(loader.getMessages('shape')).rejects.toThrow(/seq 3\]: is not JSON/);
  });

  it('a message saved again over its stored row that is no longer a message is refused with SessionStateError naming the row, not skipped as stored', async () => {
    const h = provider();
    const [q, a] = turn(1);
    await h.saveMessages('s', [q!, a!], { state: {} });
    const conv = await convOf(h, 's');
    await client().query(`UPDATE ${h.tables.messages} SET message = '[1, 2]' WHERE conv = $1 AND seq = 2`, [conv]);
    const error = await h.saveMessages('s', [a!], { state: {} }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SessionStateError);
    expect((error as Error).message).toContain('seq 2');
    expect(await h.countMessages('s')).toBe(2);
  });

  it('a session row holding other ids than its key is a SessionStateError, for reads and writes', async () => {
    const h = provider();
    await h.saveMessages('mine', turn(1), { state: {} });
    const conv = await convOf(h, 'mine');
    await client().query(`UPDATE ${h.tables.sessions} SET session_id = '"theirs"' WHERE conv = $1`, [conv]);
    await expect(h.getMessages('mine')).rejects.toThrow(/holds session "\\"theirs\\""/);
    await expect(h.saveMessages('mine', turn(2), { state: {} })).rejects.toBeInstanceOf(SessionStateError);
    expect(await h.countMessages('mine')).toBe(2);
  });
});

describe('PostgresHistoryProvider ids', () => {
  it('keeps 4 KB message ids and ids that differ only in lone surrogates or NUL apart, whole', async () => {
    const h = provider();
    const ids = ['x'.repeat(4096), `${'y'.repeat(4095)}\u0000`, 'a\uD800', 'a\uDBFF', 'a\uFFFD', 'nul\u0000', 'nul'];
    const messages = ids.map((id, i) => ({ ...Message.user(`m${i}`), id }));
    await h.saveMessages('x'.repeat(4096), messages, { state: {} });
    const loaded = await h.getMessages('x'.repeat(4096));
    expect(loaded.map((m) => m.id)).toEqual(ids);
    expect(texts(loaded)).toEqual(ids.map((_, i) => `m${i}`));
    // Saved again: every one is found as already stored, none is stored twice.
    expect(await h.append('x'.repeat(4096), messages)).toBe(0);
    // Another message under one of them is a conflict, not a silent skip.
    await expect(h.saveMessages('x'.repeat(4096), [{ ...Message.user('other'), id: 'a\uDBFF' }], { state: {} })).rejects.toThrow(
      /already stored/,
    );
    expect(await h.countMessages('x'.repeat(4096))).toBe(ids.length);
  });

  it('keeps schemas apart', async () => {
    await client().query('CREATE SCHEMA IF NOT EXISTS other_history');
    const sourceId = fresh('h');
    const a = new PostgresHistoryProvider({ client: client(), sourceId });
    const b = new PostgresHistoryProvider({ client: client(), sourceId, schema: 'other_history' });
    await a.saveMessages('s', turn(1), { state: {} });
    expect(await b.getMessages('s')).toEqual([]);
    expect(texts(await a.getMessages('s'))).toEqual(['q1', 'a1']);
  });
});

describe('PostgresHistoryProvider paging and maintenance', () => {
  it('listMessages pages by sequence number, and a cursor stays valid across a pop and new saves', async () => {
    const h = provider();
    for (let i = 0; i < 5; i++) await h.saveMessages('p', turn(i), { state: {} });
    const first = await h.listMessages('p', { limit: 4 });
    expect(texts(first.messages)).toEqual(['q0', 'a0', 'q1', 'a1']);
    expect(first.nextCursor).toBe('4');
    await h.popMessages('p', { state: {}, count: 2 });
    await h.saveMessages('p', turn(9), { state: {} });
    const rest: string[] = [];
    for await (const m of h.exportMessages('p', { pageSize: 3 })) rest.push(Message.text(m));
    expect(rest).toEqual(['q0', 'a0', 'q1', 'a1', 'q2', 'a2', 'q3', 'a3', 'q9', 'a9']);
    const second = await h.listMessages('p', { limit: 100, cursor: first.nextCursor! });
    expect(texts(second.messages)).toEqual(['q2', 'a2', 'q3', 'a3', 'q9', 'a9']);
    expect(second.nextCursor).toBeUndefined();
    await expect(h.listMessages('p', { cursor: '-1' })).rejects.toBeInstanceOf(ConfigurationError);
    expect(await h.countMessages('p')).toBe(10);
  });

  it('clear removes the messages and the session row, and says whether there was anything', async () => {
    const h = provider();
    await h.saveMessages('c', turn(1), { state: {} });
    expect(await h.clear('c')).toBe(true);
    expect(await h.clear('c')).toBe(false);
    const { rows } = await client().query(`SELECT 1 FROM ${h.tables.sessions} WHERE source_id = $1`, [JSON.stringify(h.sourceId)]);
    expect(rows).toHaveLength(0);
  });

  it('a fork into a session that holds messages appends those it does not hold, after them', async () => {
    const h = provider();
    const first = turn(1);
    await h.saveMessages('from', [...first, ...turn(2)], { state: {} });
    await h.saveMessages('to', [...first, Message.user('own')], { state: {} });
    expect(await h.forkMessages('from', 'to', { fromState: {}, toState: {} })).toBe(4);
    expect(texts(await h.getMessages('to'))).toEqual(['q1', 'a1', 'own', 'q2', 'a2']);
    await expect(h.forkMessages('from', 'y', { fromState: {}, toState: {}, atMessageId: 'nope' })).rejects.toBeInstanceOf(
      InvalidInputError,
    );
    expect(await h.countMessages('y')).toBe(0);
  });

  it('a retried turn replaces its earlier attempt in place and renumbers what follows', async () => {
    const h = provider();
    const q1 = Message.user('q1');
    await h.saveMessages('r', [q1, Message.withSource(Message.assistant('first try'), 'response', 'response')], {
      state: {},
      turn: { inputIds: [q1.id], opens: true },
    });
    await h.saveMessages('r', turn(2), { state: {} });
    const replies = ['second try, longer', 'with a second message'].map((t) =>
      Message.withSource(Message.assistant(t), 'response', 'response'),
    );
    await h.saveMessages('r', [q1, ...replies], { state: {}, turn: { inputIds: [q1.id], opens: true } });
    expect(texts(await h.getMessages('r'))).toEqual(['q1', 'second try, longer', 'with a second message', 'q2', 'a2']);
    const { rows } = await client().query<{ seq: number }>(
      `SELECT seq::int AS seq FROM ${h.tables.messages} WHERE conv = $1 ORDER BY seq`,
      [await convOf(h, 'r')],
    );
    expect(rows.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5]);
  });

  it('an aborted save stores nothing and rejects with the abort reason', async () => {
    const h = provider();
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    await expect(h.saveMessages('a', turn(1), { state: {}, signal: controller.signal })).rejects.toThrow();
    expect(await h.countMessages('a')).toBe(0);
  });
});

/** The `conv` key of a session's rows, as stored. */
async function convOf(h: PostgresHistoryProvider, sessionId: string): Promise<Uint8Array> {
  const { rows } = await client().query<{ conv: Uint8Array }>(
    `SELECT conv FROM ${h.tables.sessions} WHERE source_id = $1 AND session_id = $2`,
    [JSON.stringify(h.sourceId), JSON.stringify(sessionId)],
  );
  if (rows[0] === undefined) throw new Error(`no session row for ${sessionId}`);
  return rows[0].conv;
}
