/**
 * Client CPU time of several ways to make the same call, measured the way `openai-overhead.ts`
 * does: one process, the sides alternating call by call in a new shuffled order every round (so
 * no side always follows the same one and pays for its garbage), so drift, GC and the other work
 * on a shared machine hit every side alike. Each call's cost is
 * `process.cpuUsage()` (user + system) around it, not wall time, so time the process spends
 * waiting for a core it shares is not counted.
 */
import { fmtRatio, settle } from './timing.js';

/** One way to make the call. `setup` runs untimed before every call (warm-up included). */
export interface CpuSide {
  name: string;
  call: () => Promise<unknown>;
  setup?: () => unknown;
}

/** The CPU microseconds of one side's calls. */
export interface CpuStats {
  name: string;
  calls: number;
  medianUs: number;
  p90Us: number;
  /** Every timed call's µs, in round order: round i of every side ran back to back. */
  samples: readonly number[];
}

/** Bounds of one comparison. */
export interface CpuCompareOptions {
  /** Untimed rounds first (JIT warm-up). Default 100. */
  warmup?: number;
  /** Timed rounds (one call of each side per round). Default 400. */
  calls?: number;
}

/** CPU microseconds (user + system) of one call. */
async function cpuUs(call: () => Promise<unknown>): Promise<number> {
  const before = process.cpuUsage();
  await call();
  const used = process.cpuUsage(before);
  return used.user + used.system;
}

function quantile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? Number.NaN;
}

/** Runs the sides in turn, call by call, in a shuffled order each round (seeded, so runs repeat it), and returns each side's median and p90 CPU time. */
export async function compareCpu(sides: readonly CpuSide[], options: CpuCompareOptions = {}): Promise<CpuStats[]> {
  const warmup = options.warmup ?? 100;
  const calls = options.calls ?? 400;
  const samples = sides.map(() => [] as number[]);
  settle();
  const order = sides.map((_, i) => i);
  let seed = 0x2545f491;
  const random = () => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    return seed / 2 ** 32;
  };
  for (let i = 0; i < warmup + calls; i++) {
    for (let k = order.length - 1; k > 0; k--) {
      const j = Math.floor(random() * (k + 1));
      [order[k], order[j]] = [order[j]!, order[k]!];
    }
    for (const s of order) {
      const side = sides[s]!;
      await side.setup?.();
      const us = await cpuUs(side.call);
      if (i >= warmup) samples[s]!.push(us);
    }
  }
  return sides.map((side, i) => {
    const sorted = [...samples[i]!].sort((a, b) => a - b);
    return { name: side.name, calls: sorted.length, medianUs: quantile(sorted, 0.5), p90Us: quantile(sorted, 0.9), samples: samples[i]! };
  });
}

/**
 * The median over rounds of `stats`'s call divided by `base`'s call of the same round. The two
 * calls of a round ran back to back, so a change of load between rounds cancels out: steadier
 * than the ratio of the two medians when the machine is shared.
 */
export function pairedRatio(stats: CpuStats, base: CpuStats): number {
  const ratios = stats.samples.map((us, i) => us / base.samples[i]!).sort((a, b) => a - b);
  return quantile(ratios, 0.5);
}

/** Table cells for `stats` against `base`: median µs, p90 µs, added µs (median), ratio of medians, ratio of p90s, paired ratio. */
export function cpuCells(stats: CpuStats, base: CpuStats): string[] {
  return [
    stats.medianUs.toFixed(0),
    stats.p90Us.toFixed(0),
    stats === base ? '' : (stats.medianUs - base.medianUs).toFixed(0),
    fmtRatio(stats.medianUs / base.medianUs),
    fmtRatio(stats.p90Us / base.p90Us),
    fmtRatio(pairedRatio(stats, base)),
  ];
}

/** The headers that go with `cpuCells`. */
export const CPU_HEADERS = ['median µs', 'p90 µs', 'added µs', 'ratio (median)', 'ratio (p90)', 'ratio (paired)'];
