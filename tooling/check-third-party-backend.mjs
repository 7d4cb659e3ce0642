// Runs examples/third-party-backend as a backend published outside this repository would run:
// packs @ctx/core and @ctx/provider-tests (the tarballs npm would publish), installs them with the
// example's other dependencies from the npm registry into a temporary copy of the example (a
// project of its own, outside the pnpm workspace), then type-checks it under the strictest options
// and runs its conformance suites. Nothing is written into the repository; the copy is removed.
//
//   node tooling/check-third-party-backend.mjs
//
// The packages must be built (`npm test` builds them; else `pnpm exec turbo run build
// --filter=@ctx/provider-tests...`). better-sqlite3 is installed without its install script (which
// would fetch a prebuilt binary from outside the npm registry): the addon the workspace built for
// the same version and Node is copied in when there is one, else it is compiled from source.
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pnpm } from './pnpm.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const example = join(root, 'examples', 'third-party-backend');
const work = mkdtempSync(join(tmpdir(), 'ctx-third-party-'));
const started = Date.now();
const steps = [];

try {
  const tarballs = join(work, 'tarballs');
  mkdirSync(tarballs);
  for (const name of ['core', 'provider-tests']) {
    const dir = join(root, 'packages', name);
    if (!existsSync(join(dir, 'dist')))
      throw new Error(`packages/${name} is not built: run pnpm exec turbo run build --filter=@ctx/${name}`);
    step(`pack @ctx/${name}`, ...pnpm(['pack', '--pack-destination', tarballs]), dir, true);
  }
  const packed = readdirSync(tarballs).map((file) => join(tarballs, file));

  const app = join(work, 'ctx-sqlite');
  cpSync(example, app, { recursive: true, filter: (source) => !source.includes('node_modules') });
  step('npm install (tarballs, then the registry)', 'npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts', ...packed], app);
  installAddon(app);

  step(
    'tsc --noEmit (strict, exactOptionalPropertyTypes, skipLibCheck: false)',
    join(app, 'node_modules', '.bin', 'tsc'),
    ['--noEmit'],
    app,
  );
  step('vitest run', join(app, 'node_modules', '.bin', 'vitest'), ['run'], app);
} catch (error) {
  console.error(`\ncheck-third-party-backend: ${error.message}`);
  process.exitCode = 1;
} finally {
  rmSync(work, { recursive: true, force: true });
  console.log(`\nThird-party backend (Node ${process.versions.node}), ${Math.round((Date.now() - started) / 1000)} s:`);
  for (const s of steps) console.log(`  ${s.title.padEnd(74)} ${s.ok ? 'ok' : 'FAILED'} (${s.seconds} s)`);
}

/** Runs one step, records it, and throws when it fails. */
function step(title, command, args, cwd, quiet = false) {
  console.log(`\n=== ${title}`);
  const t0 = Date.now();
  const env = { ...process.env, npm_config_update_notifier: 'false' };
  const result = spawnSync(command, args, { cwd, env, stdio: quiet ? ['ignore', 'ignore', 'inherit'] : 'inherit' });
  if (result.error) throw result.error;
  const ok = result.status === 0;
  steps.push({ title, ok, seconds: Math.round((Date.now() - t0) / 1000) });
  if (!ok) throw new Error(`${title} failed (exit ${result.status})`);
}

/** better-sqlite3's addon: the workspace's build of the same version when it loads, else compiled here. */
function installAddon(app) {
  const installed = join(app, 'node_modules', 'better-sqlite3');
  const version = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')).version;
  const built = join(
    root,
    'node_modules',
    '.pnpm',
    `better-sqlite3@${version}`,
    'node_modules',
    'better-sqlite3',
    'build',
    'Release',
    'better_sqlite3.node',
  );
  const target = join(installed, 'build', 'Release', 'better_sqlite3.node');
  if (existsSync(built)) {
    mkdirSync(dirname(target), { recursive: true });
    copyFileSync(built, target);
    const probe = spawnSync(process.execPath, ['-e', "new (require('better-sqlite3'))(':memory:').close()"], { cwd: app, stdio: 'ignore' });
    if (probe.status === 0) {
      console.log(`\n=== better-sqlite3 ${version}: the workspace's build of the addon`);
      return;
    }
    rmSync(target, { force: true });
  }
  step(`better-sqlite3 ${version}: compile the addon`, 'npm', ['rebuild', 'better-sqlite3', '--build-from-source'], app);
}
