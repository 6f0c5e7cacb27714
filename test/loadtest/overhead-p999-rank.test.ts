// bench overhead prints each p99.9 with its rank from the slowest of the run's calls
// (rankFromSlowest), so that a p99.9 read from 1-3k calls shows as the handful of calls it is.
import { describe, expect, it } from 'vitest';
import { percentile, rankFromSlowest } from '../../loadtest/overhead/load.ts';

describe('bench overhead: the p99.9 and the calls behind it', () => {
  it('rankFromSlowest names the call percentile() picks, counted from the slowest', () => {
    for (const n of [1, 2, 5, 999, 1000, 1001, 2700, 12_345]) {
      const sorted = Float64Array.from({ length: n }, (_, i) => i);
      for (const q of [0.5, 0.99, 0.999]) expect(percentile(sorted, q)).toBe(n - rankFromSlowest(n, q));
    }
    expect(rankFromSlowest(1000, 0.999)).toBe(1);
    expect(rankFromSlowest(2700, 0.999)).toBe(3);
    expect(rankFromSlowest(20_000, 0.999)).toBe(20);
    expect(rankFromSlowest(0, 0.999)).toBe(0);
  });
});
