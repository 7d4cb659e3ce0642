/**
 * What `persistence: 'model-call'` costs beside the default `'run'` on a tool-heavy run with the
 * Redis history: round trips to Redis and time per run, on one local redis-server this script
 * starts and stops by pid. A run here is one user message answered after `ROUNDTRIPS` tool
 * roundtrips (two parallel tool calls each), so `ROUNDTRIPS + 1` model calls; the model is a
 * `ScriptedChatClient` (no network), so the time is ctx plus Redis. Round trips are counted by a
 * loopback proxy between the client and the server (one round trip = one burst of requests
 * followed by a reply). With 'model-call' a tool-loop step writes the model's response, then the
 * tool results once their batch completes (before the next model call, which may fail). Target: at
 * most two history writes per step. Prints tables; asserts nothing. Usage: `pnpm --filter @ctx/bench bench:durable`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAgent, defineTool, Message } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { RedisHistoryProvider } from '@ctx/redis';
import { startRedisServer } from '@ctx/redis-test-server';
import { Redis } from 'ioredis';
import { countingProxy } from './counting-proxy.js';

const ROUNDTRIPS = 5;
const HISTORY = 40; // messages already stored in the session
const TEXT = 'The quick brown fox jumps over the lazy dog. '.repeat(4);

const lookup = defineTool({
  name: 'lookup',
  description: 'Looks a term up.',
  parameters: { type: 'object', properties: { q: { type: 'string' } } },
  execute: ({ q }: { q?: string }) => ({ q, hits: [TEXT] }),
});

/** A model that asks for two lookups per call until `ROUNDTRIPS` results came back, then answers. */
const model = () =>
  new ScriptedChatClient({
    replies: (messages) => {
      const round = messages.filter((m) => m.role === 'tool').length - HISTORY / 4;
      if (round >= ROUNDTRIPS) return TEXT;
      return {
        toolCalls: [
          { name: 'lookup', arguments: { q: `a${round}` } },
          { name: 'lookup', arguments: { q: `b${round}` } },
        ],
      };
    },
  });

const dir = mkdtempSync(join(tmpdir(), 'ctx-bench-durable-'));
const server = await startRedisServer({ dir });
const proxy = await countingProxy(server.port);
const client = new Redis({ host: '127.0.0.1', port: proxy.port });
console.log(
  `# persistence 'model-call' against 'run': a run of ${ROUNDTRIPS + 1} model calls (${ROUNDTRIPS} tool roundtrips of 2 calls), ${HISTORY} messages already stored, RedisHistoryProvider on redis-server ${server.port} (pid ${server.pid}) on loopback\n`,
);
try {
  const rows: { persistence: string; roundTrips: number; p50: number; mean: number; n: number }[] = [];
  for (const persistence of ['run', 'model-call'] as const) {
    const history = new RedisHistoryProvider({ client, prefix: `bench-${persistence}` });
    const agent = createAgent({ client: model(), contextProviders: [history], tools: [lookup], persistence });
    let sessions = 0;
    const seeded = async () => {
      const sessionId = `s${++sessions}`;
      const turns = Array.from({ length: HISTORY / 4 }, (_, i) => [
        Message.user(`question ${i}`),
        Message.assistant([{ type: 'function-call', callId: `h${i}`, name: 'lookup', arguments: '{}' }]),
        Message.tool({ type: 'function-result', callId: `h${i}`, name: 'lookup', result: TEXT }),
        Message.assistant(TEXT),
      ]).flat();
      await history.saveMessages(sessionId, turns, { state: {} });
      return agent.getSessionById(sessionId);
    };
    const run = async () => {
      const session = await seeded();
      const before = proxy.roundTrips();
      const t0 = performance.now();
      await agent.run('What is it?', { session });
      return { ms: performance.now() - t0, roundTrips: proxy.roundTrips() - before };
    };
    for (let i = 0; i < 20; i++) await run(); // warm-up (loads the scripts, JIT)
    const samples: { ms: number; roundTrips: number }[] = [];
    const t0 = performance.now();
    while (samples.length < 30 || (performance.now() - t0 < 3000 && samples.length < 2000)) samples.push(await run());
    const ms = samples.map((s) => s.ms).sort((a, b) => a - b);
    rows.push({
      persistence,
      roundTrips: Math.max(...samples.map((s) => s.roundTrips)),
      p50: ms[Math.floor(ms.length / 2)]!,
      mean: ms.reduce((a, b) => a + b, 0) / ms.length,
      n: ms.length,
    });
  }
  const [base, durable] = rows as [(typeof rows)[0], (typeof rows)[0]];
  console.log('| persistence | Redis round trips per run | time per run p50 (ms) | mean (ms) | runs |');
  console.log('| --- | ---: | ---: | ---: | ---: |');
  for (const r of rows) console.log(`| '${r.persistence}' | ${r.roundTrips} | ${r.p50.toFixed(2)} | ${r.mean.toFixed(2)} | ${r.n} |`);
  const extra = durable.roundTrips - base.roundTrips;
  const steps = ROUNDTRIPS + 1; // model calls
  // 'run' writes once, at the end; every other round trip of a 'model-call' run is a history write.
  const writes = extra + 1;
  console.log(
    `\n'model-call' / 'run': ${(durable.p50 / base.p50).toFixed(2)}x time (p50), +${extra} round trips; ${writes} history writes for ${steps} tool-loop steps = ${(writes / steps).toFixed(2)} per step (target: at most 2: the model's response, the tool results).`,
  );
} finally {
  client.disconnect();
  proxy.server.close();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
