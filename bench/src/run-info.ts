/**
 * What a benchmark's tables were measured on: the commit of the checkout (with `+dirty` when the
 * working tree differs from it), when `@ctx/core`'s build was made (the benchmarks import its
 * `dist`), and the machine's load average, printed beside the tables so a figure can be traced.
 */
import { execFileSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';

const REPO_DIR = fileURLToPath(new URL('../..', import.meta.url));

function git(args: string[]): string {
  return execFileSync('git', args, { cwd: REPO_DIR, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
}

/** `abc1234`, `abc1234+dirty` (tracked or untracked changes), or `unknown` outside a git checkout. */
export function commitLabel(): string {
  try {
    const commit = git(['rev-parse', '--short', 'HEAD']);
    return git(['status', '--porcelain']) === '' ? commit : `${commit}+dirty`;
  } catch {
    return 'unknown (not a git checkout)';
  }
}

/** When the `@ctx/core` build the benchmarks import was written (ISO time), or `unknown`. */
export function coreBuildTime(): string {
  try {
    const entry = createRequire(import.meta.url).resolve('@ctx/core');
    return statSync(entry).mtime.toISOString();
  } catch {
    return 'unknown';
  }
}

/** The 1, 5 and 15 minute load averages, e.g. `1.52 / 1.80 / 2.01`. */
export function loadAverage(): string {
  return loadavg()
    .map((l) => l.toFixed(2))
    .join(' / ');
}

/** One line naming the commit, the core build, Node, the platform, the cores and the load average now. */
export function runInfo(): string {
  return `commit ${commitLabel()}, @ctx/core build of ${coreBuildTime()}, Node ${process.version}, ${process.platform}/${process.arch}, ${cpus().length} cores, load average ${loadAverage()} (1/5/15 min)`;
}
