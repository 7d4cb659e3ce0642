// Type-checks and tests every package that peers on @ctx/core against the oldest and the newest
// core of the range it will claim once the pending changesets are versioned, each installed from a
// packed tarball as an app would get it.
//
// The ranges are planned the way `npm run version-packages` (tooling/check-release.mjs --version)
// will write them, in a copy of the repository: a breaking change of core widens the ranges it
// leaves, and a floor raised by hand in the same change is what the package will claim. The newest
// core of every range is the core this release makes: the workspace's sources (whatever version
// their manifest still says). The oldest is the range's floor: the workspace's core when it is that
// same version, else the `@ctx/core@FLOOR` tag the release made, built in a temporary git worktree
// and packed. A range that leaves the core this release makes, or starts at a core that was never
// released and is not the one this release makes, fails without a test: no one could install it.
// Each tarball is unpacked into `<package>/node_modules/.core-matrix/<version>/node_modules/@ctx/core`;
// `tsc --noEmit` runs with `paths` pointing `@ctx/core` (and its subpaths) at that copy, and
// `vitest run` with a resolver plugin sending every import of `@ctx/core`, from the package's files
// and from the workspace packages its tests use (`@ctx/provider-tests` among them), to the same copy.
//
// A row whose core is the workspace's is type-checked against the packed copy, and its tests are
// left to `npm test`, which ran them on the same build of core (the tarball holds that build's
// `dist/` and nothing else the tests load); `--workspace-tests` runs them here too.
//
//   node tooling/core-matrix.mjs                    every package
//   node tooling/core-matrix.mjs redis otel         some of them
//   node tooling/core-matrix.mjs --plan             only say which versions it would test
//   node tooling/core-matrix.mjs --workspace-tests  also test beside the workspace's core
//
// FUZZ_RUNS defaults to 30 here: the fuzz tests already run in full on the workspace build.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { inRange, parseCoreRange, plannedCoreRanges } from './check-release.mjs';
import { pnpm } from './pnpm.mjs';

const CORE = '@ctx/core';

/**
 * What the matrix runs: for each package of `ranges` (name to the `@ctx/core` peer range it will
 * claim), one row per core it is tested beside, the floor and `coreVersion` (the core this release
 * makes), with where that core comes from: `workspace` (the sources in the repository), `tag` (a
 * released version), or no source and a `problem` saying why the range cannot be installed.
 */
export function matrixPlan(ranges, coreVersion, released) {
  const rows = [];
  for (const [name, spec] of ranges) {
    const range = parseCoreRange(spec, coreVersion);
    const claimed = `>=${range.floor} <${range.ceiling}`;
    if (!inRange(coreVersion, range)) {
      rows.push({
        name,
        range: claimed,
        version: coreVersion,
        problem: `${name} would claim ${CORE} ${claimed}, which leaves ${coreVersion}, the core this release makes: lower its floor or raise its ceiling`,
      });
      continue;
    }
    for (const version of new Set([range.floor, coreVersion])) {
      if (version === coreVersion) rows.push({ name, range: claimed, version, source: 'workspace' });
      else if (released.includes(version)) rows.push({ name, range: claimed, version, source: 'tag' });
      else
        rows.push({
          name,
          range: claimed,
          version,
          problem: `${name} would claim ${CORE} ${claimed}, but ${version} was never released (no tag ${CORE}@${version}) and this release makes ${coreVersion}: raise the floor to a released core or to ${coreVersion}`,
        });
    }
  }
  return rows;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main();

function main() {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
  const CORE = '@ctx/core';
  const planOnly = process.argv.includes('--plan');
  const workspaceTests = process.argv.includes('--workspace-tests');
  const only = process.argv.slice(2).filter((arg) => !arg.startsWith('--'));
  const planned = plannedCoreRanges(root);
  const coreVersion = planned.coreVersion;
  const dirs = new Map(); // package name -> directory
  for (const name of readdirSync(join(root, 'packages'))) {
    const manifest = JSON.parse(readFileSync(join(root, 'packages', name, 'package.json'), 'utf8'));
    if (planned.ranges.has(manifest.name) && (only.length === 0 || only.includes(name)))
      dirs.set(manifest.name, join(root, 'packages', name));
  }
  const ranges = new Map([...planned.ranges].filter(([name]) => dirs.has(name)).sort(([a], [b]) => a.localeCompare(b)));
  const tarballs = new Map(); // version -> packed tarball
  const work = mkdtempSync(join(tmpdir(), 'ctx-core-matrix-'));
  const results = [];
  const started = Date.now();
  console.log(
    `Core-version matrix: the ranges the release of the pending changesets will claim, ${CORE} ${coreVersion} being the workspace's sources`,
  );

  try {
    for (const row of matrixPlan(ranges, coreVersion, planned.released)) {
      const t0 = Date.now();
      const status = row.problem ? `FAILED: ${row.problem}` : planOnly ? `planned (${row.source})` : check(dirs.get(row.name), row);
      results.push({ ...row, status, seconds: planOnly ? 0 : Math.round((Date.now() - t0) / 1000) });
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }

  console.log('\nCore-version matrix (Node %s), %d s:', process.versions.node, Math.round((Date.now() - started) / 1000));
  for (const r of results)
    console.log(
      `  ${r.name.padEnd(20)} ${r.range.padEnd(16)} ${`${CORE}@${r.version}`.padEnd(18)} ${r.status}${r.seconds ? ` (${r.seconds} s)` : ''}`,
    );
  if (results.some((r) => r.status.startsWith('FAILED'))) process.exit(1);

  /** The packed tarball of core at `version`: the workspace's sources, or built from its release tag. */
  function coreTarball(version, source) {
    if (tarballs.has(version)) return tarballs.get(version);
    const dest = join(work, `core-${version}`);
    mkdirSync(dest, { recursive: true });
    let dir = join(root, 'packages', 'core');
    if (source === 'tag') {
      const tag = `${CORE}@${version}`;
      const tree = join(work, `tree-${version}`);
      execFileSync('git', ['worktree', 'add', '--detach', tree, tag], { cwd: root, stdio: 'ignore' });
      try {
        run(...pnpm(['install', '--frozen-lockfile', '--filter', `${CORE}...`, '--ignore-scripts']), { cwd: tree });
        if (run(...pnpm(['--filter', CORE, 'build']), { cwd: tree }).status !== 0) throw new Error(`${tag} does not build`);
        dir = join(tree, 'packages', 'core');
        run(...pnpm(['pack', '--pack-destination', dest]), { cwd: dir });
      } finally {
        execFileSync('git', ['worktree', 'remove', '--force', tree], { cwd: root, stdio: 'ignore' });
      }
    } else {
      run(...pnpm(['pack', '--pack-destination', dest]), { cwd: dir, capture: true });
    }
    const file = readdirSync(dest).find((f) => f.endsWith('.tgz'));
    if (!file) throw new Error(`packing ${CORE}@${version} gave no tarball`);
    tarballs.set(version, join(dest, file));
    return join(dest, file);
  }

  /** Unpacks the core of `row` beside the package, then type-checks and tests the package against it. */
  function check(dir, { version, source, range }) {
    const pkg = relative(root, dir);
    console.log(`\n=== ${pkg}: ${CORE}@${version} from the ${source === 'tag' ? 'release tag' : "workspace's sources"} (range ${range})`);
    const base = join(dir, 'node_modules', '.core-matrix');
    const home = join(base, version);
    const coreDir = join(home, 'node_modules', '@ctx', 'core');
    let tarball;
    try {
      tarball = coreTarball(version, source);
    } catch (error) {
      return `FAILED: ${error.message}`;
    }
    rmSync(home, { recursive: true, force: true });
    mkdirSync(coreDir, { recursive: true });
    execFileSync('tar', ['xzf', tarball, '-C', coreDir, '--strip-components=1']);
    writeFileSync(join(home, 'package.json'), '{ "private": true }\n');
    // The resolver resolves core as if imported from this file: vite resolves from an importer's
    // directory only when the importer exists (else from the root, which finds the workspace's core).
    writeFileSync(join(home, 'index.js'), '');

    const tsconfig = join(base, `tsconfig.${version}.json`);
    writeFileSync(
      tsconfig,
      JSON.stringify({ extends: join(dir, 'tsconfig.json'), compilerOptions: { noEmit: true, paths: typePaths(coreDir) } }, null, 2),
    );
    if (run(join(root, 'node_modules', '.bin', 'tsc'), ['-p', tsconfig], { cwd: dir }).status !== 0) return 'FAILED: typecheck';
    if (source === 'workspace' && !workspaceTests) return 'ok (typecheck; the tests ran in npm test, on this build)';

    const config = join(base, `vitest.${version}.config.mjs`);
    writeFileSync(config, vitestConfig(dir, home, coreDir));
    const env = { ...process.env, FUZZ_RUNS: process.env.FUZZ_RUNS ?? '30' };
    const test = run(join(root, 'node_modules', '.bin', 'vitest'), ['run', '--config', config, '--root', dir, '--reporter=dot'], {
      cwd: dir,
      env,
    });
    return test.status === 0 ? 'ok (typecheck, tests)' : 'FAILED: tests';
  }

  /** `paths` for tsc: core and each subpath it exports, to the type files of the copy in `coreDir`. */
  function typePaths(coreDir) {
    const manifest = JSON.parse(readFileSync(join(coreDir, 'package.json'), 'utf8'));
    const paths = {};
    for (const [key, target] of Object.entries(manifest.exports ?? {})) {
      const types = target?.import?.types;
      if (types) paths[key === '.' ? CORE : `${CORE}/${key.slice(2)}`] = [join(coreDir, types)];
    }
    return paths;
  }

  /**
   * A vitest config: the package's own, plus a resolver sending every import of core outside
   * node_modules (the package's files, and the workspace packages its tests load, which vitest
   * inlines) to the unpacked copy, which the copy's own files then share.
   */
  function vitestConfig(dir, home, coreDir) {
    return `import { mergeConfig } from 'vitest/config';
import base from ${JSON.stringify(join(dir, 'vitest.config.ts'))};

const core = ${JSON.stringify(CORE)};
const copy = ${JSON.stringify(`${coreDir}/`)};
const importer = ${JSON.stringify(join(home, 'index.js'))};

export default mergeConfig(base, {
  plugins: [
    {
      name: 'ctx-core-matrix',
      enforce: 'pre',
      async resolveId(source, from, options) {
        if (source !== core && !source.startsWith(\`\${core}/\`)) return null;
        if (!from || from.startsWith(copy)) return null;
        return this.resolve(source, importer, { ...options, skipSelf: true });
      },
    },
  ],
  test: { reporters: ['dot'] },
});
`;
  }

  function run(command, args, { cwd = root, env = process.env, capture = false } = {}) {
    const result = spawnSync(command, args, { cwd, env, stdio: capture ? ['ignore', 'pipe', 'inherit'] : 'inherit', encoding: 'utf8' });
    if (result.error) throw result.error;
    return result;
  }
}
