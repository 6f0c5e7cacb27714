// dynamo_kv's worker choice against Dynamo's own selector tests (ai-dynamo/dynamo
// lib/llm/src/kv_router scheduling selector.rs, mod tests): temperature 0 takes the lowest logit
// (ties → the smaller tree, equal trees → random); temperature > 0 samples softmax(−logit ÷ range
// ÷ T), uniform when every logit is equal. The router docs' worked example (costs 18 / 10 / 11) is
// in baselines.test.ts. Sampling is seeded, so the frequencies below are fixed numbers.
import { describe, expect, it } from 'vitest';
import { KvEventIndex } from '../../kvplanner/kv-events/event-index.ts';
import { DynamoKvPolicy } from '../../kvplanner/policies/dynamo-kv.ts';
import type { WorkerView } from '../../kvplanner/types.ts';
import { info, workers } from './fixtures.ts';

/** Workers whose logits are exactly `logits` for an empty prompt: queued prefill tokens ÷ 16. */
function withLogits(p: DynamoKvPolicy, logits: number[]): WorkerView[] {
  const ws = workers(logits.length);
  logits.forEach((l, i) => {
    ws[i].queuedPrefillTokens = l * 16;
  });
  expect(ws.map((w) => p.logit(w, 0, 0))).toEqual(logits);
  return ws;
}

function frequencies(p: DynamoKvPolicy, ws: WorkerView[], draws: number): number[] {
  const counts = ws.map(() => 0);
  for (let i = 0; i < draws; i++) {
    const r = info({ promptTokens: 0 });
    const c = p.select(ws, r)!;
    counts[ws.indexOf(c.worker)]++;
    p.observe({ workerId: c.worker.id, info: r, ok: true });
  }
  return counts.map((c) => c / draws);
}

describe('selector.rs test_softmax_sample_zero_temperature', () => {
  it('logits 5 / 3 / 7 / 3.5 → the 3; ties 5 / 3 / 3 / 7 → either 3, both reached', () => {
    const p = new DynamoKvPolicy({ block_size: 16, seed: 11 });
    const ws = withLogits(p, [5, 3, 7, 3.5]);
    expect(frequencies(p, ws, 50)).toEqual([0, 1, 0, 0]);
    const tied = withLogits(p, [5, 3, 3, 7]);
    const f = frequencies(p, tied, 200);
    expect(f[0] + f[3]).toBe(0);
    expect(f[1]).toBeGreaterThan(0.3);
    expect(f[2]).toBeGreaterThan(0.3);
  });

  it('a tie on the logit goes to the smaller tree ("using tree size as tie-breaker")', () => {
    const ev = new KvEventIndex();
    ev.blockStored('w0', ['other0', 'other1']);
    const p = new DynamoKvPolicy({ kv_index: ev, block_size: 16 });
    const ws = withLogits(p, [3, 3]);
    expect(frequencies(p, ws, 20)).toEqual([0, 1]);
  });
});

describe('selector.rs softmax_sample_with_sample (temperature > 0)', () => {
  // test_softmax_sample_with_sample_returns_selected_logit's logits 0 / 3 / 9 at T = 1:
  // p ∝ exp(−v ÷ 9) = 1, e^(−1/3), e^(−1) → 0.480 / 0.344 / 0.177
  it('logits 0 / 3 / 9 at temperature 1 are drawn 0.480 / 0.344 / 0.177 of the time', () => {
    const p = new DynamoKvPolicy({ block_size: 16, temperature: 1, seed: 5 });
    const f = frequencies(p, withLogits(p, [0, 3, 9]), 4000);
    const z = 1 + Math.exp(-1 / 3) + Math.exp(-1);
    [1, Math.exp(-1 / 3), Math.exp(-1)].forEach((w, i) => expect(Math.abs(f[i] - w / z)).toBeLessThan(0.03));
  });

  it('equal logits at temperature > 0 → uniform over every worker, tree size ignored', () => {
    const ev = new KvEventIndex();
    ev.blockStored('w0', ['other0', 'other1', 'other2']);
    const p = new DynamoKvPolicy({ kv_index: ev, block_size: 16, temperature: 0.5, seed: 3 });
    const f = frequencies(p, withLogits(p, [2, 2, 2]), 3000);
    for (const x of f) expect(Math.abs(x - 1 / 3)).toBeLessThan(0.04);
  });
});
