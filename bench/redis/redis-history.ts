/**
 * Per-turn cost of conversation history on Redis as the history grows: @ctx/redis
 * `RedisHistoryProvider` beside LangChain's `RedisChatMessageHistory` (@langchain/redis, on the
 * `redis` client it ships with) and beside the server's own ceiling (`redis-benchmark` running the
 * same commands), on one local redis-server this script starts and stops by pid.
 *
 * A turn is what a chat app does per user message: load the history the model will see, then store
 * the user message and the reply. ctx loads a window of the newest 20 (`maxMessages: 20`);
 * LangChain's history has no window and loads the whole list. Round trips are counted by a loopback
 * proxy between each client and the server (one round trip = one burst of requests followed by a
 * reply). Prints tables; asserts nothing. Usage: `pnpm --filter @ctx/bench bench:redis`.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Message } from '@ctx/core';
import { RedisHistoryProvider } from '@ctx/redis';
import { findFreePort, startRedisServer } from '@ctx/redis-test-server';
import { AIMessage, HumanMessage, mapChatMessagesToStoredMessages } from '@langchain/core/messages';
import { RedisChatMessageHistory } from '@langchain/redis';
import { Redis } from 'ioredis';
import { createClient } from 'redis';

const SIZES = [100, 10_000, 100_000];
const WINDOW = 20;
const TEXT = 'The quick brown fox jumps over the lazy dog. '.repeat(4); // ~180 characters per message
const started = performance.now();

/** A loopback TCP proxy that counts round trips: bursts of client writes, each answered by the server. */
async function countingProxy(targetPort: number): Promise<{ port: number; roundTrips: () => number; server: Server }> {
  let roundTrips = 0;
  const server = createServer((client) => {
    const upstream = createConnection({ host: '127.0.0.1', port: targetPort });
    let last: 'request' | 'reply' = 'reply';
    client.on('data', (chunk) => {
      if (last === 'reply') roundTrips++;
      last = 'request';
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      last = 'reply';
      client.write(chunk);
    });
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  const port = await findFreePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { port, roundTrips: () => roundTrips, server };
}

/** Median and mean of `fn` over at least `min` and at most `max` runs within `budgetMs` (after `warmup` untimed runs). */
async function time(
  fn: () => Promise<unknown>,
  { warmup = 3, min = 5, max = 500, budgetMs = 2000 } = {},
): Promise<{ p50: number; mean: number; n: number }> {
  for (let i = 0; i < warmup; i++) await fn();
  const samples: number[] = [];
  const t0 = performance.now();
  while (samples.length < max && (samples.length < min || performance.now() - t0 < budgetMs)) {
    const s = performance.now();
    await fn();
    samples.push(performance.now() - s);
  }
  samples.sort((a, b) => a - b);
  return { p50: samples[Math.floor(samples.length / 2)]!, mean: samples.reduce((a, b) => a + b, 0) / samples.length, n: samples.length };
}

const fmt = (ms: number) => (ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(3));

async function redisBenchmark(port: number, args: string[]): Promise<{ rps: number; p50: number }> {
  const { stdout } = await promisify(execFile)('redis-benchmark', ['-h', '127.0.0.1', '-p', String(port), '-c', '1', '--csv', ...args], {
    timeout: 60_000,
  });
  // The test name may hold quotes and commas (a JSON argument): read the numeric columns from the right.
  const cells = stdout
    .trim()
    .split('\n')
    .at(-1)!
    .split(',')
    .map((c) => Number(c.replaceAll('"', '')));
  return { rps: cells.at(-7)!, p50: cells.at(-4)! };
}

const dir = mkdtempSync(join(tmpdir(), 'ctx-redis-bench-'));
const server = await startRedisServer({ dir });
const proxy = await countingProxy(server.port);
console.log(`# @ctx/redis history: per-turn cost as history grows (redis-server ${server.port} on loopback, pid ${server.pid})\n`);

const ioredis = new Redis({ host: '127.0.0.1', port: server.port });
const nodeRedis = createClient({ url: `redis://127.0.0.1:${server.port}` });
await nodeRedis.connect();
// The same clients again, through the counting proxy.
const ioredisCounted = new Redis({ host: '127.0.0.1', port: proxy.port });
const nodeRedisCounted = createClient({ url: `redis://127.0.0.1:${proxy.port}` });
await nodeRedisCounted.connect();

const ctx = new RedisHistoryProvider({ client: ioredis, maxMessages: WINDOW });
// The SHA-1 of the provider's save script, taken from the first EVALSHA it sends (for redis-benchmark).
let sha = '';
const send = ioredis.sendCommand.bind(ioredis);
ioredis.sendCommand = ((command: { name: string; args: unknown[] }, ...rest: unknown[]) => {
  if (!sha && command.name === 'evalsha') sha = String(command.args[0]);
  return (send as (...args: unknown[]) => unknown)(command, ...rest);
}) as typeof ioredis.sendCommand;
const ctxCounted = new RedisHistoryProvider({ client: ioredisCounted, maxMessages: WINDOW });
const state = {};
type LangChainClient = ConstructorParameters<typeof RedisChatMessageHistory>[0]['client'];

// Warm both code paths (JIT, script cache) on a scratch session before anything is timed.
for (let i = 0; i < 300; i++) {
  await ctx.getMessages('warm-up', { state, limit: WINDOW });
  await ctx.saveMessages('warm-up', [Message.user(TEXT), Message.assistant(TEXT)], { state });
}
const warmLc = new RedisChatMessageHistory({ sessionId: 'langchain-warm-up', client: nodeRedis as unknown as LangChainClient });
for (let i = 0; i < 100; i++) {
  await warmLc.getMessages();
  await warmLc.addMessages([new HumanMessage(TEXT), new AIMessage(TEXT)]);
}
await Promise.all([ctx.clear('warm-up'), warmLc.clear()]);

interface Row {
  size: number;
  ctx: { p50: number; mean: number; n: number; rt: number };
  lc: { p50: number; mean: number; n: number; rt: number };
}
const rows: Row[] = [];

for (const size of SIZES) {
  const sessionId = `bench-${size}`;
  // Seed both histories with the same number of messages of the same text.
  await ctx.clear(sessionId);
  for (let i = 0; i < size; i += 1000) {
    await ctx.append(
      sessionId,
      Array.from({ length: Math.min(1000, size - i) }, (_, j) =>
        j % 2 ? Message.assistant(`${TEXT} #${i + j}`) : Message.user(`${TEXT} #${i + j}`),
      ),
    );
  }
  const lcKey = `langchain-${size}`;
  await nodeRedis.del(lcKey);
  for (let i = 0; i < size; i += 1000) {
    const batch = Array.from({ length: Math.min(1000, size - i) }, (_, j) =>
      j % 2 ? new AIMessage(`${TEXT} #${i + j}`) : new HumanMessage(`${TEXT} #${i + j}`),
    );
    await nodeRedis.lPush(
      lcKey,
      mapChatMessagesToStoredMessages(batch).map((m) => JSON.stringify(m)),
    );
  }

  let turn = 0;
  const ctxTurn = async (provider: RedisHistoryProvider) => {
    const window = await provider.getMessages(sessionId, { state, limit: WINDOW });
    if (window.length !== WINDOW) throw new Error('window not loaded');
    await provider.saveMessages(sessionId, [Message.user(`${TEXT} turn ${++turn}`), Message.assistant(`${TEXT} reply ${turn}`)], { state });
  };
  const lc = new RedisChatMessageHistory({ sessionId: lcKey, client: nodeRedis as unknown as LangChainClient });
  const lcCounted = new RedisChatMessageHistory({ sessionId: lcKey, client: nodeRedisCounted as unknown as LangChainClient });
  const lcTurn = async (history: RedisChatMessageHistory) => {
    const all = await history.getMessages();
    if (all.length < size) throw new Error('history not loaded');
    await history.addMessages([new HumanMessage(`${TEXT} turn ${++turn}`), new AIMessage(`${TEXT} reply ${turn}`)]);
  };

  const ctxTime = await time(() => ctxTurn(ctx), { warmup: 20, min: 200, max: 2000, budgetMs: 1500 });
  const lcTime = await time(() => lcTurn(lc), size >= 100_000 ? { warmup: 1, min: 3, budgetMs: 4000 } : {});
  const count = async (fn: () => Promise<unknown>) => {
    await fn();
    const before = proxy.roundTrips();
    for (let i = 0; i < 5; i++) await fn();
    return (proxy.roundTrips() - before) / 5;
  };
  const ctxRt = await count(() => ctxTurn(ctxCounted));
  const lcRt = await count(() => lcTurn(lcCounted));
  rows.push({ size, ctx: { ...ctxTime, rt: ctxRt }, lc: { ...lcTime, rt: lcRt } });
  console.log(`measured ${size.toLocaleString('en')} stored messages (${((performance.now() - started) / 1000).toFixed(1)} s)`);
}

// The server's ceiling for the same commands, from redis-benchmark with one connection (-c 1).
const keys = ctx.keys(`bench-${SIZES.at(-1)}`);
const payload = JSON.stringify(Message.user(TEXT));
const lrangeCeiling = await redisBenchmark(server.port, ['-n', '50000', 'LRANGE', keys.messages, String(-WINDOW), '-1']);
const evalCeiling = await redisBenchmark(server.port, [
  '-n',
  '50000',
  '-r',
  '1000000000',
  'EVALSHA',
  sha,
  '2',
  keys.messages,
  keys.ids,
  'append',
  '0',
  '0',
  'id-__rand_int__',
  payload,
  'id2-__rand_int__',
  payload,
]);
const reference = await promisify(execFile)(
  'redis-benchmark',
  ['-h', '127.0.0.1', '-p', String(server.port), '-n', '10000', '-q', '-t', 'lpush,lrange_100'],
  { timeout: 60_000 },
);
const ceiling = lrangeCeiling.p50 + evalCeiling.p50;

console.log('\n## Per turn: load the history, store the user message and the reply\n');
console.log(
  '| stored messages | @ctx/redis p50 ms (mean) | round trips | LangChain p50 ms (mean) | round trips | LangChain / ctx (p50) | ctx / server ceiling |',
);
console.log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const r of rows) {
  console.log(
    `| ${r.size.toLocaleString('en')} | ${fmt(r.ctx.p50)} (${fmt(r.ctx.mean)}) | ${r.ctx.rt} | ${fmt(r.lc.p50)} (${fmt(r.lc.mean)}) | ${r.lc.rt} | ${(r.lc.p50 / r.ctx.p50).toFixed(1)}x | ${(r.ctx.p50 / ceiling).toFixed(1)}x |`,
  );
}
const flat = rows.at(-1)!.ctx.p50 / rows[0]!.ctx.p50;
console.log(
  `\n@ctx/redis cost at ${SIZES.at(-1)!.toLocaleString('en')} vs ${SIZES[0]} stored messages: ${flat.toFixed(2)}x (flat = 1.0); LangChain: ${(rows.at(-1)!.lc.p50 / rows[0]!.lc.p50).toFixed(0)}x.`,
);
console.log('\n## Server ceiling (redis-benchmark -c 1, the same commands on the same server)\n');
console.log('| command | requests/s | p50 ms |');
console.log('| --- | ---: | ---: |');
console.log(
  `| LRANGE key -${WINDOW} -1 (the window load, ${SIZES.at(-1)!.toLocaleString('en')}-message list) | ${lrangeCeiling.rps.toFixed(0)} | ${lrangeCeiling.p50.toFixed(3)} |`,
);
console.log(`| EVALSHA save script, 2 messages (the turn store) | ${evalCeiling.rps.toFixed(0)} | ${evalCeiling.p50.toFixed(3)} |`);
console.log(`| one turn at the ceiling (sum) | | ${ceiling.toFixed(3)} |`);
const summary = reference.stdout
  .split(/[\r\n]+/)
  .filter((line) => line.includes('requests per second'))
  .map((line) => `  ${line.trim()}`);
console.log(`\nredis-benchmark -n 10000 -q -t lpush,lrange_100 (50 connections, throughput reference):\n${summary.join('\n')}`);
console.log(
  `\nLangChain: @langchain/redis RedisChatMessageHistory on redis@${(await import('redis/package.json', { with: { type: 'json' } })).default.version}, Node ${process.version}. Samples per row: ctx ${rows.map((r) => r.ctx.n).join('/')}, LangChain ${rows.map((r) => r.lc.n).join('/')}.`,
);

await ctx.close();
ioredis.disconnect();
ioredisCounted.disconnect();
await nodeRedis.quit();
await nodeRedisCounted.quit();
proxy.server.close();
await server.stop();
rmSync(dir, { recursive: true, force: true });
console.log(`Total wall time: ${((performance.now() - started) / 1000).toFixed(1)} s`);
