#!/usr/bin/env node
// The versions packages/provider-tests/README.md's backend guide shows, derived from the real ones:
// `@ctx/core`'s and `@ctx/provider-tests`' versions in their manifests, or, before their first
// release (0.0.0), the versions the pending changesets will release. From core's version X.Y.Z the
// guide shows the range `>=X.Y.0 <X.(Y+1).0`, the widened `<X.(Y+2).0`, and X.Y.Z in tarball names;
// from provider-tests' version P, `^P`.
//
//   node tooling/guide-versions.mjs           check: fails when the guide shows other versions
//   node tooling/guide-versions.mjs --write   rewrite them (`npm run version-packages` does, after versioning)
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { nextBreaking, plannedCoreRanges } from './check-release.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const GUIDE = join(root, 'packages', 'provider-tests', 'README.md');
const VERSION = /(?<![\d.])0\.\d+\.\d+(?![\d.])/g;
const CORE_RANGE = /"@ctx\/core": ">=(0\.\d+\.\d+) <(0\.\d+\.\d+)"/;
const TESTS_RANGE = /"@ctx\/provider-tests": "\^(0\.\d+\.\d+)"/;
const TARBALL = /ctx-core-(0\.\d+\.\d+)\.tgz/g;

/** What the guide shows for core `core` and provider-tests `tests`: `{ floor, ceiling, widened, core, tests }`. */
export function guideVersions(core, tests) {
  const [major, minor] = core.split('.');
  const floor = `${major}.${minor}.0`;
  const ceiling = nextBreaking(floor);
  return { floor, ceiling, widened: nextBreaking(ceiling), core, tests };
}

/** What is wrong with `text` for `versions` (`guideVersions`): an empty list when nothing. */
export function guideProblems(text, versions) {
  const problems = [];
  const range = `"@ctx/core": ">=${versions.floor} <${versions.ceiling}"`;
  if (!text.includes(range)) problems.push(`the package.json example does not peer on ${range}`);
  const tests = `"@ctx/provider-tests": "^${versions.tests}"`;
  if (!text.includes(tests)) problems.push(`the package.json example does not name ${tests}`);
  const known = new Set([versions.floor, versions.ceiling, versions.widened, versions.core, versions.tests]);
  for (const [i, line] of text.split('\n').entries()) {
    for (const [version] of line.matchAll(VERSION)) {
      if (!known.has(version)) problems.push(`line ${i + 1} shows ${version}, which is none of ${[...known].join(', ')}: ${line.trim()}`);
    }
  }
  return problems;
}

/** `text` with the versions it shows for its current core and provider-tests moved to `versions`. */
export function rewriteGuide(text, versions) {
  const range = CORE_RANGE.exec(text);
  if (!range) throw new Error(`guide-versions: ${GUIDE} has no "@ctx/core": ">=X <Y" to read its versions from`);
  const old = guideVersions(range[1], '0.0.0');
  const moves = new Map([
    [old.floor, versions.floor],
    [old.ceiling, versions.ceiling],
    [old.widened, versions.widened],
  ]);
  return text
    .replace(TESTS_RANGE, () => `"@ctx/provider-tests": "^\0tests\0"`)
    .replace(TARBALL, () => 'ctx-core-\0core\0.tgz')
    .replace(VERSION, (version) => moves.get(version) ?? version)
    .replaceAll('\0tests\0', versions.tests)
    .replaceAll('\0core\0', versions.core);
}

/** The real versions of core and provider-tests: their manifests', or the first release's. */
export function realVersions(dir = root) {
  const read = (name) => JSON.parse(readFileSync(join(dir, 'packages', name, 'package.json'), 'utf8')).version;
  let core = read('core');
  let tests = read('provider-tests');
  if (core === '0.0.0' || tests === '0.0.0') {
    const planned = plannedCoreRanges(dir);
    if (core === '0.0.0') core = planned.versions.get('@ctx/core');
    if (tests === '0.0.0') tests = planned.versions.get('@ctx/provider-tests');
  }
  return guideVersions(core, tests);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const versions = realVersions();
  const text = readFileSync(GUIDE, 'utf8');
  if (process.argv.includes('--write')) {
    const next = rewriteGuide(text, versions);
    if (next !== text) writeFileSync(GUIDE, next);
  }
  const problems = guideProblems(readFileSync(GUIDE, 'utf8'), versions);
  if (problems.length > 0) {
    console.error(
      `guide-versions: FAIL, packages/provider-tests/README.md does not show core ${versions.core} and provider-tests ${versions.tests}:`,
    );
    for (const p of problems) console.error(`  - ${p}`);
    console.error('Run `node tooling/guide-versions.mjs --write`.');
    process.exit(1);
  }
  console.log(
    `guide-versions: OK, the guide shows core ${versions.core} (>=${versions.floor} <${versions.ceiling}) and provider-tests ${versions.tests}`,
  );
}
