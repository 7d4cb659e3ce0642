import { ConfigurationError, type SessionJson } from '@ctx/core';
import type { PGlite } from '@electric-sql/pglite';
import { describeSessionStore } from '@ctx/provider-tests';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestPGlite, openTestPool } from '../test/databases.js';
import { PostgresSessionStore } from './postgres-session-store.js';

// The session store conformance suite on both engines: embedded PGlite (one for the file) and the
// shared PostgreSQL test server (a pg Pool), each under its own table prefix.

let pglite: PGlite | undefined;
let pool: pg.Pool | undefined;
beforeAll(async () => {
  pglite = await openTestPGlite();
  pool = openTestPool({ max: 25 });
}, 60_000);
afterAll(async () => {
  await Promise.all([pglite?.close(), pool?.end()]);
});

describeSessionStore('PostgresSessionStore on PGlite', {
  create: () => new PostgresSessionStore({ client: pglite as PGlite, tablePrefix: 'conf_' }),
  capabilities: { list: true, leases: true },
});

describeSessionStore('PostgresSessionStore on a PostgreSQL server', {
  create: () => new PostgresSessionStore({ client: pool as pg.Pool, tablePrefix: 'conf_' }),
  capabilities: { list: true, leases: true },
});

const session = (sessionId: string, userId = 'u1'): SessionJson => ({
  type: 'ctx.session',
  version: 2,
  sessionId,
  metadata: { createdAt: '2030-01-01T00:00:00.000Z', updatedAt: '2030-01-01T00:00:01.000Z', userId },
  state: {},
});

describe('PostgresSessionStore options', () => {
  it('refuses an unknown option, a bad ttlSeconds, tablePrefix or timeoutMs, and a client that is not one, with ConfigurationError', () => {
    const client = pglite as PGlite;
    expect(() => new PostgresSessionStore({ client, ttl: 5 } as never)).toThrow(/unknown option "ttl"/);
    expect(() => new PostgresSessionStore({ client, ttlSeconds: 0 })).toThrow(ConfigurationError);
    expect(() => new PostgresSessionStore({ client, ttlSeconds: 1.5 })).toThrow(ConfigurationError);
    expect(() => new PostgresSessionStore({ client, tablePrefix: 'a;b' })).toThrow(ConfigurationError);
    expect(() => new PostgresSessionStore({ client, timeoutMs: -1 })).toThrow(ConfigurationError);
    expect(() => new PostgresSessionStore({ client: {} as PGlite })).toThrow(ConfigurationError);
    expect(new PostgresSessionStore({ client }).tables.sessions).toBe('"public"."ctx_sessions"');
  });
});

describe('PostgresSessionStore ttlSeconds on PGlite', () => {
  it('an expired session reads, lists and deletes as not stored, is created over, and deleteExpired removes it', async () => {
    const store = new PostgresSessionStore({ client: pglite as PGlite, tablePrefix: 'ttl_', ttlSeconds: 3600 });
    await store.set(session('old', 'ttl-user'));
    await store.set(session('live', 'ttl-user'));
    const { rows } = await (pglite as PGlite).query<{ live: boolean }>(
      `SELECT expires_at > now() + interval '3500 seconds' AS live FROM ${store.tables.sessions}`,
    );
    expect(rows.map((r) => r.live)).toEqual([true, true]);
    // Expire "old" as an hour passing would.
    await (pglite as PGlite).query(
      `UPDATE ${store.tables.sessions} SET expires_at = now() - interval '1 second' WHERE session_id = '"old"'`,
    );
    expect(await store.get('old')).toBeUndefined();
    expect((await store.list({ userId: 'ttl-user' })).sessions.map((s) => s.sessionId)).toEqual(['live']);
    expect(await store.delete('old')).toBe(false);
    await store.set(session('old2', 'ttl-user'));
    await (pglite as PGlite).query(
      `UPDATE ${store.tables.sessions} SET expires_at = now() - interval '1 second' WHERE session_id = '"old2"'`,
    );
    const etag = await store.set(session('old2', 'ttl-user'), { ifMatch: null });
    expect((await store.get('old2'))?.etag).toBe(etag);
    await (pglite as PGlite).query(
      `UPDATE ${store.tables.sessions} SET expires_at = now() - interval '1 second' WHERE session_id = '"old2"'`,
    );
    expect(await store.deleteExpired()).toBe(1);
    expect(await store.get('live')).toBeDefined();
  });
});
