// Makes sure the real servers the tests start are installed: redis-server (and redis-cli), the
// PostgreSQL server (initdb and postgres, for @ctx/postgres); and, in
// CI, where the browser tests run, Debian's chromium (the inspector's page test and examples/ai-sdk-ui
// drive it through playwright-core).
// On Debian/Ubuntu as root it installs them with apt-get; elsewhere it says how and fails.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const has = (command) => spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;

const missing = [];
if (!has('redis-server') || !has('redis-cli')) missing.push('redis-server');
// Debian keeps the server binaries off PATH, under /usr/lib/postgresql/<major>/bin.
const postgresServer = () =>
  spawnSync('sh', ['-c', 'test -x "$(pg_config --bindir 2>/dev/null)/initdb" || ls /usr/lib/postgresql/*/bin/initdb'], { stdio: 'ignore' })
    .status === 0;
if (!postgresServer()) missing.push('postgresql');
// Outside CI the browser tests skip themselves without /usr/bin/chromium: nothing large is installed unasked.
if (process.env.CI === 'true' && !existsSync('/usr/bin/chromium')) missing.push('chromium');
if (missing.length === 0) process.exit(0);

const root = typeof process.getuid === 'function' && process.getuid() === 0;
if (root && has('apt-get')) {
  console.log(`Installing ${missing.join(' and ')} (the tests start real servers on 127.0.0.1 and drive a real browser)...`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  execFileSync('apt-get', ['install', '-y', '-qq', ...missing], { stdio: 'inherit', env });
  process.exit(0);
}
console.error(
  `The tests need ${missing.join(' and ')}. Install them, e.g.:\n  sudo apt-get install -y ${missing.join(' ')}   (Debian/Ubuntu)\n  brew install redis postgresql@15        (macOS; the browser tests use CTX_CHROMIUM=/path/to/chromium)`,
);
process.exit(1);
