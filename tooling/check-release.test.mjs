// Tests of tooling/check-release.mjs: on release plans shaped like `changeset status --output`, and
// `--version` run for real in a copy of the repository after a minor of @ctx/core.
// Run: node --test tooling/check-release.test.mjs
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { accidentalMajors, parseCoreRange, peerRangeUpdates, stageCopy, versionPackages } from './check-release.mjs';
import { releasedCopy } from './released-copy.mjs';

const release = (name, oldVersion, newVersion, type) => ({ name, oldVersion, newVersion, type, changesets: [] });

test('a 0.x package taken to 1.0 by a peer it depends on is reported', () => {
  const plan = {
    changesets: [{ id: 'core-feature', summary: '', releases: [{ name: '@ctx/core', type: 'minor' }] }],
    releases: [release('@ctx/core', '0.1.0', '0.2.0', 'minor'), release('@ctx/redis', '0.0.0', '1.0.0', 'major')],
  };
  assert.deepEqual(
    accidentalMajors(plan).map((r) => r.name),
    ['@ctx/redis'],
  );
});

test('a major a changeset asks for, a package already at 1.x, and minors and patches pass', () => {
  const plan = {
    changesets: [{ id: 'redis-1', summary: '', releases: [{ name: '@ctx/redis', type: 'major' }] }],
    releases: [
      release('@ctx/redis', '0.4.0', '1.0.0', 'major'),
      release('@ctx/openai', '1.2.0', '2.0.0', 'major'),
      release('@ctx/core', '0.1.0', '0.1.1', 'patch'),
      release('@ctx/otel', '0.0.0', '0.1.0', 'minor'),
    ],
  };
  assert.deepEqual(accidentalMajors(plan), []);
});

test('the ranges a core release leaves are widened to its next breaking version, from a released floor', () => {
  const plan = { changesets: [], releases: [release('@ctx/core', '0.2.0', '0.3.0', 'minor')] };
  const manifests = [
    { name: '@ctx/core' },
    { name: '@ctx/redis', peerDependencies: { '@ctx/core': 'workspace:>=0.2.0 <0.3.0' } },
    { name: '@ctx/otel', peerDependencies: { '@ctx/core': 'workspace:^' } },
    { name: '@ctx/cosmos', peerDependencies: { '@ctx/core': 'workspace:>=0.2.0 <0.4.0' } },
    { name: 'ctx-postgres', peerDependencies: { '@ctx/core': '^0.1.0' } },
  ];
  assert.deepEqual(peerRangeUpdates(plan, manifests, ['0.2.0']), [
    { name: '@ctx/redis', from: 'workspace:>=0.2.0 <0.3.0', to: 'workspace:>=0.2.0 <0.4.0' },
    { name: '@ctx/otel', from: 'workspace:^', to: 'workspace:>=0.2.0 <0.4.0' },
    { name: 'ctx-postgres', from: '^0.1.0', to: '>=0.2.0 <0.4.0' },
  ]);
  // Nothing released yet: the floor is the new core itself, not a version nobody can install.
  assert.deepEqual(
    peerRangeUpdates({ changesets: [], releases: [release('@ctx/core', '0.1.0', '0.2.0', 'minor')] }, manifests.slice(2, 3), []),
    [{ name: '@ctx/otel', from: 'workspace:^', to: 'workspace:>=0.2.0 <0.3.0' }],
  );
  // A patch of core stays in range: nothing to widen.
  assert.deepEqual(
    peerRangeUpdates({ changesets: [], releases: [release('@ctx/core', '0.2.0', '0.2.1', 'patch')] }, manifests.slice(0, 4), ['0.2.0']),
    [],
  );
});

/** The published packages of `dir` that peer on core, by name: `{ version, range }`. */
function dependents(dir) {
  const out = {};
  for (const name of readdirSync(join(dir, 'packages'))) {
    const file = join(dir, 'packages', name, 'package.json');
    if (!existsSync(file)) continue;
    const manifest = JSON.parse(readFileSync(file, 'utf8'));
    if (manifest.private) continue;
    out[manifest.name] = { version: manifest.version, range: manifest.peerDependencies?.['@ctx/core'] };
  }
  return out;
}

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const coreMinor = `---\n'@ctx/core': minor\n---\n\nA breaking change of core.\n`;

test('`--version` after a core minor: every dependent is a patch that claims the new core, none goes to 1.0', () => {
  const dir = releasedCopy(root);
  try {
    writeFileSync(join(dir, '.changeset', 'core-break.md'), coreMinor);

    versionPackages(dir);

    const after = dependents(dir);
    assert.equal(after['@ctx/core'].version, '0.3.0');
    const others = Object.entries(after).filter(([name]) => name !== '@ctx/core');
    assert.ok(others.length >= 9, `expected the nine dependents, found ${others.map(([n]) => n)}`);
    for (const [name, { version, range }] of others) {
      assert.equal(version, '0.1.1', `${name} ${version}`);
      assert.equal(range, 'workspace:>=0.2.0 <0.4.0', name);
    }
    const changelog = readFileSync(join(dir, 'packages', 'redis', 'CHANGELOG.md'), 'utf8');
    assert.match(changelog, /## 0\.1\.1[\s\S]*Accepts `@ctx\/core` 0\.3\.0: the peer range is `>=0\.2\.0 <0\.4\.0`\.\n/);
    // Written before any test ran: it claims no test.
    assert.doesNotMatch(changelog, /tested/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('`--version` of the pending first release plus a core minor: nothing goes to 1.0, every range holds the new core', () => {
  const dir = stageCopy(root);
  try {
    writeFileSync(join(dir, '.changeset', 'zz-core-break.md'), coreMinor);
    versionPackages(dir);
    const after = dependents(dir);
    const core = after['@ctx/core'].version;
    assert.equal(core.split('.')[0], '0');
    for (const [name, { version, range }] of Object.entries(after)) {
      assert.equal(version.split('.')[0], '0', `${name} went to ${version}`);
      if (name === '@ctx/core') continue;
      const { floor, ceiling } = parseCoreRange(range, core);
      assert.equal(floor, core, `${name}: nothing older than ${core} was released, so the range starts there (${range})`);
      assert.equal(ceiling, `0.${Number(core.split('.')[1]) + 1}.0`, name);
      // The first release is one entry per package: no second one announcing the first range.
      const changelog = readFileSync(join(dir, 'packages', name.replace('@ctx/', ''), 'CHANGELOG.md'), 'utf8');
      assert.equal(changelog.match(/^## /gm)?.length, 1, `${name}: one version in its CHANGELOG`);
      assert.doesNotMatch(changelog, /### Patch Changes|Accepts `@ctx\/core`/, name);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
