/**
 * Private test tooling: starts real `redis-server` processes on loopback, on free ports, with their
 * data under a given directory, and stops them by pid. Used by the @ctx/redis test setup and its
 * benchmark. Needs `redis-server` and `redis-cli` on PATH (`apt-get install -y redis-server`).
 */
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync, closeSync, readFileSync, existsSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';

const HOST = '127.0.0.1';
const running = new Map<number, ChildProcess>();

// A crashed test run must not leave servers behind: kill whatever is still running, by pid.
process.once('exit', () => {
  for (const pid of running.keys()) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

/** One running redis-server. */
export interface RedisServer {
  readonly host: string;
  readonly port: number;
  readonly pid: number;
  /** Its data directory (AOF, cluster config, log). */
  readonly dir: string;
  /** Stops it by pid (`SIGTERM`, or `SIGKILL` to simulate a crash) and waits until it has exited; a paused server is resumed first. */
  stop(signal?: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  /** Freezes it by pid (`SIGSTOP`): its connections stay open and nothing answers, as a stalled host does. */
  pause(): void;
  /** Lets a paused server go on (`SIGCONT`). */
  resume(): void;
}

/** Options of `startRedisServer`. */
export interface StartRedisServerOptions {
  /** Data directory; created if missing. */
  dir: string;
  /** Default: a free port (for a cluster node, one whose bus port `port + 10000` is free too). */
  port?: number;
  /** Start as a cluster node. */
  cluster?: boolean;
  /** Persist every write to an append-only file before acknowledging it (so a kill loses nothing acknowledged). */
  durable?: boolean;
  /** Extra `redis-server` arguments. */
  args?: readonly string[];
}

/** Whether `redis-server` and `redis-cli` are installed. */
export function redisInstalled(): boolean {
  return ['redis-server', 'redis-cli'].every((bin) => spawnSync(bin, ['--version'], { stdio: 'ignore' }).status === 0);
}

/** Throws an actionable error when redis-server is missing. */
export function assertRedisInstalled(): void {
  if (!redisInstalled()) {
    throw new Error('redis-server / redis-cli not found on PATH. Install them with: apt-get update && apt-get install -y redis-server');
  }
}

async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, HOST, () => server.close(() => resolve(true)));
  });
}

/** A free loopback port (and, with `bus`, `port + 10000` free as well), picked at random from 20000-44999. */
export async function findFreePort(bus = false): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 20000 + Math.floor(Math.random() * 25000);
    if ((await portFree(port)) && (!bus || (await portFree(port + 10000)))) return port;
  }
  throw new Error('No free loopback port found.');
}

/**
 * Sends one inline command over a fresh connection and resolves to the raw reply text, or rejects
 * on connection errors / after `timeoutMs`.
 */
export function rawCommand(port: number, command: string, timeoutMs = 1000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: HOST, port });
    let data = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no reply to ${command} from port ${port}`));
    }, timeoutMs);
    socket.setEncoding('utf8');
    socket.once('connect', () => socket.write(`${command}\r\n`));
    socket.on('data', (chunk) => {
      data += chunk;
      // A status / error / integer line, or a complete bulk string.
      const bulk = /^\$(-?\d+)\r\n/.exec(data);
      if ((!bulk && data.endsWith('\r\n')) || (bulk && (Number(bulk[1]) < 0 || data.length >= bulk[0].length + Number(bulk[1]) + 2))) {
        clearTimeout(timer);
        socket.end();
        resolve(data);
      }
    });
    socket.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number, exited?: () => string | undefined): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const gone = exited?.();
    if (gone) throw new Error(`${what}: ${gone}`);
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${what}: timed out after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Starts one redis-server on 127.0.0.1 and resolves once it answers PING. */
export async function startRedisServer(options: StartRedisServerOptions): Promise<RedisServer> {
  assertRedisInstalled();
  mkdirSync(options.dir, { recursive: true });
  for (let attempt = 0; ; attempt++) {
    const port = options.port ?? (await findFreePort(options.cluster));
    try {
      return await launch(port, options);
    } catch (error) {
      // Someone took the port between the check and the bind: try another, unless it was fixed.
      if (options.port !== undefined || attempt >= 4) throw error;
    }
  }
}

async function launch(port: number, options: StartRedisServerOptions): Promise<RedisServer> {
  const { dir } = options;
  const args = [
    '--port',
    String(port),
    '--bind',
    HOST,
    '--protected-mode',
    'yes',
    '--daemonize',
    'no',
    '--dir',
    dir,
    '--save',
    '',
    '--logfile',
    '',
    ...(options.durable ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']),
    ...(options.cluster ? ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '2000'] : []),
    ...(options.args ?? []),
  ];
  const logFile = join(dir, 'redis.log');
  const log = openSync(logFile, 'a');
  const child = spawn('redis-server', args, { stdio: ['ignore', log, log] });
  closeSync(log);
  const pid = child.pid;
  if (pid === undefined) throw new Error('redis-server did not start');
  let paused = false;
  running.set(pid, child);
  let exitNote: string | undefined;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      running.delete(pid);
      exitNote = `redis-server on port ${port} exited (${signal ?? code}); log: ${tail(logFile)}`;
      resolve();
    });
  });
  await waitFor(
    `redis-server on port ${port}`,
    async () => (await rawCommand(port, 'PING', 500)).startsWith('+PONG'),
    10_000,
    () => exitNote,
  );
  return {
    host: HOST,
    port,
    pid,
    dir,
    async stop(signal = 'SIGTERM') {
      if (exitNote === undefined) {
        if (paused) process.kill(pid, 'SIGCONT');
        paused = false;
        process.kill(pid, signal);
        const timer = setTimeout(() => exitNote === undefined && process.kill(pid, 'SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
      }
    },
    pause() {
      if (exitNote !== undefined) throw new Error(`redis-server on port ${port} is not running: ${exitNote}`);
      process.kill(pid, 'SIGSTOP');
      paused = true;
    },
    resume() {
      if (exitNote !== undefined || !paused) return;
      process.kill(pid, 'SIGCONT');
      paused = false;
    },
  };
}

function tail(file: string): string {
  if (!existsSync(file)) return '(no log)';
  return readFileSync(file, 'utf8').trim().split('\n').slice(-5).join(' | ');
}

/** A running local Redis Cluster. */
export interface RedisCluster {
  /** Every node: the masters first (as created), then their replicas. */
  readonly nodes: readonly RedisServer[];
  /** `[{ host, port }]` of every node, for ioredis `Cluster`. */
  readonly startupNodes: readonly { host: string; port: number }[];
  /** Stops every node by pid. */
  stop(): Promise<void>;
}

/** Options of `startRedisCluster`. */
export interface StartRedisClusterOptions {
  /** Data directory; each node gets `node-<i>` under it. */
  dir: string;
  /** How many masters (default 3). */
  size?: number;
  /** Replicas per master (default 0): with 1, a master that dies or stalls is replaced by its replica. */
  replicas?: number;
}

/** One node as `CLUSTER NODES` describes it. */
export interface ClusterNodeInfo {
  id: string;
  port: number;
  role: 'master' | 'replica';
  /** The master's id, for a replica. */
  masterId: string | undefined;
  /** Whether the node is marked failed (`fail` or `fail?`). */
  failing: boolean;
  /** The slot ranges it serves, inclusive, for a master. */
  slots: [number, number][];
}

/** The cluster as the node on `port` sees it (`CLUSTER NODES`). */
export async function clusterNodes(port: number, timeoutMs = 1000): Promise<ClusterNodeInfo[]> {
  const reply = await rawCommand(port, 'CLUSTER NODES', timeoutMs);
  return reply
    .split('\r\n')
    .slice(1)
    .join('\n')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const [id, address, flags, master, , , , , ...slots] = line.trim().split(' ');
      return {
        id: id!,
        port: Number(/:(\d+)@/.exec(address!)?.[1]),
        role: flags!.includes('master') ? 'master' : 'replica',
        masterId: master === '-' ? undefined : master,
        failing: /\bfail\??\b/.test(flags!),
        slots: slots
          .filter((range) => !range.startsWith('['))
          .map((range) => {
            const [from, to] = range.split('-').map(Number);
            return [from!, to ?? from!] as [number, number];
          }),
      } satisfies ClusterNodeInfo;
    });
}

/**
 * Starts `size` (default 3) masters and `replicas` (default 0) replicas of each under `dir`, joins
 * them with `redis-cli --cluster create ... --cluster-replicas <replicas> --cluster-yes`, and
 * resolves once every node reports `cluster_state:ok` and every replica is in sync with its master.
 * Nodes run with `cluster-node-timeout 2000`.
 */
export async function startRedisCluster(options: StartRedisClusterOptions): Promise<RedisCluster> {
  const size = options.size ?? 3;
  const replicas = options.replicas ?? 0;
  const nodes: RedisServer[] = [];
  try {
    for (let i = 0; i < size * (1 + replicas); i++)
      nodes.push(await startRedisServer({ dir: join(options.dir, `node-${i}`), cluster: true }));
    await promisify(execFile)(
      'redis-cli',
      ['--cluster', 'create', ...nodes.map((n) => `${HOST}:${n.port}`), '--cluster-replicas', String(replicas), '--cluster-yes'],
      { timeout: 30_000 },
    );
    for (const node of nodes) {
      await waitFor(
        `cluster node ${node.port}`,
        async () => (await rawCommand(node.port, 'CLUSTER INFO')).includes('cluster_state:ok'),
        15_000,
      );
    }
    if (replicas > 0) {
      await waitFor(
        'cluster replicas in sync',
        async () => {
          const seen = await clusterNodes(nodes[0]!.port);
          const byPort = new Map(seen.map((n) => [n.port, n]));
          for (const node of nodes) {
            const info = byPort.get(node.port);
            if (info?.role !== 'replica') continue;
            if (!(await rawCommand(node.port, 'INFO replication')).includes('master_link_status:up')) return false;
          }
          return seen.filter((n) => n.role === 'replica').length === size * replicas;
        },
        30_000,
      );
    }
  } catch (error) {
    await Promise.all(nodes.map((n) => n.stop()));
    throw error;
  }
  return {
    nodes,
    startupNodes: nodes.map((n) => ({ host: n.host, port: n.port })),
    stop: async () => {
      await Promise.all(nodes.map((n) => n.stop()));
    },
  };
}
