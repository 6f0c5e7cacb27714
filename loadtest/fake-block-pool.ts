// The fake upstream's KV block pool: the reference worker's BlockPool (sim-worker/block-pool.ts:
// a fixed number of blocks, cached blocks keyed by their chain hash, unreferenced ones evicted
// least-recently-freed first) with the free queue kept lazily: freeing a block appends it to an
// array with a fresh stamp instead of moving it to the back of a Map (a delete and a set per block
// of every prompt, most of the fake's time), and eviction takes the oldest entry whose stamp is the
// block's current one and that no request holds. The victims are BlockPool's: the live entries,
// in array order, are the free blocks in the order they were last freed.
// Lookups along a chain: each block remembers the block that followed it in the last request that
// held it (`next`), and find() tries that one first: a session's next call resends its chain, so
// its blocks are found by a key compare each instead of a lookup in a Map of every cached block
// (the hint is only taken while it is cached under that key: same result as the Map's).
// Cost: O(1) amortised per operation (the array is compacted once mostly stale); keys are numbers.
// Memory: at most 4 entries per cached block + 4096; an evicted block drops its hint, so hints
// keep at most one evicted block alive per cached block.

export interface FakeBlock {
  key: number;
  refs: number;
  /** stamp of its last free; -1 while cached nowhere (evicted) */
  stamp: number;
  /** the block after it in the last request chain that held it (a lookup hint) */
  next: FakeBlock | undefined;
}

export class FakeBlockPool {
  private readonly cached = new Map<number, FakeBlock>();
  private qBlock: FakeBlock[] = [];
  private qStamp: number[] = [];
  private head = 0;
  private clock = 0;
  /** referenced blocks without a key (a request's trailing partial block) */
  private privateBlocks = 0;
  evictions = 0;

  constructor(readonly capacity: number) {
    if (!(capacity >= 1)) throw new Error('block pool capacity must be >= 1');
  }

  get(key: number): FakeBlock | undefined {
    return this.cached.get(key);
  }

  /** The block cached under `key`, the block after `prev` in its last chain tried first. */
  find(key: number, prev: FakeBlock | undefined): FakeBlock | undefined {
    const hint = prev?.next;
    // a block object is cached under its key until evicted (stamp -1); a later block of that key
    // is a new object, so a live hint with the key is the Map's answer
    if (hint !== undefined && hint.key === key && hint.stamp !== -1) return hint;
    return this.cached.get(key);
  }

  cachedBlocks(): number {
    return this.cached.size;
  }

  ref(block: FakeBlock): void {
    block.refs++;
  }

  unref(block: FakeBlock): void {
    if (--block.refs > 0) return;
    block.stamp = ++this.clock;
    this.qBlock.push(block);
    this.qStamp.push(block.stamp);
    // mostly stale entries (blocks freed again since): keep each block's latest, in order
    if (this.qBlock.length - this.head > 4 * this.cached.size + 4096) {
      let k = 0;
      for (let i = this.head; i < this.qBlock.length; i++) {
        const b = this.qBlock[i];
        if (b.stamp !== this.qStamp[i]) continue;
        this.qBlock[k] = b;
        this.qStamp[k++] = this.qStamp[i];
      }
      this.qBlock.length = k;
      this.qStamp.length = k;
      this.head = 0;
    }
  }

  /** A new referenced block cached under `key`; undefined when every block is in use. */
  allocate(key: number): FakeBlock | undefined {
    if (this.cached.size + this.privateBlocks >= this.capacity && !this.evictOne()) return undefined;
    const block: FakeBlock = { key, refs: 1, stamp: 0, next: undefined };
    this.cached.set(key, block);
    return block;
  }

  /** A referenced block without a key (BlockPool.allocate() without one); false when none is free. */
  allocatePrivate(): boolean {
    if (this.cached.size + this.privateBlocks >= this.capacity && !this.evictOne()) return false;
    this.privateBlocks++;
    return true;
  }

  releasePrivate(): void {
    this.privateBlocks--;
  }

  private evictOne(): boolean {
    while (this.head < this.qBlock.length) {
      const b = this.qBlock[this.head];
      const t = this.qStamp[this.head];
      this.head++;
      // freed again since (a later entry stands for it), held by a request, or gone
      if (b.stamp !== t || b.refs > 0) continue;
      this.cached.delete(b.key);
      b.stamp = -1;
      b.next = undefined;
      this.evictions++;
      this.compact();
      return true;
    }
    return false;
  }

  private compact(): void {
    if (this.head > 4096 && this.head * 2 > this.qBlock.length) {
      this.qBlock = this.qBlock.slice(this.head);
      this.qStamp = this.qStamp.slice(this.head);
      this.head = 0;
    }
  }
}
