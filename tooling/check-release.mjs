#!/usr/bin/env node
// Checks the release the pending changesets make (`changeset status`) and exits 1 when a package
// still below 1.0 would be released as 1.0 or more without a changeset asking for it. That
// happens when a minor of @ctx/core puts the packages that take it as a peer (caret range) out of
// range: changesets then releases each of them as a major. Before 1.0, additions are patches
// (see .changeset/README.md). Usage: node tooling/check-release.mjs
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The releases of `plan` (`changeset status --output` JSON) that reach 1.0 although no changeset bumps them as a major. */
export function accidentalMajors(plan) {
  const asked = new Set(plan.changesets.flatMap((changeset) => changeset.releases.filter((r) => r.type === 'major').map((r) => r.name)));
  const major = (version) => Number(version.split('.')[0]);
  return plan.releases.filter((r) => major(r.oldVersion) === 0 && major(r.newVersion) >= 1 && !asked.has(r.name));
}

/** The release plan of the repository at `root`. */
function releasePlan(root) {
  const dir = mkdtempSync(join(tmpdir(), 'ctx-release-'));
  try {
    const output = join(dir, 'plan.json');
    const bin = join(root, 'node_modules', '.bin', process.platform === 'win32' ? 'changeset.cmd' : 'changeset');
    execFileSync(bin, ['status', '--output', output], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
    return JSON.parse(readFileSync(output, 'utf8'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
  let plan;
  try {
    plan = releasePlan(root);
  } catch {
    console.error('check-release: FAIL, `changeset status` failed (its message is above): no release plan to check.');
    process.exit(1);
  }
  const wrong = accidentalMajors(plan);
  if (wrong.length === 0) {
    const released = plan.releases.filter((r) => r.type !== 'none').map((r) => `${r.name} ${r.newVersion}`);
    console.log(`check-release: OK, none taken to 1.0 unasked: ${released.join(', ') || 'nothing to release'}`);
  } else {
    console.error('check-release: FAIL, these packages would be released as 1.0 or more without a changeset asking for it:');
    for (const r of wrong) console.error(`  ${r.name} ${r.oldVersion} -> ${r.newVersion}`);
    console.error(
      'A minor of a package they take as a peer (most often @ctx/core) puts them out of range. Before 1.0 only a breaking change is a minor: make the change a patch, or bump these packages as majors on purpose.',
    );
    process.exit(1);
  }
}
