// vLLM's KV block pool (vllm/v1/core/block_pool.py) reduced to what prefix caching needs: a fixed
// number of blocks; a full block is cached under its chain key; referenced blocks belong to running
// requests; unreferenced cached blocks wait in a free queue and are evicted least-recently-freed
// first (a request frees its blocks tail first, so a sequence's tail goes before its root). A
// block without a key (a partial or private block) only takes room while referenced. Keys are
// opaque (strings on the reference worker, interned numbers in the fleet simulator).
// Cost: O(1) Map operations per block.

export interface PoolBlock<K> {
  key: K | undefined;
  refs: number;
}

export interface BlockPoolEvents<K> {
  /** A keyed block became cached (vLLM BlockStored). */
  stored?(key: K): void;
  /** A cached block was evicted (vLLM BlockRemoved). */
  removed?(key: K): void;
}

export class BlockPool<K> {
  private readonly cached = new Map<K, PoolBlock<K>>();
  /** Unreferenced cached blocks; Map insertion order = eviction order (front first). */
  private readonly free = new Map<K, PoolBlock<K>>();
  /** Referenced blocks without a key. */
  private privateBlocks = 0;
  evictions = 0;

  constructor(
    readonly capacity: number,
    private readonly events: BlockPoolEvents<K> = {},
  ) {
    if (!(capacity >= 1)) throw new Error('block pool capacity must be >= 1');
  }

  /** The cached block under `key`, if any (no reference taken). */
  get(key: K): PoolBlock<K> | undefined {
    return this.cached.get(key);
  }

  /** Blocks referenced by running requests (what must stay resident). */
  usedBlocks(): number {
    return this.cached.size - this.free.size + this.privateBlocks;
  }

  /** Blocks that can be handed out now (empty or evictable). */
  availableBlocks(): number {
    return this.capacity - this.usedBlocks();
  }

  cachedBlocks(): number {
    return this.cached.size;
  }

  ref(block: PoolBlock<K>): void {
    if (block.refs === 0 && block.key !== undefined) this.free.delete(block.key);
    block.refs++;
  }

  unref(block: PoolBlock<K>): void {
    block.refs--;
    if (block.refs > 0) return;
    if (block.key === undefined) this.privateBlocks--;
    else this.free.set(block.key, block);
  }

  /** A new referenced block (cached under `key` when given); undefined when every block is in use. */
  allocate(key?: K): PoolBlock<K> | undefined {
    if (this.cached.size + this.privateBlocks >= this.capacity && !this.evictOne()) return undefined;
    const block: PoolBlock<K> = { key, refs: 1 };
    if (key === undefined) this.privateBlocks++;
    else {
      this.cached.set(key, block);
      this.events.stored?.(key);
    }
    return block;
  }

  /** Caches a referenced private block under `key` once its tokens are all computed (vLLM
   *  cache_full_blocks); false when another block already holds `key` (it stays private). */
  promote(block: PoolBlock<K>, key: K): boolean {
    if (block.key !== undefined || this.cached.has(key)) return false;
    block.key = key;
    this.privateBlocks--;
    this.cached.set(key, block);
    this.events.stored?.(key);
    return true;
  }

  /** Drops every unreferenced cached block (vLLM reset_prefix_cache). */
  flush(): void {
    for (const [key] of this.free) {
      this.cached.delete(key);
      this.events.removed?.(key);
    }
    this.free.clear();
  }

  private evictOne(): boolean {
    const victim = this.free.values().next();
    if (victim.done) return false;
    const key = victim.value.key as K;
    this.free.delete(key);
    this.cached.delete(key);
    this.evictions++;
    this.events.removed?.(key);
    return true;
  }
}
