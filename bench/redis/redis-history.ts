/**
 * Per-turn cost of conversation history on Redis as the history grows: @ctx/redis
 * `RedisHistoryProvider` beside LangChain's `RedisChatMessageHistory` (@langchain/redis, on the
 * `redis` client it ships with) and beside the server's own ceiling (`redis-benchmark` running the
 * same commands), on one local redis-server this script starts and stops by pid.
 *
 * A turn is what a chat app does per user message: load the history the model will see, then store
 * the user message and the reply. Windowed and full loads are each compared like for like: ctx with
 * `maxMessages: 20` beside a user-written LangChain history reading the newest 20, and ctx without a
 * window beside LangChain's own history, which loads the whole list. ctx runs on ioredis, LangChain
 * on node-redis (`redis`), the client its docs use. The sides take turns in three rounds, so
 * load on the shared machine hits each alike. Round trips are counted by a loopback proxy between
 * each client and the server (one round trip = one burst of requests followed by a reply). Beside
 * them, floor rows on each client: the least any client can do per turn on the same stored JSON
 * (LRANGE, JSON.parse of each entry, RPUSH of two), so the table shows what ctx's checks cost. Then 100
 * sessions run turns concurrently on one connection, beside `redis-benchmark -c 100` running the
 * same two commands. Prints tables; asserts nothing. Usage: `pnpm --filter @ctx/bench bench:redis`.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Message } from '@ctx/core';
import { RedisHistoryProvider } from '@ctx/redis';
import { startRedisServer } from '@ctx/redis-test-server';
import {
  AIMessage,
  type BaseMessage,
  HumanMessage,
  mapChatMessagesToStoredMessages,
  mapStoredMessagesToChatMessages,
  type StoredMessage,
} from '@langchain/core/messages';
import { RedisChatMessageHistory } from '@langchain/redis';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { countingProxy } from './counting-proxy.js';

// `CTX_BENCH_REDIS_SIZES=100,10000` runs fewer sizes (a quick check); the published table uses all three.
const SIZES = process.env.CTX_BENCH_REDIS_SIZES?.split(',').map(Number) ?? [100, 10_000, 100_000];
const WINDOW = 20;
const TEXT = 'The quick brown fox jumps over the lazy dog. '.repeat(4); // ~180 characters per message
const started = performance.now();

/**
 * Times `fn` into `samples`: at least `min` and at most `max` runs within `budgetMs`, after `warmup`
 * untimed runs; `reset` (untimed) runs after each, so every run sees the same stored history.
 */
async function time(
  fn: () => Promise<unknown>,
  reset: () => Promise<unknown>,
  samples: number[],
  { warmup = 3, min = 5, max = 500, budgetMs = 2000 } = {},
  cpu: number[] = [],
): Promise<void> {
  for (let i = 0; i < warmup; i++) {
    await fn();
    await reset();
  }
  const t0 = performance.now();
  const end = samples.length + max;
  for (let n = 0; samples.length < end && (n < min || performance.now() - t0 < budgetMs); n++) {
    const s = performance.now();
    const c = process.cpuUsage();
    await fn();
    samples.push(performance.now() - s);
    const used = process.cpuUsage(c);
    cpu.push((used.user + used.system) / 1000);
    await reset();
  }
}

interface Timing {
  p50: number;
  p90: number;
  n: number;
  /** Median CPU time of this process per turn (user + system, ms): the client's own work, whatever the load. */
  cpu: number;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

function summarize(samples: number[], cpu: number[]): Timing {
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50: sorted[Math.floor(sorted.length / 2)]!, p90: sorted[Math.floor(sorted.length * 0.9)]!, n: sorted.length, cpu: median(cpu) };
}

/**
 * LangChain's Redis history reading only the newest `window` messages: the user-written window a
 * LangChain app would add (the package's own `getMessages` reads the whole list). LangChain pushes
 * the newest message first, so the newest `window` are the first `window` of the list.
 */
class LastMessagesRedisHistory extends RedisChatMessageHistory {
  readonly #key: string;
  constructor(
    fields: ConstructorParameters<typeof RedisChatMessageHistory>[0],
    private readonly window: number,
  ) {
    super(fields);
    this.#key = fields.sessionId;
  }
  override async getMessages(): Promise<BaseMessage[]> {
    await this.ensureReadiness();
    const newestFirst = await this.client.lRange(this.#key, 0, this.window - 1);
    return mapStoredMessagesToChatMessages(newestFirst.reverse().map((m) => JSON.parse(m) as StoredMessage));
  }
}

const fmt = (ms: number) => (ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(3));

async function redisBenchmark(port: number, args: string[], connections = 1): Promise<{ rps: number; p50: number }> {
  const { stdout } = await promisify(execFile)(
    'redis-benchmark',
    ['-h', '127.0.0.1', '-p', String(port), '-c', String(connections), '--csv', ...args],
    {
      timeout: 60_000,
    },
  );
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

// A full load of 100,000 messages can pass the default 5 s deadline on a loaded machine; LangChain's
// history has no deadline at all.
const timeoutMs = 120_000;
const ctx = new RedisHistoryProvider({ client: ioredis, maxMessages: WINDOW, timeoutMs });
// The arguments of the provider's last EVALSHA (its save script), replayed by redis-benchmark.
let lastEval: string[] = [];
const send = ioredis.sendCommand.bind(ioredis);
ioredis.sendCommand = ((command: { name: string; args: unknown[] }, ...rest: unknown[]) => {
  if (command.name === 'evalsha') lastEval = command.args.map(String);
  return (send as (...args: unknown[]) => unknown)(command, ...rest);
}) as typeof ioredis.sendCommand;
/** The EVALSHA arguments of a 2-message save to `sessionId`, with fresh random message ids per request. */
async function saveCommand(sessionId: string): Promise<string[]> {
  await ctx.saveMessages(sessionId, [Message.user(TEXT, { id: 'bench-id-one' }), Message.assistant(TEXT, { id: 'bench-id-two' })], {
    state,
  });
  return ['EVALSHA', ...lastEval.map((a) => a.replaceAll('bench-id-one', 'a__rand_int__').replaceAll('bench-id-two', 'b__rand_int__'))];
}
const ctxCounted = new RedisHistoryProvider({ client: ioredisCounted, maxMessages: WINDOW, timeoutMs });
const ctxFull = new RedisHistoryProvider({ client: ioredis, timeoutMs });
const ctxFullCounted = new RedisHistoryProvider({ client: ioredisCounted, timeoutMs });
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

// 100 sessions at once on one server: ctx turns (windowed, one shared connection) beside redis-benchmark
// running the same two commands over 100 connections. Measured first, in a process whose heap does not
// yet hold the per-size rows' data (100,000 loaded messages slow every Node side's collections).
const CONCURRENT = 100;
const TURNS_EACH = 40;
for (let c = 0; c < CONCURRENT; c++) {
  for (const sessionId of [`conc-${c}`, `script-conc-${c}`]) {
    await ctx.clear(sessionId);
    await ctx.append(
      sessionId,
      Array.from({ length: 100 }, (_, j) => (j % 2 ? Message.assistant(`${TEXT} #${j}`) : Message.user(`${TEXT} #${j}`))),
    );
  }
}
// The same turns with the least any ioredis client can do (LRANGE the window, JSON.parse each, RPUSH
// two) on copies of the same lists and the same kind of shared connection: the client's floor at this
// concurrency. The sides take turns, in a rotated order each round.
for (let c = 0; c < CONCURRENT; c++) await ioredis.copy(ctx.keys(`conc-${c}`).messages, `floor-conc-${c}`, 'REPLACE');
const ctxTurns = async (c: number, round: number) => {
  for (let t = 0; t < TURNS_EACH; t++) {
    const window = await ctx.getMessages(`conc-${c}`, { state, limit: WINDOW });
    if (window.length !== WINDOW) throw new Error('window not loaded');
    await ctx.saveMessages(`conc-${c}`, [Message.user(`${TEXT} turn ${round}.${t}`), Message.assistant(`${TEXT} reply ${round}.${t}`)], {
      state,
    });
  }
};
const floorTurns = async (c: number, round: number) => {
  for (let t = 0; t < TURNS_EACH; t++) {
    const window = (await ioredis.lrange(`floor-conc-${c}`, -WINDOW, -1)).map((text) => JSON.parse(text) as unknown);
    if (window.length !== WINDOW) throw new Error('window not loaded');
    await ioredis.rpush(
      `floor-conc-${c}`,
      JSON.stringify(Message.user(`${TEXT} turn ${round}.${t}`)),
      JSON.stringify(Message.assistant(`${TEXT} reply ${round}.${t}`)),
    );
  }
};
// And the same with ctx's own save script called bare (its arguments as ctx built them for this
// session, fresh ids each turn): the guarantees of a turn without ctx's client code.
const scriptArgs = new Map<number, string[]>();
for (let c = 0; c < CONCURRENT; c++) scriptArgs.set(c, (await saveCommand(`script-conc-${c}`)).slice(1));
let fresh = 0;
const scriptTurns = async (c: number) => {
  const [sha, ...rest] = scriptArgs.get(c)!;
  for (let t = 0; t < TURNS_EACH; t++) {
    const window = (await ioredis.lrange(ctx.keys(`script-conc-${c}`).messages, -WINDOW, -1)).map((text) => JSON.parse(text) as unknown);
    if (window.length !== WINDOW) throw new Error('window not loaded');
    const id = String(++fresh);
    await ioredis.call('EVALSHA', sha!, ...rest.map((a) => a.replaceAll('__rand_int__', id)));
  }
};
const concurrentRounds: number[] = [];
const floorRounds: number[] = [];
const scriptRounds: number[] = [];
// One untimed round of each side first (JIT warm-up: a cold first round ran at about 60% of the later ones in a probe).
for (const turns of [ctxTurns, floorTurns, scriptTurns]) await Promise.all(Array.from({ length: CONCURRENT }, (_, c) => turns(c, -1)));
for (let round = 0; round < 3; round++) {
  const sides = [
    [ctxTurns, concurrentRounds],
    [floorTurns, floorRounds],
    [scriptTurns, scriptRounds],
  ] as const;
  for (let k = 0; k < sides.length; k++) {
    const [turns, rounds] = sides[(k + round) % sides.length]!;
    const t0 = performance.now();
    await Promise.all(Array.from({ length: CONCURRENT }, (_, c) => turns(c, round)));
    rounds.push((CONCURRENT * TURNS_EACH) / ((performance.now() - t0) / 1000));
  }
}
const concurrentKeys = ctx.keys('conc-0');
const lrange100 = await redisBenchmark(server.port, ['-n', '50000', 'LRANGE', concurrentKeys.messages, String(-WINDOW), '-1'], CONCURRENT);
const eval100 = await redisBenchmark(server.port, ['-n', '50000', '-r', '1000000000', ...(await saveCommand('conc-0'))], CONCURRENT);
/** Turns per second if every turn were one LRANGE and one EVALSHA at redis-benchmark's rates. */
const ceilingTurns = 1 / (1 / lrange100.rps + 1 / eval100.rps);

/** The sides: windowed and full loads on each library, and the floor of each client beside them. */
const SIDES = [
  'ctx, maxMessages 20',
  'LangChain, user-written last-20 history',
  'floor on ioredis: LRANGE last 20, JSON.parse each, RPUSH 2',
  'floor on node-redis: LRANGE last 20, JSON.parse each, RPUSH 2',
  'ctx, no window',
  'LangChain RedisChatMessageHistory (full list)',
  'floor on ioredis: LRANGE all, JSON.parse each, RPUSH 2',
  'floor on node-redis: LRANGE all, JSON.parse each, RPUSH 2',
] as const;
type Side = (typeof SIDES)[number];
interface Row {
  size: number;
  sides: Map<Side, Timing & { rt: number }>;
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
    const loaded = await provider.getMessages(sessionId, { state, ...(provider.maxMessages ? { limit: WINDOW } : {}) });
    if (loaded.length < (provider.maxMessages ? WINDOW : size)) throw new Error('history not loaded');
    await provider.saveMessages(sessionId, [Message.user(`${TEXT} turn ${++turn}`), Message.assistant(`${TEXT} reply ${turn}`)], { state });
  };
  const lcHistory = (client: unknown, windowed: boolean) => {
    const fields = { sessionId: lcKey, client: client as LangChainClient };
    return windowed ? new LastMessagesRedisHistory(fields, WINDOW) : new RedisChatMessageHistory(fields);
  };
  const lcTurn = async (history: RedisChatMessageHistory) => {
    const loaded = await history.getMessages();
    if (loaded.length < (history instanceof LastMessagesRedisHistory ? WINDOW : size)) throw new Error('history not loaded');
    await history.addMessages([new HumanMessage(`${TEXT} turn ${++turn}`), new AIMessage(`${TEXT} reply ${turn}`)]);
  };
  // The floor: the least any client can do per turn, on the same stored JSON as ctx (a copy of its
  // list): read the entries, JSON.parse each, append two message JSONs; no check of what was read.
  const floorKey = `floor-${size}`;
  await ioredis.copy(ctx.keys(sessionId).messages, floorKey, 'REPLACE');
  const floorTexts = () => [
    JSON.stringify(Message.user(`${TEXT} turn ${++turn}`)),
    JSON.stringify(Message.assistant(`${TEXT} reply ${turn}`)),
  ];
  const floorIoredis = async (client: Redis, windowed: boolean) => {
    const loaded = (await client.lrange(floorKey, windowed ? -WINDOW : 0, -1)).map((text) => JSON.parse(text) as unknown);
    if (loaded.length < (windowed ? WINDOW : size)) throw new Error('history not loaded');
    await client.rpush(floorKey, ...floorTexts());
  };
  const floorNodeRedis = async (client: typeof nodeRedis, windowed: boolean) => {
    const loaded = (await client.lRange(floorKey, windowed ? -WINDOW : 0, -1)).map((text) => JSON.parse(text) as unknown);
    if (loaded.length < (windowed ? WINDOW : size)) throw new Error('history not loaded');
    await client.rPush(floorKey, floorTexts());
  };
  const turns: Record<Side, [() => Promise<unknown>, () => Promise<unknown>]> = {
    'floor on ioredis: LRANGE last 20, JSON.parse each, RPUSH 2': [
      () => floorIoredis(ioredis, true),
      () => floorIoredis(ioredisCounted, true),
    ],
    'floor on node-redis: LRANGE last 20, JSON.parse each, RPUSH 2': [
      () => floorNodeRedis(nodeRedis, true),
      () => floorNodeRedis(nodeRedisCounted, true),
    ],
    'floor on ioredis: LRANGE all, JSON.parse each, RPUSH 2': [
      () => floorIoredis(ioredis, false),
      () => floorIoredis(ioredisCounted, false),
    ],
    'floor on node-redis: LRANGE all, JSON.parse each, RPUSH 2': [
      () => floorNodeRedis(nodeRedis, false),
      () => floorNodeRedis(nodeRedisCounted, false),
    ],
    'ctx, maxMessages 20': [() => ctxTurn(ctx), () => ctxTurn(ctxCounted)],
    'LangChain, user-written last-20 history': [() => lcTurn(lcHistory(nodeRedis, true)), () => lcTurn(lcHistory(nodeRedisCounted, true))],
    'ctx, no window': [() => ctxTurn(ctxFull), () => ctxTurn(ctxFullCounted)],
    'LangChain RedisChatMessageHistory (full list)': [
      () => lcTurn(lcHistory(nodeRedis, false)),
      () => lcTurn(lcHistory(nodeRedisCounted, false)),
    ],
  };
  // Untimed after each turn: remove the two messages it stored (LangChain pushes the newest first).
  const ctxReset = () => ctx.popMessages(sessionId, { state, count: 2 });
  const lcReset = () => nodeRedis.lTrim(lcKey, 2, -1);
  const floorReset = () => ioredis.ltrim(floorKey, 0, -3);
  const reset = (side: Side) => (side.startsWith('ctx') ? ctxReset : side.startsWith('floor') ? floorReset : lcReset);
  const samples = new Map(SIDES.map((side) => [side, [] as number[]]));
  const cpu = new Map(SIDES.map((side) => [side, [] as number[]]));
  for (let round = 0; round < 3; round++) {
    for (const side of SIDES) {
      const full = !side.includes('20');
      const budget =
        full && size >= 100_000 ? { warmup: 1, min: 2, max: 20, budgetMs: 1500 } : { warmup: 5, min: 20, max: 700, budgetMs: 500 };
      await time(turns[side][0], reset(side), samples.get(side)!, budget, cpu.get(side)!);
    }
  }
  const count = async (fn: () => Promise<unknown>) => {
    await fn();
    const before = proxy.roundTrips();
    for (let i = 0; i < 5; i++) await fn();
    return (proxy.roundTrips() - before) / 5;
  };
  const sides = new Map<Side, Timing & { rt: number }>();
  for (const side of SIDES) sides.set(side, { ...summarize(samples.get(side)!, cpu.get(side)!), rt: await count(turns[side][1]) });
  rows.push({ size, sides });
  await ioredis.del(floorKey);
  console.log(`measured ${size.toLocaleString('en')} stored messages (${((performance.now() - started) / 1000).toFixed(1)} s)`);
}

// The server's ceiling for the same commands, from redis-benchmark with one connection (-c 1).
const keys = ctx.keys(`bench-${SIZES.at(-1)}`);
const lrangeCeiling = await redisBenchmark(server.port, ['-n', '50000', 'LRANGE', keys.messages, String(-WINDOW), '-1']);
const evalCeiling = await redisBenchmark(server.port, ['-n', '50000', '-r', '1000000000', ...(await saveCommand(`bench-${SIZES.at(-1)}`))]);
const reference = await promisify(execFile)(
  'redis-benchmark',
  ['-h', '127.0.0.1', '-p', String(server.port), '-n', '10000', '-q', '-t', 'lpush,lrange_100'],
  { timeout: 60_000 },
);
const ceiling = lrangeCeiling.p50 + evalCeiling.p50;

const ioredisVersion = (await import('ioredis/package.json', { with: { type: 'json' } })).default.version;
const nodeRedisVersion = (await import('redis/package.json', { with: { type: 'json' } })).default.version;
console.log('\n## Per turn: load the history, store the user message and the reply\n');
console.log(`Clients: @ctx/redis on ioredis ${ioredisVersion}; @langchain/redis on redis (node-redis) ${nodeRedisVersion}.`);
console.log(
  'Each side p50 / p90 ms over three interleaved rounds, and the median CPU time of this process per turn (the client\'s own work, user + system, which load moves far less than wall time); "vs ctx" compares like with like (window with window, full with full): above 1 means ctx is faster.\n',
);
console.log('| stored messages | side | p50 ms | p90 ms | samples | round trips | p50 vs ctx | client CPU ms | CPU vs ctx |');
console.log('| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const r of rows) {
  for (const side of SIDES) {
    const t = r.sides.get(side)!;
    const base = r.sides.get(side.includes('20') ? 'ctx, maxMessages 20' : 'ctx, no window')!;
    const own = side.startsWith('ctx');
    console.log(
      `| ${r.size.toLocaleString('en')} | ${side} | ${fmt(t.p50)} | ${fmt(t.p90)} | ${t.n} | ${t.rt} | ${own ? '1' : `${(t.p50 / base.p50).toFixed(2)}x`} | ${fmt(t.cpu)} | ${own ? '1' : `${(t.cpu / base.cpu).toFixed(2)}x`} |`,
    );
  }
}
console.log(
  "\nThe floor rows are the least any client can do per turn on the same stored JSON: read the entries, JSON.parse each, append two; what ctx does beyond its own client's floor (the check of each loaded message, de-duplication, the save script's arguments) is the difference:",
);
for (const r of rows) {
  for (const [ctxSide, floorSide, otherFloor] of [
    [
      'ctx, maxMessages 20',
      'floor on ioredis: LRANGE last 20, JSON.parse each, RPUSH 2',
      'floor on node-redis: LRANGE last 20, JSON.parse each, RPUSH 2',
    ],
    [
      'ctx, no window',
      'floor on ioredis: LRANGE all, JSON.parse each, RPUSH 2',
      'floor on node-redis: LRANGE all, JSON.parse each, RPUSH 2',
    ],
  ] as const) {
    const [own, floor, other] = [r.sides.get(ctxSide)!, r.sides.get(floorSide)!, r.sides.get(otherFloor)!];
    console.log(
      `- ${r.size.toLocaleString('en')} stored, ${ctxSide}: client CPU ${fmt(own.cpu)} ms, ioredis floor ${fmt(floor.cpu)} ms (ctx's own work ${fmt(own.cpu - floor.cpu)} ms, ${((100 * (own.cpu - floor.cpu)) / own.cpu).toFixed(0)}% of the turn); node-redis floor ${fmt(other.cpu)} ms.`,
    );
  }
}
const growth = (side: Side) => (rows.at(-1)!.sides.get(side)!.p50 / rows[0]!.sides.get(side)!.p50).toFixed(2);
console.log(
  `\nCost at ${SIZES.at(-1)!.toLocaleString('en')} vs ${SIZES[0]} stored messages (p50; flat = 1.0): ${SIDES.map((side) => `${side} ${growth(side)}x`).join('; ')}.`,
);
const ctxWindowed = rows.at(-1)!.sides.get('ctx, maxMessages 20')!;
console.log('\n## Server ceiling (redis-benchmark -c 1, the same commands on the same server)\n');
console.log('| command | requests/s | p50 ms |');
console.log('| --- | ---: | ---: |');
console.log(
  `| LRANGE key -${WINDOW} -1 (the window load, ${SIZES.at(-1)!.toLocaleString('en')}-message list) | ${lrangeCeiling.rps.toFixed(0)} | ${lrangeCeiling.p50.toFixed(3)} |`,
);
console.log(`| EVALSHA save script, 2 messages (the turn store) | ${evalCeiling.rps.toFixed(0)} | ${evalCeiling.p50.toFixed(3)} |`);
console.log(`| one turn at the ceiling (sum) | | ${ceiling.toFixed(3)} |`);
console.log(
  `\nctx windowed turn at ${SIZES.at(-1)!.toLocaleString('en')} messages: ${(ctxWindowed.p50 / ceiling).toFixed(2)}x the ceiling.`,
);
// What the save script's guarantees cost on the server (skipping ids already stored, refusing an id
// stored with other content, replacing a retried turn, the id set): the script beside a plain RPUSH
// of the same two messages, by redis-benchmark's latency and by the server's own time per call.
const priceKey = `bench-price-${Date.now()}`;
const [evalArgs, twoMessages] = [await saveCommand(`bench-${SIZES.at(-1)}`), [lastEval.at(-3)!, lastEval.at(-1)!]];
async function serverUsPerCall(command: string, args: string[]): Promise<{ p50: number; us: number }> {
  await ioredis.config('RESETSTAT');
  const { p50 } = await redisBenchmark(server.port, ['-n', '20000', ...args]);
  const line = (await ioredis.info('commandstats')).split('\n').find((l) => l.startsWith(`cmdstat_${command}:`));
  return { p50, us: Number(/usec_per_call=([\d.]+)/.exec(line ?? '')?.[1]) };
}
const priceScript = await serverUsPerCall('evalsha', ['-r', '1000000000', ...evalArgs]);
const priceRpush = await serverUsPerCall('rpush', ['RPUSH', priceKey, ...twoMessages]);
await ioredis.del(priceKey);
const summary = reference.stdout
  .split(/[\r\n]+/)
  .filter((line) => line.includes('requests per second'))
  .map((line) => `  ${line.trim()}`);
console.log(`\nredis-benchmark -n 10000 -q -t lpush,lrange_100 (50 connections, throughput reference):\n${summary.join('\n')}`);

console.log('\n## What the save script costs beside a plain RPUSH of the same two messages (redis-benchmark -c 1)\n');
console.log('| command | p50 ms | server µs per call (INFO commandstats) |');
console.log('| --- | ---: | ---: |');
console.log(`| EVALSHA save script, 2 messages (fresh ids) | ${priceScript.p50.toFixed(3)} | ${priceScript.us.toFixed(1)} |`);
console.log(`| RPUSH of the same 2 message JSONs | ${priceRpush.p50.toFixed(3)} | ${priceRpush.us.toFixed(1)} |`);
console.log(
  `| the script's guarantees (difference) | ${(priceScript.p50 - priceRpush.p50).toFixed(3)} | ${(priceScript.us - priceRpush.us).toFixed(1)} |`,
);

console.log(`\n## ${CONCURRENT} concurrent sessions on one redis-server\n`);
console.log(
  `${CONCURRENT} sessions of 100 stored messages, each running ${TURNS_EACH} turns (load 20, store 2) one after the other, all at once, on one ioredis connection; three rounds.`,
);
console.log('| side | turns/s (median of 3 rounds) | rounds |');
console.log('| --- | ---: | --- |');
const sortedRounds = [...concurrentRounds].sort((a, b) => a - b);
console.log(`| @ctx/redis, maxMessages 20 | ${sortedRounds[1]!.toFixed(0)} | ${concurrentRounds.map((r) => r.toFixed(0)).join(', ')} |`);
console.log(
  `| redis-benchmark -c ${CONCURRENT}: LRANGE ${lrange100.rps.toFixed(0)}/s and EVALSHA ${eval100.rps.toFixed(0)}/s, as turns (one of each) | ${ceilingTurns.toFixed(0)} | |`,
);
const sortedFloor = [...floorRounds].sort((a, b) => a - b);
console.log(
  `| floor on ioredis (the same connection and turns: LRANGE last 20, JSON.parse each, RPUSH 2) | ${sortedFloor[1]!.toFixed(0)} | ${floorRounds.map((r) => r.toFixed(0)).join(', ')} |`,
);
const sortedScript = [...scriptRounds].sort((a, b) => a - b);
console.log(
  `| ctx's save script called bare on ioredis (the same connection and turns: LRANGE last 20, JSON.parse each, EVALSHA with ctx's arguments) | ${sortedScript[1]!.toFixed(0)} | ${scriptRounds.map((r) => r.toFixed(0)).join(', ')} |`,
);
console.log(`\nctx / redis-benchmark: ${(sortedRounds[1]! / ceilingTurns).toFixed(2)}x of the server's ceiling at the same concurrency.`);
console.log(
  `ioredis floor / redis-benchmark: ${(sortedFloor[1]! / ceilingTurns).toFixed(2)}x; ctx / ioredis floor: ${(sortedRounds[1]! / sortedFloor[1]!).toFixed(2)}x; ctx / its save script called bare: ${(sortedRounds[1]! / sortedScript[1]!).toFixed(2)}x.`,
);
console.log(
  `Node ${process.version}; load average at the end ${(await import('node:os'))
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}.`,
);

await ctx.close();
await ctxFull.close();
await ctxFullCounted.close();
await ctxCounted.close();
ioredis.disconnect();
ioredisCounted.disconnect();
await nodeRedis.quit();
await nodeRedisCounted.quit();
proxy.server.close();
await server.stop();
rmSync(dir, { recursive: true, force: true });
console.log(`Total wall time: ${((performance.now() - started) / 1000).toFixed(1)} s`);
