// Deep-frozen values carry their size on themselves (a private field), or, when something else made
// them non-extensible first, in a side table: either way the value is frozen all the way down, sized
// like its JSON (escapes not counted), known as deep-frozen, and nothing that reflects on it (keys,
// JSON, spread, structuredClone, deep equality) sees a trace of the bookkeeping.
import { describe, expect, it } from 'vitest';
import { freezeDeep, isDeepFrozen, sizeOf } from '../../middleware/deep-freeze.ts';

describe('freezeDeep', () => {
  it('freezes and sizes every level; the bookkeeping is invisible', () => {
    const plain = { a: [1, { b: 'x', c: [true, null] }], d: { e: 'ünï' } };
    const v = structuredClone(plain);
    freezeDeep(v);
    for (const x of [v, v.a, v.a[1], (v.a[1] as { c: unknown[] }).c, v.d]) {
      expect(Object.isFrozen(x)).toBe(true);
      expect(isDeepFrozen(x as object)).toBe(true);
    }
    expect(sizeOf(v)).toBe(JSON.stringify(plain).length);
    expect(JSON.stringify(v)).toBe(JSON.stringify(plain));
    expect(Reflect.ownKeys(v)).toEqual(['a', 'd']);
    expect(Reflect.ownKeys(v.a)).toEqual(['0', '1', 'length']);
    expect({ ...v }).toEqual(plain);
    expect(v).toEqual(plain);
    expect(plain).toEqual(v);
    const copy = structuredClone(v);
    expect(copy).toEqual(plain);
    // A copy is neither frozen nor known as deep-frozen.
    expect(Object.isFrozen(copy)).toBe(false);
    expect(isDeepFrozen(copy)).toBe(false);
  });

  it('takes objects another party froze (shallowly) or sealed: sized, frozen below, known', () => {
    const inner = { deep: [1, 2] };
    const shallow = Object.freeze({ inner, s: 'abc' });
    const sealed = Object.seal({ k: 'v' });
    const noExt = Object.preventExtensions([1, 'two']);
    // Before freezeDeep: shallow freezing says nothing about the children.
    expect(isDeepFrozen(shallow)).toBe(false);
    const v = freezeDeep({ shallow, sealed, noExt });
    for (const x of [v, shallow, inner, inner.deep, sealed, noExt]) {
      expect(Object.isFrozen(x)).toBe(true);
      expect(isDeepFrozen(x)).toBe(true);
    }
    expect(sizeOf(v)).toBe(JSON.stringify(v).length);
    expect(sizeOf(shallow)).toBe(JSON.stringify(shallow).length);
  });

  it('a value shared by two parents is frozen once and sized the same in both', () => {
    const shared = { list: ['a', 'b'] };
    const one = freezeDeep({ x: shared });
    const two = { y: shared, z: 1 };
    expect(isDeepFrozen(two)).toBe(false);
    expect(sizeOf(two)).toBe(JSON.stringify(two).length);
    freezeDeep(two);
    expect(isDeepFrozen(two)).toBe(true);
    expect(sizeOf(one)).toBe(JSON.stringify(one).length);
    expect(() => (shared.list as string[]).push('c')).toThrow(TypeError);
  });
});
