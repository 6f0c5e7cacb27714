// What `bench fleet` prints under its table for a Mooncake trace: fluid figures for any router
// (fluid-bound.ts) at no hits, at the best hit rate a run reached and at the hindsight hit rate
// (oracle-hits.ts), and, when round_robin ran, how far 0.5 × its p90 TTFT is within reach: the
// prefill-only bound at hindsight hits, and the share of decode tokens that would have to ride in
// prefill steps for the estimate with decode to reach it (bisection over the share, 30 fluid
// passes: O(30 · n log n)).
import type { TimingModel } from '../sim-worker/timing.ts';
import { fluidBound, RIDING_SHARE } from './fluid-bound.ts';
import { oracleHits } from './oracle-hits.ts';
import type { FleetRunSummary } from './summary.ts';
import type { FleetRequest } from './trace.ts';

export interface FluidRow {
  hit_rate: number;
  /** what the hit rate is: none, the best a run reached, or the hindsight bound */
  basis: 'none' | 'best_run' | 'hindsight';
  /** lower bound for any router over FCFS engines: prefill alone, pooled fleet */
  p90_ttft_ms_prefill_only: number;
  /** estimate: decode-only steps at full KV counted too */
  p90_ttft_ms_with_decode: number;
  prefill_load: number;
  decode_load: number;
}

export interface HalfRoundRobin {
  /** 0.5 × round_robin's p90 TTFT, ms */
  target_ms: number;
  /** prefill alone at the hindsight hit rate (a lower bound): above target_ms rules it out */
  prefill_only_ms: number;
  /** share of decode tokens (KV-weighted) that must ride in prefill steps for the estimate at
   *  hindsight hits to reach target_ms: 0 when it does without any, 1 when only free decode would */
  riding_share_needed: number;
  /** the most any run here had ride (engine_time.decode_riding) */
  riding_share_measured_max: number;
}

export interface FluidReport {
  rows: FluidRow[];
  /** Belady's MIN over the pooled KV: no router's hit rate above it (arrival order) */
  hindsight_hit_rate: number;
  half_round_robin?: HalfRoundRobin;
}

interface FluidFleet {
  workers: number;
  kvTokens: number;
  timing: TimingModel;
}

export function fluidReport(
  reqs: readonly FleetRequest[],
  runs: readonly FleetRunSummary[],
  o: FluidFleet,
): FluidReport {
  const hindsight = oracleHits(reqs, o.workers, o.kvTokens).hitRate;
  const bases: Array<[FluidRow['basis'], number]> = [
    ['none', 0],
    ['best_run', Math.max(0, ...runs.map((r) => r.hit_rate))],
    ['hindsight', hindsight],
  ];
  const r3 = (x: number): number => Math.round(x * 1000) / 1000;
  const rows = bases.map(([basis, hitRate]): FluidRow => {
    const prefill = fluidBound(reqs, { ...o, hitRate, decode: false });
    const both = fluidBound(reqs, { ...o, hitRate, decode: true });
    return {
      hit_rate: hitRate,
      basis,
      p90_ttft_ms_prefill_only: Math.round(prefill.p90Ms),
      p90_ttft_ms_with_decode: Math.round(both.p90Ms),
      prefill_load: r3(both.prefillLoad),
      decode_load: r3(both.decodeLoad),
    };
  });
  const rr = runs.find((r) => r.config.policy === 'round_robin');
  if (!rr) return { rows, hindsight_hit_rate: hindsight };
  const target = rr.ttft_ms.p90 / 2;
  const at = (ridingShare: number): number =>
    fluidBound(reqs, { ...o, hitRate: hindsight, decode: true, ridingShare }).p90Ms;
  let needed: number;
  if (at(0) <= target) needed = 0;
  else if (at(1) > target) needed = 1;
  else {
    let lo = 0;
    let hi = 1;
    for (let i = 0; i < 30; i++) {
      const mid = (lo + hi) / 2;
      if (at(mid) <= target) hi = mid;
      else lo = mid;
    }
    needed = hi;
  }
  return {
    rows,
    hindsight_hit_rate: hindsight,
    half_round_robin: {
      target_ms: Math.round(target),
      prefill_only_ms: rows[2].p90_ttft_ms_prefill_only,
      riding_share_needed: r3(needed),
      riding_share_measured_max: Math.max(0, ...runs.map((r) => r.engine_time.decode_riding)),
    },
  };
}

const pct = (x: number): string => `${(x * 100).toFixed(1)}%`;
const sec = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

export function formatFluid(f: FluidReport | undefined, o?: FluidFleet): string {
  if (!f)
    return 'no fluid figures for agent sessions: their later calls arrive when the previous answer does, which depends on the router';
  const label = { none: '', best_run: ' (best run)', hindsight: ' (hindsight)' };
  const lines = [
    'fluid figures for any router (the fleet as one pooled server, FCFS): prefill alone is a lower bound',
    'on p90 TTFT; with decode-only steps at full KV (each token costs its context share of a step) an estimate',
    ...f.rows.map(
      (r) =>
        `  hit ${pct(r.hit_rate)}${label[r.basis]}: load ${(r.prefill_load * 100).toFixed(0)}% prefill + ` +
        `${(r.decode_load * 100).toFixed(0)}% decode; p90 TTFT >= ${sec(r.p90_ttft_ms_prefill_only)} ` +
        `(prefill only), ~${sec(r.p90_ttft_ms_with_decode)} with decode`,
    ),
    `hindsight: no router's hit rate exceeds ${pct(f.hindsight_hit_rate)} served in arrival order (Belady's MIN` +
      (o ? ` over the pooled ${o.workers} × ${o.kvTokens} KV tokens)` : ' over the pooled KV)'),
  ];
  const h = f.half_round_robin;
  if (h) {
    const why =
      h.prefill_only_ms > h.target_ms
        ? 'out of reach for any router: prefill alone at hindsight hits is slower'
        : h.riding_share_needed === 0
          ? 'within the estimate at hindsight hits'
          : `the estimate at hindsight hits reaches it only if ${pct(h.riding_share_needed)} of decode tokens ride in prefill steps (assumed ${pct(RIDING_SHARE)}, at most ${pct(h.riding_share_measured_max)} in these runs)`;
    lines.push(
      `0.5 × round_robin's p90 = ${sec(h.target_ms)}; prefill alone at hindsight hits >= ${sec(h.prefill_only_ms)}: ${why}`,
    );
  }
  return lines.join('\n');
}
