// inFirstSeenOrder (layout/first-seen-order.ts), the canonical tools stage's fast path for tool-call
// arguments: whenever it answers true, the full rewrite would have learned nothing (the tree is
// unchanged) and returned a value serialising like the input, so skipping it is exact. Checked on
// random JSON values against trees learned from random earlier values (same shapes, reordered
// keys, new keys, nested arrays, integer-like and prototype-named keys).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  applyFirstSeenOrder,
  inFirstSeenOrder,
  type KeyTree,
  sameSerialisation,
} from '../../middleware/layout/first-seen-order.ts';

const KEYS = ['path', 'cmd', 'old', 'new', 'a', 'b', '1', '10', 'constructor', 'toString', '__proto__'];

const json: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.oneof(fc.string({ maxLength: 4 }), fc.integer(), fc.boolean(), fc.constant(null)),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom(...KEYS), tie('value'), { maxKeys: 4 }),
  ),
})).value;

/** A value as the stage meets it: parsed from JSON text (own `__proto__` keys included). */
const parsed = (v: unknown): unknown => JSON.parse(JSON.stringify(v));

/** The same object with its keys in another order, at every level. */
function shuffled(v: unknown, seed: number): unknown {
  if (Array.isArray(v)) return v.map((x, i) => shuffled(x, seed + i));
  if (typeof v !== 'object' || v === null) return v;
  const keys = Object.keys(v);
  if (seed % 2 === 1) keys.reverse();
  return JSON.parse(
    `{${keys.map((k) => `${JSON.stringify(k)}:${JSON.stringify(shuffled((v as Record<string, unknown>)[k], seed + 1))}`).join(',')}}`,
  );
}

describe('inFirstSeenOrder', () => {
  it('answers true only where the full rewrite learns nothing and changes no byte', () => {
    let fast = 0;
    fc.assert(
      fc.property(fc.array(json, { minLength: 1, maxLength: 4 }), json, fc.nat(7), (earlier, now, seed) => {
        const tree: KeyTree = {};
        for (const e of earlier) applyFirstSeenOrder(parsed(e), tree);
        for (const v of [parsed(now), parsed(earlier[0]), shuffled(parsed(earlier[0]), seed)]) {
          const before = JSON.stringify(tree);
          const ok = inFirstSeenOrder(v, tree);
          expect(JSON.stringify(tree)).toBe(before);
          const copy = structuredClone(tree);
          const next = applyFirstSeenOrder(v, copy);
          if (!ok) continue;
          fast++;
          expect(JSON.stringify(copy)).toBe(before);
          expect(sameSerialisation(next, v)).toBe(true);
        }
      }),
      { numRuns: 2000, seed: 17 },
    );
    expect(fast).toBeGreaterThan(1000);
  });

  it('takes the fast path for known arguments resent in their known order, not otherwise', () => {
    const tree: KeyTree = {};
    applyFirstSeenOrder({ path: 'a.py', opts: { n: 1, flags: [{ x: 1 }] } }, tree);
    expect(inFirstSeenOrder({ path: 'b.py', opts: { n: 2, flags: [{ x: 3 }] } }, tree)).toBe(true);
    expect(inFirstSeenOrder({ path: 'b.py' }, tree)).toBe(true);
    expect(inFirstSeenOrder({ opts: { n: 2 }, path: 'b.py' }, tree)).toBe(false);
    expect(inFirstSeenOrder({ path: 'b.py', extra: 1 }, tree)).toBe(false);
    expect(inFirstSeenOrder({ path: 'b.py', opts: { n: 2, flags: [{ x: 3 }, { y: 1 }] } }, tree)).toBe(false);
    expect(inFirstSeenOrder({ path: 'b.py', opts: { flags: [], n: 2 } }, tree)).toBe(false);
    expect(inFirstSeenOrder(JSON.parse('{"path":"b.py","__proto__":{}}'), tree)).toBe(false);
    expect(inFirstSeenOrder({ path: 'x' }, {})).toBe(false);
    expect(inFirstSeenOrder({ path: 'x' }, { k: ['path'] })).toBe(true);
  });
});
