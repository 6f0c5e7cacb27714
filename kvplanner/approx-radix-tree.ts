// Multi-tenant approximate radix tree over characters, after SGLang's router (sgl-router /
// sgl-model-gateway src/policies/tree.rs): one tree for all workers, each node records which
// workers ("tenants") sent text through it and when; a worker's tree size is the characters of
// the nodes it appears on. Strings, not token ids, so routing needs no tokenizer. Characters are
// Unicode code points, as SGLang's Rust chars: a surrogate pair (an emoji) is one character, is
// never split between nodes, and keys one child.
// insert / prefixMatch: O(text length); evictBySize: O(k log k) for k removed leaves.
// Access times are a logical clock (deterministic in tests; only their order matters).

interface TreeNode {
  text: string;
  children: Map<string, TreeNode>;
  parent: TreeNode | null;
  /** tenant -> logical time of last access */
  tenants: Map<string, number>;
}

export interface PrefixMatch {
  /** characters (code points) of the query matched by the chosen tenant */
  matchedChars: number;
  tenant: string | undefined;
}

const isHigh = (c: number): boolean => c >= 0xd800 && c <= 0xdbff;
const isLow = (c: number): boolean => c >= 0xdc00 && c <= 0xdfff;

/** Code units shared from the start, never ending inside a surrogate pair of `a` (a lone
 *  surrogate is a character of its own, as keyAt keys it). Callers reach a child through its key,
 *  so the result is at least the key's length: the tree's loops always advance. */
function sharedPrefix(a: string, b: string, bStart: number): number {
  const n = Math.min(a.length, b.length - bStart);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(bStart + i)) i++;
  if (i > 0 && i < a.length && isHigh(a.charCodeAt(i - 1)) && isLow(a.charCodeAt(i))) i--;
  return i;
}

/** A walk that reached a child through its key shares at least that key: a step of 0 would
 *  split with an empty node and loop forever on the event loop, so it is an error, not a hang. */
function advance(shared: number): number {
  if (shared <= 0) throw new Error('approx radix tree: a keyed child shares nothing with the text');
  return shared;
}

/** The child key at `i`: the whole code point (two code units for a surrogate pair). */
function keyAt(s: string, i: number): string {
  return isHigh(s.charCodeAt(i)) && isLow(s.charCodeAt(i + 1)) ? s.slice(i, i + 2) : s[i];
}

/** Code points in s[from, to) (SGLang's chars().count()). */
export function codePoints(s: string, from = 0, to = s.length): number {
  let n = to - from;
  for (let i = from + 1; i < to; i++) if (isLow(s.charCodeAt(i)) && isHigh(s.charCodeAt(i - 1))) n--;
  return n;
}

export class ApproxRadixTree {
  private readonly root: TreeNode = { text: '', children: new Map(), parent: null, tenants: new Map() };
  private readonly chars = new Map<string, number>();
  private clock = 0;

  /** Characters held for `tenant` (SGLang's tenant_char_count). */
  size(tenant: string): number {
    return this.chars.get(tenant) ?? 0;
  }

  tenants(): string[] {
    return [...this.chars.keys()];
  }

  insert(text: string, tenant: string): void {
    const now = ++this.clock;
    let curr = this.root;
    curr.tenants.set(tenant, now);
    if (!this.chars.has(tenant)) this.chars.set(tenant, 0);
    let idx = 0;
    while (idx < text.length) {
      const c = keyAt(text, idx);
      let child = curr.children.get(c);
      if (!child) {
        const leaf: TreeNode = {
          text: text.slice(idx),
          children: new Map(),
          parent: curr,
          tenants: new Map([[tenant, now]]),
        };
        curr.children.set(c, leaf);
        this.chars.set(tenant, this.size(tenant) + codePoints(leaf.text));
        return;
      }
      const shared = advance(sharedPrefix(child.text, text, idx));
      if (shared < child.text.length) {
        // split: the new upper node inherits the child's tenants, so char counts stay the same
        const mid: TreeNode = {
          text: child.text.slice(0, shared),
          children: new Map(),
          parent: curr,
          tenants: new Map(child.tenants),
        };
        child.text = child.text.slice(shared);
        child.parent = mid;
        mid.children.set(keyAt(child.text, 0), child);
        curr.children.set(c, mid);
        child = mid;
      }
      if (!child.tenants.has(tenant)) this.chars.set(tenant, this.size(tenant) + codePoints(child.text));
      child.tenants.set(tenant, now);
      curr = child;
      idx += shared;
    }
  }

  /**
   * Longest match among `allowed` tenants; the tenant is the most recently active one on the
   * deepest node reached (SGLang takes the first in its map's order: any tenant there is equally
   * deep). Refreshes the chosen tenant's access times along the path, as SGLang does.
   */
  prefixMatch(text: string, allowed?: ReadonlySet<string>): PrefixMatch {
    const path: Array<{ node: TreeNode; end: number }> = [];
    let curr = this.root;
    let idx = 0;
    while (idx < text.length) {
      const child = curr.children.get(keyAt(text, idx));
      if (!child) break;
      const shared = advance(sharedPrefix(child.text, text, idx));
      idx += shared;
      path.push({ node: child, end: idx });
      curr = child;
      if (shared < child.text.length) break;
    }
    for (let k = path.length - 1; k >= 0; k--) {
      let best: string | undefined;
      let bestT = -1;
      for (const [t, at] of path[k].node.tenants) {
        if ((!allowed || allowed.has(t)) && at > bestT) {
          best = t;
          bestT = at;
        }
      }
      if (best !== undefined) {
        const now = ++this.clock;
        for (let j = 0; j <= k; j++) path[j].node.tenants.set(best, now);
        return { matchedChars: codePoints(text, 0, path[k].end), tenant: best };
      }
    }
    return { matchedChars: 0, tenant: undefined };
  }

  /** Characters of `text` matched on `tenant`'s own paths (read-only). */
  matchFor(text: string, tenant: string): number {
    let curr = this.root;
    let idx = 0;
    while (idx < text.length) {
      const child = curr.children.get(keyAt(text, idx));
      if (!child || !child.tenants.has(tenant)) break;
      const shared = advance(sharedPrefix(child.text, text, idx));
      idx += shared;
      if (shared < child.text.length) break;
      curr = child;
    }
    return codePoints(text, 0, idx);
  }

  /** SGLang's evict_tenant_by_size: drop each oversize tenant's least recently used leaves. */
  evictBySize(maxSize: number): number {
    let removed = 0;
    for (const [tenant, size] of this.chars) {
      if (size <= maxSize) continue;
      const heap = new LeafHeap();
      this.collectLeaves(this.root, tenant, heap);
      let left = size;
      while (left > maxSize) {
        const node = heap.pop();
        if (!node) break;
        const at = node.tenants.get(tenant);
        if (at === undefined) continue;
        node.tenants.delete(tenant);
        const chars = codePoints(node.text);
        left -= chars;
        removed += chars;
        const parent = node.parent;
        if (node.tenants.size === 0 && parent) parent.children.delete(keyAt(node.text, 0));
        if (parent && parent !== this.root && this.isLeafFor(parent, tenant))
          heap.push(parent, parent.tenants.get(tenant)!);
      }
      this.chars.set(tenant, left);
    }
    return removed;
  }

  removeTenant(tenant: string): void {
    const walk = (n: TreeNode): void => {
      for (const [k, c] of n.children) {
        walk(c);
        c.tenants.delete(tenant);
        if (c.tenants.size === 0) n.children.delete(k);
      }
    };
    walk(this.root);
    this.root.tenants.delete(tenant);
    this.chars.delete(tenant);
  }

  private isLeafFor(n: TreeNode, tenant: string): boolean {
    if (!n.tenants.has(tenant)) return false;
    for (const c of n.children.values()) if (c.tenants.has(tenant)) return false;
    return true;
  }

  private collectLeaves(n: TreeNode, tenant: string, heap: LeafHeap): void {
    let hasChild = false;
    for (const c of n.children.values()) {
      if (c.tenants.has(tenant)) {
        hasChild = true;
        this.collectLeaves(c, tenant, heap);
      }
    }
    if (!hasChild && n !== this.root && n.tenants.has(tenant)) heap.push(n, n.tenants.get(tenant)!);
  }
}

/** Binary min-heap of nodes by access time. */
class LeafHeap {
  private readonly items: Array<{ node: TreeNode; at: number }> = [];

  push(node: TreeNode, at: number): void {
    const a = this.items;
    a.push({ node, at });
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (a[p].at <= a[i].at) break;
      [a[p], a[i]] = [a[i], a[p]];
      i = p;
    }
  }

  pop(): TreeNode | undefined {
    const a = this.items;
    if (a.length === 0) return undefined;
    const top = a[0];
    const last = a.pop()!;
    if (a.length > 0) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && a[l].at < a[m].at) m = l;
        if (r < a.length && a[r].at < a[m].at) m = r;
        if (m === i) break;
        [a[m], a[i]] = [a[i], a[m]];
        i = m;
      }
    }
    return top.node;
  }
}
