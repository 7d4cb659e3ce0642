// A copy of the repository's release state as it will be after a first release, for the tests of
// the release tooling (check-release.test.mjs, core-matrix.test.mjs).
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stageCopy } from './check-release.mjs';

/**
 * `stageCopy(root)`, then the state after a first release: no pending changeset, core at 0.2.0
 * (committed and tagged `@ctx/core@0.2.0`), every other published package at 0.1.0 peering on
 * `>=0.2.0 <0.3.0`. Returns the copy's path; the caller removes it.
 */
export function releasedCopy(root) {
  const dir = stageCopy(root);
  for (const file of readdirSync(join(dir, '.changeset')).filter((f) => f.endsWith('.md') && f !== 'README.md')) {
    rmSync(join(dir, '.changeset', file));
  }
  for (const name of readdirSync(join(dir, 'packages'))) {
    const file = join(dir, 'packages', name, 'package.json');
    const manifest = JSON.parse(readFileSync(file, 'utf8'));
    if (manifest.private) continue;
    manifest.version = manifest.name === '@ctx/core' ? '0.2.0' : '0.1.0';
    if (manifest.peerDependencies?.['@ctx/core']) manifest.peerDependencies['@ctx/core'] = 'workspace:>=0.2.0 <0.3.0';
    writeFileSync(file, `${JSON.stringify(manifest, null, 2)}\n`);
  }
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@localhost', 'commit', '-qam', 'released'], { cwd: dir });
  execFileSync('git', ['tag', '@ctx/core@0.2.0'], { cwd: dir });
  return dir;
}
