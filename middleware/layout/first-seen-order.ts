// First-seen key order: the session remembers, per JSON object path, the order in which keys
// first appeared; later calls are rewritten to that order, so a framework that rebuilds its tool
// schemas from a dict every call still renders byte-identically. Keys never seen before keep the
// order they arrive in (first seen) and are appended to the remembered order.
// O(size of the value) per call; the tree holds keys only, never values.

export interface KeyTree {
  /** Key order of the object at this path (absent for arrays/scalars). */
  k?: string[];
  /** Child trees by key (objects) or by index (arrays). */
  c?: Record<string, KeyTree>;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The child tree under `key`, created only when absent: a tree with nothing new is not written
 * (a stored, frozen tree is then read without a copy; see canonical-tools-stage.ts). Own keys only:
 * the keys are the request's, and `constructor` or `__proto__` read through the prototype would
 * hand out a function or Object.prototype itself as a tree, which the caller then writes to. */
function child(tree: KeyTree, key: string): KeyTree {
  const c = tree.c;
  if (c !== undefined && Object.hasOwn(c, key)) return c[key];
  const made: KeyTree = {};
  setOwn((tree.c ??= {}), key, made);
  return made;
}

/** `o[key] = v` as an own property, also for `__proto__` (assigned, it would set the prototype). */
function setOwn<T>(o: Record<string, T>, key: string, v: T): void {
  if (key === '__proto__')
    Object.defineProperty(o, key, { value: v, writable: true, enumerable: true, configurable: true });
  else o[key] = v;
}

/** Returns `value` rewritten to the tree's key order, updating the tree in place with new keys
 * (and writing nothing to it when every key was seen before). */
export function applyFirstSeenOrder(value: unknown, tree: KeyTree): unknown {
  if (Array.isArray(value)) {
    return value.map((x, i) =>
      typeof x === 'object' && x !== null ? applyFirstSeenOrder(x, child(tree, String(i))) : x,
    );
  }
  if (!isPlainObject(value)) return value;
  const keys = Object.keys(value);
  let order: string[];
  if (!tree.k) {
    order = keys;
    tree.k = keys.slice();
  } else {
    const present = new Set(keys);
    const known = new Set(tree.k);
    const fresh = keys.filter((k) => !known.has(k));
    order = tree.k.filter((k) => present.has(k)).concat(fresh);
    if (fresh.length) tree.k.push(...fresh);
  }
  const out: Record<string, unknown> = {};
  for (const k of order) {
    const v = value[k];
    setOwn(out, k, typeof v === 'object' && v !== null ? applyFirstSeenOrder(v, child(tree, k)) : v);
  }
  return out;
}

/**
 * True only when applyFirstSeenOrder(value, tree) would write nothing to the tree and return a
 * value serialising like `value` (what a call that resends known shapes in their known order
 * meets): every object's keys are the tree's known keys in the tree's order, and every nested
 * object or array has its child tree already. Reads only, allocates nothing; a false answer just
 * means the full rewrite runs (a `__proto__` key, or a child found only on the prototype, is left
 * to it). O(size of the value).
 */
export function inFirstSeenOrder(value: unknown, tree: KeyTree): boolean {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const x = value[i];
      if (typeof x !== 'object' || x === null) continue;
      const c = ownChild(tree, String(i));
      if (c === undefined || !inFirstSeenOrder(x, c)) return false;
    }
    return true;
  }
  if (!isPlainObject(value)) return true;
  const known = tree.k;
  if (known === undefined) return false;
  // Each key found in the known order after the one before it: the keys are known ones, in the
  // order the rewrite gives them (a known key skipped here cannot come later: it is not found).
  let at = 0;
  for (const k of Object.keys(value)) {
    if (k === '__proto__') return false;
    while (at < known.length && known[at] !== k) at++;
    if (at === known.length) return false;
    at++;
    const v = value[k];
    if (typeof v !== 'object' || v === null) continue;
    const c = ownChild(tree, k);
    if (c === undefined || !inFirstSeenOrder(v, c)) return false;
  }
  return true;
}

function ownChild(tree: KeyTree, key: string): KeyTree | undefined {
  const c = tree.c;
  return c !== undefined && Object.hasOwn(c, key) ? c[key] : undefined;
}

/** Same value, same key order at every level (cheaper than comparing serialisations twice). */
export function sameSerialisation(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Orders items by a remembered name list; unseen names go last, sorted, and are remembered. */
export function applyFirstSeenList<T>(items: readonly T[], nameOf: (t: T) => string, seen: string[]): T[] {
  if (seen.length === 0) {
    seen.push(...items.map(nameOf));
    return items.slice();
  }
  const rank = new Map(seen.map((n, i) => [n, i]));
  const fresh = items
    .filter((t) => !rank.has(nameOf(t)))
    .sort((a, b) => (nameOf(a) < nameOf(b) ? -1 : nameOf(a) > nameOf(b) ? 1 : 0));
  for (const t of fresh) {
    rank.set(nameOf(t), seen.length);
    seen.push(nameOf(t));
  }
  // Stable sort keeps duplicates (same name twice) in their arrival order.
  return items.slice().sort((a, b) => rank.get(nameOf(a))! - rank.get(nameOf(b))!);
}
