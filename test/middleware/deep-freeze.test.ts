// Deep-frozen values carry their size on themselves (a private field), or, when something else made
// them non-extensible first, in a side table: either way the value is frozen all the way down, sized
// like its JSON (escapes not counted), known as deep-frozen, and nothing that reflects on it (keys,
// JSON, spread, structuredClone, deep equality) sees a trace of the bookkeeping.
import { describe, expect, it } from 'vitest';
import {
  freezeDeep,
  freezeEdited,
  frozenAppend,
  indicesFrom,
  isDeepFrozen,
  sizeOf,
} from '../../middleware/deep-freeze.ts';

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

  it('frozenAppend: a ring gaining items is frozen and sized as sizeOf sizes its copy, frozen before or not', () => {
    const rec = (i: number) => ({
      call: i,
      cause: i % 3 === 0 ? 'none' : `edit ünï ${i}`,
      at: i * 1.5,
      tags: [i, null],
    });
    for (const frozenPrev of [true, false])
      for (const size of [1, 3, 100]) {
        let ring: readonly ReturnType<typeof rec>[] = frozenPrev ? freezeDeep([]) : [];
        for (let i = 0; i < 130; i++) {
          const added = i % 7 === 0 ? [rec(i), rec(i + 1000)] : [rec(i)];
          const drop = Math.max(0, ring.length + added.length - size);
          const next = frozenAppend(ring, drop, added);
          expect(next).toEqual([...ring.slice(drop), ...added]);
          expect(isDeepFrozen(next)).toBe(true);
          expect(Object.isFrozen(next[next.length - 1])).toBe(true);
          expect(sizeOf(next), `${frozenPrev} ${size} ${i}`).toBe(sizeOf(structuredClone(next)));
          ring = frozenPrev ? next : structuredClone(next);
        }
      }
    expect(sizeOf(frozenAppend(freezeDeep([{ a: 1 }]), 5, []))).toBe(2);
    expect(frozenAppend(freezeDeep([1, 2]), 0, [])).toEqual([1, 2]);
    expect(sizeOf(frozenAppend(freezeDeep([1, 2]), 1, []))).toBe(JSON.stringify([2]).length);
  });

  it('freezeEdited: a copy edited at the listed keys is frozen and sized as sizeOf sizes its copy', () => {
    // A seeded walk of edits: appends, replacements, truncations, record keys added, replaced
    // (with undefined too) and deleted, from frozen (sized) and unfrozen previous versions.
    let x = 7;
    const rnd = (n: number): number => {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      return (x >>> 16) % n;
    };
    const item = (i: number): unknown => (i % 3 === 0 ? `ünï ${i}` : i % 3 === 1 ? { i, tags: [i, null] } : i * 1.5);
    let arr: readonly unknown[] = freezeDeep([]);
    let rec: Readonly<Record<string, unknown>> = freezeDeep({});
    let edits = 0;
    for (let step = 0; step < 400; step++) {
      const a = [...arr];
      const from = rnd(a.length + 1);
      if (rnd(4) === 0) a.length = from;
      else for (let i = from, end = from + 1 + rnd(3); i < end; i++) a[i] = item(step * 10 + i);
      while (a.length > 0 && a[a.length - 1] === undefined) a.pop();
      const nextArr = freezeEdited(arr, a, indicesFrom(arr, a, from));
      expect(isDeepFrozen(nextArr)).toBe(true);
      expect(sizeOf(nextArr), `array step ${step}`).toBe(sizeOf(structuredClone(nextArr)));
      const r: Record<string, unknown> = { ...rec };
      const keys = new Set<string>();
      for (let j = rnd(3); j >= 0; j--) {
        const k = `k${rnd(12)}`;
        keys.add(k);
        const op = rnd(4);
        if (op === 0) delete r[k];
        else r[k] = op === 1 ? undefined : item(step * 10 + j);
      }
      const nextRec = freezeEdited(rec, r, keys);
      expect(isDeepFrozen(nextRec)).toBe(true);
      expect(sizeOf(nextRec), `record step ${step}`).toBe(sizeOf(structuredClone(nextRec)));
      // Every fifth step starts from an unfrozen copy: sized the plain way.
      arr = step % 5 === 4 ? structuredClone(nextArr) : nextArr;
      edits += nextArr.length;
      rec = step % 5 === 4 ? structuredClone(nextRec) : nextRec;
    }
    // The walk kept the lists long (replacements, not only appends, were sized).
    expect(edits).toBeGreaterThan(1000);
  });
});
