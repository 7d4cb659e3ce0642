// Makes sure the real servers the tests start are installed: redis-server (and redis-cli), and
// Debian's chromium for the browser tests (examples/ai-sdk-ui, driven by playwright-core).
// On Debian/Ubuntu as root it installs them with apt-get; elsewhere it says how and fails.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const has = (command) => spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;

const root = typeof process.getuid === 'function' && process.getuid() === 0;
// The browser tests run wherever apt-get can install chromium (CI); elsewhere they skip without it.
const chromium = !existsSync('/usr/bin/chromium') && root && has('apt-get') ? ['chromium'] : [];
if (has('redis-server') && has('redis-cli') && chromium.length === 0) process.exit(0);

if (root && has('apt-get')) {
  const packages = [...(has('redis-server') && has('redis-cli') ? [] : ['redis-server']), ...chromium];
  console.log(`Installing ${packages.join(' and ')} (the tests start real servers and a browser on 127.0.0.1)...`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  execFileSync('apt-get', ['install', '-y', '-qq', ...packages], { stdio: 'inherit', env });
  process.exit(0);
}
console.error(
  'The Redis tests need redis-server and redis-cli on PATH. Install them, e.g.:\n  sudo apt-get install -y redis-server   (Debian/Ubuntu)\n  brew install redis                      (macOS)',
);
process.exit(1);
