// The fluid figures of `bench fleet` on a hand-computed example: a timing model where a prompt
// token costs 1 ms of prefill (2·P / (MFU · peak) = 1e-3, no attention term) and a decode step
// with a full KV costs 1 s (weights 1 byte over 1 byte/s, no KV bytes), one engine of 10,000
// KV tokens.
import { describe, expect, it } from 'vitest';
import { fluidBound, RIDING_SHARE } from '../../loadtest/fleet/fluid-bound.ts';
import { ChainInterner, fromMooncake } from '../../loadtest/fleet/trace.ts';
import { UNIT_TIMING } from '../helpers/unit-timing.ts';

const timing = UNIT_TIMING;

const chain = new ChainInterner();
const reqs = [
  [0, 1000, 100],
  [0, 2000, 1],
  [500, 1000, 1],
].map(([ts, input, output], i) =>
  fromMooncake({ timestamp: ts, input_length: input, output_length: output, hash_ids: [] }, i, chain),
);
const o = { workers: 1, kvTokens: 10_000, timing };

describe('fluidBound', () => {
  it('prefill only: each request waits for the work ahead of it, then its own prefill', () => {
    // ttft 1 s; 1 s of backlog + 2 s = 3 s; at 0.5 s 2.5 s of backlog left + 1 s = 3.5 s
    const f = fluidBound(reqs, { ...o, hitRate: 0, decode: false });
    expect(f.p90Ms).toBeCloseTo(3500, 6);
    expect(f.prefillLoad).toBeCloseTo(4 / 0.5, 6);
    expect(f.decodeLoad).toBe(0);
    // half of every prompt cached: 0.5 s; 0.5 + 1 = 1.5 s; at 0.5 s 1 s left + 0.5 s = 1.5 s
    expect(fluidBound(reqs, { ...o, hitRate: 0.5, decode: false }).p90Ms).toBeCloseTo(1500, 6);
  });

  it('with decode: 100 output tokens of a 1,050-token mean context take 10.5 % of a 1 s step each', () => {
    const d1 = (1 - RIDING_SHARE) * 100 * (1050 / 10_000);
    const d2 = (1 - RIDING_SHARE) * 1 * (2000.5 / 10_000);
    const f = fluidBound(reqs, { ...o, hitRate: 0, decode: true });
    // third request: backlog 1 + d1 + 2 + d2 − 0.5, then its 1 s prefill
    expect(f.p90Ms).toBeCloseTo((1 + d1 + 2 + d2 - 0.5 + 1) * 1000, 6);
    expect(f.decodeLoad).toBeGreaterThan(0);
  });
});
