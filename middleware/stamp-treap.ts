// What: an intrusive treap (a binary search tree balanced by random priorities) of nodes keyed by a
// unique number (TenantLru: a tenant's oldest entry's stamp), each carrying two values (`c`, `w`)
// with their maxima over its subtree, so that "the node of least key whose c (or w) is at least t"
// is one walk from the root: TenantLru's eviction picks the tenant with the oldest entry among
// those over their reserve without scanning every tenant.
// Complexity: insert, remove, update O(log n) expected (recursion depth = tree depth, ~2 ln n);
// first, firstWith O(log n) expected. No allocation after a node exists (split results go through
// fields). Settings: none; priorities from a fixed-seed xorshift, so runs repeat exactly (the
// answers never depend on them, only the shape does).

export interface TreapNode<N> {
  /** The key the node is stored under (unique in the tree; set before insert, kept while in it). */
  key: number;
  prio: number;
  left: N | undefined;
  right: N | undefined;
  /** The node's own values (update() after changing them in place), and their subtree maxima. */
  c: number;
  w: number;
  maxC: number;
  maxW: number;
}

export class StampTreap<N extends TreapNode<N>> {
  root: N | undefined;
  private seed = 0x9e3779b9;
  private splitLeft: N | undefined;
  private splitRight: N | undefined;

  /** A priority for a new node (xorshift32). */
  nextPrio(): number {
    let x = this.seed;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.seed = x >>> 0;
    return this.seed;
  }

  insert(n: N): void {
    n.left = undefined;
    n.right = undefined;
    n.maxC = n.c;
    n.maxW = n.w;
    this.root = this.ins(this.root, n);
  }

  /** Removes `n` (in the tree, under n.key). */
  remove(n: N): void {
    this.root = this.del(this.root as N, n.key);
    n.left = undefined;
    n.right = undefined;
  }

  /** After `n`'s c or w changed in place (its key unchanged). */
  update(n: N): void {
    this.upd(this.root as N, n.key);
  }

  /** The node of least key. */
  first(): N | undefined {
    let t = this.root;
    while (t?.left !== undefined) t = t.left;
    return t;
  }

  /** The node of least key whose c (byC) or w is at least `min`. */
  firstWith(byC: boolean, min: number): N | undefined {
    let t = this.root;
    while (t !== undefined) {
      const l = t.left;
      if (l !== undefined && (byC ? l.maxC : l.maxW) >= min) t = l;
      else if ((byC ? t.c : t.w) >= min) return t;
      else if (t.right !== undefined && (byC ? t.right.maxC : t.right.maxW) >= min) t = t.right;
      else return undefined;
    }
    return undefined;
  }

  private ins(t: N | undefined, n: N): N {
    if (t === undefined) return n;
    if (n.prio > t.prio) {
      this.split(t, n.key);
      n.left = this.splitLeft;
      n.right = this.splitRight;
      pull(n);
      return n;
    }
    if (n.key < t.key) t.left = this.ins(t.left, n);
    else t.right = this.ins(t.right, n);
    pull(t);
    return t;
  }

  /** Splits `t` into keys < key (splitLeft) and > key (splitRight). */
  private split(t: N | undefined, key: number): void {
    if (t === undefined) {
      this.splitLeft = undefined;
      this.splitRight = undefined;
      return;
    }
    if (t.key < key) {
      this.split(t.right, key);
      t.right = this.splitLeft;
      pull(t);
      this.splitLeft = t;
    } else {
      this.split(t.left, key);
      t.left = this.splitRight;
      pull(t);
      this.splitRight = t;
    }
  }

  private del(t: N, key: number): N | undefined {
    if (t.key === key) return merge(t.left, t.right);
    if (key < t.key) t.left = this.del(t.left as N, key);
    else t.right = this.del(t.right as N, key);
    pull(t);
    return t;
  }

  private upd(t: N, key: number): void {
    if (key < t.key) this.upd(t.left as N, key);
    else if (key > t.key) this.upd(t.right as N, key);
    pull(t);
  }
}

function merge<N extends TreapNode<N>>(a: N | undefined, b: N | undefined): N | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  if (a.prio > b.prio) {
    a.right = merge(a.right, b);
    pull(a);
    return a;
  }
  b.left = merge(a, b.left);
  pull(b);
  return b;
}

function pull<N extends TreapNode<N>>(n: N): void {
  let c = n.c;
  let w = n.w;
  const l = n.left;
  const r = n.right;
  if (l !== undefined) {
    if (l.maxC > c) c = l.maxC;
    if (l.maxW > w) w = l.maxW;
  }
  if (r !== undefined) {
    if (r.maxC > c) c = r.maxC;
    if (r.maxW > w) w = r.maxW;
  }
  n.maxC = c;
  n.maxW = w;
}
