// Data tier: the fleet-routing targets on the public Mooncake conversation trace, through the very
// command the README gives (`ctxgate bench fleet … --json`), so a policy, gate or simulator change
// that pushes ctxgate behind a baseline fails here instead of in the next hand-made README table.
// Targets: 8 workers, 200,000 KV tokens each, rate ×1 and ×2: ctxgate's p90 TTFT ≤ every baseline's
// and ≤ 0.5 × round_robin's; hit rate within 0.5 points of the best baseline's or above; imbalance
// ≤ 1.3. The simulator runs on a virtual clock, so the figures do not depend on the machine's load.
// The trace: $CTXGATE_TRACES (a folder holding conversation_first_half.jsonl), else the
// `traces/mooncake/` folder beside $CTXGATE_TRAJECTORIES (the shared data's layout).
import { describe, expect, it } from 'vitest';
import { fleetRuns } from './bench-fleet-json.ts';

const P90_VS_ROUND_ROBIN = 0.5;
const HIT_GAP_POINTS = 0.5;
const MAX_IMBALANCE = 1.3;

interface FleetRun {
  config: { policy: string };
  requests: number;
  completed: number;
  hit_rate: number;
  imbalance: number;
  ttft_ms: { p90: number };
}

function fleetAt(rateScale: number): Promise<FleetRun[]> {
  return fleetRuns<FleetRun>(['--rate-scale', String(rateScale)]);
}

describe('bench fleet targets on the conversation half', () => {
  for (const rateScale of [1, 2]) {
    it(`×${rateScale}: ctxgate leads every baseline, ≤ 0.5× round_robin, hit rate and imbalance held`, async () => {
      const runs = await fleetAt(rateScale);
      const by = new Map(runs.map((r) => [r.config.policy, r]));
      const ours = by.get('ctxgate');
      const rr = by.get('round_robin');
      expect(ours, 'ctxgate row').toBeDefined();
      expect(rr, 'round_robin row').toBeDefined();
      const baselines = runs.filter((r) => r.config.policy !== 'ctxgate');
      // the default policy list: every baseline the issue names runs in the same invocation
      for (const name of ['smg_cache_aware', 'dynamo_kv', 'llmd_precise', 'sglang_cache_aware'])
        expect(by.has(name), name).toBe(true);
      for (const r of runs) expect(r.completed, `${r.config.policy} completed`).toBe(r.requests);
      for (const b of baselines)
        expect(ours!.ttft_ms.p90, `p90 vs ${b.config.policy}`).toBeLessThanOrEqual(b.ttft_ms.p90);
      expect(ours!.ttft_ms.p90).toBeLessThanOrEqual(P90_VS_ROUND_ROBIN * rr!.ttft_ms.p90);
      const bestHit = Math.max(...baselines.map((b) => b.hit_rate));
      expect(ours!.hit_rate * 100).toBeGreaterThanOrEqual(bestHit * 100 - HIT_GAP_POINTS);
      expect(ours!.imbalance).toBeLessThanOrEqual(MAX_IMBALANCE);
    }, 600_000);
  }
});
