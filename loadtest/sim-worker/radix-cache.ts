// SGLang-style prefix cache: a radix tree over token ids. Matching walks edges and splits a
// node where the prompt diverges mid-edge, so shared prefixes become shared nodes. Running
// requests lock their path (reference counts up to the root); locked nodes are never
// evicted. At capacity, unlocked leaves are evicted least-recently-used first (a parent whose
// last child goes becomes a leaf candidate). A hit never covers the last prompt token. A salted
// request (`cache_salt`; SGLang's RadixKey `extra_key`) matches and inserts under its own root, so
// equal token ids under different salts never share a node.
// With an event sink it reports what SGLang's radix cache publishes as KV events at page_size 1
// (SGLang's default, which this tree models): every inserted token is a page with its own hash,
// chained from the page before it (the parent node's last page across nodes), one BlockStored
// each; an evicted leaf reports its pages in one BlockRemoved; a flush that empties the tree is
// one AllBlocksCleared (SGLang's reset()). A split keeps the pages' hashes (SGLang splits
// node.hash_value with the key). A salted request's chain is seeded with its salt, and its pages
// carry the salt (SGLang's cache_salt on BlockStored).
// Cost: O(prompt) per match/insert, O(leaves·log) per eviction round.
import { blockKey } from './block-cache.ts';
import { maxCacheable, type CacheLease, type PrefixCache, type PrefixCacheStats } from './prefix-cache.ts';

/** Where a radix cache reports its pages (the KV event publisher, SGLang layout). */
export interface RadixEventSink {
  stored(key: string, parent: string | undefined, tokenIds: number[], salt: string | undefined): void;
  removedMany(keys: readonly string[]): void;
  cleared(): void;
}

export interface RadixNode {
  key: number[];
  /** page hash per token of `key` (only with an event sink) */
  pages: string[];
  children: Map<number, RadixNode>;
  parent: RadixNode | undefined;
  lockRef: number;
  lastAccess: number;
}

interface RadixLease extends CacheLease {
  prompt: ArrayLike<number>;
  locked: RadixNode;
  root: RadixNode;
  done: boolean;
}

function newNode(key: number[], parent: RadixNode | undefined, tick: number): RadixNode {
  return { key, pages: [], children: new Map(), parent, lockRef: 0, lastAccess: tick };
}

export class RadixCache implements PrefixCache {
  readonly kind = 'radix' as const;
  readonly root: RadixNode = newNode([], undefined, 0);
  /** One root per salt (the unsalted namespace is `root`); a root without children is dropped. */
  private readonly salted = new Map<string, RadixNode>();
  private tokens = 0;
  /** tokens of nodes with lockRef > 0 (lockedSize) */
  private locked = 0;
  private tick = 0;
  private runningUncached = 0;
  private counters: PrefixCacheStats = { queries: 0, hits: 0, evictions: 0 };
  /** a flush collects the removed pages (all gone: one AllBlocksCleared instead) */
  private flushed: string[] | undefined;

  constructor(
    readonly capacityTokens: number,
    private readonly sink?: RadixEventSink,
  ) {}

  /** Longest cached prefix of `ids` (first `limit` tokens); splits the node it ends inside. */
  match(ids: ArrayLike<number>, limit = ids.length, root: RadixNode = this.root): { length: number; node: RadixNode } {
    const now = ++this.tick;
    let node = root;
    let i = 0;
    node.lastAccess = now;
    while (i < limit) {
      const child = node.children.get(ids[i]);
      if (!child) break;
      let k = 0;
      while (k < child.key.length && i + k < limit && child.key[k] === ids[i + k]) k++;
      child.lastAccess = now;
      if (k < child.key.length) {
        node = this.split(child, k);
        i += k;
        break;
      }
      node = child;
      i += k;
    }
    return { length: i, node };
  }

  /** Inserts `ids` (evicting as needed); returns the node holding the deepest inserted token. */
  insert(ids: ArrayLike<number>, root: RadixNode = this.root): RadixNode {
    const { length, node } = this.match(ids, ids.length, root);
    if (length >= ids.length) return node;
    let room = this.capacityTokens - this.tokens - this.runningUncached;
    const want = ids.length - length;
    if (room < want) {
      node.lockRef++; // keep our own attach point alive while evicting
      this.evict(want - room);
      node.lockRef--;
      room = this.capacityTokens - this.tokens - this.runningUncached;
    }
    const take = Math.min(want, Math.max(0, room));
    if (take === 0) return node;
    const key = Array.from({ length: take }, (_, j) => ids[length + j]);
    const leaf = newNode(key, node, this.tick);
    node.children.set(key[0], leaf);
    this.tokens += take;
    if (this.sink) this.publish(leaf, root);
    return leaf;
  }

  /** One BlockStored per token page of a new leaf, chained from the page before it. */
  private publish(leaf: RadixNode, root: RadixNode): void {
    const salt = root === this.root ? undefined : this.saltOf(root);
    let parent = leaf.parent!.pages.at(-1);
    for (let j = 0; j < leaf.key.length; j++) {
      const page = blockKey(parent ?? (salt ? `salt:${salt}` : ''), leaf.key, j, j + 1);
      leaf.pages.push(page);
      this.sink!.stored(page, parent, [leaf.key[j]], salt);
      parent = page;
    }
  }

  private saltOf(root: RadixNode): string | undefined {
    for (const [salt, r] of this.salted) if (r === root) return salt;
    return undefined;
  }

  /** Gateway-sized blocks the tree holds whole: for each node, the block boundaries it crosses. */
  fullBlocks(blockSize: number): number {
    let n = 0;
    const stack: Array<[RadixNode, number]> = [this.root, ...this.salted.values()].map((r) => [r, 0]);
    while (stack.length) {
      const [node, depth] = stack.pop()!;
      for (const c of node.children.values()) {
        const end = depth + c.key.length;
        n += Math.floor(end / blockSize) - Math.floor(depth / blockSize);
        stack.push([c, end]);
      }
    }
    return n;
  }

  private rootFor(salt: string | undefined): RadixNode {
    if (!salt) return this.root;
    let r = this.salted.get(salt);
    if (!r) this.salted.set(salt, (r = newNode([], undefined, this.tick)));
    return r;
  }

  begin(prompt: ArrayLike<number>, salt?: string): CacheLease {
    const root = this.rootFor(salt);
    const hit = this.match(prompt, maxCacheable(prompt.length), root).length;
    const node = this.insert(prompt, root);
    this.lock(node);
    this.counters.queries += prompt.length;
    this.counters.hits += hit;
    const lease: RadixLease = { cachedTokens: hit, prompt, locked: node, root, done: false };
    return lease;
  }

  finish(lease: CacheLease, output: ArrayLike<number>): void {
    const l = lease as RadixLease;
    if (l.done) return;
    l.done = true;
    const seqLen = l.prompt.length + Math.max(0, output.length - 1);
    const seq = new Array<number>(seqLen);
    for (let i = 0; i < l.prompt.length; i++) seq[i] = l.prompt[i];
    for (let i = l.prompt.length; i < seqLen; i++) seq[i] = output[i - l.prompt.length];
    // Lock the new tail before releasing the old one so the path cannot be evicted in between.
    const tail = this.insert(seq, l.root);
    this.lock(tail);
    this.unlock(l.locked);
    this.unlock(tail);
  }

  lock(node: RadixNode): void {
    for (let n: RadixNode | undefined = node; n?.parent; n = n.parent)
      if (n.lockRef++ === 0) this.locked += n.key.length;
  }

  unlock(node: RadixNode): void {
    for (let n: RadixNode | undefined = node; n?.parent; n = n.parent)
      if (--n.lockRef === 0) this.locked -= n.key.length;
  }

  /** Tokens on paths running requests lock (SGLang's protected_size_); the rest of the tree is
   *  evictable (its evictable_size_). A split keeps the sum (both halves keep the lock count). */
  lockedSize(): number {
    return this.locked;
  }

  /** Evicts at least `needed` tokens from unlocked leaves, least recently used first. */
  evict(needed: number): number {
    const leaves: RadixNode[] = [];
    const stack = [this.root, ...this.salted.values()];
    while (stack.length) {
      const n = stack.pop()!;
      if (n.children.size === 0 && n.parent && n.lockRef === 0) leaves.push(n);
      for (const c of n.children.values()) stack.push(c);
    }
    leaves.sort((a, b) => b.lastAccess - a.lastAccess); // pop() takes the oldest
    let freed = 0;
    while (freed < needed && leaves.length) {
      const leaf = leaves.pop()!;
      const parent = leaf.parent!;
      parent.children.delete(leaf.key[0]);
      if (this.flushed) this.flushed.push(...leaf.pages);
      else if (this.sink && leaf.pages.length) this.sink.removedMany(leaf.pages);
      freed += leaf.key.length;
      this.tokens -= leaf.key.length;
      this.counters.evictions++;
      if (parent.parent && parent.children.size === 0 && parent.lockRef === 0) {
        // Insert keeping the oldest-last order (rare path; linear insert is fine).
        let at = leaves.length;
        while (at > 0 && leaves[at - 1].lastAccess < parent.lastAccess) at--;
        leaves.splice(at, 0, parent);
      }
    }
    for (const [salt, r] of this.salted) if (r.children.size === 0) this.salted.delete(salt);
    return freed;
  }

  /** SGLang's token_usage: (total − available − evictable) / total, the locked paths and what
   *  running requests hold outside the tree (the unlocked tree is evictable, as vLLM's free
   *  cached blocks are for its kv_cache_usage_perc). */
  usage(): number {
    return Math.min(1, (this.locked + this.runningUncached) / this.capacityTokens);
  }

  /** Tokens stored in the tree. */
  size(): number {
    return this.tokens;
  }

  flush(): void {
    this.flushed = [];
    try {
      this.evict(Number.MAX_SAFE_INTEGER);
    } finally {
      const gone = this.flushed;
      this.flushed = undefined;
      if (this.sink && gone.length) {
        if (this.tokens === 0) this.sink.cleared();
        else this.sink.removedMany(gone);
      }
    }
  }

  stats(): PrefixCacheStats {
    return { ...this.counters };
  }

  private split(child: RadixNode, at: number): RadixNode {
    const parent = child.parent!;
    const mid = newNode(child.key.slice(0, at), parent, child.lastAccess);
    mid.lockRef = child.lockRef;
    parent.children.set(mid.key[0], mid);
    child.key = child.key.slice(at);
    if (child.pages.length) {
      mid.pages = child.pages.slice(0, at);
      child.pages = child.pages.slice(at);
    }
    child.parent = mid;
    mid.children.set(child.key[0], child);
    return mid;
  }
}
