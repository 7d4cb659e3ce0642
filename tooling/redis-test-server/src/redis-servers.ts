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
  /** Stops it by pid (`SIGTERM`, or `SIGKILL` to simulate a crash) and waits until it has exited. */
  stop(signal?: 'SIGTERM' | 'SIGKILL'): Promise<void>;
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
        process.kill(pid, signal);
        const timer = setTimeout(() => exitNote === undefined && process.kill(pid, 'SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
      }
    },
  };
}

function tail(file: string): string {
  if (!existsSync(file)) return '(no log)';
  return readFileSync(file, 'utf8').trim().split('\n').slice(-5).join(' | ');
}

/** A running local Redis Cluster. */
export interface RedisCluster {
  readonly nodes: readonly RedisServer[];
  /** `[{ host, port }]` of every master, for ioredis `Cluster`. */
  readonly startupNodes: readonly { host: string; port: number }[];
  /** Stops every node by pid. */
  stop(): Promise<void>;
}

/**
 * Starts `size` (default 3) cluster-enabled nodes under `dir`, joins them with
 * `redis-cli --cluster create ... --cluster-replicas 0 --cluster-yes`, and resolves once every node
 * reports `cluster_state:ok`.
 */
export async function startRedisCluster(options: { dir: string; size?: number }): Promise<RedisCluster> {
  const size = options.size ?? 3;
  const nodes: RedisServer[] = [];
  try {
    for (let i = 0; i < size; i++) nodes.push(await startRedisServer({ dir: join(options.dir, `node-${i}`), cluster: true }));
    await promisify(execFile)(
      'redis-cli',
      ['--cluster', 'create', ...nodes.map((n) => `${HOST}:${n.port}`), '--cluster-replicas', '0', '--cluster-yes'],
      { timeout: 30_000 },
    );
    for (const node of nodes) {
      await waitFor(
        `cluster node ${node.port}`,
        async () => (await rawCommand(node.port, 'CLUSTER INFO')).includes('cluster_state:ok'),
        15_000,
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
