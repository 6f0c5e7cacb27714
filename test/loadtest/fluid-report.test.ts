// What `bench fleet` prints under its table about what any router can reach: the fluid rows at no
// hits, the best run's and the hindsight hit rate, and whether 0.5 × round_robin's p90 is ruled
// out (prefill alone slower) or how much decode must ride in prefill steps for the estimate to
// reach it. Timing as in fluid-bound.test.ts: a prompt token costs 1 ms of prefill, a decode step
// with a full KV 1 s; one engine of 10,000 KV tokens.
import { describe, expect, it } from 'vitest';
import { fluidBound } from '../../loadtest/fleet/fluid-bound.ts';
import { fluidReport, formatFluid } from '../../loadtest/fleet/fluid-report.ts';
import type { FleetRunSummary } from '../../loadtest/fleet/summary.ts';
import { arrange, ChainInterner, fromMooncake } from '../../loadtest/fleet/trace.ts';
import { UNIT_TIMING } from '../helpers/unit-timing.ts';

const timing = UNIT_TIMING;
const fleet = { workers: 1, kvTokens: 10_000, timing };

const chain = new ChainInterner();
// a 1,000-token prompt of 1 full block (plus 488 tokens) and a later one starting with that block
const reqs = arrange(
  [
    [0, 1000, 100, [1]],
    [0, 2000, 1, [2, 3]],
    [500, 1000, 1, [1]],
  ].map(([ts, input, output, ids], i) =>
    fromMooncake(
      {
        timestamp: ts as number,
        input_length: input as number,
        output_length: output as number,
        hash_ids: ids as number[],
      },
      i,
      chain,
    ),
  ),
  1,
);

/** A run summary with only what the report reads. */
function run(policy: string, hitRate: number, p90Ms: number): FleetRunSummary {
  return {
    config: { policy },
    hit_rate: hitRate,
    ttft_ms: { p50: 0, p90: p90Ms, p95: 0, p99: 0 },
    engine_time: { prefill: 0, decode_only: 0, decode_only_waiting: 0, decode_riding: 0.05 },
  } as FleetRunSummary;
}

describe('fluidReport', () => {
  it('rows at no hits, at the best run and at hindsight (the third prompt hits its first 512-token block)', () => {
    const f = fluidReport(reqs, [run('ctxgate', 0.1, 1000)], fleet);
    expect(f.hindsight_hit_rate).toBeCloseTo(512 / 4000, 9);
    expect(f.rows.map((r) => [r.basis, r.hit_rate])).toEqual([
      ['none', 0],
      ['best_run', 0.1],
      ['hindsight', 512 / 4000],
    ]);
    expect(f.rows[0].p90_ttft_ms_prefill_only).toBe(3500); // fluid-bound.test.ts's hand-computed case
    expect(f.half_round_robin).toBeUndefined(); // no round_robin run: no target
    expect(formatFluid(f, fleet)).toMatch(/no router's hit rate exceeds 12\.8% served in arrival order/);
  });

  it('0.5 × round_robin below prefill alone at hindsight hits: out of reach for any router', () => {
    const prefillOnly = fluidBound(reqs, { ...fleet, hitRate: 512 / 4000, decode: false }).p90Ms;
    const f = fluidReport(reqs, [run('round_robin', 0, 2 * (prefillOnly - 100))], fleet);
    expect(f.half_round_robin).toEqual({
      target_ms: Math.round(prefillOnly - 100),
      prefill_only_ms: Math.round(prefillOnly),
      riding_share_needed: 1,
      riding_share_measured_max: 0.05,
    });
    expect(formatFluid(f, fleet)).toMatch(/out of reach for any router/);
  });

  it('between the two: the share of decode that must ride in prefill steps for the estimate to reach it', () => {
    const h = 512 / 4000;
    const at = (ridingShare: number): number =>
      fluidBound(reqs, { ...fleet, hitRate: h, decode: true, ridingShare }).p90Ms;
    const target = (at(0) + at(1)) / 2;
    const f = fluidReport(reqs, [run('round_robin', 0, 2 * target)], fleet);
    const need = f.half_round_robin?.riding_share_needed as number;
    expect(need).toBeGreaterThan(0);
    expect(need).toBeLessThan(1);
    expect(at(need + 0.001)).toBeLessThanOrEqual(target + 1e-6);
    expect(at(need - 0.002)).toBeGreaterThan(target);
    expect(formatFluid(f, fleet)).toMatch(
      /reaches it only if \d+\.\d% of decode tokens ride in prefill steps \(assumed 7\.0%, at most 5\.0% in these runs\)/,
    );
    // a target the estimate meets with no riding at all
    expect(
      fluidReport(reqs, [run('round_robin', 0, 2 * at(0) + 10)], fleet).half_round_robin?.riding_share_needed,
    ).toBe(0);
  });
});
