/**
 * Private test tooling: starts a private PostgreSQL cluster (`initdb` + `postgres`) on 127.0.0.1 on
 * a free port, with its data and socket under a given directory, and stops or restarts it by pid.
 * Used by the @ctx/postgres test setup, its fault tests and its benchmark. Needs Debian's
 * `postgresql` package (`apt-get install -y postgresql`).
 */
import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';

const HOST = '127.0.0.1';
const running = new Map<number, ChildProcess>();

// A crashed test run must not leave servers behind: stop whatever is still running, by pid
// (SIGQUIT is PostgreSQL's immediate shutdown; its backends exit with the postmaster).
process.once('exit', () => {
  for (const pid of running.keys()) {
    try {
      process.kill(pid, 'SIGQUIT');
    } catch {
      // already gone
    }
  }
});

/** How `stop` shuts the server down: PostgreSQL's `pg_ctl stop -m` modes, sent as signals to the postmaster's pid. */
export type StopMode = 'smart' | 'fast' | 'immediate';

const SIGNALS: Record<StopMode, NodeJS.Signals> = { smart: 'SIGTERM', fast: 'SIGINT', immediate: 'SIGQUIT' };

/** One running private PostgreSQL cluster. */
export interface PostgresServer {
  readonly host: string;
  readonly port: number;
  /** The postmaster's pid (changes on `restart`). */
  readonly pid: number;
  /** Its directory: `data/` (the cluster), `socket/` and `postgres.log`. */
  readonly dir: string;
  /** `postgres://postgres@127.0.0.1:PORT/postgres` (trust authentication on loopback). */
  readonly url: string;
  /**
   * Stops it by pid and waits until the postmaster has exited: `fast` (default) rolls back open
   * transactions and closes connections; `immediate` is a crash (recovery runs on the next start).
   */
  stop(mode?: StopMode): Promise<void>;
  /** Starts it again on the same port and data directory, and resolves once it accepts connections. */
  restart(): Promise<void>;
}

/** Options of `startPostgresServer`. */
export interface StartPostgresServerOptions {
  /** Directory of the cluster (created if missing; must be empty of anything but an earlier cluster). */
  dir: string;
  /** Default: a free port. */
  port?: number;
  /** Extra `-c name=value` settings, e.g. `{ max_connections: '20' }`. */
  settings?: Readonly<Record<string, string>>;
}

/** The directory of PostgreSQL's server binaries (`initdb`, `postgres`, `pg_isready`), or undefined when none is installed. */
export function postgresBinDir(): string | undefined {
  const configured = spawnSync('pg_config', ['--bindir'], { encoding: 'utf8' });
  const fromConfig = configured.status === 0 ? configured.stdout.trim() : '';
  if (fromConfig && existsSync(join(fromConfig, 'initdb'))) return fromConfig;
  // Debian puts the server binaries under /usr/lib/postgresql/<major>/bin; pg_config may be the client's only.
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const majors = readdirSync(root)
    .filter((name) => /^\d+$/.test(name) && existsSync(join(root, name, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return majors[0] === undefined ? undefined : join(root, majors[0], 'bin');
}

/** Whether the PostgreSQL server binaries are installed. */
export function postgresInstalled(): boolean {
  return postgresBinDir() !== undefined;
}

/** Throws an actionable error when the PostgreSQL server binaries are missing. */
export function assertPostgresInstalled(): string {
  const bin = postgresBinDir();
  if (bin === undefined) {
    throw new Error(
      'PostgreSQL server binaries (initdb, postgres) not found via pg_config or under /usr/lib/postgresql/*/bin. Install them with: apt-get update && apt-get install -y postgresql',
    );
  }
  return bin;
}

async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, HOST, () => server.close(() => resolve(true)));
  });
}

/** A free loopback port, picked at random from 20000-44999. */
export async function findFreePort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = 20000 + Math.floor(Math.random() * 25000);
    if (await portFree(port)) return port;
  }
  throw new Error('No free loopback port found.');
}

/** The uid and gid to run PostgreSQL as: the `postgres` OS user when this process is root (initdb refuses root). */
function serverUser(): { uid: number; gid: number } | undefined {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return undefined;
  const id = (flag: string) => spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
  const uid = id('-u');
  const gid = id('-g');
  if (uid.status !== 0 || gid.status !== 0) {
    throw new Error(
      'Running as root, but there is no `postgres` OS user to run PostgreSQL as (initdb refuses root). Install the postgresql package, which creates it.',
    );
  }
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** Lets the `postgres` user reach `dir`: every ancestor without search permission for others gets it (mode | 0o001). */
function openAncestors(dir: string): void {
  let current = dirname(dir);
  for (;;) {
    const mode = statSync(current).mode;
    if ((mode & 0o001) === 0) chmodSync(current, (mode & 0o7777) | 0o001);
    const parent = dirname(current);
    if (parent === current) return;
    current = parent;
  }
}

function chownTree(path: string, user: { uid: number; gid: number }): void {
  chownSync(path, user.uid, user.gid);
  if (!statSync(path).isDirectory()) return;
  for (const name of readdirSync(path)) chownTree(join(path, name), user);
}

function tail(file: string): string {
  if (!existsSync(file)) return '(no log)';
  return readFileSync(file, 'utf8').trim().split('\n').slice(-8).join(' | ');
}

const run = promisify(execFile);

/**
 * Starts a private PostgreSQL cluster on 127.0.0.1 (initdb into `dir/data` on first use, trust
 * authentication, socket in `dir/socket`; as root it runs as the `postgres` OS user, owning `dir`,
 * and gives the ancestors of `dir` search permission for others so that user can reach it; fsync
 * off, but a commit reaches the WAL before it is acknowledged, so an immediate stop loses no
 * acknowledged commit) and resolves once it accepts connections.
 * @throws Error when PostgreSQL is not installed, or the server exits or does not answer within 30 s.
 */
export async function startPostgresServer(options: StartPostgresServerOptions): Promise<PostgresServer> {
  const bin = assertPostgresInstalled();
  const user = serverUser();
  const dir = resolve(options.dir);
  const data = join(dir, 'data');
  const socket = join(dir, 'socket');
  mkdirSync(socket, { recursive: true });
  if (user) {
    chownTree(dir, user);
    openAncestors(dir);
  }
  const spawnAs = user ? { uid: user.uid, gid: user.gid } : {};
  if (!existsSync(join(data, 'PG_VERSION'))) {
    await run(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync'], {
      ...spawnAs,
      env: { ...process.env, LC_ALL: 'C' },
    }).catch((error: { stderr?: string; message: string }) => {
      throw new Error(`initdb into ${data} failed: ${error.stderr ?? error.message}`);
    });
  }
  const settings: Record<string, string> = {
    fsync: 'off',
    full_page_writes: 'off',
    max_connections: '100',
    ...options.settings,
  };
  const logFile = join(dir, 'postgres.log');
  let port = options.port ?? (await findFreePort());
  let pid = 0;
  let exitNote: string | undefined;
  let exited: Promise<void> = Promise.resolve();

  const launch = async (): Promise<void> => {
    const log = openSync(logFile, 'a');
    if (user) chownSync(logFile, user.uid, user.gid);
    const args = ['-D', data, '-p', String(port), '-h', HOST, '-k', socket];
    for (const [name, value] of Object.entries(settings)) args.push('-c', `${name}=${value}`);
    const child = spawn(join(bin, 'postgres'), args, { ...spawnAs, stdio: ['ignore', log, log], env: { ...process.env, LC_ALL: 'C' } });
    closeSync(log);
    if (child.pid === undefined) throw new Error('postgres did not start');
    pid = child.pid;
    running.set(pid, child);
    exitNote = undefined;
    const childPid = pid;
    exited = new Promise<void>((resolve) => {
      child.once('exit', (code, signal) => {
        running.delete(childPid);
        exitNote = `postgres on port ${port} exited (${signal ?? code}); log: ${tail(logFile)}`;
        resolve();
      });
    });
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (exitNote !== undefined) throw new Error(exitNote);
      const ready = await run(join(bin, 'pg_isready'), ['-h', HOST, '-p', String(port), '-U', 'postgres', '-t', '1']).then(
        () => true,
        () => false,
      );
      if (ready) return;
      if (Date.now() > deadline) throw new Error(`postgres on port ${port}: not ready after 30 s; log: ${tail(logFile)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  for (let attempt = 0; ; attempt++) {
    try {
      await launch();
      break;
    } catch (error) {
      // Someone took the port between the check and the bind: try another, unless it was fixed.
      if (options.port !== undefined || attempt >= 4 || exitNote === undefined) throw error;
      port = await findFreePort();
    }
  }

  const stop = async (mode: StopMode = 'fast') => {
    if (exitNote !== undefined) return;
    process.kill(pid, SIGNALS[mode]);
    const stuck = pid;
    const timer = setTimeout(() => exitNote === undefined && pid === stuck && process.kill(stuck, 'SIGQUIT'), 10_000);
    await exited;
    clearTimeout(timer);
  };
  return {
    host: HOST,
    get port() {
      return port;
    },
    get pid() {
      return pid;
    },
    dir,
    get url() {
      return `postgres://postgres@${HOST}:${port}/postgres`;
    },
    stop,
    async restart() {
      await stop('fast');
      await launch();
    },
  };
}
