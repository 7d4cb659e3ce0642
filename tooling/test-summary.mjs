// Sums the vitest JSON reports every package wrote (test-results.json) into one closing line, with
// three kinds of passing test counted apart: independent tests; seeded-fault checks (tests tagged
// `seeded-fault`: a suite rerun against a backend broken on purpose, which pass when the suite still
// behaves for the tests the fault does not touch); and expected failures (`it.fails`, marked
// `meta.expectedFailure` by tooling/vitest-test-kinds.ts: they pass when their body fails).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const total = { independent: 0, seeded: 0, expected: 0, failed: 0, skipped: 0 };
const lines = [];
for (const group of ['packages', 'examples', 'bench', 'tooling']) {
  const dir = join(root, group);
  if (!existsSync(dir)) continue;
  const candidates = existsSync(join(dir, 'package.json')) ? [dir] : readdirSync(dir).map((name) => join(dir, name));
  for (const pkg of candidates) {
    const file = join(pkg, 'test-results.json');
    if (!existsSync(file)) continue;
    const report = JSON.parse(readFileSync(file, 'utf8'));
    const counts = { independent: 0, seeded: 0, expected: 0, failed: 0, skipped: 0 };
    for (const result of report.testResults) {
      for (const test of result.assertionResults) counts[kind(test)]++;
    }
    // A file that failed outside its tests (an import error, a failing beforeAll) counts as one failure:
    // its tests are reported skipped, or not at all.
    counts.failed += report.testResults.filter(
      (r) => r.status === 'failed' && !r.assertionResults.some((a) => a.status === 'failed'),
    ).length;
    for (const key of Object.keys(total)) total[key] += counts[key];
    lines.push(`${pkg.slice(root.length)}: ${describe(counts)} (of ${report.numTotalTests})`);
  }
}
console.log(lines.join('\n'));
console.log(`Tests: ${describe(total, true)}`);
if (total.independent === 0 || total.failed > 0) process.exit(1);

/** Which count one test of a report goes to. */
function kind(test) {
  if (test.status === 'failed') return 'failed';
  if (test.status !== 'passed') return 'skipped';
  if (test.meta?.expectedFailure) return 'expected';
  if (test.tags?.includes('seeded-fault')) return 'seeded';
  return 'independent';
}

/** One package's (or the total's) counts as words; a package leaves out the kinds it has none of. */
function describe(c, all = false) {
  const parts = [
    [c.independent, 'independent passed'],
    [c.seeded, 'seeded-fault checks passed'],
    [c.expected, 'expected failures (it.fails) failed as expected'],
    [c.failed, 'failed'],
    [c.skipped, 'skipped'],
  ];
  return parts
    .filter(([n], i) => all || i === 0 || n > 0)
    .map(([n, words]) => `${n} ${words}`)
    .join(', ');
}
