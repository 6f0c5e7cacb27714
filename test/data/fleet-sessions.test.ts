// Data tier: `bench fleet` over every recorded agent run in $CTXGATE_TRAJECTORIES (mini-swe-agent,
// SWE-agent, aider), 8 simulated engines, closed loop: every call of every session completes once
// under each policy, session starts are the same for all, and a cache-aware policy serves more of
// the append-only histories from cache than round robin does.
import { describe, expect, it } from 'vitest';
import { fleetPolicyOptions } from '../../loadtest/fleet/command.ts';
import { sessionRequests } from '../../loadtest/fleet/sessions.ts';
import { simulateFleet } from '../../loadtest/fleet/simulator.ts';
import { summarize } from '../../loadtest/fleet/summary.ts';
import { ChainInterner } from '../../loadtest/fleet/trace.ts';
import { readSessions } from '../../loadtest/formats/read-sessions.ts';
import { PRESETS } from '../../loadtest/sim-worker/timing.ts';
import { dataTrajectories } from '../fixtures/trajectories.ts';

describe('bench fleet on the recorded runs', () => {
  it('8 workers: all calls complete once; ctxgate hits more than round robin', async () => {
    // the first 40 calls of each run: rendering every call of every run takes minutes on a loaded machine
    const sessions = (await readSessions([dataTrajectories()])).map((s) => ({ ...s, calls: s.calls.slice(0, 40) }));
    expect(sessions.length).toBeGreaterThanOrEqual(40);
    const reqs = await sessionRequests(sessions, new ChainInterner(), {
      tokenizer: 'qwen3',
      blockTokens: 512,
      ratePerS: 0.5,
      seed: 1,
      thinkMs: 2000,
      defaultOutputTokens: 256,
    });
    const timing = PRESETS['qwen3-32b-h200'];
    const hit: Record<string, number> = {};
    for (const policy of ['round_robin', 'ctxgate']) {
      const res = simulateFleet(reqs, {
        policy,
        policyOptions: fleetPolicyOptions(policy, timing, 512, 200_000, 1),
        workers: 8,
        kvTokens: 200_000,
        blockSize: 512,
        timing,
      });
      expect(res.duplicateFinishes).toBe(0);
      expect(res.outcomes.length + res.rejected).toBe(reqs.length);
      hit[policy] = summarize(res, {
        preset: timing.name,
        rateScale: 1,
        index: 'approx',
        wallS: 0,
        requests: reqs.length,
      }).hit_rate;
    }
    expect(hit.ctxgate).toBeGreaterThan(hit.round_robin);
  }, 1_200_000);
});
