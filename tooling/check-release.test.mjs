// Tests of tooling/check-release.mjs on release plans shaped like `changeset status --output`.
// Run: node --test tooling/check-release.test.mjs
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { accidentalMajors } from './check-release.mjs';

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
