// One calibration run on two short recorded DeepSeek sessions: the simulated hit rate must
// stay within ±5 points of what the provider reported, per session. The sessions are the attributed
// excerpts under test/fixtures/trajectories (messages and recorded usage as the agent logged them).
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCalibration } from '../../loadtest/bench-calibrate.ts';
import { FIXTURE_TRAJECTORIES } from '../fixtures/trajectories.ts';

const dir = resolve(FIXTURE_TRAJECTORIES, 'mini-swe-agent');
const files = [
  'deepseek_chat_test_1-100_django__django-14752.traj.json.gz',
  'deepseek_reasoner_dev_sqlfluff__sqlfluff-1625.traj.json.gz',
].map((f) => resolve(dir, f));

describe('bench calibrate', () => {
  it('replays two recorded sessions within ±5 points of the recorded hit rate', async () => {
    const r = await runCalibration({ trajectories: files });
    expect(r.per_session).toHaveLength(2);
    expect(r.requests).toBe(31 + 47);
    for (const s of r.per_session) {
      expect(s.requests).toBeGreaterThan(0);
      expect(s.recorded_hit_rate).toBeGreaterThan(0.5);
      expect(Math.abs(s.simulated_hit_rate - s.recorded_hit_rate) * 100).toBeLessThanOrEqual(5);
    }
    expect(r.abs_diff_points).toBeLessThanOrEqual(3);
    expect(r.prompt_token_ratio).toBeGreaterThan(0.85);
    expect(r.prompt_token_ratio).toBeLessThan(1.1);
    expect(Object.keys(r)).toEqual(
      expect.arrayContaining([
        'recorded_hit_rate',
        'simulated_hit_rate',
        'abs_diff_points',
        'prompt_token_ratio',
        'per_session',
      ]),
    );
  });
});
