/**
 * A small timing loop on `process.hrtime.bigint()`: warm-up, then a bounded number of timed
 * iterations. Each iteration may prepare its input in an untimed `setup` step, so every timed call
 * sees the same starting state (for example a session holding exactly N messages).
 */

/** The figures of one measured case. */
export interface Measurement {
  name: string;
  iterations: number;
  /** Mean wall time of one timed call, in milliseconds. */
  meanMs: number;
  /** Median wall time of one timed call, in milliseconds. */
  p50Ms: number;
  /** 1000 / meanMs. */
  opsPerSec: number;
}

/** Bounds of one measured case. */
export interface MeasureOptions {
  /** Untimed calls before measuring (JIT warm-up), at most. Default 50. */
  warmup?: number;
  /** Warm-up stops early once it has taken this long (after at least 2 calls), in ms. Default 300. */
  warmupBudgetMs?: number;
  /** Timed calls at least (the budget does not stop it before this). Default 10. */
  minIterations?: number;
  /** Timed calls at most. Default 300. */
  maxIterations?: number;
  /** Wall-clock budget for the timed phase including untimed setup, in ms. Default 1500. */
  budgetMs?: number;
}

/**
 * Measures `fn(setup())`. Only `fn` is timed; `setup` runs before every call (warm-up included).
 */
export async function measure<T>(
  name: string,
  setup: () => T | Promise<T>,
  fn: (input: T) => Promise<unknown>,
  options: MeasureOptions = {},
): Promise<Measurement> {
  const warmup = options.warmup ?? 50;
  const warmupBudgetNs = BigInt(Math.round((options.warmupBudgetMs ?? 300) * 1e6));
  const minIterations = options.minIterations ?? 10;
  const maxIterations = options.maxIterations ?? 300;
  const budgetNs = BigInt(Math.round((options.budgetMs ?? 1500) * 1e6));

  const warmStart = process.hrtime.bigint();
  for (let i = 0; i < warmup; i++) {
    if (i >= 2 && process.hrtime.bigint() - warmStart > warmupBudgetNs) break;
    await fn(await setup());
  }

  const samples: number[] = [];
  const start = process.hrtime.bigint();
  while (samples.length < maxIterations) {
    if (samples.length >= minIterations && process.hrtime.bigint() - start > budgetNs) break;
    const input = await setup();
    const t0 = process.hrtime.bigint();
    await fn(input);
    const t1 = process.hrtime.bigint();
    samples.push(Number(t1 - t0) / 1e6);
  }

  const sorted = [...samples].sort((a, b) => a - b);
  const meanMs = samples.reduce((a, b) => a + b, 0) / samples.length;
  const p50Ms = sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
  return { name, iterations: samples.length, meanMs, p50Ms, opsPerSec: 1000 / meanMs };
}

/** Formats a number of milliseconds with 3 significant decimals for small values. */
export function fmtMs(ms: number): string {
  if (!Number.isFinite(ms)) return 'n/a';
  if (ms < 1) return ms.toFixed(4);
  if (ms < 100) return ms.toFixed(3);
  return ms.toFixed(1);
}

/** Formats operations per second with a thousands separator. */
export function fmtOps(ops: number): string {
  if (!Number.isFinite(ops)) return 'n/a';
  return Math.round(ops).toLocaleString('en-US');
}

/** Formats a ratio like `12.3x`. */
export function fmtRatio(r: number): string {
  if (!Number.isFinite(r)) return 'n/a';
  if (r >= 100) return `${r.toFixed(0)}x`;
  if (r >= 10) return `${r.toFixed(1)}x`;
  return `${r.toFixed(2)}x`;
}

/** Prints a plain-text table with right-aligned cells after the first column. */
export function printTable(headers: string[], rows: string[][]): void {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
  console.log(line(headers));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) console.log(line(r));
}

/** Lets the garbage collector settle between cases when node runs with --expose-gc. */
export function settle(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc) gc();
}
