import type { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { describeVectorIndex } from '@ctx/provider-tests';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestPGlite } from '../test/databases.js';
import { PgVectorIndex } from './pg-vector-index.js';

// The server code path with vectors: the pg driver (a Pool, engine 'server') talking to PGlite with
// pgvector over the PostgreSQL wire protocol (@electric-sql/pglite-socket), since Debian 12 has no
// pgvector for the test server. PGlite is one connection, so the pool holds one.

let db: PGlite | undefined;
let server: PGLiteSocketServer | undefined;
let pool: pg.Pool | undefined;
const client = (): pg.Pool => {
  if (pool === undefined) throw new Error('the pool is not open yet');
  return pool;
};

beforeAll(async () => {
  db = await openTestPGlite({ extensions: { vector } });
  server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: 1 });
  await server.start();
  const [host, port] = server.getServerConn().split(':');
  pool = new pg.Pool({ host, port: Number(port), user: 'postgres', database: 'postgres', max: 1 });
  pool.on('error', () => {});
}, 60_000);
afterAll(async () => {
  await pool?.end();
  await server?.stop();
  await db?.close();
});

describeVectorIndex('PgVectorIndex through pg (PGlite over its socket)', {
  create: ({ dimensions }) => new PgVectorIndex({ client: client(), dimensions, tablePrefix: 'wire_', hnsw: true }),
  capabilities: { list: true },
  timeout: 30_000,
});

describe('PgVectorIndex through pg', () => {
  it('runs on the server engine, with bytea keys, bigint sequences and text arrays as the driver sends them', async () => {
    const index = new PgVectorIndex({ client: client(), dimensions: 3, tablePrefix: 'wire_own_' });
    await index.upsert([
      { id: 'a', text: 'first', sessionId: 's', messageId: 'm1', role: 'user', sequence: 2 ** 40, vector: [1, 0, 0] },
      { id: 'b', text: 'second', sessionId: 's', messageId: 'm2', role: 'assistant', sequence: 2 ** 40 + 1, vector: [0, 1, 0] },
    ]);
    const matches = await index.query({ vector: [1, 1, 0], topK: 5, filter: { sessionId: 's', excludeMessageIds: ['m2'] } });
    expect(matches.map((m) => [m.id, m.sequence])).toEqual([['a', 2 ** 40]]);
    expect(matches[0]!.score).toBeCloseTo(Math.SQRT1_2, 5);
    await index.delete({ ids: ['a'] });
    expect((await index.list({ sessionId: 's' })).map((r) => r.id)).toEqual(['b']);
  });
});
