#!/usr/bin/env node
// The release of the pending changesets, with every package's `@ctx/core` peer range kept true.
//
// Every published package takes `@ctx/core` as a peer with an explicit range, `>=FLOOR <CEILING`
// (`workspace:` in the repo; `workspace:^` reads as `>=X <next breaking X`). Changesets releases a
// package as a major when a peer it depends on leaves its range, which before 1.0 means 1.0.0: so
// before `changeset version` this script widens the ceiling of every range the new core leaves
// (to the next breaking version after it), keeps the floor (raised to the oldest released core
// when the floor itself was never released), and files a patch changeset for those packages, so
// each is released as a patch that claims the new core. The core-version matrix
// (tooling/core-matrix.mjs) tests each package against the floor and the newest of its range.
// A package that does not work with the new core gets a change and a changeset of its own.
//
//   node tooling/check-release.mjs            check: fails when a package below 1.0 would be
//                                             released as 1.0 or more without a changeset asking
//   node tooling/check-release.mjs --version  widen the ranges, file the changeset, then run
//                                             `changeset version` (the release workflow's step)
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const CORE = '@ctx/core';
const here = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const changesetBin = join(here, 'node_modules', '.bin', process.platform === 'win32' ? 'changeset.cmd' : 'changeset');

/** The releases of `plan` (`changeset status --output` JSON) that reach 1.0 although no changeset bumps them as a major. */
export function accidentalMajors(plan) {
  const asked = new Set(plan.changesets.flatMap((changeset) => changeset.releases.filter((r) => r.type === 'major').map((r) => r.name)));
  const major = (version) => Number(version.split('.')[0]);
  return plan.releases.filter((r) => major(r.oldVersion) === 0 && major(r.newVersion) >= 1 && !asked.has(r.name));
}

/** `x.y.z` as three numbers (a prerelease suffix is ignored). */
function parse(version) {
  const match = /^(\d+)\.(\d+)\.(\d+)/.exec(version.trim());
  if (!match) throw new Error(`check-release: "${version}" is not a version`);
  return match.slice(1, 4).map(Number);
}

/** Negative, zero or positive as `a` is older than, the same as or newer than `b`. */
export function compareVersions(a, b) {
  const [x, y] = [parse(a), parse(b)];
  return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
}

/** The first version that breaks `version` by semver: the next major, or before 1.0 the next minor. */
export function nextBreaking(version) {
  const [major, minor] = parse(version);
  return major === 0 ? `0.${minor + 1}.0` : `${major + 1}.0.0`;
}

/**
 * The floor and ceiling of a peer range on `@ctx/core` as written in a manifest: `workspace:^`
 * (resolved against `coreVersion`, the version in the repo), `^X`, `>=X <Y`, with or without
 * `workspace:`. Anything else is refused: the ranges are written by this script.
 */
export function parseCoreRange(spec, coreVersion) {
  const range = spec.replace(/^workspace:/, '').trim();
  if (range === '^' || range === '~' || range === '*') {
    if (range === '*') throw new Error(`check-release: the peer range "${spec}" claims every version of ${CORE}; write ">=X <Y"`);
    return {
      floor: coreVersion,
      ceiling: range === '^' ? nextBreaking(coreVersion) : `${parse(coreVersion)[0]}.${parse(coreVersion)[1] + 1}.0`,
    };
  }
  let match = /^\^(\d+\.\d+\.\d+)$/.exec(range);
  if (match) return { floor: match[1], ceiling: nextBreaking(match[1]) };
  match = /^>=\s*(\d+\.\d+\.\d+)\s+<\s*(\d+\.\d+\.\d+)$/.exec(range);
  if (match) return { floor: match[1], ceiling: match[2] };
  throw new Error(`check-release: the peer range "${spec}" on ${CORE} is not "workspace:^", "^X" or ">=X <Y"`);
}

/** Whether `version` is in the range `{ floor, ceiling }`. */
export function inRange(version, { floor, ceiling }) {
  return compareVersions(version, floor) >= 0 && compareVersions(version, ceiling) < 0;
}

/**
 * The peer ranges on `@ctx/core` that the release of `plan` leaves, each with the range that
 * replaces it. `manifests` are the published packages' `{ name, peerDependencies }`; `released`
 * the versions of core ever released (from the `@ctx/core@X` tags). The new range keeps the floor
 * when it was released (or is the oldest released at or above it, or else the new core itself)
 * and ends at the next breaking version after the new core.
 */
export function peerRangeUpdates(plan, manifests, released) {
  const core = plan.releases.find((r) => r.name === CORE && r.type !== 'none');
  if (!core) return [];
  const updates = [];
  for (const manifest of manifests) {
    const spec = manifest.peerDependencies?.[CORE];
    if (!spec || manifest.name === CORE) continue;
    const range = parseCoreRange(spec, core.oldVersion);
    if (inRange(core.newVersion, range)) continue;
    const floor =
      [...released].sort(compareVersions).find((v) => compareVersions(v, range.floor) >= 0 && compareVersions(v, core.newVersion) <= 0) ??
      core.newVersion;
    const to = `${spec.startsWith('workspace:') ? 'workspace:' : ''}>=${floor} <${nextBreaking(core.newVersion)}`;
    updates.push({ name: manifest.name, from: spec, to });
  }
  return updates;
}

/** The changeset that releases the packages of `updates` as patches claiming `coreVersion`. */
export function rangeChangeset(updates, coreVersion) {
  const lines = updates.map((u) => `"${u.name}": patch`).join('\n');
  const range = updates[0].to.replace(/^workspace:/, '');
  // No "tested" here: this text is written before any test runs. The version pull request's CI
  // runs the core-version matrix on exactly these ranges (tooling/core-matrix.mjs).
  return `---\n${lines}\n---\n\nAccepts \`${CORE}\` ${coreVersion}: the peer range is \`${range}\`.\n`;
}

/** Every workspace package of `root`: its directory and manifest. */
function workspacePackages(root) {
  const files = execFileSync('git', ['ls-files', '--', '*package.json'], { cwd: root, encoding: 'utf8' })
    .split('\n')
    .filter((f) => f && !f.includes('node_modules') && f !== 'package.json');
  return files.map((file) => ({
    dir: join(root, dirname(file)),
    file: join(root, file),
    manifest: JSON.parse(readFileSync(join(root, file), 'utf8')),
  }));
}

/** The versions of `@ctx/core` released from `root`'s history (its `@ctx/core@X` tags). */
function releasedCore(root) {
  const tags = execFileSync('git', ['tag', '--list', `${CORE}@*`], { cwd: root, encoding: 'utf8' });
  return tags
    .split('\n')
    .map((t) => t.slice(CORE.length + 1))
    .filter((v) => /^\d+\.\d+\.\d+$/.test(v));
}

/** The release plan of the repository at `root` (`changeset status`; needs the base branch). */
export function releasePlan(root) {
  const dir = mkdtempSync(join(tmpdir(), 'ctx-release-'));
  try {
    const output = join(dir, 'plan.json');
    // Its warnings (a range that no longer names the version in the repo, as widened ones do
    // until `changeset version` writes the new core) are shown only when it fails.
    const result = spawnSync(changesetBin, ['status', '--output', output], { cwd: root, encoding: 'utf8' });
    if (result.status !== 0) throw new Error(`\`changeset status\` failed:\n${result.stdout}${result.stderr}`);
    return JSON.parse(readFileSync(output, 'utf8'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Writes the widened peer ranges of the release of `plan` into the manifests of `root` and files
 * their changeset. Returns the updates.
 */
export function applyPeerRanges(root, plan) {
  const packages = workspacePackages(root).filter((p) => !p.manifest.private);
  const updates = peerRangeUpdates(
    plan,
    packages.map((p) => p.manifest),
    releasedCore(root),
  );
  for (const update of updates) {
    const pkg = packages.find((p) => p.manifest.name === update.name);
    const text = readFileSync(pkg.file, 'utf8');
    writeFileSync(pkg.file, text.replace(`"${CORE}": ${JSON.stringify(update.from)}`, `"${CORE}": ${JSON.stringify(update.to)}`));
  }
  // At the first release of core (none released yet) a package released anyway by a changeset of
  // its own needs no second entry announcing the first range it publishes.
  const firstRelease = releasedCore(root).length === 0;
  const announced = updates.filter((u) => !(firstRelease && plan.releases.some((r) => r.name === u.name && r.type !== 'none')));
  if (announced.length > 0) {
    const core = plan.releases.find((r) => r.name === CORE);
    writeFileSync(
      join(root, '.changeset', `core-peer-range-${core.newVersion.replaceAll('.', '-')}.md`),
      rangeChangeset(announced, core.newVersion),
    );
  }
  return updates;
}

/**
 * A copy of what `changeset` reads of `root` (manifests, `.changeset/`, workspace file, tags) in a
 * new git repository whose `main` is that state, so the release can be planned and versioned
 * there without touching `root`. Returns its path; the caller removes it.
 */
export function stageCopy(root) {
  const dir = mkdtempSync(join(tmpdir(), 'ctx-release-copy-'));
  const files = execFileSync('git', ['ls-files', '--', '*package.json', '.changeset', 'pnpm-workspace.yaml'], {
    cwd: root,
    encoding: 'utf8',
  })
    .split('\n')
    .filter(Boolean);
  for (const file of files) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    cpSync(join(root, file), join(dir, file));
  }
  // Pending changesets not committed yet count too.
  cpSync(join(root, '.changeset'), join(dir, '.changeset'), { recursive: true });
  const git = (...args) => execFileSync('git', args, { cwd: dir, stdio: 'ignore' });
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  git('-c', 'user.name=release', '-c', 'user.email=release@localhost', 'commit', '-q', '-m', 'release copy');
  for (const version of releasedCore(root)) git('tag', `${CORE}@${version}`);
  return dir;
}

/**
 * What the release of the pending changesets will claim, planned in a copy (`root` is untouched):
 * `coreVersion`, the version of core after versioning (the one in `root` when no changeset
 * releases core), `released`, the versions of core already released (tags), and `ranges`, each
 * published package's `@ctx/core` peer range after versioning, by package name (with
 * `workspace:` when the manifest has it), and `versions`, every published package's version after
 * versioning. Throws when `changeset status` fails.
 */
export function plannedCoreRanges(root) {
  const copy = stageCopy(root);
  try {
    applyPeerRanges(copy, releasePlan(copy));
    const plan = releasePlan(copy);
    const packages = workspacePackages(copy).filter((p) => !p.manifest.private);
    const core = packages.find((p) => p.manifest.name === CORE);
    const release = plan.releases.find((r) => r.name === CORE && r.type !== 'none');
    const ranges = new Map();
    for (const { manifest } of packages) {
      const spec = manifest.peerDependencies?.[CORE];
      if (spec && manifest.name !== CORE) ranges.set(manifest.name, spec);
    }
    const versions = new Map(packages.map((p) => [p.manifest.name, p.manifest.version]));
    for (const r of plan.releases) if (r.type !== 'none') versions.set(r.name, r.newVersion);
    return { coreVersion: release?.newVersion ?? core.manifest.version, released: releasedCore(copy), ranges, versions };
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
}

/** Widens the ranges in `root`, then runs `changeset version` there. Returns the updates. */
export function versionPackages(root) {
  const updates = applyPeerRanges(root, releasePlan(root));
  execFileSync(changesetBin, ['version'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  return updates;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (process.argv.includes('--version')) {
    const updates = versionPackages(here);
    for (const u of updates) console.log(`check-release: ${u.name} peers on ${CORE} ${u.to.replace(/^workspace:/, '')} (was ${u.from})`);
    process.exit(0);
  }
  // The check plans the release as `--version` would make it, in a copy.
  let plan;
  const copy = stageCopy(here);
  try {
    applyPeerRanges(copy, releasePlan(copy));
    plan = releasePlan(copy);
  } catch (error) {
    console.error(`check-release: FAIL, no release plan to check: ${error.message}`);
    process.exit(1);
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
  const wrong = accidentalMajors(plan);
  if (wrong.length === 0) {
    const released = plan.releases.filter((r) => r.type !== 'none').map((r) => `${r.name} ${r.newVersion}`);
    console.log(`check-release: OK, none taken to 1.0 unasked: ${released.join(', ') || 'nothing to release'}`);
  } else {
    console.error('check-release: FAIL, these packages would be released as 1.0 or more without a changeset asking for it:');
    for (const r of wrong) console.error(`  ${r.name} ${r.oldVersion} -> ${r.newVersion}`);
    console.error(
      'A peer of theirs other than @ctx/core leaves its range, or a changeset bumps one of them as a major: see .changeset/README.md.',
    );
    process.exit(1);
  }
}
