/**
 * What sessions as a product cost on Redis: round trips per operation of `RedisSessionStore` and
 * `RedisHistoryProvider` (counted by a loopback proxy between the client and a single redis-server;
 * one round trip = one burst of requests followed by a reply), and the latency of a listing page
 * with 10,000 sessions stored (100 users of 100 sessions), on a single node and on a 3-node
 * cluster, both started here on loopback and stopped by pid; then 100 concurrent sessions running
 * chat turns (session and history) on each, with the commands per turn and each master's share of
 * the script calls. Prints tables; asserts nothing.
 * Usage: `pnpm --filter @ctx/bench bench:sessions`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createAgent, Message, type SessionJson } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { RedisHistoryProvider, RedisSessionStore } from '@ctx/redis';
import { startRedisCluster, startRedisServer } from '@ctx/redis-test-server';
import { Cluster, Redis } from 'ioredis';
import { countCommands, runSessions, scriptCalls } from './concurrent-turns.js';
import { countingProxy } from './counting-proxy.js';

const USERS = 100;
const PER_USER = 100;
const SAMPLES = 300;
const T0 = Date.UTC(2026, 0, 1);

function session(sessionId: string, i: number, userId?: string): SessionJson {
  const at = new Date(T0 + i * 1000).toISOString();
  return {
    type: 'ctx.session',
    version: 2,
    sessionId,
    metadata: { createdAt: at, updatedAt: at, title: `Conversation ${i}`, ...(userId === undefined ? {} : { userId }) },
    state: { app: { note: 'x'.repeat(200) } },
  };
}

/** Saves 10,000 sessions, 64 writes in flight. */
async function seed(store: RedisSessionStore): Promise<void> {
  const all = Array.from({ length: USERS * PER_USER }, (_, i) => session(`s${i}`, i, `user-${i % USERS}`));
  for (let i = 0; i < all.length; i += 64) await Promise.all(all.slice(i, i + 64).map((s) => store.set(s)));
}

/** p50 and p90 in ms of `SAMPLES` sequential calls, after 20 to warm up. */
async function latency(call: () => Promise<unknown>): Promise<{ p50: number; p90: number }> {
  for (let i = 0; i < 20; i++) await call();
  const times: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const start = performance.now();
    await call();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return { p50: times[Math.floor(SAMPLES * 0.5)]!, p90: times[Math.floor(SAMPLES * 0.9)]! };
}

/** A cursor `pages` pages of `limit` deep into a listing. */
async function deepCursor(store: RedisSessionStore, options: { userId?: string; limit: number }, pages: number): Promise<string> {
  let cursor: string | undefined;
  for (let i = 0; i < pages; i++) cursor = (await store.list({ ...options, ...(cursor ? { cursor } : {}) })).nextCursor;
  return cursor!;
}

async function listingRows(store: RedisSessionStore): Promise<string[]> {
  const rows: string[] = [];
  const cases: [string, () => Promise<unknown>][] = [];
  for (const limit of [20, 100]) {
    const deep = await deepCursor(store, { limit }, Math.floor((USERS * PER_USER) / limit / 2));
    const userDeep = await deepCursor(store, { userId: 'user-7', limit: 20 }, 2);
    cases.push(
      [`every session, first page of ${limit}`, () => store.list({ limit })],
      [`every session, a page of ${limit} halfway (cursor)`, () => store.list({ limit, cursor: deep })],
    );
    if (limit === 20) {
      cases.push(
        ['one user (100 sessions), first page of 20', () => store.list({ userId: 'user-7', limit: 20 })],
        ['one user, third page of 20 (cursor)', () => store.list({ userId: 'user-7', limit: 20, cursor: userDeep })],
      );
    }
  }
  for (const [name, call] of cases) {
    const { p50, p90 } = await latency(call);
    rows.push(`| ${name} | ${p50.toFixed(3)} | ${p90.toFixed(3)} |`);
  }
  return rows;
}

const dir = mkdtempSync(join(tmpdir(), 'ctx-bench-sessions-'));
const server = await startRedisServer({ dir: join(dir, 'single') });
const cluster = await startRedisCluster({ dir: join(dir, 'cluster') });
const proxy = await countingProxy(server.port);
const counted = new Redis({ host: '127.0.0.1', port: proxy.port });
const direct = new Redis({ host: '127.0.0.1', port: server.port });
const clusterClient = new Cluster([...cluster.startupNodes]);
try {
  console.log(
    `# Sessions on Redis: round trips per operation (single node, redis-server ${server.port}, pid ${server.pid}, through a counting proxy)\n`,
  );
  const store = new RedisSessionStore({ client: counted, prefix: 'rt' });
  const history = new RedisHistoryProvider({ client: counted, prefix: 'rt' });
  const count = async (call: () => Promise<unknown>): Promise<number> => {
    const before = proxy.roundTrips();
    await call();
    return proxy.roundTrips() - before;
  };
  // Warm the scripts up on the server (a first call per script adds one NOSCRIPT round trip).
  await store.set(session('warm', 0, 'w'));
  await store.set(session('warm', 1, 'w2'));
  await store.list();
  await store.delete('warm');
  await history.append('warm', [Message.user('x')]);
  await history.forkMessages('warm', 'warm2', { fromState: {}, toState: {} });
  await history.clearMessages('warm2', { state: {} });
  await history.popMessages('warm', { state: {} });

  const rows: [string, number][] = [];
  rows.push(['`set` of a new session with a user', await count(() => store.set(session('a', 1, 'u1')))]);
  rows.push(['`set` again, same user', await count(() => store.set(session('a', 2, 'u1')))]);
  rows.push(['`set` moving it to another user, store that read or wrote it before', await count(() => store.set(session('a', 3, 'u2')))]);
  const fresh = () => new RedisSessionStore({ client: counted, prefix: 'rt' });
  rows.push(['`set` moving it to another user, another store instance', await count(() => fresh().set(session('a', 4, 'u3')))]);
  rows.push(['`get`', await count(() => store.get('a'))]);
  rows.push(['`delete` after `get` or `set` on this instance', await count(() => store.delete('a'))]);
  await store.set(session('b', 5, 'u1'));
  rows.push(['`delete` of a session with a user, by another instance', await count(() => fresh().delete('b'))]);
  await store.set(session('c', 6));
  rows.push(['`delete` of a session without a user, by another instance', await count(() => fresh().delete('c'))]);
  for (let i = 0; i < 30; i++) await store.set(session(`l${i}`, 10 + i, 'u1'));
  rows.push(['`list` page (any size, with or without cursor)', await count(() => store.list({ userId: 'u1', limit: 20 }))]);
  const page = await store.list({ userId: 'u1', limit: 20 });
  rows.push(['`list` next page', await count(() => store.list({ userId: 'u1', limit: 20, cursor: page.nextCursor! }))]);
  const messages = Array.from({ length: 1000 }, (_, i) => Message.user(`m${i}`));
  await history.append('h', messages);
  rows.push([
    'history `forkMessages` at message 500 of 1,000',
    await count(() => history.forkMessages('h', 'h2', { fromState: {}, toState: {}, atMessageId: messages[499]!.id })),
  ]);
  rows.push(['history `clearMessages`', await count(() => history.clearMessages('h2', { state: {} }))]);
  rows.push(['`reindex` of 35 sessions (one SCAN page)', await count(() => store.reindex())]);
  // The agent's session operations, with one Redis history and the Redis store.
  const agent = createAgent({ client: new ScriptedChatClient({ replies: () => 'ok' }), contextProviders: [history], sessionStore: store });
  const made = [];
  for (let i = 0; i < 11; i++) {
    const s = agent.createSession({ userId: 'owner' });
    await agent.run('hello', { session: s });
    await agent.saveSession(s);
    made.push(s);
  }
  const [target, ...rest] = made;
  const [, reply] = await history.getMessages(target!.sessionId, { state: {} });
  rows.push(['`agent.forkSession` at a message (history copy)', await count(() => agent.forkSession(target!, { atMessageId: reply!.id }))]);
  rows.push(['`agent.deleteSession(id)` (get, clear the history, delete)', await count(() => agent.deleteSession(target!.sessionId))]);
  rows.push([`\`agent.deleteUserData\` of a user with ${rest.length} sessions`, await count(() => agent.deleteUserData('owner'))]);
  console.log('| operation | round trips |\n| --- | ---: |');
  for (const [name, n] of rows) console.log(`| ${name} | ${n} |`);

  console.log(
    `\n# List latency with ${USERS * PER_USER} sessions stored (${USERS} users x ${PER_USER}), ms, ${SAMPLES} sequential calls each\n`,
  );
  const single = new RedisSessionStore({ client: direct, prefix: 'big' });
  const clustered = new RedisSessionStore({ client: clusterClient, prefix: 'big' });
  let start = performance.now();
  await seed(single);
  const seedSingle = performance.now() - start;
  start = performance.now();
  await seed(clustered);
  const seedCluster = performance.now() - start;
  console.log(
    `seeding 10,000 sessions (64 at once): single node ${(seedSingle / 1000).toFixed(1)} s, cluster ${(seedCluster / 1000).toFixed(1)} s\n`,
  );
  for (const [name, store] of [
    ['single node', single],
    ['3-node cluster', clustered],
  ] as const) {
    console.log(`## ${name}\n\n| page | p50 | p90 |\n| --- | ---: | ---: |`);
    for (const row of await listingRows(store)) console.log(row);
    console.log();
  }
  // Time inside the server per page (SLOWLOG records every command's execution time when its threshold is 0).
  console.log('## single node, time inside redis-server per page (SLOWLOG, microseconds, median of 100)\n\n| page | µs |\n| --- | ---: |');
  await direct.call('CONFIG', 'SET', 'slowlog-log-slower-than', '0');
  await direct.call('CONFIG', 'SET', 'slowlog-max-len', '1000');
  for (const [name, options] of [
    ['every session, first page of 20', { limit: 20 }],
    ['every session, first page of 100', { limit: 100 }],
    ['one user, first page of 20', { userId: 'user-7', limit: 20 }],
  ] as const) {
    await direct.call('SLOWLOG', 'RESET');
    for (let i = 0; i < 100; i++) await single.list(options);
    const log = (await direct.call('SLOWLOG', 'GET', '1000')) as [number, number, number, string[]][];
    const micros = log.filter((entry) => String(entry[3][0]).toLowerCase() === 'evalsha').map((entry) => Number(entry[2]));
    micros.sort((a, b) => a - b);
    console.log(`| ${name} | ${micros[Math.floor(micros.length / 2)]} |`);
  }
  await direct.call('CONFIG', 'SET', 'slowlog-log-slower-than', '10000');
  console.log();
  const memory =
    Number(await direct.call('MEMORY', 'USAGE', 'big:sessions:{all}:order')) +
    Number(await direct.call('MEMORY', 'USAGE', 'big:sessions:{all}:meta'));
  console.log(
    `index of every session (order + meta): ${(memory / 1024 / 1024).toFixed(2)} MiB for 10,000 sessions (${Math.round(memory / 10_000)} bytes each); each user's index holds the same entries again`,
  );

  // Throughput of chat turns with sessions and history, single node beside the cluster.
  const CONCURRENT = 100;
  const TURNS = 30;
  console.log(
    `\n## ${CONCURRENT} concurrent sessions (${CONCURRENT / 2} users), ${TURNS} turns each: get the session, load 20, store 2, set the session\n`,
  );
  console.log('| topology | turns/s (median of 3 rounds) | rounds | commands per turn | script calls per master (busiest / least busy) |');
  console.log('| --- | ---: | --- | ---: | --- |');
  const clusterMasters = clusterClient.nodes('master');
  const sides = [
    ['single node, one connection', direct, [direct]],
    [`${clusterMasters.length}-master cluster, one Cluster connection`, clusterClient, clusterMasters],
  ] as const;
  const results = new Map<string, { rates: number[]; commands: number; turns: number; calls: number[] }>();
  const counters = new Map(sides.map(([name, client]) => [name, countCommands(client)]));
  for (let round = 0; round < 3; round++) {
    for (let k = 0; k < sides.length; k++) {
      const [name, client, masters] = sides[(k + round) % sides.length]!;
      const prefix = `turns${round}`;
      const store = new RedisSessionStore({ client, prefix });
      const history = new RedisHistoryProvider({ client, prefix, maxMessages: 20 });
      const callsBefore = await scriptCalls([...masters]);
      const commandsBefore = counters.get(name)!.count();
      const t0 = performance.now();
      const records = await runSessions({ store, history, sessions: CONCURRENT, users: CONCURRENT / 2, turns: TURNS, name: 's' });
      const seconds = (performance.now() - t0) / 1000;
      const failed = records.filter((r) => r.error !== undefined);
      if (failed.length > 0) throw new Error(`${failed.length} turns failed on ${name}: ${failed[0]!.message}`);
      const calls = (await scriptCalls([...masters])).map((n, i) => n - callsBefore[i]!);
      const entry = results.get(name) ?? { rates: [], commands: 0, turns: 0, calls: calls.map(() => 0) };
      entry.rates.push(records.length / seconds);
      entry.commands += counters.get(name)!.count() - commandsBefore;
      entry.turns += records.length;
      entry.calls = entry.calls.map((n, i) => n + calls[i]!);
      results.set(name, entry);
    }
  }
  const rates = new Map<string, number>();
  for (const [name] of sides) {
    const { rates: r, commands, turns, calls } = results.get(name)!;
    const median = [...r].sort((a, b) => a - b)[1]!;
    rates.set(name, median);
    const spread = calls.length > 1 ? `${calls.join(' / ')} (${(Math.max(...calls) / Math.min(...calls)).toFixed(2)}x)` : `${calls[0]}`;
    console.log(
      `| ${name} | ${median.toFixed(0)} | ${r.map((x) => x.toFixed(0)).join(', ')} | ${(commands / turns).toFixed(2)} | ${spread} |`,
    );
  }
  const [singleRate, clusterRate] = sides.map(([name]) => rates.get(name)!);
  console.log(
    `\ncluster / single node: ${(clusterRate! / singleRate!).toFixed(2)}x turns/s, on one machine where every node shares the same ${(await import('node:os')).cpus().length} cores (load average ${(
      await import('node:os')
    )
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}).`,
  );
} finally {
  counted.disconnect();
  direct.disconnect();
  clusterClient.disconnect();
  proxy.server.close();
  await Promise.all([server.stop(), cluster.stop()]);
  rmSync(dir, { recursive: true, force: true });
}
