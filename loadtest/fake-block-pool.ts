// The fake upstream's KV block pool: the reference worker's BlockPool (sim-worker/block-pool.ts:
// a fixed number of blocks, cached blocks keyed by their chain hash, unreferenced ones evicted
// least-recently-freed first) with the free queue kept as a list threaded through the blocks
// themselves: freeing a block links it at the back, taking a free block again unlinks it, and
// eviction takes the front (a Map delete and set per block of every prompt, as BlockPool does,
// was most of the fake's time). The victims are BlockPool's: the list holds exactly the free
// blocks, in the order they were last freed.
// It replaced a lazy array of (block, stamp) entries compacted once mostly stale: amortised O(1),
// but each compaction walked ~250k entries at the default 1M-token capacity in one go, 13-17 ms
// that landed inside one call in ~300 (a CPU profile of the fake during `bench overhead`'s c1
// runs: the slowest 2 % of calls, direct and through ctxgate alike, spent most of their time there).
// Lookups along a chain: each block remembers the block that followed it in the last request that
// held it (`next`), and find() tries that one first: a session's next call resends its chain, so
// its blocks are found by a key compare each instead of a lookup in a Map of every cached block
// (the hint is only taken while it is cached under that key: same result as the Map's).
// Cost: O(1) per operation, worst case; keys are numbers. Memory: one Map entry and one block
// object per cached block; an evicted block drops its hint, so hints keep at most one evicted
// block alive per cached block.

export interface FakeBlock {
  key: number;
  refs: number;
  /** false once evicted (cached nowhere; a later block of its key is a new object) */
  cached: boolean;
  /** the block after it in the last request chain that held it (a lookup hint) */
  next: FakeBlock | undefined;
  /** neighbours in the free list (refs 0 and cached: linked; otherwise both undefined) */
  freePrev: FakeBlock | undefined;
  freeNext: FakeBlock | undefined;
}

export class FakeBlockPool {
  private readonly cached = new Map<number, FakeBlock>();
  /** the free list's ends: the least recently freed block first */
  private freeHead: FakeBlock | undefined;
  private freeTail: FakeBlock | undefined;
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
    // a block object is cached under its key until evicted; a later block of that key is a new
    // object, so a live hint with the key is the Map's answer
    if (hint !== undefined && hint.key === key && hint.cached) return hint;
    return this.cached.get(key);
  }

  cachedBlocks(): number {
    return this.cached.size;
  }

  ref(block: FakeBlock): void {
    // a cached block nobody holds is on the free list: taken again, it leaves it
    if (block.refs++ === 0) this.unlink(block);
  }

  unref(block: FakeBlock): void {
    if (--block.refs > 0) return;
    // freed: the most recently freed block, at the back
    block.freePrev = this.freeTail;
    block.freeNext = undefined;
    if (this.freeTail) this.freeTail.freeNext = block;
    else this.freeHead = block;
    this.freeTail = block;
  }

  /** A new referenced block cached under `key`; undefined when every block is in use. */
  allocate(key: number): FakeBlock | undefined {
    if (this.cached.size + this.privateBlocks >= this.capacity && !this.evictOne()) return undefined;
    const block: FakeBlock = {
      key,
      refs: 1,
      cached: true,
      next: undefined,
      freePrev: undefined,
      freeNext: undefined,
    };
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

  private unlink(b: FakeBlock): void {
    if (b.freePrev) b.freePrev.freeNext = b.freeNext;
    else this.freeHead = b.freeNext;
    if (b.freeNext) b.freeNext.freePrev = b.freePrev;
    else this.freeTail = b.freePrev;
    b.freePrev = undefined;
    b.freeNext = undefined;
  }

  /** Evicts the least recently freed block (the list holds only blocks nobody holds). */
  private evictOne(): boolean {
    const b = this.freeHead;
    if (b === undefined) return false;
    this.unlink(b);
    this.cached.delete(b.key);
    b.cached = false;
    b.next = undefined;
    this.evictions++;
    return true;
  }
}
