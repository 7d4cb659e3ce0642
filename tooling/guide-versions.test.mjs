// Tests of tooling/guide-versions.mjs: the backend guide in packages/provider-tests/README.md shows
// the real versions, and the rewrite the version step runs moves every one of them.
// Run: node --test tooling/guide-versions.test.mjs
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { guideProblems, guideVersions, realVersions, rewriteGuide } from './guide-versions.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const guide = readFileSync(join(root, 'packages', 'provider-tests', 'README.md'), 'utf8');

test('the guide shows the versions of core and provider-tests that are (or are about to be) released', () => {
  assert.deepEqual(guideProblems(guide, realVersions()), []);
});

test('a guide with a caret range, or a version that is not the release, is reported', () => {
  const versions = guideVersions('0.1.0', '0.1.0');
  const caret = guide.replace(/"@ctx\/core": ">=0\.1\.0 <0\.2\.0"/g, '"@ctx/core": "^0.1.0"');
  assert.match(guideProblems(caret, versions).join('\n'), /does not peer on "@ctx\/core": ">=0\.1\.0 <0\.2\.0"/);
  const stale = `${guide}\npnpm add -D @ctx/core@0.0.7\n`;
  assert.match(guideProblems(stale, versions).join('\n'), /shows 0\.0\.7, which is none of/);
});

test('the rewrite after a minor of core moves every version the guide shows, and only those', () => {
  const now = realVersions();
  const next = guideVersions(`0.${Number(now.floor.split('.')[1]) + 1}.0`, `${now.tests.split('.').slice(0, 2).join('.')}.7`);
  const rewritten = rewriteGuide(guide, next);
  assert.deepEqual(guideProblems(rewritten, next), []);
  assert.ok(rewritten.includes(`"@ctx/core": ">=${next.floor} <${next.ceiling}"`));
  assert.ok(rewritten.includes(`"@ctx/provider-tests": "^${next.tests}"`));
  assert.ok(rewritten.includes(`ctx-core-${next.core}.tgz`));
  // Nothing but versions changed.
  const strip = (text) => text.replace(/0\.\d+\.\d+/g, 'V');
  assert.equal(strip(rewritten), strip(guide));
});
