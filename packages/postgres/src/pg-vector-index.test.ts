import type { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { ConfigurationError, InvalidInputError, SessionStateError, type VectorRecord } from '@ctx/core';
import { describeVectorIndex } from '@ctx/provider-tests';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestPGlite } from '../test/databases.js';
import { exactSql, hnswSql, PgVectorIndex, type PgVectorIndexOptions } from './pg-vector-index.js';

/**
 * The settings the search function (`<prefix>vectors_search`) runs an HNSW search with, as one
 * statement for a transaction (`$1` the iterative scan, `$2` `hnsw.ef_search`, and no sequential
 * scan): to look at the plan of `hnswSql` as the function runs it.
 */
const HNSW_SETTINGS =
  "SELECT set_config('hnsw.iterative_scan', $1, true), set_config('hnsw.ef_search', $2, true), set_config('enable_seqscan', 'off', true)";

// Everything on embedded PGlite with pgvector 0.8.7 (Debian 12 has no pgvector for the server):
// the conformance suite and the index's own behaviour, on one PGlite for the whole file. The same
// suite runs through the pg driver in pg-vector-index.socket.test.ts.

let db: PGlite | undefined;
const client = (): PGlite => {
  if (db === undefined) throw new Error('PGlite is not open yet');
  return db;
};
let tag = 0;
const fresh = (name: string) => `${name}_${++tag}_${Math.random().toString(36).slice(2, 8)}`;

beforeAll(async () => {
  db ??= await openTestPGlite({ extensions: { vector } });
}, 60_000);
afterAll(async () => {
  await db?.close();
});

describeVectorIndex('PgVectorIndex on PGlite', {
  create: ({ dimensions }) => new PgVectorIndex({ client: client(), dimensions, tablePrefix: 'conformance_' }),
  capabilities: { list: true },
  timeout: 30_000,
});

const index = (options: Partial<PgVectorIndexOptions> = {}) =>
  new PgVectorIndex({ client: client(), dimensions: 4, tablePrefix: fresh('v'), ...options });
const record = (init: Partial<VectorRecord> & { id: string }): VectorRecord => ({
  text: `text of ${init.id}`,
  sessionId: 's1',
  messageId: init.id,
  role: 'user',
  sequence: 0,
  vector: [1, 0, 0, 0],
  ...init,
});

describe('PgVectorIndex options', () => {
  it('refuses a missing or bad dimensions, bad HNSW settings and unknown options with ConfigurationError', () => {
    const c = client();
    expect(() => new PgVectorIndex({ client: c } as never)).toThrow(ConfigurationError);
    expect(() => new PgVectorIndex({ client: c, dimensions: 0 })).toThrow(/dimensions must be an integer from 1 to 16000/);
    expect(() => new PgVectorIndex({ client: c, dimensions: 3072, hnsw: true })).toThrow(/at most 2,000 dimensions with HNSW/);
    expect(() => new PgVectorIndex({ client: c, dimensions: 4, hnsw: { m: 1 } })).toThrow(/hnsw.m must be an integer from 2/);
    expect(() => new PgVectorIndex({ client: c, dimensions: 4, hnsw: { ef: 3 } as never })).toThrow(/unknown option "ef"/);
    expect(() => new PgVectorIndex({ client: c, dimensions: 4, exactSearchLimit: -1 })).toThrow(ConfigurationError);
    expect(() => new PgVectorIndex({ client: c, dimensions: 4, dimension: 4 } as never)).toThrow(/unknown option "dimension"/);
    expect(() => new PgVectorIndex({ client: c, dimensions: 4, tablePrefix: 'x;drop' })).toThrow(ConfigurationError);
    expect(new PgVectorIndex({ client: c, dimensions: 4 }).table).toBe('"public"."ctx_vectors"');
  });

  it('refuses a table made for another vector length with ConfigurationError naming both', async () => {
    const tablePrefix = fresh('dims');
    await index({ tablePrefix }).upsert([record({ id: 'r1' })]);
    const other = index({ tablePrefix, dimensions: 8 });
    await expect(other.query({ vector: Array(8).fill(1), topK: 1, filter: { sessionId: 's1' } })).rejects.toThrow(
      /holds vectors of type vector\(4\), this index has 8 dimensions.*another tablePrefix/,
    );
    await expect(other.upsert([record({ id: 'r2', vector: Array(8).fill(1) })])).rejects.toBeInstanceOf(ConfigurationError);
  });

  it('says how to get pgvector when the database has none', async () => {
    const { PGlite } = await import('@electric-sql/pglite');
    // No `extensions: { vector }`: the database has no pgvector.
    const plain = await openTestPGlite();
    try {
      expect(plain).toBeInstanceOf(PGlite);
      const error = await new PgVectorIndex({ client: plain, dimensions: 4 }).upsert([record({ id: 'r1' })]).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConfigurationError);
      expect((error as Error).message).toMatch(/no pgvector extension.*extensions: \{ vector \} from @electric-sql\/pglite-pgvector/);
    } finally {
      await plain.close();
    }
  }, 30_000);
});

describe('PgVectorIndex values', () => {
  it('refuses a value float4 cannot hold and a zero vector with InvalidInputError naming the record, storing nothing of the batch', async () => {
    const idx = index();
    const good = record({ id: 'good' });
    for (const [bad, problem] of [
      [record({ id: 'huge', vector: [1, 3.5e38, 0, 0] }), /record "huge" has a vector value beyond what a float4 holds/],
      [record({ id: 'tiny-negative', vector: [-1e39, 0, 0, 0] }), /record "tiny-negative" has a vector value beyond/],
      [record({ id: 'zero', vector: [0, 0, 0, 0] }), /record "zero" has a zero vector/],
      [record({ id: 'nan', vector: [0, Number.NaN, 0, 0] }), /record "nan" needs a vector of finite numbers/],
      [record({ id: 'short', vector: [1, 0, 0] }), /record "short" has a vector of 3 dimensions/],
    ] as const) {
      const error = await idx.upsert([good, bad]).catch((e: unknown) => e);
      expect(error, bad.id).toBeInstanceOf(InvalidInputError);
      expect((error as Error).message).toMatch(problem);
    }
    expect(await idx.list({ sessionId: 's1' })).toEqual([]);
  });

  it('keeps the direction of vectors with values near the ends of float4 (stored as unit vectors), so scores stay exact', async () => {
    const idx = index();
    await idx.upsert([
      record({ id: 'large', vector: [3e38, 3e38, 0, 0] }),
      record({ id: 'small', sequence: 1, vector: [1e-40, 0, 1e-40, 0] }),
    ]);
    const [large] = await idx.query({ vector: [1, 1, 0, 0], topK: 1, filter: { sessionId: 's1' } });
    expect(large).toMatchObject({ id: 'large' });
    expect(large!.score).toBeCloseTo(1, 5);
    const [small] = await idx.query({ vector: [1, 0, 1, 0], topK: 1, filter: { sessionId: 's1' } });
    expect(small).toMatchObject({ id: 'small' });
    expect(small!.score).toBeCloseTo(1, 5);
  });

  it('a zero query vector matches nothing', async () => {
    const idx = index();
    await idx.upsert([record({ id: 'r1' })]);
    expect(await idx.query({ vector: [0, 0, 0, 0], topK: 3, filter: { sessionId: 's1' } })).toEqual([]);
  });

  it('keeps a 4 KB hostile id whole (its key is a digest, so the btree row limit never applies)', async () => {
    const idx = index();
    const long = `${'é🦜'.repeat(700)}'"; DROP TABLE x; --`;
    await idx.upsert([record({ id: long, userId: long, sessionId: long, messageId: long })]);
    const [match] = await idx.query({ vector: [1, 0, 0, 0], topK: 1, filter: { userId: long, sessionId: long } });
    expect(match).toMatchObject({ id: long, userId: long, sessionId: long, messageId: long });
    expect(await idx.query({ vector: [1, 0, 0, 0], topK: 1, filter: { userId: long, excludeMessageIds: [long] } })).toEqual([]);
    await idx.delete({ ids: [long] });
    expect(await idx.list({ userId: long })).toEqual([]);
  });

  it('a malformed row read back is a SessionStateError naming the table and the row', async () => {
    const idx = index();
    await idx.upsert([record({ id: 'broken' }), record({ id: 'fine', sequence: 1 })]);
    await client().query(`UPDATE ${idx.table} SET role = 'wizard' WHERE id = 'broken'`);
    const error = await idx.getRange({ sessionId: 's1', fromSequence: 0, toSequence: 1 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SessionStateError);
    expect((error as Error).message).toContain(`postgres:${idx.table}["broken"].role`);
    await client().query(`UPDATE ${idx.table} SET role = 'user', sequence = -4 WHERE id = 'broken'`);
    await expect(idx.list({ sessionId: 's1' })).rejects.toThrow(/\["broken"\]\.sequence/);
  });
});

describe('PgVectorIndex search', () => {
  /** A deterministic pseudo-random vector. */
  const vectorOf = (seed: number, length: number): number[] => {
    let x = (seed * 2654435761) >>> 0 || 1;
    return Array.from({ length }, () => {
      x ^= x << 13;
      x >>>= 0;
      x ^= x >>> 17;
      x ^= x << 5;
      x >>>= 0;
      return (x / 0xffffffff) * 2 - 1;
    });
  };
  const cosine = (a: readonly number[], b: readonly number[]) => {
    let [dot, na, nb] = [0, 0, 0];
    for (let i = 0; i < a.length; i++) [dot, na, nb] = [dot + a[i]! * b[i]!, na + a[i]! * a[i]!, nb + b[i]! * b[i]!];
    return dot / Math.sqrt(na * nb);
  };
  const plan = async (sql: string, params: unknown[], settings: [string, unknown[]][] = []) =>
    client().transaction(async (tx) => {
      for (const [setting, values] of settings) await tx.query(setting, values);
      const { rows } = await tx.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, params);
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    });

  it('the exact search never uses an HNSW index, even where one exists', async () => {
    const idx = index({ hnsw: true });
    await idx.upsert([record({ id: 'r1' })]);
    const where = `user_key = decode($3, 'hex')`;
    expect(await plan(exactSql(idx.table, where), ['[1,0,0,0]', 3, '00'], [['SET LOCAL enable_seqscan = off', []]])).not.toMatch(/hnsw/);
  });

  // 3,000 records of 16 dimensions in 10 users: each user's scope is a tenth of the table. With the
  // HNSW index and exactSearchLimit 200, a user's (300 records) query walks the graph. Without the iterative scan,
  // pgvector takes hnsw.ef_search (40) candidates and filters them afterwards: about 4 are the user's.
  it('with hnsw, a scope that is a tenth of the table still gets topK from the HNSW index (iterative scan, re-ordered exactly)', async () => {
    const dimensions = 16;
    const idx = index({ dimensions, hnsw: { efSearch: 40 }, exactSearchLimit: 200 });
    const users = Array.from({ length: 10 }, (_, u) => `user-${u}`);
    const records = Array.from(
      { length: 3000 },
      (_, i): VectorRecord =>
        record({ id: `r${i}`, userId: users[i % 10]!, sessionId: `s${i % 20}`, sequence: i, vector: vectorOf(i + 1, dimensions) }),
    );
    for (let at = 0; at < records.length; at += 500) await idx.upsert(records.slice(at, at + 500));
    await client().query(`ANALYZE ${idx.table}`);

    // The planner walks the HNSW index for the index's HNSW statement.
    const params = ['[1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]', 10, 'aa'];
    const hnswPlan = await plan(hnswSql(idx.table, `(user_key || ''::bytea) = decode($3, 'hex')`), params, [
      [HNSW_SETTINGS, ['relaxed_order', '40']],
    ]);
    expect(hnswPlan).toMatch(/Index Scan using "?\w*vectors_hnsw"?/);

    const topK = 10;
    let overlap = 0;
    for (const seed of [101, 102, 103, 104, 105]) {
      const query = vectorOf(seed, dimensions);
      const userId = users[seed % 10]!;
      const expected = records
        .filter((r) => r.userId === userId)
        .map((r) => ({ id: r.id, score: cosine(r.vector, query) }))
        .sort((a, b) => b.score - a.score)
        .slice(0, topK);
      const matches = await idx.query({ vector: query, topK, filter: { userId } });
      expect(idx.lastSearch, `query ${seed}`).toBe('hnsw');
      expect(matches, `query ${seed}: topK matches of a scope of 300`).toHaveLength(topK);
      expect(matches.every((m) => m.userId === userId)).toBe(true);
      // Re-ordered exactly: scores descend, and each is the record's cosine similarity.
      for (let i = 1; i < matches.length; i++) expect(matches[i - 1]!.score).toBeGreaterThanOrEqual(matches[i]!.score);
      for (const m of matches) expect(m.score).toBeCloseTo(cosine(records[Number(m.id.slice(1))]!.vector, query), 4);
      overlap += matches.filter((m) => expected.some((e) => e.id === m.id)).length;

      // The same statement without the iterative scan loses most of the scope's matches: the data is big enough to tell.
      const plain = await client().transaction(async (tx) => {
        await tx.query(HNSW_SETTINGS, ['off', '40']);
        const where = `(user_key || ''::bytea) = decode($3, 'hex')`;
        const { createHash } = await import('node:crypto');
        const key = createHash('sha256').update(userId).digest('hex');
        return (await tx.query(hnswSql(idx.table, where), [`[${query.map((x) => x / Math.hypot(...query)).join(',')}]`, topK, key])).rows;
      });
      expect(plain.length, `query ${seed} without the iterative scan`).toBeLessThan(topK);
    }
    // HNSW is approximate: at least 90% of the exact top 10 over the five queries.
    expect(overlap / (5 * topK)).toBeGreaterThanOrEqual(0.9);

    // A scope within exactSearchLimit is searched exactly: a session here holds 150 records.
    const query = vectorOf(7, dimensions);
    const exact = await idx.query({ vector: query, topK, filter: { sessionId: 's3', userId: 'user-3' } });
    expect(idx.lastSearch).toBe('exact');
    expect(exact.map((m) => m.id)).toEqual(
      records
        .filter((r) => r.sessionId === 's3')
        .map((r) => ({ id: r.id, score: cosine(r.vector, query) }))
        .sort((a, b) => b.score - a.score)
        .slice(0, topK)
        .map((e) => e.id),
    );
  }, 120_000);
});

describe('PgVectorIndex scope counts and the search in one call', () => {
  /** The counts the triggers keep, beside the counts of the table itself: `u`/`s` and the key in hex. */
  const counts = async (idx: PgVectorIndex) => {
    const scopes = idx.table.replace(/vectors"$/, 'vector_scopes"');
    const kept = await client().query<{ k: string; n: number }>(
      `SELECT encode(scope_key, 'hex') AS k, records::int AS n FROM ${scopes} ORDER BY 1`,
    );
    const actual = await client().query<{ k: string; n: number }>(
      `SELECT k, count(*)::int AS n FROM (
         SELECT '75' || encode(user_key, 'hex') AS k FROM ${idx.table} WHERE user_key IS NOT NULL
         UNION ALL SELECT '73' || encode(session_key, 'hex') FROM ${idx.table}) c GROUP BY k ORDER BY 1`,
    );
    return { kept: kept.rows, actual: actual.rows };
  };

  it('keeps the records of each user and session for every writer: upserts, moves, deletes, plain SQL and TRUNCATE', async () => {
    const idx = index({ hnsw: true });
    await idx.upsert([
      record({ id: 'a1', userId: 'alice', sessionId: 'sa' }),
      record({ id: 'a2', userId: 'alice', sessionId: 'sa', sequence: 1 }),
      record({ id: 'b1', userId: 'bob', sessionId: 'sb' }),
      record({ id: 'n1', sessionId: 'sn' }),
    ]);
    let { kept, actual } = await counts(idx);
    expect(kept).toHaveLength(5);
    expect(kept).toEqual(actual);
    // A record replaced under another user and session moves between the counts.
    await idx.upsert([record({ id: 'a2', userId: 'bob', sessionId: 'sb', sequence: 1 })]);
    await idx.delete({ ids: ['b1'] });
    ({ kept, actual } = await counts(idx));
    expect(kept).toEqual(actual);
    // Another writer, in plain SQL.
    await client().query(
      `INSERT INTO ${idx.table} SELECT decode(md5('copy'), 'hex'), 'copy', user_key, user_id, session_key, session_id, 'copy', role, 5, created_at, kind, text, embedding FROM ${idx.table} WHERE id = 'a1'`,
    );
    await client().query(`DELETE FROM ${idx.table} WHERE id = 'n1'`);
    ({ kept, actual } = await counts(idx));
    expect(kept).toEqual(actual);
    expect(kept.some((c) => c.n <= 0)).toBe(false);
    await idx.delete({ userId: 'alice' });
    ({ kept, actual } = await counts(idx));
    expect(kept).toEqual(actual);
    await client().query(`TRUNCATE ${idx.table}`);
    expect((await counts(idx)).kept).toEqual([]);
  });

  it('counts a table of the previous schema version when it migrates', async () => {
    const tablePrefix = fresh('old');
    const table = `"public"."${tablePrefix}vectors"`;
    // The vector table as the previous version made it, holding records, at version 4.
    await client().exec(`
      CREATE TABLE ${table} (id_key bytea PRIMARY KEY, id text NOT NULL, user_key bytea, user_id text, session_key bytea NOT NULL,
        session_id text NOT NULL, message_id text NOT NULL, role text NOT NULL, sequence bigint NOT NULL, created_at text, kind text,
        text text NOT NULL, embedding vector(4) NOT NULL);
      CREATE INDEX "${tablePrefix}vectors_user" ON ${table} (user_key);
      CREATE INDEX "${tablePrefix}vectors_session" ON ${table} (session_key, sequence);
      CREATE TABLE IF NOT EXISTS "public"."${tablePrefix}schema_versions" (component text PRIMARY KEY, version integer NOT NULL, updated_at timestamptz NOT NULL DEFAULT now());
      INSERT INTO "public"."${tablePrefix}schema_versions" (component, version) VALUES ('vectors', 4);
      INSERT INTO ${table} SELECT sha256(('r' || i)::bytea), 'r' || i, sha256('u'::bytea), 'u', sha256('s'::bytea), 's', 'm' || i, 'user', i, NULL, NULL, 't',
        ('[1,' || i || ',0,0]')::vector FROM generate_series(1, 30) i;
    `);
    const idx = index({ tablePrefix, hnsw: true, exactSearchLimit: 10 });
    const matches = await idx.query({ vector: [1, 0, 0, 0], topK: 3, filter: { userId: 'u' } });
    expect(idx.lastSearch).toBe('hnsw');
    expect(matches.map((m) => m.id)).toEqual(['r1', 'r2', 'r3']);
    const { kept, actual } = await counts(idx);
    expect(kept).toEqual(actual);
    expect(kept.map((c) => c.n)).toEqual([30, 30]);
  });

  it('with hnsw, a search is one call into the database: no count of the scope, no transaction', async () => {
    const calls: string[] = [];
    const db = client();
    const counting = {
      query: (text: string, params?: unknown[]) => {
        calls.push(text.slice(0, 40));
        return db.query(text, params);
      },
      transaction: <T>(fn: Parameters<PGlite['transaction']>[0]) => {
        calls.push('transaction');
        return db.transaction(fn) as Promise<T>;
      },
    };
    const tablePrefix = fresh('calls');
    const idx = new PgVectorIndex({ client: counting, dimensions: 4, tablePrefix, hnsw: true, exactSearchLimit: 2 });
    await idx.upsert([0, 1, 2, 3].map((i) => record({ id: `r${i}`, userId: 'u', sequence: i, vector: [1, i, 0, 0] })));
    for (const [limit, search] of [
      [2, 'hnsw'],
      [10, 'exact'],
    ] as const) {
      const probe = new PgVectorIndex({ client: counting, dimensions: 4, tablePrefix, hnsw: true, exactSearchLimit: limit });
      await probe.query({ vector: [1, 0, 0, 0], topK: 1, filter: { userId: 'u' } });
      calls.length = 0;
      const [match] = await probe.query({ vector: [1, 0, 0, 0], topK: 1, filter: { userId: 'u', excludeMessageIds: ['r0'] } });
      expect(probe.lastSearch).toBe(search);
      expect(match).toMatchObject({ id: 'r1' });
      expect(calls, search).toHaveLength(1);
    }
  });

  it('searches a user and session exactly when their common records fit exactSearchLimit, though each alone holds more', async () => {
    const idx = index({ hnsw: true, exactSearchLimit: 3 });
    await idx.upsert([
      ...[0, 1, 2].map((i) => record({ id: `a-s1-${i}`, userId: 'a', sessionId: 's1', sequence: i, vector: [1, i, 0, 0] })),
      ...[0, 1].map((i) => record({ id: `a-s2-${i}`, userId: 'a', sessionId: 's2', sequence: i, vector: [1, i, 1, 0] })),
      ...[0, 1, 2].map((i) => record({ id: `b-s1-${i}`, userId: 'b', sessionId: 's1', sequence: 10 + i, vector: [1, i, 0, 1] })),
    ]);
    await idx.query({ vector: [1, 0, 0, 0], topK: 2, filter: { userId: 'a', sessionId: 's1' } });
    expect(idx.lastSearch).toBe('exact');
    await idx.query({ vector: [1, 0, 0, 0], topK: 2, filter: { userId: 'a' } });
    expect(idx.lastSearch).toBe('hnsw');
  });

  it('the HNSW settings end with the search: the connection keeps its own', async () => {
    const idx = index({ hnsw: { efSearch: 120 }, exactSearchLimit: 0 });
    await idx.upsert([record({ id: 'r1', userId: 'u' }), record({ id: 'r2', userId: 'u', sequence: 1, vector: [0, 1, 0, 0] })]);
    const show = async () =>
      (
        await client().query<{ s: string }>(
          "SELECT concat_ws(' ', current_setting('hnsw.iterative_scan'), current_setting('hnsw.ef_search'), current_setting('enable_seqscan')) AS s",
        )
      ).rows[0]!.s;
    const before = await show();
    expect(await idx.query({ vector: [1, 0, 0, 0], topK: 2, filter: { userId: 'u' } })).toHaveLength(2);
    expect(idx.lastSearch).toBe('hnsw');
    expect(await show()).toBe(before);
    expect(before).toBe('off 40 on');
  });

  it('an upsert of more than one statement first locks the counts of every scope it adds to or moves records from, in key order', async () => {
    const db = client();
    const sent: { text: string; params: unknown[] | undefined }[] = [];
    const recording = {
      query: (text: string, params?: unknown[]) => db.query(text, params),
      transaction: <T>(fn: Parameters<PGlite['transaction']>[0]) =>
        db.transaction((tx) =>
          fn(
            Object.assign(Object.create(tx) as typeof tx, {
              query: (text: string, params?: unknown[]) => {
                sent.push({ text, params });
                return tx.query(text, params);
              },
            }),
          ),
        ) as Promise<T>,
    };
    const idx = new PgVectorIndex({ client: recording, dimensions: 4, tablePrefix: fresh('locks') });
    await idx.upsert([record({ id: 'moved', userId: 'before', sessionId: 'old' })]);
    sent.length = 0;
    const batch = Array.from({ length: 450 }, (_, i) =>
      record({ id: i === 0 ? 'moved' : `r${i}`, userId: 'u', sessionId: `s${i % 3}`, sequence: i }),
    );
    await idx.upsert(batch);
    expect(sent.length).toBe(4);
    const [lock] = sent;
    expect(lock!.text).toMatch(/^INSERT INTO "public"\."locks_[^"]+vector_scopes" AS c/);
    expect(lock!.text).toMatch(/ORDER BY k/);
    const [scopes, ids] = lock!.params as [string[], string[]];
    expect(scopes).toHaveLength(4);
    expect(ids).toHaveLength(450);
    // The record moved away from `before` and `old` left their counts; those scopes have no row now.
    const { kept, actual } = await counts(idx);
    expect(kept).toEqual(actual);
    expect(kept.map((c) => c.n).sort((a, b) => a - b)).toEqual([150, 150, 150, 450]);
    // One statement: no lock of its own (its trigger takes the counts in key order).
    sent.length = 0;
    await idx.upsert(batch.slice(0, 10));
    expect(sent.map((s) => s.text.slice(0, 11))).toEqual(['INSERT INTO']);
    expect(sent[0]!.text).not.toMatch(/vector_scopes/);
  });

  it('stores one record per id when a batch repeats one, the last given', async () => {
    const idx = index();
    await idx.upsert([record({ id: 'twice', text: 'first' }), record({ id: 'other' }), record({ id: 'twice', text: 'last', sequence: 2 })]);
    const listed = await idx.list({ sessionId: 's1' });
    expect(listed.map((r) => [r.id, r.text])).toEqual([
      ['other', 'text of other'],
      ['twice', 'last'],
    ]);
    const { kept, actual } = await counts(idx);
    expect(kept).toEqual(actual);
  });

  it('storing records again in their own scopes writes no count row (a retried upsert takes no count lock)', async () => {
    const idx = index();
    const batch = [record({ id: 'a', userId: 'u' }), record({ id: 'b', userId: 'u', sequence: 1 })];
    await idx.upsert(batch);
    const scopes = idx.table.replace(/vectors"$/, 'vector_scopes"');
    const versions = async () => (await client().query<{ v: string }>(`SELECT xmin::text AS v FROM ${scopes} ORDER BY scope_key`)).rows;
    const before = await versions();
    await idx.upsert(batch.map((r) => ({ ...r, text: 'edited' })));
    expect(await versions()).toEqual(before);
    await idx.upsert([record({ id: 'a', userId: 'u', sessionId: 'elsewhere' })]);
    expect(await versions()).not.toEqual(before);
    const { kept, actual } = await counts(idx);
    expect(kept).toEqual(actual);
  });

  it('keeps a 4 KB hostile id whole on the HNSW path too (ids reach the search function only as parameters)', async () => {
    const idx = index({ hnsw: true, exactSearchLimit: 0 });
    const long = `${'é🦜'.repeat(700)}'"; DROP TABLE x; --`;
    await idx.upsert([
      record({ id: long, userId: long, sessionId: long, messageId: long }),
      record({ id: 'other', userId: long, messageId: "o'; --" }),
    ]);
    const matches = await idx.query({ vector: [1, 0, 0, 0], topK: 2, filter: { userId: long, excludeMessageIds: [long, "%s'"] } });
    expect(idx.lastSearch).toBe('exact');
    expect(matches.map((m) => m.id)).toEqual(['other']);
    const [match] = await idx.query({ vector: [1, 0, 0, 0], topK: 1, filter: { userId: long, sessionId: long } });
    expect(idx.lastSearch).toBe('hnsw');
    expect(match).toMatchObject({ id: long, userId: long, sessionId: long, messageId: long });
  });
});
