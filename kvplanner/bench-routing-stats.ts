// `bench routing`'s figures over one policy's timed decisions: quantiles, each branch's p50/p99
// with its count, and where the slowest 1 % of decisions fall (which branch, and how many among
// the first decisions after the warm-up: a tail bunched there is the warm-up's, not the policy's).
// O(d log d) for d decisions, after the timed loop.

/** Timed decisions counted as "right after the warm-up" in the slowest-1 % line. */
export const EARLY_DECISIONS = 1000;

export interface BranchFigures {
  share: number;
  /** timed decisions of this branch: with fewer than ~100 its p99 is about its maximum */
  timed: number;
  p50: number;
  p99: number;
  undisturbedP99: number;
  cpuP99: number;
}

/** The decisions slower than the policy's p99: how many, per branch, and how many were among the
 *  first EARLY_DECISIONS. */
export interface SlowestFigures {
  over: number;
  byBranch: Record<string, number>;
  early: number;
}

export function quantile(sorted: Float64Array, q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/**
 * Per branch (decisions with an empty branch chose nothing): share, count, p50/p99 wall, p99 over
 * the decisions without a context switch (`quiet`), p99 CPU.
 */
export function branchFigures(
  times: Float64Array,
  cpuTimes: Float64Array,
  quiet: Uint8Array,
  branchOf: readonly string[],
): Record<string, BranchFigures> {
  const branches = new Map<string, number>();
  for (const b of branchOf) if (b) branches.set(b, (branches.get(b) ?? 0) + 1);
  return Object.fromEntries(
    [...branches].map(([b, k]) => {
      const t = Float64Array.from(times.filter((_, i) => branchOf[i] === b)).sort();
      // a rare branch's p99 is its few slowest decisions: one the OS switched away from decides
      // it under load, so the decisions without a context switch and CPU time are shown too
      const q = Float64Array.from(times.filter((_, i) => branchOf[i] === b && quiet[i] === 1)).sort();
      const c = Float64Array.from(cpuTimes.filter((_, i) => branchOf[i] === b)).sort();
      return [
        b,
        {
          share: k / times.length,
          timed: t.length,
          p50: quantile(t, 0.5),
          p99: quantile(t, 0.99),
          undisturbedP99: q.length ? quantile(q, 0.99) : Number.NaN,
          cpuP99: quantile(c, 0.99),
        },
      ];
    }),
  );
}

/** Where the decisions slower than `p99` fall (see SlowestFigures). */
export function slowestFigures(times: Float64Array, branchOf: readonly string[], p99: number): SlowestFigures {
  const out: SlowestFigures = { over: 0, byBranch: {}, early: 0 };
  for (let i = 0; i < times.length; i++) {
    if (!(times[i] > p99)) continue;
    out.over++;
    const b = branchOf[i] || '(none)';
    out.byBranch[b] = (out.byBranch[b] ?? 0) + 1;
    if (i < EARLY_DECISIONS) out.early++;
  }
  return out;
}
