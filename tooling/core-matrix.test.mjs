// Tests of tooling/core-matrix.mjs's plan: which cores each package is tested beside, from the
// ranges the release of the pending changesets will claim (planned for real, in a copy of the
// repository, for a breaking change of core whose floors are raised in the same change).
// Run: node --test tooling/core-matrix.test.mjs
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { plannedCoreRanges } from './check-release.mjs';
import { matrixPlan } from './core-matrix.mjs';
import { releasedCopy } from './released-copy.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

test('each range is tested at its floor (a release tag, or the core this release makes) and at the core this release makes', () => {
  const ranges = new Map([
    ['@ctx/redis', 'workspace:>=0.2.0 <0.4.0'],
    ['@ctx/openai', 'workspace:>=0.3.0 <0.4.0'],
  ]);
  assert.deepEqual(matrixPlan(ranges, '0.3.0', ['0.2.0']), [
    { name: '@ctx/redis', range: '>=0.2.0 <0.4.0', version: '0.2.0', source: 'tag' },
    { name: '@ctx/redis', range: '>=0.2.0 <0.4.0', version: '0.3.0', source: 'workspace' },
    { name: '@ctx/openai', range: '>=0.3.0 <0.4.0', version: '0.3.0', source: 'workspace' },
  ]);
});

test('a range that leaves the core this release makes, or starts at a core no one can install, fails without a test', () => {
  const [leaves] = matrixPlan(new Map([['@ctx/otel', '>=0.1.0 <0.2.0']]), '0.2.0', ['0.1.0']);
  assert.equal(leaves.source, undefined);
  assert.match(leaves.problem, /@ctx\/otel would claim @ctx\/core >=0\.1\.0 <0\.2\.0, which leaves 0\.2\.0/);
  const [never] = matrixPlan(new Map([['@ctx/otel', '>=0.2.5 <0.4.0']]), '0.3.0', ['0.2.0']);
  assert.equal(never.source, undefined);
  assert.match(never.problem, /0\.2\.5 was never released \(no tag @ctx\/core@0\.2\.5\) and this release makes 0\.3\.0/);
});

test('a breaking change of core with the floors it forces, in one change: the plan is what versioning will claim', () => {
  const dir = releasedCopy(root);
  try {
    // The change: core breaks an API openai uses; openai moves to it, raising its floor by hand.
    writeFileSync(join(dir, '.changeset', 'core-break.md'), `---\n'@ctx/core': minor\n---\n\n**Breaking:** a rename.\n`);
    writeFileSync(join(dir, '.changeset', 'openai-floor.md'), `---\n'@ctx/openai': minor\n---\n\nNeeds @ctx/core 0.3.0.\n`);
    const openai = join(dir, 'packages', 'openai', 'package.json');
    const manifest = JSON.parse(readFileSync(openai, 'utf8'));
    manifest.peerDependencies['@ctx/core'] = 'workspace:>=0.3.0 <0.4.0';
    writeFileSync(openai, `${JSON.stringify(manifest, null, 2)}\n`);

    const planned = plannedCoreRanges(dir);
    assert.equal(planned.coreVersion, '0.3.0');
    assert.deepEqual(planned.released, ['0.2.0']);
    assert.equal(planned.ranges.get('@ctx/openai'), 'workspace:>=0.3.0 <0.4.0');
    assert.equal(planned.ranges.get('@ctx/redis'), 'workspace:>=0.2.0 <0.4.0');
    const rows = matrixPlan(planned.ranges, planned.coreVersion, planned.released);
    assert.deepEqual(
      rows.filter((r) => r.problem),
      [],
    );
    assert.deepEqual(
      rows.filter((r) => r.name === '@ctx/openai').map((r) => `${r.version} ${r.source}`),
      ['0.3.0 workspace'],
    );
    assert.deepEqual(
      rows.filter((r) => r.name === '@ctx/redis').map((r) => `${r.version} ${r.source}`),
      ['0.2.0 tag', '0.3.0 workspace'],
    );
    // The copy is left as it was: planning versions nothing.
    assert.equal(JSON.parse(readFileSync(join(dir, 'packages', 'core', 'package.json'), 'utf8')).version, '0.2.0');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
