/**
 * Failover trials of @ctx/redis on a Redis Cluster of 3 masters with a replica each (started here on
 * loopback, `cluster-node-timeout 2000`, stopped by pid). 200 sessions run chat turns (get the
 * session, load 20, store 2, set the session) through the package's own connections (`nodes`, its
 * default options, `timeoutMs` 5000) while, in turn, a master is paused 10 s (`SIGSTOP`: it keeps
 * its connections open and answers nothing), another master is paused 20 s, and a master is killed
 * (`SIGKILL`). For each fault it prints, for the sessions whose own keys are on the faulted master,
 * how long until a turn of theirs succeeded again and how many failed; for the others, how many
 * failed and the slowest turn; every error's class; listing writes reported and repaired. At the
 * end it checks every conversation: no message stored twice, none of a successful turn missing.
 * Too slow for CI (about 80 s); prints numbers, asserts nothing.
 * Usage: `pnpm --filter @ctx/bench bench:cluster-faults` (`CTX_BENCH_FAULT_SESSIONS` for another count).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { RedisHistoryProvider, RedisSessionStore, encodeKeyPart } from '@ctx/redis';
import { clusterNodes, rawCommand, startRedisCluster, type ClusterNodeInfo } from '@ctx/redis-test-server';
import { runSessions, type TurnRecord } from './concurrent-turns.js';

const SESSIONS = Number(process.env.CTX_BENCH_FAULT_SESSIONS ?? 200);
const USERS = SESSIONS / 2;
const started = performance.now();
const dir = mkdtempSync(join(tmpdir(), 'ctx-bench-cluster-faults-'));
const cluster = await startRedisCluster({ dir, replicas: 1 });
const server = (port: number) => cluster.nodes.find((n) => n.port === port)!;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The port of the master that serves `key`, as a live node sees it. */
async function masterOf(key: string): Promise<number> {
  const slot = Number((await rawCommand(live(), `CLUSTER KEYSLOT ${key}`)).slice(1));
  const master = (await clusterNodes(live())).find(
    (n) => n.role === 'master' && !n.failing && n.slots.some(([from, to]) => slot >= from && slot <= to),
  );
  return master!.port;
}
const down = new Set<number>();
/** A node that is neither paused nor killed, to ask about the cluster. */
const live = () => cluster.nodes.find((n) => !down.has(n.port))!.port;

/** Waits until every master's replica is in sync again (after a paused master came back as a replica). */
async function settled(): Promise<ClusterNodeInfo[]> {
  for (let i = 0; i < 300; i++) {
    const nodes = (await clusterNodes(live())).filter((n) => !down.has(n.port));
    const replicas = nodes.filter((n) => n.role === 'replica' && !n.failing);
    let synced = 0;
    for (const r of replicas) if ((await rawCommand(r.port, 'INFO replication')).includes('master_link_status:up')) synced++;
    if ((await rawCommand(live(), 'CLUSTER INFO')).includes('cluster_state:ok') && synced === replicas.length) return nodes;
    await sleep(100);
  }
  throw new Error('the cluster did not settle');
}

const options = { nodes: cluster.startupNodes, prefix: 'faults' };
let listingErrors = 0;
const store = new RedisSessionStore({ ...options, onListingError: () => listingErrors++ });
const history = new RedisHistoryProvider({ ...options, maxMessages: 20 });
const sessionKey = (i: number) => `faults:session:{${encodeKeyPart(`s-${i}`)}}`;

const faults = [
  { name: 'master paused 10 s (SIGSTOP)', kind: 'pause', ms: 10_000 },
  { name: 'master paused 20 s (SIGSTOP)', kind: 'pause', ms: 20_000 },
  { name: 'master killed (SIGKILL)', kind: 'kill', ms: 10_000 },
] as const;

console.log(
  `# @ctx/redis on a failing cluster: 3 masters + 3 replicas (redis-server ${(await rawCommand(live(), 'INFO server')).match(/redis_version:(\S+)/)?.[1]}, cluster-node-timeout 2000 ms), ${SESSIONS} sessions of ${USERS} users, the package's own connections with their defaults (timeoutMs 5000)\n`,
);
console.log(
  '| fault | replica promoted after | faulted master: sessions | recovered after (first turn started after the fault that succeeded) | turns failed | other sessions: turns failed | slowest turn | errors | listing writes reported |',
);
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |');

let stop = false;
const all: TurnRecord[] = [];
const running = runSessions({ store, history, sessions: SESSIONS, users: USERS, until: () => stop, name: 's', thinkMs: 20, records: all });
await sleep(3000);
const used = new Set<number>();
for (const fault of faults) {
  const masters = (await settled()).filter((n) => n.role === 'master' && !used.has(n.port));
  const victim = masters.find((n) => n.port !== cluster.nodes[0]!.port) ?? masters[0]!;
  used.add(victim.port);
  const onVictim = new Set<number>();
  for (let i = 0; i < SESSIONS; i++) if ((await masterOf(sessionKey(i))) === victim.port) onVictim.add(i);
  const listingBefore = listingErrors;
  const t0 = performance.now();
  down.add(victim.port);
  if (fault.kind === 'pause') server(victim.port).pause();
  else await server(victim.port).stop('SIGKILL');
  let promotedAt: number | undefined;
  while (performance.now() - t0 < fault.ms) {
    if (
      promotedAt === undefined &&
      !(await clusterNodes(live())).some((n) => n.port === victim.port && n.role === 'master' && !n.failing)
    ) {
      promotedAt = performance.now() - t0;
    }
    await sleep(100);
  }
  if (fault.kind === 'pause') {
    server(victim.port).resume();
    down.delete(victim.port);
  }
  await sleep(3000);
  const t1 = performance.now();
  // Turns that overlapped the fault and the 3 s after it.
  const during = all.filter((r) => r.end >= t0 && r.start <= t1);
  const mine = during.filter((r) => onVictim.has(r.session));
  const others = during.filter((r) => !onVictim.has(r.session));
  const recovered = mine.filter((r) => r.start >= t0 && r.error === undefined).sort((a, b) => a.end - b.end)[0];
  const errors = new Map<string, number>();
  for (const r of during) if (r.error) errors.set(r.error, (errors.get(r.error) ?? 0) + 1);
  console.log(
    `| ${fault.name} | ${promotedAt === undefined ? 'not seen' : `${(promotedAt / 1000).toFixed(1)} s`} | ${onVictim.size} | ${recovered ? `${((recovered.end - t0) / 1000).toFixed(1)} s` : 'not within the window'} | ${mine.filter((r) => r.error).length} of ${mine.length} | ${others.filter((r) => r.error).length} of ${others.length} | ${(Math.max(...others.map((r) => r.end - r.start)) / 1000).toFixed(2)} s | ${[...errors].map(([k, v]) => `${k} ${v}`).join(', ') || 'none'} | ${listingErrors - listingBefore} |`,
  );
}
stop = true;
await running;

const repaired = await store.repairListings();
// Every conversation: no message twice; every successful turn's two messages present.
let duplicated = 0;
let missing = 0;
let stored = 0;
for (let i = 0; i < SESSIONS; i++) {
  const messages = await history.listMessages(`s-${i}`, { limit: 100 }).then(async (first) => {
    const out = [...first.messages];
    let cursor = first.nextCursor;
    while (cursor !== undefined) {
      const page = await history.listMessages(`s-${i}`, { limit: 100, cursor });
      out.push(...page.messages);
      cursor = page.nextCursor;
    }
    return out;
  });
  const ids = messages.map((m) => m.id);
  stored += ids.length;
  duplicated += ids.length - new Set(ids).size;
  const have = new Set(ids);
  for (const r of all)
    if (r.session === i && r.error === undefined && (!have.has(`s-${i}-u${r.turn}`) || !have.has(`s-${i}-a${r.turn}`))) missing++;
}
const untyped = all.filter((r) => r.error?.startsWith('untyped')).length;
const listed = await store.list({ limit: 100 });
console.log(
  `\n${all.length} turns in all, ${all.filter((r) => r.error).length} failed (${untyped} with an untyped error); ${stored} messages stored, ${duplicated} stored twice, ${missing} of successful turns missing; listing repairs at the end: ${repaired.repaired} written, ${repaired.pending} pending; the listing of every session counts ${listed.total} (${SESSIONS} sessions).`,
);
const sample = all.find((r) => r.error)?.message;
if (sample) console.log(`\nAn error, as a caller sees it: ${sample}`);
await store.close();
await history.close();
await cluster.stop();
rmSync(dir, { recursive: true, force: true });
console.log(`Node ${process.version}; total wall time ${((performance.now() - started) / 1000).toFixed(1)} s.`);
