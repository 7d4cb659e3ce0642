import { ConfigurationError } from '@ctx/core';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { type PostgresClient, sqlDatabase } from './sql-client.js';

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
