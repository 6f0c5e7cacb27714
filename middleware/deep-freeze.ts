// Deep-frozen values: session-state parts are frozen once a store holds them, so every later call
// shares them instead of parsing or copying them, and anything derived from one (its canonical
// JSON, its size) is computed once per part. Only values frozen here count as deep-frozen (a
// shallow Object.freeze elsewhere says nothing about the children). Freezing also sizes: the JSON
// length with string escapes not counted (the UTF-16 code units its strings take), remembered per
// frozen object. O(new objects): the walk stops at values frozen before.
const sizes = new WeakMap<object, number>();

/** Freezes `v` and everything under it, in place; returns it. */
export function freezeDeep<T>(v: T): T {
  measure(v, true);
  return v;
}

export function isDeepFrozen(v: object): boolean {
  return sizes.has(v);
}

/** JSON length of a value, string escapes not counted; O(objects not frozen here). */
export function sizeOf(v: unknown): number {
  return measure(v, false);
}

function measure(v: unknown, freeze: boolean): number {
  if (v === null || v === undefined) return 4;
  switch (typeof v) {
    case 'string':
      return v.length + 2;
    case 'number':
    case 'boolean':
      return String(v).length;
    case 'object':
      break;
    default:
      return 4;
  }
  const known = sizes.get(v);
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
    Object.freeze(v);
    sizes.set(v, n);
  }
  return n;
}
