/**
 * @ctx/postgres beside the peers a user would pick, in one run:
 *
 * 1. History on a PostgreSQL server (Debian's PostgreSQL, started by this script in a temporary
 *    directory on 127.0.0.1 and stopped at the end): a turn (load the history, store the user
 *    message and the reply) on a session holding 100 and 10,000 messages. ctx's
 *    `PostgresHistoryProvider` beside LangChain's `PostgresChatMessageHistory`
 *    (@langchain/community, on the same `pg` driver) and Mastra's `PostgresStore` (@mastra/pg: its
 *    memory domain's thread and message calls, the ones Mastra's `Memory` makes), each on its own
 *    pool and tables, set up as its docs show. Windowed loads (the newest 20) and full loads are
 *    compared like for like.
 * 2. Recall on embedded stores (embed the question, query the user's scope, inject the matches as
 *    context) over 10,000 and 100,000 vectors of one user: ctx's `PgVectorIndex` on PGlite (pgvector
 *    0.8), exact and HNSW, beside Mastra's embedded vector store (`LibSQLVector` of @mastra/libsql on
 *    a file), on the same texts and the same vectors (a deterministic hashing embedder, no model).
 *
 * The sides take turns call by call in a new shuffled order every round (seeded, so a run repeats
 * the order); each row prints p50 and p90, the ratio to ctx (above 1: ctx is faster) and whether
 * the targets are met. Prints tables; asserts nothing. Usage: `pnpm --filter @ctx/bench
 * bench:postgres`. `CTX_BENCH_PG_QUICK=1` runs small sizes: a check that every side works, not
 * figures to publish; `CTX_BENCH_PG_ONLY=history` (or `recall`) runs one part.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHashEmbedding, type EmbeddingGenerator, Message, type VectorRecord } from '@ctx/core';
import { idKey, PgVectorIndex, PostgresHistoryProvider } from '@ctx/postgres';
import { startPostgresServer } from '@ctx/postgres-test-server';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { PostgresChatMessageHistory } from '@langchain/community/stores/message/postgres';
import {
  AIMessage,
  type BaseMessage,
  HumanMessage,
  mapChatMessagesToStoredMessages,
  mapStoredMessagesToChatMessages,
} from '@langchain/core/messages';
import { LibSQLVector } from '@mastra/libsql';
import { PostgresStore } from '@mastra/pg';
import pg from 'pg';
import { countingProxy } from '../redis/counting-proxy.js';
import { runInfo } from './run-info.js';

const QUICK = process.env.CTX_BENCH_PG_QUICK === '1';
/** `CTX_BENCH_PG_ONLY=history` or `recall` runs one part. */
const ONLY = process.env.CTX_BENCH_PG_ONLY;
/** Messages stored in the session a turn runs on. */
const SIZES = QUICK ? [100, 1_000] : [100, 10_000];
/** Vectors of the one user a recall searches (the index holds all sizes' users at once). */
const VECTOR_SIZES = QUICK ? [1_000, 5_000] : [10_000, 100_000];
/** Vector length of every side's embeddings. */
const DIMENSIONS = 128;
const WINDOW = 20;
const TOP_K = 4;
const TEXT = 'The quick brown fox jumps over the lazy dog. '.repeat(4); // ~180 characters per message
const started = performance.now();
const elapsed = () => `${((performance.now() - started) / 1000).toFixed(1)} s`;
const loads: number[] = [loadavg()[0]!];
const sampler = setInterval(() => loads.push(loadavg()[0]!), 5_000);

// ---- timing -------------------------------------------------------------------------------------

/** A seeded generator of numbers in [0, 1) (mulberry32), so a run repeats its orders and data. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = seeded(20261205);
function shuffled<T>(items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** One side of a comparison: the timed call and an untimed step after it. */
interface Side {
  run: (round: number) => Promise<unknown>;
  reset?: () => Promise<unknown>;
}
/** The figures of one side. */
interface Timing {
  p50: number;
  p90: number;
  n: number;
  /** Median CPU time of this process per call (user + system, ms). */
  cpu: number;
}
const at = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]!;
function summarize(samples: number[], cpu: number[]): Timing {
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    p50: at(sorted, 0.5),
    p90: at(sorted, 0.9),
    n: sorted.length,
    cpu: at(
      [...cpu].sort((a, b) => a - b),
      0.5,
    ),
  };
}

/**
 * Runs the sides call by call, in a new shuffled order every round: `warmup` untimed rounds, then
 * at least `minRounds` and at most `maxRounds` timed rounds within `budgetMs`.
 */
async function interleave<K extends string>(
  sides: Record<K, Side>,
  { warmup, minRounds, maxRounds, budgetMs }: { warmup: number; minRounds: number; maxRounds: number; budgetMs: number },
): Promise<Record<K, Timing>> {
  const names = Object.keys(sides) as K[];
  const samples = new Map(names.map((n) => [n, [] as number[]]));
  const cpu = new Map(names.map((n) => [n, [] as number[]]));
  for (let round = 0; round < warmup; round++) {
    for (const name of shuffled(names)) {
      await sides[name].run(-1 - round);
      await sides[name].reset?.();
    }
  }
  const t0 = performance.now();
  for (let round = 0; round < maxRounds && (round < minRounds || performance.now() - t0 < budgetMs); round++) {
    for (const name of shuffled(names)) {
      const c = process.cpuUsage();
      const s = performance.now();
      await sides[name].run(round);
      samples.get(name)!.push(performance.now() - s);
      const used = process.cpuUsage(c);
      cpu.get(name)!.push((used.user + used.system) / 1000);
      await sides[name].reset?.();
    }
  }
  return Object.fromEntries(names.map((n) => [n, summarize(samples.get(n)!, cpu.get(n)!)])) as Record<K, Timing>;
}

const fmt = (ms: number) => (ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms >= 1 ? ms.toFixed(2) : ms.toFixed(3));
const ratio = (r: number) => `${r >= 10 ? r.toFixed(1) : r.toFixed(2)}x`;

// ---- 1. history on the server -------------------------------------------------------------------

/**
 * LangChain's Postgres history reading only the newest `WINDOW` messages: the window a LangChain app
 * writes itself (the package's `getMessages` reads the whole session, and its table has no index on
 * `session_id`: the newest rows are found walking its primary key backwards).
 */
class LastMessagesPostgresHistory extends PostgresChatMessageHistory {
  override async getMessages(): Promise<BaseMessage[]> {
    const { rows } = await this.pool.query<{ message: { type: string } & Record<string, unknown> }>(
      `SELECT message FROM (SELECT id, message FROM ${this.tableName} WHERE session_id = $1 ORDER BY id DESC LIMIT ${WINDOW}) AS newest ORDER BY id`,
      [this.sessionId],
    );
    return mapStoredMessagesToChatMessages(rows.map(({ message: { type, ...data } }) => ({ type, data: data as never })));
  }
}

/** A Mastra message as its storage keeps it (format 2). */
function mastraMessage(id: string, role: 'user' | 'assistant', text: string, threadId: string, createdAt: Date) {
  return {
    id,
    role,
    threadId,
    resourceId: 'bench-user',
    createdAt,
    content: { format: 2 as const, parts: [{ type: 'text' as const, text }] },
  };
}

type HistorySide =
  | 'ctx, maxMessages 20'
  | 'LangChain, user-written last-20 history'
  | 'Mastra, listMessages perPage 20'
  | 'floor: SELECT newest 20, one INSERT of 2 rows'
  | 'ctx, no window'
  | 'LangChain PostgresChatMessageHistory (whole session)'
  | 'Mastra, listMessages perPage false'
  | 'floor: SELECT all, one INSERT of 2 rows';
const WINDOWED: HistorySide[] = [
  'ctx, maxMessages 20',
  'LangChain, user-written last-20 history',
  'Mastra, listMessages perPage 20',
  'floor: SELECT newest 20, one INSERT of 2 rows',
];
const MASTRA_FULL: HistorySide = 'Mastra, listMessages perPage false';
const FULL: HistorySide[] = [
  'ctx, no window',
  'LangChain PostgresChatMessageHistory (whole session)',
  'Mastra, listMessages perPage false',
  'floor: SELECT all, one INSERT of 2 rows',
];
/** Peers a target compares with (the floor is no peer). */
const isPeer = (side: HistorySide) => !side.startsWith('ctx') && !side.startsWith('floor');

/** One library's clients on one server address (direct, or through the counting proxy). */
interface HistoryClients {
  ctxWindow: PostgresHistoryProvider;
  ctxFull: PostgresHistoryProvider;
  lcPool: pg.Pool;
  mastra: MemoryStorage;
  close(): Promise<void>;
}
type MemoryStorage = NonNullable<Awaited<ReturnType<PostgresStore['getStore']>>> & {
  listMessages: (args: Record<string, unknown>) => Promise<{ messages: unknown[] }>;
  saveMessages: (args: { messages: ReturnType<typeof mastraMessage>[] }) => Promise<unknown>;
  saveThread: (args: { thread: Record<string, unknown> }) => Promise<unknown>;
  deleteMessages: (ids: string[]) => Promise<void>;
};

/** Each library's clients, set up as its docs show: a pg Pool for ctx and LangChain, Mastra's PostgresStore. */
async function historyClients(port: number): Promise<HistoryClients> {
  const connection = { host: '127.0.0.1', port, user: 'postgres', database: 'postgres' };
  const ctxPool = new pg.Pool({ ...connection, max: 10 });
  const lcPool = new pg.Pool({ ...connection, max: 10 });
  // Mastra's store on a pool of its own, which its docs allow in place of a connection string.
  const mastraPool = new pg.Pool({ ...connection, max: 20 });
  const pools = [ctxPool, lcPool, mastraPool];
  // An idle connection the server drops at shutdown is no failure of the run.
  for (const pool of pools) pool.on('error', () => {});
  const store = new PostgresStore({ id: `bench-storage-${port}`, pool: mastraPool });
  await store.init();
  // Bounds wide enough for a loaded machine (the peers have none).
  return {
    ctxWindow: new PostgresHistoryProvider({ client: ctxPool, maxMessages: WINDOW, timeoutMs: 60_000 }),
    ctxFull: new PostgresHistoryProvider({ client: ctxPool, timeoutMs: 60_000 }),
    lcPool,
    mastra: (await store.getStore('memory')) as MemoryStorage,
    close: async () => {
      await store.close();
      await Promise.allSettled(pools.map((pool) => pool.end()));
    },
  };
}

interface HistoryRow {
  size: number;
  timings: Partial<Record<HistorySide, Timing>>;
  /** Round trips per turn (bursts of requests each answered by the server), counted by a loopback proxy. */
  roundTrips: Partial<Record<HistorySide, number>>;
}

async function historyBench(): Promise<HistoryRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'ctx-postgres-bench-'));
  const server = await startPostgresServer({ dir });
  const opened: HistoryClients[] = [];
  let proxy: Awaited<ReturnType<typeof countingProxy>> | undefined;
  try {
    const direct = await historyClients(server.port);
    opened.push(direct);
    proxy = await countingProxy(server.port);
    const counted = await historyClients(proxy.port);
    opened.push(counted);
    const version = await direct.lcPool.query<{ server_version: string }>('SHOW server_version');
    console.log(`PostgreSQL ${version.rows[0]!.server_version} on 127.0.0.1:${server.port}, default settings (${elapsed()})`);
    const state = {} as Record<string, never>;
    const rows: HistoryRow[] = [];
    for (const size of SIZES) {
      const sessionId = `bench-${size}`;
      const texts = Array.from({ length: size }, (_, i) => `${TEXT} #${i}`);
      // The same stored conversation on every side, written in batches (untimed).
      await new PostgresChatMessageHistory({ sessionId, pool: direct.lcPool }).clear(); // creates its table
      const now = new Date('2026-01-01T00:00:00Z');
      await direct.mastra.saveThread({
        thread: { id: sessionId, resourceId: 'bench-user', title: sessionId, createdAt: now, updatedAt: now, metadata: {} },
      });
      for (let i = 0; i < size; i += 1000) {
        const batch = texts.slice(i, i + 1000);
        const base = i;
        await direct.ctxFull.append(
          sessionId,
          batch.map((text, j) => ((base + j) % 2 ? Message.assistant(text) : Message.user(text))),
        );
        const stored = mapChatMessagesToStoredMessages(
          batch.map((text, j) => ((base + j) % 2 ? new AIMessage(text) : new HumanMessage(text))),
        );
        await direct.lcPool.query(
          'INSERT INTO langchain_chat_histories (session_id, message) SELECT $1, m FROM unnest($2::jsonb[]) WITH ORDINALITY AS t(m, n) ORDER BY n',
          [sessionId, stored.map(({ type, data }) => JSON.stringify({ ...data, type }))],
        );
        await direct.mastra.saveMessages({
          messages: batch.map((text, j) =>
            mastraMessage(
              `${sessionId}-${base + j}`,
              (base + j) % 2 ? 'assistant' : 'user',
              text,
              sessionId,
              new Date(now.getTime() + (base + j) * 1000),
            ),
          ),
        });
      }
      const check = (loaded: { length: number }, windowed: boolean, side: string) => {
        if (loaded.length !== (windowed ? WINDOW : size)) throw new Error(`${side} loaded ${loaded.length} messages of ${size}`);
      };
      let fresh = 0;
      /** Every side on one set of clients. */
      const sidesOf = (c: HistoryClients): Record<HistorySide, Side> => {
        const ctxSide = (provider: PostgresHistoryProvider, windowed: boolean): Side => ({
          run: async (round) => {
            check(await provider.getMessages(sessionId, windowed ? { state, limit: WINDOW } : { state }), windowed, 'ctx');
            // As a run stores its turn: the turn's input ids, so a retried run replaces its earlier attempt.
            const input = Message.user(`${TEXT} turn ${round}`);
            await provider.saveMessages(sessionId, [input, Message.assistant(`${TEXT} reply ${round}`)], {
              state,
              turn: { inputIds: [input.id], opens: true },
            });
          },
          reset: () => provider.popMessages(sessionId, { state, count: 2 }),
        });
        // LangChain's history has no way to remove only the newest messages: SQL on its table.
        const lcReset = () =>
          direct.lcPool.query(
            'DELETE FROM langchain_chat_histories WHERE id IN (SELECT id FROM langchain_chat_histories WHERE session_id = $1 ORDER BY id DESC LIMIT 2)',
            [sessionId],
          );
        // One history object per session, kept for the whole run (a new one per request would add
        // its CREATE TABLE IF NOT EXISTS to every first call).
        const lcWindow = new LastMessagesPostgresHistory({ sessionId, pool: c.lcPool });
        const lcFull = new PostgresChatMessageHistory({ sessionId, pool: c.lcPool });
        const lcSide = (history: PostgresChatMessageHistory, windowed: boolean): Side => ({
          run: async (round) => {
            check(await history.getMessages(), windowed, 'LangChain');
            await history.addMessages([new HumanMessage(`${TEXT} turn ${round}`), new AIMessage(`${TEXT} reply ${round}`)]);
          },
          reset: lcReset,
        });
        let stored: string[] = [];
        const mastraSide = (windowed: boolean): Side => ({
          run: async (round) => {
            // What Mastra's Memory does to recall a thread's last messages: the newest page, newest first.
            const { messages } = await c.mastra.listMessages({
              threadId: sessionId,
              resourceId: 'bench-user',
              perPage: windowed ? WINDOW : false,
              page: 0,
              orderBy: { field: 'createdAt', direction: 'DESC' },
            });
            check(messages, windowed, 'Mastra');
            const at = new Date();
            stored = [`turn-${++fresh}-user`, `turn-${fresh}-assistant`];
            await c.mastra.saveMessages({
              messages: [
                mastraMessage(stored[0]!, 'user', `${TEXT} turn ${round}`, sessionId, at),
                mastraMessage(stored[1]!, 'assistant', `${TEXT} reply ${round}`, sessionId, new Date(at.getTime() + 1)),
              ],
            });
          },
          reset: () => direct.mastra.deleteMessages(stored),
        });
        // The least any client does per turn on the same driver: one SELECT, JSON already parsed by
        // pg, one INSERT of both messages (autocommit), on LangChain's table; no check of what was read.
        const floorSide = (windowed: boolean): Side => ({
          run: async (round) => {
            const { rows: loaded } = await c.lcPool.query(
              windowed
                ? `SELECT message FROM (SELECT id, message FROM langchain_chat_histories WHERE session_id = $1 ORDER BY id DESC LIMIT ${WINDOW}) AS newest ORDER BY id`
                : 'SELECT message FROM langchain_chat_histories WHERE session_id = $1 ORDER BY id',
              [sessionId],
            );
            check(loaded, windowed, 'floor');
            await c.lcPool.query('INSERT INTO langchain_chat_histories (session_id, message) VALUES ($1, $2), ($1, $3)', [
              sessionId,
              JSON.stringify(Message.user(`${TEXT} turn ${round}`)),
              JSON.stringify(Message.assistant(`${TEXT} reply ${round}`)),
            ]);
          },
          reset: lcReset,
        });
        return {
          'ctx, maxMessages 20': ctxSide(c.ctxWindow, true),
          'LangChain, user-written last-20 history': lcSide(lcWindow, true),
          'Mastra, listMessages perPage 20': mastraSide(true),
          'floor: SELECT newest 20, one INSERT of 2 rows': floorSide(true),
          'ctx, no window': ctxSide(c.ctxFull, false),
          'LangChain PostgresChatMessageHistory (whole session)': lcSide(lcFull, false),
          'Mastra, listMessages perPage false': mastraSide(false),
          'floor: SELECT all, one INSERT of 2 rows': floorSide(false),
        };
      };
      const sides = sidesOf(direct);
      const pick = (group: HistorySide[]) => Object.fromEntries(group.map((s) => [s, sides[s]])) as Record<HistorySide, Side>;
      const many = { warmup: 20, minRounds: 30, maxRounds: 1000, budgetMs: QUICK ? 2000 : 12_000 };
      const timings = { ...(await interleave(pick(WINDOWED), many)) };
      if (size < 10_000) Object.assign(timings, await interleave(pick(FULL), many));
      else {
        // Mastra's whole-session load takes seconds a call at this size: it runs its own few rounds,
        // so the other sides, still taking turns call by call, get many rounds in the same time and
        // none of their calls follows seconds of another library's garbage.
        const rest = FULL.filter((s) => s !== MASTRA_FULL);
        Object.assign(timings, await interleave(pick(rest), { warmup: 3, minRounds: 20, maxRounds: 400, budgetMs: 20_000 }));
        Object.assign(timings, await interleave(pick([MASTRA_FULL]), { warmup: 1, minRounds: 5, maxRounds: 5, budgetMs: 0 }));
      }
      // Round trips of 5 turns on each side through the proxy (the untimed reset is not counted).
      const roundTrips: Partial<Record<HistorySide, number>> = {};
      for (const [name, side] of Object.entries(sidesOf(counted)) as [HistorySide, Side][]) {
        let total = 0;
        for (let i = 0; i < 5; i++) {
          const before = proxy.roundTrips();
          await side.run(1_000_000 + i);
          total += proxy.roundTrips() - before;
          await side.reset?.();
        }
        roundTrips[name] = total / 5;
      }
      rows.push({ size, timings, roundTrips });
      console.log(`measured ${size.toLocaleString('en')} stored messages (${elapsed()}, load average ${loadavg()[0]!.toFixed(2)})`);
    }
    return rows;
  } finally {
    for (const clients of opened) await clients.close();
    proxy?.server.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---- 2. recall on embedded stores ---------------------------------------------------------------

/** Seeded pseudo-words, so texts share words the way a conversation does and the embedder ranks them. */
const VOCABULARY = Array.from({ length: 3000 }, () => {
  const syllables = ['ka', 'lo', 'mi', 'ter', 'san', 'vo', 'ri', 'den', 'pa', 'qu', 'zel', 'mo', 'ne', 'tha', 'bri', 'gon'];
  return Array.from({ length: 2 + Math.floor(random() * 2) }, () => syllables[Math.floor(random() * syllables.length)]).join('');
});
const sentence = (words: number) => Array.from({ length: words }, () => VOCABULARY[Math.floor(random() * VOCABULARY.length)]).join(' ');

/** The records of one user: `count` messages in sessions of 100, with their vectors. */
async function userRecords(embedder: EmbeddingGenerator, userId: string, count: number): Promise<VectorRecord[]> {
  const records: VectorRecord[] = [];
  for (let i = 0; i < count; i += 2000) {
    const texts = Array.from({ length: Math.min(2000, count - i) }, () => sentence(12));
    const vectors = await embedder.embed(texts);
    texts.forEach((text, j) => {
      const n = i + j;
      records.push({
        id: `${userId}-m${n}`,
        text,
        userId,
        sessionId: `${userId}-s${Math.floor(n / 100)}`,
        messageId: `${userId}-m${n}`,
        role: n % 2 ? 'assistant' : 'user',
        sequence: n % 100,
        vector: vectors[j]!,
      });
    });
  }
  return records;
}

/** What every side does with its matches: the context message the model receives. */
const inject = (texts: string[]) => Message.system(`Earlier messages that may help:\n${texts.map((t) => `- ${t}`).join('\n')}`);

type RecallSide =
  | 'ctx PgVectorIndex, exact (PGlite)'
  | 'ctx PgVectorIndex, HNSW (PGlite)'
  | 'ctx PgVectorIndex, HNSW efSearch 100 (PGlite)'
  | 'Mastra LibSQLVector (libSQL file)'
  | 'floor: the exact search as one statement on PGlite'
  | 'floor: the HNSW search as one statement on PGlite';
const RECALL_SIDES: RecallSide[] = [
  'ctx PgVectorIndex, exact (PGlite)',
  'ctx PgVectorIndex, HNSW (PGlite)',
  'ctx PgVectorIndex, HNSW efSearch 100 (PGlite)',
  'Mastra LibSQLVector (libSQL file)',
  'floor: the exact search as one statement on PGlite',
  'floor: the HNSW search as one statement on PGlite',
];

interface RecallRow {
  size: number;
  timings: Partial<Record<RecallSide, Timing>>;
  /** Of the exact search's top 4, how many each side found, over all questions. */
  overlap: Partial<Record<RecallSide, number>>;
}

async function recallBench(): Promise<{ rows: RecallRow[]; setup: string[] }> {
  const embedder = createHashEmbedding({ dimensions: DIMENSIONS });
  const dir = mkdtempSync(join(tmpdir(), 'ctx-postgres-bench-recall-'));
  const setup: string[] = [];
  const lap = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    const t0 = performance.now();
    const out = await fn();
    setup.push(`${what}: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    console.log(`  ${setup.at(-1)} (${elapsed()})`);
    return out;
  };
  const users = await lap(`embedding ${VECTOR_SIZES.map((s) => s.toLocaleString('en')).join(' + ')} texts (${DIMENSIONS} dimensions)`, () =>
    Promise.all(VECTOR_SIZES.map((size) => userRecords(embedder, `user-${size}`, size))),
  );
  const all = users.flat();
  try {
    // Mastra's embedded vector store on a file, as its docs set it up; the text rides in the metadata.
    // `createIndex` makes its table and a libSQL DiskANN index, which costs about 10 ms per inserted
    // vector here (2,000 in 19.8 s at load 13): over 110,000 vectors, about 18 minutes. So the index
    // is dropped before loading and Mastra searches without it: its own query path for a table
    // without one, and where it falls back when a filtered indexed search finds fewer than topK.
    const url = `file:${join(dir, 'mastra.db')}`;
    await new LibSQLVector({ id: 'bench-vector-setup', url }).createIndex({
      indexName: 'memory_messages',
      dimension: DIMENSIONS,
      metric: 'cosine',
    });
    const libsql = createRequire(import.meta.resolve('@mastra/libsql'))('@libsql/client') as {
      createClient(config: { url: string }): { execute(sql: string): Promise<unknown>; close(): void };
    };
    const raw = libsql.createClient({ url });
    await raw.execute('DROP INDEX memory_messages_vector_idx');
    raw.close();
    const mastra = new LibSQLVector({ id: 'bench-vector', url });
    await lap(`Mastra LibSQLVector upsert of ${all.length.toLocaleString('en')} vectors`, async () => {
      for (let i = 0; i < all.length; i += 1000) {
        const batch = all.slice(i, i + 1000);
        await mastra.upsert({
          indexName: 'memory_messages',
          ids: batch.map((r) => r.id),
          vectors: batch.map((r) => r.vector),
          metadata: batch.map((r) => ({ resource_id: r.userId, thread_id: r.sessionId, message_id: r.messageId, text: r.text })),
        });
      }
    });
    const query = async (name: RecallSide, ctxExact: PgVectorIndex, ctxHnsw: PgVectorIndex) => {
      // Returns the side's call for one question: embed, search the user's scope, inject.
      return async (userId: string, question: string): Promise<string[]> => {
        const [vector] = await embedder.embed([question]);
        let ids: string[];
        let texts: string[];
        if (name === 'Mastra LibSQLVector (libSQL file)') {
          const matches = await mastra.query({
            indexName: 'memory_messages',
            queryVector: vector!,
            topK: TOP_K,
            filter: { resource_id: userId },
          });
          ids = matches.map((m) => m.id);
          texts = matches.map((m) => String(m.metadata?.text));
        } else if (name.startsWith('floor')) {
          // ctx's own search SQL as one statement, without ctx's checks, the scope's size or the search function around it.
          const { rows } = await db.query<{ id: string; text: string }>(
            name.includes('HNSW')
              ? `SELECT id, text FROM ${ctxHnsw.table} WHERE (user_key || ''::bytea) = decode($2, 'hex') ORDER BY embedding <=> $1::vector LIMIT ${TOP_K}`
              : `SELECT id, text FROM ${ctxHnsw.table} WHERE user_key = decode($2, 'hex') ORDER BY 1 - (embedding <=> $1::vector) DESC LIMIT ${TOP_K}`,
            [`[${vector!.join(',')}]`, idKey(userId).toString('hex')],
          );
          ids = rows.map((r) => r.id);
          texts = rows.map((r) => r.text);
        } else {
          const index = name === 'ctx PgVectorIndex, exact (PGlite)' ? ctxExact : name.includes('efSearch 100') ? ctxHnsw100 : ctxHnsw;
          const matches = await index.query({ vector: vector!, topK: TOP_K, filter: { userId } });
          ids = matches.map((m) => m.id);
          texts = matches.map((m) => m.text);
        }
        inject(texts);
        return ids;
      };
    };
    // ctx on PGlite in a data directory. Both ctx sides share one table: the exact index loads it
    // (no HNSW index to maintain while inserting), then the HNSW index is built over the loaded
    // table on its first use, with room for the graph in memory (pgvector builds far slower when it
    // does not fit in maintenance_work_mem). The exact side orders by score, which no HNSW index
    // serves, so it stays exact with the HNSW index present.
    const db = await lap('PGlite create (data directory, pgvector)', () =>
      PGlite.create({ dataDir: join(dir, 'pglite'), extensions: { vector } }),
    );
    const ctxExact = new PgVectorIndex({ client: db, dimensions: DIMENSIONS, timeoutMs: 60_000 });
    await lap(`ctx PgVectorIndex upsert of ${all.length.toLocaleString('en')} vectors`, async () => {
      for (let i = 0; i < all.length; i += 1000) await ctxExact.upsert(all.slice(i, i + 1000));
    });
    await db.exec(`SET maintenance_work_mem = '512MB'`);
    const ctxHnsw = new PgVectorIndex({ client: db, dimensions: DIMENSIONS, hnsw: true, timeoutMs: 60_000 });
    await lap(`ctx PgVectorIndex HNSW build over ${all.length.toLocaleString('en')} vectors`, () =>
      ctxHnsw.query({ vector: all[0]!.vector, topK: 1, filter: { userId: all[0]!.userId } }),
    );
    // The same index searched with more candidates (`hnsw.ef_search` is a setting of each search, not of the index).
    const ctxHnsw100 = new PgVectorIndex({ client: db, dimensions: DIMENSIONS, hnsw: { efSearch: 100 }, timeoutMs: 60_000 });
    // For the HNSW floor: the iterative scan for the session (ctx's search function sets the same for each search).
    await db.exec(`SET hnsw.iterative_scan = relaxed_order`);
    const sides = Object.fromEntries(
      await Promise.all(RECALL_SIDES.map(async (s) => [s, await query(s, ctxExact, ctxHnsw)] as const)),
    ) as Record<RecallSide, (userId: string, question: string) => Promise<string[]>>;
    const active = RECALL_SIDES;
    const rows: RecallRow[] = [];
    for (const [u, size] of VECTOR_SIZES.entries()) {
      const userId = `user-${size}`;
      // Questions made of words the user said, four of one stored message and two others.
      const questions = Array.from({ length: 40 }, () => {
        const record = users[u]![Math.floor(random() * size)]!;
        return `what did I say about ${record.text.split(' ').slice(0, 4).join(' ')} ${sentence(2)}`;
      });
      // Each side's matches per question, from the timed calls themselves (every round asks every
      // side the same question); the exact search's are the truth the others are compared with.
      const found = new Map(active.map((s) => [s, new Map<number, string[]>()]));
      const timings = await interleave(
        Object.fromEntries(
          active.map((s) => [
            s,
            {
              run: async (round: number) => {
                const q = Math.abs(round) % questions.length;
                found.get(s)!.set(q, await sides[s](userId, questions[q]!));
              },
            },
          ]),
        ) as Record<RecallSide, Side>,
        { warmup: 5, minRounds: 40, maxRounds: 400, budgetMs: QUICK ? 2000 : size >= 100_000 ? 30_000 : 15_000 },
      );
      const truth = found.get('ctx PgVectorIndex, exact (PGlite)')!;
      const overlap: Partial<Record<RecallSide, number>> = {};
      for (const side of active) {
        let hits = 0;
        for (const [q, ids] of truth)
          hits += found
            .get(side)!
            .get(q)!
            .filter((id) => ids.includes(id)).length;
        overlap[side] = hits / (truth.size * TOP_K);
      }
      rows.push({ size, timings, overlap });
      console.log(`measured recall over ${size.toLocaleString('en')} vectors (${elapsed()}, load average ${loadavg()[0]!.toFixed(2)})`);
    }
    await db.close();
    return { rows, setup };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---- run and report -----------------------------------------------------------------------------

console.log(`# @ctx/postgres beside LangChain and Mastra (${runInfo()})\n`);
const historyRows = ONLY === 'recall' ? [] : await historyBench();
if (ONLY !== 'history') console.log('\n  recall setup:');
const recall = ONLY === 'history' ? { rows: [], setup: [] } : await recallBench();
clearInterval(sampler);

const targets: string[] = [];
console.log('\n## History: one turn (load, then store the user message and the reply), PostgreSQL server\n');
console.log(
  "p50 / p90 ms over call-by-call shuffled rounds; client CPU is this process's median per turn; \"vs ctx\" is the side's p50 over ctx's (above 1: ctx is faster).\n",
);
console.log('| stored messages | side | p50 ms | p90 ms | turns | client CPU ms | round trips | p50 vs ctx |');
console.log('| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const { size, timings, roundTrips } of historyRows) {
  for (const group of [WINDOWED, FULL]) {
    const ctx = timings[group[0]!];
    for (const side of group) {
      const t = timings[side];
      if (!t) continue;
      const vs = ctx && side !== group[0] ? ratio(t.p50 / ctx.p50) : '';
      console.log(
        `| ${size.toLocaleString('en')} | ${side} | ${fmt(t.p50)} | ${fmt(t.p90)} | ${t.n} | ${fmt(t.cpu)} | ${roundTrips[side] ?? ''} | ${vs} |`,
      );
    }
    const peers = group
      .filter(isPeer)
      .map((s) => timings[s])
      .filter((t): t is Timing => t !== undefined);
    const fastest = Math.min(...peers.map((t) => t.p50));
    if (ctx) {
      targets.push(
        `${group === WINDOWED ? 'window of 20' : 'whole session'} at ${size.toLocaleString('en')}: ctx ${fmt(ctx.p50)} ms, fastest peer ${fmt(fastest)} ms (${ratio(fastest / ctx.p50)}): ${ctx.p50 <= fastest ? 'met' : 'NOT met'}`,
      );
    }
  }
}

console.log("\n## Recall: embed the question, search the user's vectors (top 4), inject the matches\n");
console.log(`Setup (untimed): ${recall.setup.join('; ')}.\n`);
console.log('| vectors of the user | side | p50 ms | p90 ms | queries | client CPU ms | p50 vs ctx HNSW | found of exact top 4 |');
console.log('| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const { size, timings, overlap } of recall.rows) {
  const hnsw = timings['ctx PgVectorIndex, HNSW (PGlite)'];
  for (const side of RECALL_SIDES) {
    const t = timings[side];
    if (!t) continue;
    const vs = hnsw && !side.includes('HNSW') ? ratio(t.p50 / hnsw.p50) : '';
    const found = overlap[side] === undefined ? '' : `${(overlap[side]! * 100).toFixed(0)}%`;
    console.log(`| ${size.toLocaleString('en')} | ${side} | ${fmt(t.p50)} | ${fmt(t.p90)} | ${t.n} | ${fmt(t.cpu)} | ${vs} | ${found} |`);
  }
  const peer = timings['Mastra LibSQLVector (libSQL file)'];
  const exact = timings['ctx PgVectorIndex, exact (PGlite)'];
  if (hnsw && exact && peer) {
    const best = Math.min(hnsw.p50, exact.p50);
    targets.push(
      `recall at ${size.toLocaleString('en')}: ctx ${fmt(best)} ms (${best === hnsw.p50 ? 'HNSW' : 'exact'}), Mastra ${fmt(peer.p50)} ms (${ratio(peer.p50 / best)}): ${best <= peer.p50 ? 'met' : 'NOT met'}`,
    );
    if (size === 10_000)
      targets.push(
        `recall over 10,000 under 5 ms p50 embedded: HNSW ${fmt(hnsw.p50)} ms, exact ${fmt(exact.p50)} ms: ${best < 5 ? 'met' : 'NOT met'}`,
      );
  }
}
console.log('\n## Targets\n');
for (const line of targets) console.log(`- ${line}`);
console.log(
  `\nTotal ${elapsed()}, load average ${Math.min(...loads).toFixed(2)}-${Math.max(...loads).toFixed(2)} (1 min, sampled every 5 s); ${runInfo()}`,
);
