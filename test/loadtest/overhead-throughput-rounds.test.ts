// bench overhead's throughput verdict: ctxgate and the peer take turns, the order flipping each
// round, and the verdict is the median over balanced pairs of rounds (an order effect cancels),
// not one pair of short runs.
import { describe, expect, it } from 'vitest';
import type { OverheadResult } from '../../loadtest/overhead/result.ts';
import { formatSummary } from '../../loadtest/overhead/summary.ts';
import {
  formatRounds,
  median,
  pairedRounds,
  type PairedTarget,
  type RoundRun,
} from '../../loadtest/overhead/throughput-rounds.ts';

describe('paired throughput rounds', () => {
  it('alternates which target runs first; the verdict is the median over balanced pairs of rounds', async () => {
    const calls: string[] = [];
    // req/s by round: ctxgate 500, 320, 600, 450, 550, 200; the peer a flat 500
    const cg = [500, 320, 600, 450, 550, 200];
    const run = async (t: PairedTarget, r: number): Promise<RoundRun> => {
      calls.push(`${r}:${t}`);
      return t === 'ctxgate'
        ? { rps: cg[r], requests: cg[r] * 3, cpu_ms_per_req: 2 }
        : { rps: 500, requests: 1500, cpu_ms_per_req: 1.6 };
    };
    const t = await pairedRounds(run, 6);
    expect(calls).toEqual([
      '0:ctxgate',
      '0:peer',
      '1:peer',
      '1:ctxgate',
      '2:ctxgate',
      '2:peer',
      '3:peer',
      '3:ctxgate',
      '4:ctxgate',
      '4:peer',
      '5:peer',
      '5:ctxgate',
    ]);
    expect(t.rounds.map((r) => r.first)).toEqual(['ctxgate', 'peer', 'ctxgate', 'peer', 'ctxgate', 'peer']);
    expect(t.rounds.map((r) => r.ratio)).toEqual([1, 0.64, 1.2, 0.9, 1.1, 0.4]);
    // pairs: sqrt(1 × 0.64) = 0.8, sqrt(1.2 × 0.9) ≈ 1.039, sqrt(1.1 × 0.4) ≈ 0.663
    expect(t.pair_ratios.map((x) => Number(x.toFixed(3)))).toEqual([0.8, 1.039, 0.663]);
    expect(t.median_ratio).toBeCloseTo(0.8, 10);
    expect(t.min_ratio).toBe(0.4);
    expect(t.max_ratio).toBe(1.2);
    expect(t.median_cpu_ratio).toBeCloseTo(1.25, 10);
    const text = formatRounds(t, 'Portkey', 16).join('\n');
    expect(text).toContain('round 2 (Portkey first): ctxgate 320 req/s, Portkey 500 req/s = 0.64x');
    expect(text).toContain('median 0.80x');
  });

  it('an order effect cancels: the second run of each pair reads 15 % lower, ctxgate truly 0.95x', async () => {
    const run = async (t: PairedTarget, r: number): Promise<RoundRun> => {
      const second = (r % 2 === 0) === (t === 'peer');
      const base = t === 'ctxgate' ? 475 : 500;
      return { rps: base * (second ? 0.85 : 1), requests: 1000 };
    };
    const t = await pairedRounds(run, 6);
    // single rounds read 1.12x (ctxgate first) and 0.81x (peer first); a median over an odd count of
    // single rounds would take the majority order's
    expect(t.median_ratio).toBeCloseTo(0.95, 10);
  });

  it('leaves the CPU ratio out when a round could not read CPU, and refuses zero rounds', async () => {
    let n = 0;
    const run = async (t: PairedTarget): Promise<RoundRun> =>
      t === 'ctxgate'
        ? { rps: 100, requests: 300, ...(n++ === 0 ? {} : { cpu_ms_per_req: 1 }) }
        : { rps: 0, requests: 0, errors: 7 };
    const t = await pairedRounds(run, 4);
    expect(t.median_cpu_ratio).toBeUndefined();
    // a peer that answered nothing gives a ratio of 0, not Infinity
    expect(t.median_ratio).toBe(0);
    expect(formatRounds(t, 'Portkey', 16)[1]).toContain('errors 0 / 7');
    await expect(pairedRounds(run, 0)).rejects.toThrow(RangeError);
    await expect(pairedRounds(run, 5)).rejects.toThrow(RangeError);
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 2, 3])).toBe(2.5);
  });

  it('the summary judges the throughput target on the rounds, not on the single run', () => {
    const base: OverheadResult = {
      cases: [],
      duration_s: 3,
      c1_calls: 4000,
      connections: 8,
      sessions: 34,
      growing: {
        added_p50_ms: 1,
        added_p99_ms: 5,
        added_p999_ms: 9,
        p999_calls: { ctxgate: 1000, ctxgate_rank: 1, direct: 1000, direct_rank: 1 },
        p99_calls: { ctxgate: 1000, ctxgate_rank: 10, direct: 1000, direct_rank: 10 },
        bare_added_p50_ms: 0.4,
        bare_added_p99_ms: 2,
        throughput_ratio_vs_portkey: 0.8,
        throughput_ratio_vs_bare_proxy: 0.5,
        stages: {},
        cpu_ms_per_req: {},
        upstream_cpu_ms_per_req: {},
      },
    };
    expect(formatSummary(base)).toMatch(/ctxgate throughput 0\.80x Portkey's \(target >= 1: NOT met\)/);
    // a run with --gateway-node-flags says that ctxgate ran with more flags than its peers
    expect(formatSummary(base)).toMatch(/Portkey \(same Node flags: /);
    const flagged = formatSummary({ ...base, gateway_node_flags: ['--min-semi-space-size=64'] });
    expect(flagged).toMatch(/Portkey \(Node flags [^;]+; ctxgate also --min-semi-space-size=64\)/);
    expect(flagged).not.toMatch(/same Node flags/);
    const rounds = {
      rounds: [],
      pair_ratios: [1.07, 0.95, 1.1],
      median_ratio: 1.07,
      min_ratio: 0.9,
      max_ratio: 1.2,
    };
    const withRounds = { ...base, growing: { ...base.growing!, throughput_rounds: rounds } };
    const line = formatSummary(withRounds);
    expect(line).toMatch(
      /ctxgate throughput 1\.07x Portkey's \(median of 3 balanced pairs of rounds, single rounds 0\.90-1\.20x; the single run above 0\.80x\) \(target >= 1: met\)/,
    );
  });
});
