// Sums the vitest JSON reports every package wrote (test-results.json) into one closing line.
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
let passed = 0;
let failed = 0;
let skipped = 0;
const packages = [];
for (const group of ['packages', 'examples', 'bench', 'tooling']) {
  const dir = join(root, group);
  if (!existsSync(dir)) continue;
  const candidates = existsSync(join(dir, 'package.json')) ? [dir] : readdirSync(dir).map((name) => join(dir, name));
  for (const pkg of candidates) {
    const file = join(pkg, 'test-results.json');
    if (!existsSync(file)) continue;
    const report = JSON.parse(readFileSync(file, 'utf8'));
    passed += report.numPassedTests;
    failed += report.numFailedTests;
    skipped += report.numPendingTests + (report.numTodoTests ?? 0);
    packages.push(`${pkg.slice(root.length)}: ${report.numPassedTests}/${report.numTotalTests}`);
  }
}
console.log(packages.join('\n'));
console.log(`Tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
if (passed === 0 || failed > 0) process.exit(1);
