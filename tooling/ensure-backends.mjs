// Makes sure the real servers the tests start are installed: redis-server (and redis-cli).
// On Debian/Ubuntu as root it installs them with apt-get; elsewhere it says how and fails.
import { execFileSync, spawnSync } from 'node:child_process';

const has = (command) => spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;

if (has('redis-server') && has('redis-cli')) process.exit(0);

const root = typeof process.getuid === 'function' && process.getuid() === 0;
if (root && has('apt-get')) {
  console.log('Installing redis-server (the Redis tests start real servers on 127.0.0.1)...');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  execFileSync('apt-get', ['install', '-y', '-qq', 'redis-server'], { stdio: 'inherit', env });
  process.exit(0);
}
console.error(
  'The Redis tests need redis-server and redis-cli on PATH. Install them, e.g.:\n  sudo apt-get install -y redis-server   (Debian/Ubuntu)\n  brew install redis                      (macOS)',
);
process.exit(1);
