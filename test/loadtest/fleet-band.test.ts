// bench fleet --rate-band: the band's rates, the per-policy summary over them (against a hand
// computation), and the command end to end on a small Mooncake-format trace.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bandSummary, MAX_BAND_RATES, parseRateBand } from '../../loadtest/fleet/band.ts';
import { run } from '../../loadtest/fleet/command.ts';
import type { FleetRunSummary } from '../../loadtest/fleet/summary.ts';
import { captureOutput } from '../helpers/capture-output.ts';
import { steppedConversationJsonl } from '../helpers/fleet-conversations.ts';

function runOf(policy: string, p90: number, hit: number): FleetRunSummary {
  return { config: { policy }, ttft_ms: { p50: 0, p90, p95: 0, p99: 0 }, hit_rate: hit } as unknown as FleetRunSummary;
}

describe('parseRateBand', () => {
  it('reads LO:HI:STEP inclusively, without float drift, and comma lists', () => {
    expect(parseRateBand('1.8:2.2:0.1')).toEqual([1.8, 1.9, 2, 2.1, 2.2]);
    expect(parseRateBand('0.9:1.1:0.05')).toEqual([0.9, 0.95, 1, 1.05, 1.1]);
    expect(parseRateBand('1,2')).toEqual([1, 2]);
    expect(parseRateBand('1.9:2.1:0.1,4')).toEqual([1.9, 2, 2.1, 4]);
  });

  it('refuses what is not a band: clear messages', () => {
    expect(() => parseRateBand('2:1:0.1')).toThrow(/LO:HI:STEP/);
    expect(() => parseRateBand('1:2:0')).toThrow(/LO:HI:STEP/);
    expect(() => parseRateBand('0')).toThrow(/> 0/);
    expect(() => parseRateBand('a')).toThrow(/LO:HI:STEP/);
    expect(() => parseRateBand(`1:${MAX_BAND_RATES + 1}:1`)).toThrow(/more than/);
  });
});

describe('bandSummary', () => {
  it('per policy: geometric mean and worst of p90 ÷ the best other (round_robin no rival), ÷ round_robin, hit gap', () => {
    const rows = bandSummary([
      [runOf('round_robin', 100, 0.01), runOf('a', 40, 0.05), runOf('b', 50, 0.07)],
      [runOf('round_robin', 200, 0.01), runOf('a', 90, 0.06), runOf('b', 60, 0.05)],
    ]);
    const a = rows.find((r) => r.policy === 'a')!;
    // rate 1: 40/50 = 0.8; rate 2: 90/60 = 1.5 (round_robin's 100 and 200 are not rivals)
    expect(a.p90_vs_best_geomean).toBeCloseTo(Math.sqrt(0.8 * 1.5), 12);
    expect(a.p90_vs_best_worst).toBeCloseTo(1.5, 12);
    expect(a.p90_vs_round_robin_geomean).toBeCloseTo(Math.sqrt(0.4 * 0.45), 12);
    expect(a.hit_gap_pt_mean).toBeCloseTo((-2 + 1) / 2, 9);
    const b = rows.find((r) => r.policy === 'b')!;
    expect(b.p90_vs_best_geomean).toBeCloseTo(Math.sqrt((50 / 40) * (60 / 90)), 12);
    expect(b.hit_gap_pt_mean).toBeCloseTo((2 - 1) / 2, 9);
    // round_robin's rivals are the others; it has no ratio to itself
    const rr = rows.find((r) => r.policy === 'round_robin')!;
    expect(rr.p90_vs_best_geomean).toBeCloseTo(Math.sqrt(2.5 * (200 / 60)), 12);
    expect(rr.p90_vs_round_robin_geomean).toBeNull();
    expect(rows.map((r) => r.rates)).toEqual([2, 2, 2]);
  });

  it('a policy alone (or with round_robin only) has no rival: null, not a ratio to itself', () => {
    const [row] = bandSummary([[runOf('ctxgate', 10, 0.1), runOf('round_robin', 20, 0.05)]]);
    expect(row.p90_vs_best_geomean).toBeNull();
    expect(row.p90_vs_best_worst).toBeNull();
    expect(row.hit_gap_pt_mean).toBeNull();
    expect(row.p90_vs_round_robin_geomean).toBeCloseTo(0.5, 12);
  });
});

describe('bench fleet --rate-band', () => {
  let dir = '';
  let trace = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fleet-band-'));
    trace = join(dir, 'trace.jsonl');
    await writeFile(trace, steppedConversationJsonl(60));
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const capture = (args: string[]) => captureOutput(() => run(args));

  it('runs every policy at every rate; the band rows match the runs it prints', async () => {
    const args = [trace, '--workers', '2', '--kv-tokens', '20000', '--policies', 'round_robin,least_load,ctxgate'];
    const { rc, out, err } = await capture([...args, '--rate-band', '1:3:1', '--json']);
    expect(err).toBe('');
    expect(rc).toBe(0);
    const j = JSON.parse(out) as {
      band: { rates: number[]; policies: Array<{ policy: string; p90_vs_best_worst: number | null }> };
      runs: FleetRunSummary[];
    };
    expect(j.band.rates).toEqual([1, 2, 3]);
    expect(j.runs.map((r) => `${r.config.policy}@${r.config.rate_scale}`)).toEqual([
      'round_robin@1',
      'least_load@1',
      'ctxgate@1',
      'round_robin@2',
      'least_load@2',
      'ctxgate@2',
      'round_robin@3',
      'least_load@3',
      'ctxgate@3',
    ]);
    expect(j.runs.every((r) => r.completed === 60)).toBe(true);
    const worst = (p: string): number =>
      Math.max(
        ...[1, 2, 3].map((rate) => {
          const at = j.runs.filter((r) => r.config.rate_scale === rate);
          const me = at.find((r) => r.config.policy === p)!;
          return (
            me.ttft_ms.p90 /
            Math.min(
              ...at.filter((r) => r.config.policy !== p && r.config.policy !== 'round_robin').map((r) => r.ttft_ms.p90),
            )
          );
        }),
      );
    for (const row of j.band.policies) expect(row.p90_vs_best_worst).toBeCloseTo(worst(row.policy), 9);
    // each rate's runs are the single-rate command's
    const single = await capture([...args, '--rate-scale', '2', '--json']);
    const at2 = (JSON.parse(single.out) as { runs: FleetRunSummary[] }).runs;
    const strip = (r: FleetRunSummary) => ({ ...r, wall_s: 0 });
    expect(j.runs.filter((r) => r.config.rate_scale === 2).map(strip)).toEqual(at2.map(strip));
    // the text form: one row per policy
    const text = await capture([...args, '--rate-band', '1,2']);
    expect(text.rc).toBe(0);
    expect(text.out).toMatch(/band: 2 rates, ×1–×2/);
    expect(text.out.split('\n').filter((l) => /^(round_robin|least_load|ctxgate)\s/.test(l))).toHaveLength(3);
  });

  it('refuses --rate-band with --rate-scale or --timeline', async () => {
    const r = await capture([trace, '--rate-band', '1,2', '--rate-scale', '2']);
    expect(r.rc).toBe(2);
    expect(r.err).toMatch(/--rate-band replaces --rate-scale/);
    const t = await capture([trace, '--rate-band', '1,2', '--timeline', '10']);
    expect(t.rc).toBe(2);
  });
});
