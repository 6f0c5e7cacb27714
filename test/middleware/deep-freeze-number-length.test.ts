// A number's JSON length (deep-freeze.ts measure) is counted without writing the number: it must
// equal String(v).length for every number, integers of any size and sign, -0, fractions,
// exponent forms, NaN and the infinities.
import { describe, expect, it } from 'vitest';
import { freezeDeep, numberLength, sizeOf } from '../../middleware/deep-freeze.ts';
import { mulberry32 } from '../../loadtest/profiles/rng.ts';

describe('numberLength', () => {
  it('is String(v).length for every kind of number', () => {
    const rnd = mulberry32(17);
    const xs: number[] = [0, -0, 1, -1, 9, 10, 99, 100, 1e20, 1e21, -1e21, 1e21 - 65536, 2 ** 53, 2 ** 60, -(2 ** 70)];
    xs.push(Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, Number.MAX_VALUE, Number.MIN_VALUE, Number.EPSILON);
    xs.push(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 0.5, -0.25, 1.5e-7, 123.456, 1e-6);
    for (let k = 0; k <= 22; k++) xs.push(10 ** k, 10 ** k - 1, 10 ** k + 1, -(10 ** k), -(10 ** k) + 1);
    for (let i = 0; i < 5000; i++) {
      const digits = Math.floor(rnd() * 24);
      const v = Math.floor(rnd() * 10 ** digits);
      xs.push(v, -v, v / 7, Date.now() + v);
    }
    for (const v of xs) expect(numberLength(v), String(v)).toBe(String(v).length);
  });

  it('sizes frozen values with numbers as their JSON', () => {
    const v = { at: 1_764_650_000_123, n: [0, -3, 17, 1e21, 2.5], calls: 30 };
    expect(sizeOf(freezeDeep(structuredClone(v)))).toBe(JSON.stringify(v).length);
  });
});
