// What the suites cannot reach from outside the backend: rows corrupted behind its back, a database
// that cannot be opened or is locked, and reads beside another connection's write transaction.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BackendUnavailableError, ConfigurationError, Message, type SessionJson, SessionStateError } from '@ctx/core/backend';
import Database from 'better-sqlite3';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { idKey, SqliteHistoryProvider, SqliteSessionStore } from './sqlite-backend.js';

const directory = mkdtempSync(join(tmpdir(), 'ctx-sqlite-failures-'));
let database: string;
let file = 0;
beforeEach(() => {
  database = join(directory, `ctx-${++file}.db`);
});
afterAll(() => rmSync(directory, { recursive: true, force: true }));
/** The arguments of a direct call: no run, no state. */
const args = { state: {} };

function session(sessionId: string, userId?: string): SessionJson {
  const now = new Date().toISOString();
  return {
    type: 'ctx.session',
    version: 2,
    sessionId,
    metadata: { createdAt: now, updatedAt: now, ...(userId === undefined ? {} : { userId }) },
    state: {},
  };
}

/** The error `promise` rejects with (fails the test when it resolves). */
async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.fail('expected a rejection'),
    (error: unknown) => error,
  );
}

describe('a corrupt row is a SessionStateError naming the session, and nothing is lost', () => {
  it('getMessages of a row that is not JSON', async () => {
    const provider = new SqliteHistoryProvider({ database });
    try {
      await provider.saveMessages('s-1', [Message.user('one'), Message.user('two')], args);
      const raw = new Database(database);
      raw.prepare('UPDATE ctx_messages SET json = ? WHERE session = ? AND seq = 1').run('{"id": "m', idKey('s-1'));
      raw.close();
      const error = await failure(provider.getMessages('s-1', args));
      expect(error).toBeInstanceOf(SessionStateError);
      expect(error).toMatchObject({ sessionId: 's-1', path: '$.history[1]' });
      expect((error as Error).message).toMatch(/not valid JSON/);
    } finally {
      provider.close();
    }
  });

  it('getMessages of a row that is JSON but not a message', async () => {
    const provider = new SqliteHistoryProvider({ database });
    try {
      await provider.saveMessages('s-2', [Message.user('one')], args);
      const raw = new Database(database);
      raw.prepare('UPDATE ctx_messages SET json = ? WHERE session = ?').run('{"id": "m", "role": "robot", "contents": []}', idKey('s-2'));
      raw.close();
      const error = await failure(provider.getMessages('s-2', args));
      expect(error).toBeInstanceOf(SessionStateError);
      expect(error).toMatchObject({ sessionId: 's-2', path: '$.history[0].role' });
    } finally {
      provider.close();
    }
  });

  it('popMessages of a corrupt row throws before removing anything', async () => {
    const provider = new SqliteHistoryProvider({ database });
    try {
      await provider.saveMessages('s-3', [Message.user('one'), Message.user('two')], args);
      const raw = new Database(database);
      raw.prepare('UPDATE ctx_messages SET json = ? WHERE session = ? AND seq = 1').run('not json', idKey('s-3'));
      const rows = () => raw.prepare('SELECT COUNT(*) AS n FROM ctx_messages WHERE session = ?').get(idKey('s-3'));
      try {
        const error = await failure(provider.popMessages('s-3', args));
        expect(error).toBeInstanceOf(SessionStateError);
        expect(error).toMatchObject({ sessionId: 's-3' });
        expect(rows()).toEqual({ n: 2 });
      } finally {
        raw.close();
      }
    } finally {
      provider.close();
    }
  });

  it('list of a corrupt summary', async () => {
    const store = new SqliteSessionStore({ database });
    try {
      await store.set(session('s-4'));
      const raw = new Database(database);
      raw.prepare('UPDATE ctx_sessions SET summary = ? WHERE session_key = ?').run('{"sessionId": ', idKey('s-4'));
      raw.close();
      const error = await failure(store.list());
      expect(error).toBeInstanceOf(SessionStateError);
      expect(error).toMatchObject({ sessionId: 's-4' });
    } finally {
      store.close();
    }
  });
});

describe('a database that cannot be opened is a CtxError', () => {
  it('a path whose directory does not exist is a ConfigurationError naming it', () => {
    const missing = join(directory, 'no-such-directory', 'ctx.db');
    expect(() => new SqliteHistoryProvider({ database: missing })).toThrow(ConfigurationError);
    expect(() => new SqliteSessionStore({ database: missing })).toThrow(missing);
  });

  it('a file that is not a database is a ConfigurationError', () => {
    writeFileSync(database, 'this is not an SQLite database, but it is long enough to have a header of one');
    expect(() => new SqliteSessionStore({ database })).toThrow(ConfigurationError);
  });

  it('a database another connection holds locked is a BackendUnavailableError', () => {
    const holder = new Database(database);
    try {
      holder.pragma('locking_mode = EXCLUSIVE');
      holder.exec('CREATE TABLE held (x); INSERT INTO held VALUES (1)'); // the exclusive lock, kept
      expect(() => new SqliteSessionStore({ database, timeoutMs: 1 })).toThrow(BackendUnavailableError);
    } finally {
      holder.close();
    }
  });
});

describe('reads take no write lock', () => {
  it('getMessages, get and list answer while another connection holds a write transaction', async () => {
    const provider = new SqliteHistoryProvider({ database, timeoutMs: 1 });
    const store = new SqliteSessionStore({ database, timeoutMs: 1 });
    const writer = new Database(database);
    try {
      await provider.saveMessages('s-5', [Message.user('one')], args);
      await store.set(session('s-5'));
      writer.exec('BEGIN IMMEDIATE');
      writer.prepare('DELETE FROM ctx_messages').run(); // not committed: the readers see the snapshot before it
      expect(await provider.getMessages('s-5', args)).toHaveLength(1);
      expect((await store.get('s-5'))?.session.sessionId).toBe('s-5');
      expect((await store.list()).sessions.map((s) => s.sessionId)).toEqual(['s-5']);
      // A write still waits for the lock, and fails as unavailable when it is not freed in time.
      await expect(store.delete('s-5')).rejects.toBeInstanceOf(BackendUnavailableError);
      writer.exec('ROLLBACK');
    } finally {
      writer.close();
      store.close();
      provider.close();
    }
  });
});
