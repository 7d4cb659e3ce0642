// Type-checks and tests every backend package against the lowest and the highest version of its
// service SDK that its peer range claims, on the running Node.
//
// For each package and version it installs the SDK from the npm registry into
// `<package>/node_modules/.sdk-matrix/<version>/` (no lockfile, no scripts; peers the SDK wants
// resolve from the package's own node_modules), then runs `tsc --noEmit` with `paths` pointing the
// SDK at that copy and `vitest run` with a resolver plugin doing the same for the package's own
// files. The resolver logs where each SDK import went; a run whose imports reached any other copy
// (the workspace's, say) or another version fails, and each run prints the version its tests loaded.
// Test servers in tooling/ keep their own copies. Versions whose `engines.node` excludes the
// running Node are reported and left out (openai 7 needs Node 22). An SDK released in lockstep with
// a companion package the tests import (`@openai/agents-core` with `@openai/agents`) gets the
// companion at the same version.
//
//   node tooling/sdk-matrix.mjs                 every package
//   node tooling/sdk-matrix.mjs redis mem0      some of them
//   node tooling/sdk-matrix.mjs --plan          only say which versions it would test
//   node tooling/sdk-matrix.mjs --above-node 20 only the versions that need a Node newer than 20
//                                               (CI runs this under Node 22, after the Node 20 run)
//   node tooling/sdk-matrix.mjs --workspace-versions
//                                               also the versions the workspace installs
//
// A version the workspace's lockfile installs for the package is left to `npm test`, which
// type-checks and tests the package against it; `--workspace-versions` runs it here too, from a
// fresh install (the SDK's own dependencies then at their newest, as tooling/fresh-project.mjs
// installs them).
//
// FUZZ_RUNS defaults to 30 here: the fuzz tests already run in full on the workspace versions.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The backend packages and their SDKs. */
const MATRIX = [
  { name: 'redis', sdk: 'ioredis' },
  { name: 'cosmos', sdk: '@azure/cosmos' },
  { name: 'azure-search', sdk: '@azure/search-documents' },
  { name: 'mem0', sdk: 'mem0ai' },
  { name: 'openai', sdk: 'openai' },
  { name: 'openai-agents', sdk: '@openai/agents-core', companions: ['@openai/agents'] },
  { name: 'postgres', sdk: 'pg' },
];

const args = process.argv.slice(2);
const planOnly = args.includes('--plan'); // print the versions, install and run nothing
const workspaceVersions = args.includes('--workspace-versions');
const aboveAt = args.indexOf('--above-node');
const aboveNode = aboveAt === -1 ? undefined : Number(args[aboveAt + 1]);
if (aboveAt !== -1 && !Number.isInteger(aboveNode)) throw new Error('--above-node takes a Node major, e.g. --above-node 20');
const only = args.filter((arg, i) => !arg.startsWith('--') && (aboveAt === -1 || (i !== aboveAt && i !== aboveAt + 1)));
const nodeMajor = Number(process.versions.node.split('.')[0]);
const results = [];

for (const { name, sdk, companions = [] } of MATRIX.filter((m) => only.length === 0 || only.includes(m.name))) {
  const dir = join(root, 'packages', name);
  const range = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).peerDependencies?.[sdk];
  if (!range) throw new Error(`packages/${name}: no peer dependency on ${sdk}`);
  const { lowest, highest, tooNew, nodeOf } = pickVersions(sdk, range);
  for (const version of tooNew) results.push({ name, sdk, version, status: `skipped: needs Node ${version.node}` });
  for (const version of [...new Set([lowest, highest])]) {
    if (aboveNode !== undefined && !((nodeOf(version) ?? 0) > aboveNode)) continue; // already run on that Node
    const status =
      !workspaceVersions && version === installedVersion(dir, sdk)
        ? 'ok (the version the workspace installs: npm test type-checks and tests it)'
        : planOnly
          ? 'planned'
          : check(dir, sdk, version, companions);
    results.push({ name, sdk, version, status });
  }
}

console.log('\nSDK matrix (Node %s):', process.versions.node);
for (const r of results) {
  const version = typeof r.version === 'string' ? r.version : r.version.version;
  console.log(`  @ctx/${r.name.padEnd(13)} ${`${r.sdk}@${version}`.padEnd(34)} ${r.status}`);
}
if (results.some((r) => r.status.startsWith('FAILED'))) process.exit(1);

/**
 * The lowest version the range names, the highest published one that fits it and runs on this Node
 * (by `engines.node`), and, per major, the newest release skipped because it needs a newer Node.
 * Engines are looked up for one release per minor at most, newest first, stopping at the first that runs.
 */
function pickVersions(sdk, range) {
  const listed = JSON.parse(run('npm', ['view', `${sdk}@${range}`, 'version', '--json'], { capture: true }).stdout);
  const all = (Array.isArray(listed) ? listed : [listed]).filter((v) => /^\d+\.\d+\.\d+$/.test(v)).sort(compareVersions);
  const floors = range.split('||').map((part) => part.trim().replace(/^[\^~>=\s]+/, ''));
  const lowest = all.find((v) => floors.includes(v)) ?? all[0];
  const newestPerMinor = [...new Map(all.map((v) => [v.split('.').slice(0, 2).join('.'), v])).values()].reverse();
  const nodeOf = (version) =>
    minNode(JSON.parse(run('npm', ['view', `${sdk}@${version}`, 'engines', '--json'], { capture: true }).stdout || '{}').node);
  const runs = (node) => node === undefined || node <= nodeMajor;
  const tooNew = new Map();
  let highest;
  for (const version of newestPerMinor) {
    const major = version.split('.')[0];
    if (tooNew.get(major)?.wholeMajor) continue;
    const node = nodeOf(version);
    if (runs(node)) {
      highest = version;
      break;
    }
    if (!tooNew.has(major)) {
      // When even the major's oldest release needs a newer Node, skip the whole major.
      const oldest = all.find((v) => v.split('.')[0] === major);
      tooNew.set(major, { version, node, wholeMajor: oldest !== version && !runs(nodeOf(oldest)) });
    }
  }
  if (!lowest || !highest) throw new Error(`${sdk}@${range}: no published version runs on Node ${nodeMajor}`);
  return { lowest, highest, tooNew: [...tooNew.values()], nodeOf };
}

/** The version of `sdk` the workspace installed for the package in `dir`, if any. */
function installedVersion(dir, sdk) {
  const manifest = join(dir, 'node_modules', sdk, 'package.json');
  return existsSync(manifest) ? JSON.parse(readFileSync(manifest, 'utf8')).version : undefined;
}

function compareVersions(a, b) {
  const [x, y] = [a, b].map((v) => v.split('.').map(Number));
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
}

/** The lowest Node major an `engines.node` range accepts (`>=22.0.0` -> 22), if it names one. */
function minNode(engines) {
  const match = typeof engines === 'string' ? /^\s*>=?\s*v?(\d+)/.exec(engines) : null;
  return match ? Number(match[1]) : undefined;
}

/** Installs `sdk@version` (and its companions at the same version) beside the package, then type-checks and tests the package against it. */
function check(dir, sdk, version, companions) {
  const pkg = relative(root, dir);
  const base = join(dir, 'node_modules', '.sdk-matrix');
  const home = join(base, version);
  console.log(`\n=== ${pkg}: ${sdk}@${version}`);
  if (!existsSync(join(home, 'node_modules', sdk, 'package.json'))) {
    rmSync(home, { recursive: true, force: true });
    mkdirSync(home, { recursive: true });
    writeFileSync(join(home, 'package.json'), '{ "private": true }\n');
    const install = run(
      'npm',
      [
        'install',
        '--no-save',
        '--no-package-lock',
        '--legacy-peer-deps',
        '--ignore-scripts',
        '--no-audit',
        '--no-fund',
        '--loglevel=error',
        `${sdk}@${version}`,
        ...companions.map((companion) => `${companion}@${version}`),
      ],
      { cwd: home },
    );
    if (install.status !== 0) return 'FAILED: npm install';
  }

  const tsconfig = join(base, `tsconfig.${version}.json`);
  writeFileSync(
    tsconfig,
    JSON.stringify(
      {
        extends: join(dir, 'tsconfig.json'),
        compilerOptions: {
          noEmit: true,
          paths: Object.assign(
            {},
            ...[sdk, ...companions].map((name) => typePaths(name, typesHome(dir, join(home, 'node_modules', name)))),
          ),
        },
      },
      null,
      2,
    ),
  );
  if (run(join(root, 'node_modules', '.bin', 'tsc'), ['-p', tsconfig], { cwd: dir }).status !== 0) return 'FAILED: typecheck';

  const config = join(base, `vitest.${version}.config.mjs`);
  // The resolver resolves the SDKs as imported from this file; it must exist, or Vite resolves from the workspace.
  writeFileSync(join(home, 'index.js'), '');
  const log = join(base, `resolved.${version}.log`);
  rmSync(log, { force: true });
  writeFileSync(config, vitestConfig(dir, [sdk, ...companions], home, log));
  const env = { ...process.env, FUZZ_RUNS: process.env.FUZZ_RUNS ?? '30' };
  const test = run(join(root, 'node_modules', '.bin', 'vitest'), ['run', '--config', config, '--root', dir, '--reporter=default'], {
    cwd: dir,
    env,
  });
  const loaded = loadedVersions(log, home);
  console.log(`=== ${pkg}: the tests loaded ${loaded.summary}`);
  if (loaded.problem) return `FAILED: ${loaded.problem}`;
  if (loaded.versions.get(sdk) !== version) return `FAILED: the tests loaded ${sdk}@${loaded.versions.get(sdk) ?? 'nothing'}`;
  return test.status === 0 ? 'ok (typecheck, tests)' : 'FAILED: tests';
}

/**
 * What the resolver logged: each SDK import of the package's files, and the version of the copy it
 * went to. Any import that resolved outside the matrix's copy (the workspace's, say) is a problem.
 */
function loadedVersions(log, home) {
  const lines = existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : [];
  const versions = new Map();
  const outside = [];
  for (const line of lines) {
    const [source, id] = line.split('\t');
    const name = source.startsWith('@') ? source.split('/').slice(0, 2).join('/') : source.split('/')[0];
    const dir = join(home, 'node_modules', name);
    if (!id.startsWith(`${dir}/`)) {
      outside.push(`${source} -> ${id}`);
      continue;
    }
    versions.set(name, JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).version);
  }
  const summary =
    versions.size > 0
      ? [...versions].map(([name, v]) => `${name}@${v}`).join(', ')
      : outside.length > 0
        ? 'only copies outside the matrix'
        : 'no SDK import';
  if (outside.length > 0) return { versions, summary, problem: `SDK resolved outside the matrix copy (${outside[0]})` };
  if (lines.length === 0) return { versions, summary, problem: 'the tests resolved no SDK import' };
  return { versions, summary };
}

/**
 * Where the SDK's types are: the copy in `sdkDir`, or, for an SDK that ships none (`pg`), the
 * package's own `@types/<sdk>` (a user installs those beside any version of the SDK).
 */
function typesHome(dir, sdkDir) {
  const manifest = JSON.parse(readFileSync(join(sdkDir, 'package.json'), 'utf8'));
  if (manifest.types || manifest.typings || typesOf(manifest.exports?.['.'] ?? {})) return sdkDir;
  const definitelyTyped = join(dir, 'node_modules', '@types', manifest.name.replace('@', '').replace('/', '__'));
  return existsSync(definitelyTyped) ? definitelyTyped : sdkDir;
}

/** `paths` for tsc: the SDK and each subpath it exports, to the type files of the copy in `sdkDir`. */
function typePaths(sdk, sdkDir) {
  const manifest = JSON.parse(readFileSync(join(sdkDir, 'package.json'), 'utf8'));
  const paths = { [sdk]: [sdkDir], [`${sdk}/*`]: [`${sdkDir}/*`] };
  for (const [key, target] of Object.entries(manifest.exports ?? {})) {
    if (key === '.' || key.includes('*')) continue;
    const types = typesOf(target);
    if (types) paths[`${sdk}/${key.slice(2)}`] = [join(sdkDir, types)];
  }
  return paths;
}

/** The `types` file of an `exports` entry, preferring the `import` condition. */
function typesOf(target) {
  if (typeof target === 'string') return /\.d\.[cm]?ts$/.test(target) ? target : undefined;
  if (!target || typeof target !== 'object') return undefined;
  for (const condition of ['types', 'import', 'node', 'default', 'require']) {
    const found = typesOf(target[condition]);
    if (found) return found;
  }
  return undefined;
}

/**
 * A vitest config: the package's own, plus a resolver that sends the SDKs' imports from the package's
 * files to `home` and appends each (`specifier<TAB>resolved file`) to `log`, which `check` reads.
 */
function vitestConfig(dir, sdks, home, log) {
  return `import { appendFileSync } from 'node:fs';
import { mergeConfig } from 'vitest/config';
import base from ${JSON.stringify(join(dir, 'vitest.config.ts'))};

const sdks = ${JSON.stringify(sdks)};
const own = ${JSON.stringify(`${dir}/`)};
const importer = ${JSON.stringify(join(home, 'index.js'))};
const log = ${JSON.stringify(log)};

export default mergeConfig(base, {
  plugins: [
    {
      name: 'ctx-sdk-matrix',
      enforce: 'pre',
      async resolveId(source, from, options) {
        if (!sdks.some((sdk) => source === sdk || source.startsWith(\`\${sdk}/\`))) return null;
        if (!from || !from.startsWith(own) || from.includes('/node_modules/')) return null;
        const resolved = await this.resolve(source, importer, { ...options, skipSelf: true });
        appendFileSync(log, \`\${source}\\t\${resolved?.id ?? ''}\\n\`);
        return resolved;
      },
    },
  ],
});
`;
}

function run(command, args, { cwd = root, env = process.env, capture = false } = {}) {
  const result = spawnSync(command, args, { cwd, env, stdio: capture ? ['ignore', 'pipe', 'inherit'] : 'inherit', encoding: 'utf8' });
  if (result.error) throw result.error;
  return result;
}
