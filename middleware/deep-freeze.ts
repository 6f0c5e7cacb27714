// Deep-frozen values: session-state parts are frozen once a store holds them, so every later call
// shares them instead of parsing or copying them, and anything derived from one (its canonical
// JSON, its size) is computed once per part. Only values frozen here count as deep-frozen (a
// shallow Object.freeze elsewhere says nothing about the children). Freezing also sizes: the JSON
// length with string escapes not counted (the UTF-16 code units its strings take), remembered per
// frozen object. O(new objects): the walk stops at values frozen before.
// The size is kept in a private class field stamped onto the object itself (the return-override
// idiom below), not in a WeakMap: a WeakMap holding every frozen part of every session is an
// ephemeron table that costs ~1-2 µs a set under churn (rehashes of a table of ~100k keys whose
// dead entries each GC clears) plus its processing in every GC; a private field is an ordinary
// in-object property that no reflection (keys, JSON, spread, structuredClone, equality) sees.
// An object that is no longer extensible (frozen elsewhere) is not stamped: its size goes to the
// WeakMap, the one place such objects are remembered.

/** `new Base(o)` returns `o` itself, so a subclass's private fields are installed on `o`. */
class Base {
  constructor(o: object) {
    // biome-ignore lint/correctness/noConstructorReturn: returning `o` is the idiom (fields land on `o`).
    return o as Base;
  }
}

/** Carries the size of a deep-frozen object on the object (see above). */
class Sized extends Base {
  #size: number;
  constructor(o: object, size: number) {
    super(o);
    this.#size = size;
  }
  static of(o: object): number | undefined {
    return #size in o ? (o as Sized).#size : undefined;
  }
}

/** Sizes of deep-frozen objects that could not be stamped (not extensible when first frozen here). */
const sealed = new WeakMap<object, number>();

// Only an object that was not extensible when first frozen here is in `sealed`, and no object
// becomes extensible again: an extensible one (every object the stages make new) skips that look-up.
const knownSize = (o: object): number | undefined =>
  Sized.of(o) ?? (Object.isExtensible(o) ? undefined : sealed.get(o));

/** Freezes `v` and everything under it, in place; returns it. */
export function freezeDeep<T>(v: T): T {
  measure(v, true);
  return v;
}

/**
 * `prev.slice(drop)` followed by `added`, deep-frozen: a ring or log that gains a few items a call.
 * When `prev` is deep-frozen its size gives the new array's without visiting the items kept (each a
 * cold object by the next call): O(drop + added) instead of O(items). The same size as sizeOf.
 */
export function frozenAppend<T>(prev: readonly T[], drop: number, added: readonly T[]): readonly T[] {
  // Spread then splice: V8 has no fast path for slice() of a frozen array (frozen-copy.ts).
  const out = [...prev];
  if (drop > 0) out.splice(0, drop);
  for (const x of added) out.push(x);
  const prevSize = knownSize(prev);
  if (prevSize === undefined || out.length === 0) return freezeDeep(out);
  // An array's size is 1 + Σ (item + 1), or 2 when empty (see measure).
  let inner = prev.length > 0 ? prevSize - 1 : 0;
  for (let i = 0; i < Math.min(drop, prev.length); i++) inner -= measure(prev[i], true) + 1;
  for (const x of added) inner += measure(x, true) + 1;
  new Sized(out, 1 + inner);
  return Object.freeze(out);
}

/**
 * Deep-freezes `next`, a new container (array or record) equal to the deep-frozen `prev` except
 * at `keys` (indices or keys added, replaced or removed there; each listed once), and sizes it
 * from prev's size: O(keys) instead of a visit of every item, so a part copied and edited each
 * call costs its store put what changed, not its length. Where prev's size is unknown (not frozen
 * here), `next` is walked like freezeDeep does. The same size as sizeOf gives `next`'s copy.
 */
export function freezeEdited<T extends object>(prev: T, next: T, keys: Iterable<string | number>): T {
  const prevSize = knownSize(prev);
  if (prevSize === undefined || knownSize(next) !== undefined || !Object.isExtensible(next)) return freezeDeep(next);
  // An array's size is 1 + Σ (item + 1), a record's 1 + Σ (key + 4 + value) over keys whose value
  // is not undefined, either one 2 when that sum is empty (see measure); every term is ≥ 2.
  const isArray = Array.isArray(next);
  let inner = prevSize === 2 ? 0 : prevSize - 1;
  for (const k of keys) inner += editTerm(next, k, isArray) - editTerm(prev, k, isArray);
  new Sized(next, inner === 0 ? 2 : 1 + inner);
  return Object.freeze(next);
}

/** freezeEdited's term of key `k` in `o`. A module function, not a closure made per call: tsx
 * (esbuild keepNames) names every `const f = () =>`, a defineProperty of ~1 µs each time. */
function editTerm(o: object, k: string | number, isArray: boolean): number {
  if (isArray) return (k as number) < (o as unknown[]).length ? measure((o as unknown[])[k as number], true) + 1 : 0;
  const x = Object.hasOwn(o, k) ? (o as Record<string, unknown>)[k] : undefined;
  return x === undefined ? 0 : String(k).length + 4 + measure(x, true);
}

/** Indices `from` up to the longer of two arrays' lengths: those where `next` may differ from `prev`.
 * An array, not a generator: usually one or two indices, and a generator object and its resumes
 * cost more than the array. */
export function indicesFrom(prev: readonly unknown[], next: readonly unknown[], from: number): number[] {
  const out: number[] = [];
  for (let i = from; i < Math.max(prev.length, next.length); i++) out.push(i);
  return out;
}

export function isDeepFrozen(v: object): boolean {
  return knownSize(v) !== undefined;
}

/** JSON length of a value, string escapes not counted; O(objects not frozen here). */
export function sizeOf(v: unknown): number {
  return measure(v, false);
}

/** 10^0 … 10^20, each exact as a double. */
const POW10 = [
  1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20,
];

/**
 * `String(v).length` without building the string: a state holds a few numbers per object (call
 * counts, indices, timestamps), and a timestamp's decimal conversion is a dtoa each time. An
 * integer below 10^21 in magnitude is written in plain decimal, one character per digit (its
 * last digits may be zeros, never fewer of them), after a '-' when negative ("0" for -0); any
 * other number (fractions, exponents, NaN, Infinity) takes String's own length.
 */
export function numberLength(v: number): number {
  if (!Number.isInteger(v) || v >= 1e21 || v <= -1e21) return String(v).length;
  const a = v < 0 ? -v : v;
  let n = v < 0 ? 2 : 1;
  for (let k = 1; k < POW10.length && a >= POW10[k]; k++) n++;
  return n;
}

function measure(v: unknown, freeze: boolean): number {
  if (v === null || v === undefined) return 4;
  switch (typeof v) {
    case 'string':
      return v.length + 2;
    case 'number':
      return numberLength(v);
    case 'boolean':
      return v ? 4 : 5;
    case 'object':
      break;
    default:
      return 4;
  }
  const known = knownSize(v);
  if (known !== undefined) return known;
  // Brackets, then per item its comma (one fewer than items), per key its quotes and colon.
  let n = 1;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) n += measure(v[i], freeze) + 1;
  } else {
    for (const k of Object.keys(v)) {
      const x = (v as Record<string, unknown>)[k];
      if (x !== undefined) n += k.length + 4 + measure(x, freeze);
    }
  }
  if (n === 1) n = 2;
  if (freeze && !ArrayBuffer.isView(v)) {
    // Stamped before it is frozen: a private field is never added to a non-extensible object.
    if (Object.isExtensible(v)) new Sized(v, n);
    else sealed.set(v, n);
    Object.freeze(v);
  }
  return n;
}
