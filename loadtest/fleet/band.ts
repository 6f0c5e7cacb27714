// `bench fleet --rate-band LO:HI:STEP`: every policy at each rate of a band around a target load,
// summarised per policy over the band. One overloaded run is chaotic: on the Mooncake conversation
// half, ctxgate's p90 ÷ the best baseline's moved between 0.98 and 1.02 from one rate to the next
// around ×2 and between 0.71 and 1.06 around ×1 (8 workers), more than most routing changes move
// it, so one rate cannot tell a better policy from a luckier run; the band's geometric mean can.
// Per policy: geometric mean and worst of its p90 TTFT ÷ the best p90 among the other policies
// (round_robin not counted as a rival: it is the reference), geometric mean ÷ round_robin's, and
// the mean hit-rate gap to the best other policy's, in points. Cost: O(rates · policies²).
import type { FleetRunSummary } from './summary.ts';

/** Most rates one band may hold (each runs every policy over the whole trace). */
export const MAX_BAND_RATES = 101;

export interface BandRow {
  policy: string;
  rates: number;
  /** geometric mean over the band of p90 TTFT ÷ the best other policy's (null: no rival ran) */
  p90_vs_best_geomean: number | null;
  p90_vs_best_worst: number | null;
  /** geometric mean of p90 TTFT ÷ round_robin's (null: round_robin did not run) */
  p90_vs_round_robin_geomean: number | null;
  /** mean of (hit rate − the best other policy's), percentage points (null: no rival ran) */
  hit_gap_pt_mean: number | null;
}

/** `LO:HI:STEP` (inclusive), or a comma list of rates; every rate > 0. */
export function parseRateBand(spec: string): number[] {
  const out: number[] = [];
  for (const part of spec.split(',')) {
    const p = part.trim().split(':');
    const nums = p.map(Number);
    if (p.length === 1 && nums[0] > 0) out.push(nums[0]);
    else if (
      p.length === 3 &&
      nums.every((x) => Number.isFinite(x)) &&
      nums[0] > 0 &&
      nums[1] >= nums[0] &&
      nums[2] > 0
    ) {
      const steps = Math.floor((nums[1] - nums[0]) / nums[2] + 1e-9);
      if (steps + 1 > MAX_BAND_RATES) throw new Error(`--rate-band ${spec}: more than ${MAX_BAND_RATES} rates`);
      // rounded to the step's decimals, so 1.8 + 5 × 0.02 prints as 1.9
      const dec = Math.min(9, (p[2].split('.')[1] ?? '').length + (p[0].split('.')[1] ?? '').length);
      for (let i = 0; i <= steps; i++) out.push(Number((nums[0] + i * nums[2]).toFixed(dec)));
    } else throw new Error(`--rate-band: expected LO:HI:STEP or a comma list of rates > 0, got '${part}'`);
  }
  if (out.length > MAX_BAND_RATES) throw new Error(`--rate-band ${spec}: more than ${MAX_BAND_RATES} rates`);
  return out;
}

/** One row per policy (in the order of the first rate's runs) over `perRate` (each rate's runs). */
export function bandSummary(perRate: readonly (readonly FleetRunSummary[])[]): BandRow[] {
  const policies = perRate[0]?.map((r) => r.config.policy) ?? [];
  return policies.map((policy) => {
    let logBest = 0;
    let worst = 0;
    let rivals = 0;
    let logRr = 0;
    let rrRates = 0;
    let gap = 0;
    for (const runs of perRate) {
      const me = runs.find((r) => r.config.policy === policy);
      if (!me) continue;
      const others = runs.filter((r) => r.config.policy !== policy && r.config.policy !== 'round_robin');
      if (others.length > 0) {
        const ratio = me.ttft_ms.p90 / Math.min(...others.map((r) => r.ttft_ms.p90));
        logBest += Math.log(ratio);
        worst = Math.max(worst, ratio);
        gap += 100 * (me.hit_rate - Math.max(...others.map((r) => r.hit_rate)));
        rivals++;
      }
      const rr = runs.find((r) => r.config.policy === 'round_robin');
      if (rr && policy !== 'round_robin') {
        logRr += Math.log(me.ttft_ms.p90 / rr.ttft_ms.p90);
        rrRates++;
      }
    }
    return {
      policy,
      rates: perRate.length,
      p90_vs_best_geomean: rivals ? Math.exp(logBest / rivals) : null,
      p90_vs_best_worst: rivals ? worst : null,
      p90_vs_round_robin_geomean: rrRates ? Math.exp(logRr / rrRates) : null,
      hit_gap_pt_mean: rivals ? gap / rivals : null,
    };
  });
}

export function formatBand(rows: readonly BandRow[], rates: readonly number[]): string {
  const f = (x: number | null, d: number, suffix = ''): string => (x === null ? '-' : `${x.toFixed(d)}${suffix}`);
  const lines = [
    `band: ${rates.length} rates, ×${rates[0]}–×${rates[rates.length - 1]}; p90 TTFT ÷ the best other policy's (round_robin not a rival)`,
    '',
    `${'policy'.padEnd(18)}  ${'geo mean'.padStart(8)}  ${'worst'.padStart(6)}  ${'vs rr'.padStart(6)}  ${'hit gap'.padStart(8)}`,
    `${'-'.repeat(18)}  ${'-'.repeat(8)}  ${'-'.repeat(6)}  ${'-'.repeat(6)}  ${'-'.repeat(8)}`,
  ];
  for (const r of rows)
    lines.push(
      `${r.policy.padEnd(18)}  ${f(r.p90_vs_best_geomean, 3, '×').padStart(8)}  ${f(r.p90_vs_best_worst, 3, '×').padStart(6)}  ${f(r.p90_vs_round_robin_geomean, 3, '×').padStart(6)}  ${f(r.hit_gap_pt_mean, 2, ' pt').padStart(8)}`,
    );
  return lines.join('\n');
}
