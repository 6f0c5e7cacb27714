// Policies compared on a simulated fleet (true per-worker block LRUs, agent sessions over one
// shared root, 12 calls in flight). Hit rate is exact arithmetic here, not timing.
import { describe, expect, it } from 'vitest';
import { simulateFleet, type FleetSimOptions } from './fleet-sim.ts';

const base = { workers: 4, sessions: 16, concurrency: 12, seed: 5 };
function profile(rootTokens: number, turnTokens: number, turns: number, withSessionIds: boolean): FleetSimOptions {
  // each worker holds its share (4 sessions) of full conversations under sticky routing, +25%
  return {
    ...base,
    rootTokens,
    turnTokens,
    turns,
    withSessionIds,
    capacityTokens: 4 * (rootTokens + turns * turnTokens) * 1.25,
  };
}

describe('simulated fleet: 4 workers, 16 concurrent agent sessions', () => {
  it('long sessions: ctxgate ≥ 1.5× round_robin and on par with the SGLang router', () => {
    const o = profile(1024, 1024, 16, true);
    const rr = simulateFleet('round_robin', o).hitRate;
    const sg = simulateFleet('sglang_cache_aware', o).hitRate;
    const cg = simulateFleet('ctxgate', o);
    expect(cg.hitRate).toBeGreaterThanOrEqual(1.5 * rr);
    expect(cg.hitRate).toBeGreaterThanOrEqual(sg - 0.01);
    expect(cg.hitRate).toBeGreaterThanOrEqual(simulateFleet('session_hash', o).hitRate);
  });

  it('a dominant shared root: ctxgate spreads sessions where the SGLang router piles them up', () => {
    const o = profile(2048, 512, 12, true);
    const sg = simulateFleet('sglang_cache_aware', o);
    const cg = simulateFleet('ctxgate', o);
    expect(cg.hitRate).toBeGreaterThan(sg.hitRate + 0.1);
    expect(cg.maxInFlight).toBeLessThan(sg.maxInFlight);
    expect(cg.hitRate).toBeGreaterThanOrEqual(1.3 * simulateFleet('round_robin', o).hitRate);
  });

  it('without session ids ctxgate follows conversations by prefix', () => {
    const o = profile(2048, 512, 12, false);
    const cg = simulateFleet('ctxgate', o);
    expect(cg.hitRate).toBeGreaterThan(simulateFleet('session_hash', o).hitRate + 0.05);
    expect(cg.hitRate).toBeGreaterThan(0.85);
  });
});
