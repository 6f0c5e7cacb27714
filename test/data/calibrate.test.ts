// Data tier: calibration over every recorded mini-swe-agent run in $CTXGATE_TRAJECTORIES (22 DeepSeek sessions):
// the simulated hit rate stays within a few points of what the provider reported.
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCalibration } from '../../loadtest/bench-calibrate.ts';
import { dataTrajectories } from '../fixtures/trajectories.ts';

describe('bench calibrate over the full recordings', () => {
  it('every session within ±5 points of its recorded hit rate', async () => {
    const r = await runCalibration({ trajectories: [resolve(dataTrajectories(), 'mini-swe-agent-deepseek')] });
    expect(r.per_session.length).toBeGreaterThanOrEqual(20);
    for (const s of r.per_session) {
      expect(s.requests).toBeGreaterThan(0);
      expect(Math.abs(s.simulated_hit_rate - s.recorded_hit_rate) * 100).toBeLessThanOrEqual(5);
    }
    expect(r.abs_diff_points).toBeLessThanOrEqual(3);
    expect(r.prompt_token_ratio).toBeGreaterThan(0.85);
    expect(r.prompt_token_ratio).toBeLessThan(1.1);
  });
});
