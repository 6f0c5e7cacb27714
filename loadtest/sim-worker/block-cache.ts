// vLLM-style prefix cache: the prompt is cut into full blocks of `blockSize` tokens; each
// block's key is a hash chained over (parent key, block ids), so a block only hits when its
// whole prefix matches. Only full blocks are cached, and a hit never covers the last prompt
// token. Blocks of running requests are referenced; unreferenced blocks sit in a free queue
// and are evicted least-recently-freed first, the tail of a sequence before its head (vLLM
// frees a request's blocks in reverse order). When every block is referenced, new blocks
// simply go uncached. A request's `cache_salt` is mixed into its first block's key only (as vLLM
// does), so the whole chain of a salted prompt differs from the same prompt under another salt.
// Cost: O(prompt/blockSize) map operations per request.
import { maxCacheable, type CacheLease, type PrefixCache, type PrefixCacheStats } from './prefix-cache.ts';

export const DEFAULT_BLOCK_SIZE = 16;

interface Block {
  key: string;
  refs: number;
}

interface BlockLease extends CacheLease {
  prompt: ArrayLike<number>;
  /** Blocks this request references, in sequence order. */
  held: Block[];
  /** Chain key of the last held block ('' = root). */
  tailKey: string;
  done: boolean;
}

/** Chained 2×32-bit FNV-1a-style hash over the parent key and the block's token ids. */
export function blockKey(parent: string, ids: ArrayLike<number>, from: number, to: number): string {
  let h1 = 0x811c9dc5;
  let h2 = 0x9e3779b1;
  for (let i = 0; i < parent.length; i++) {
    const c = parent.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(h2 ^ c, 0x85ebca6b);
  }
  for (let i = from; i < to; i++) {
    const t = ids[i] + 1;
    h1 = Math.imul(h1 ^ t, 0x01000193);
    h2 = Math.imul(h2 ^ (t >>> 0), 0xc2b2ae35);
    h2 ^= h2 >>> 15;
  }
  return (h1 >>> 0).toString(36) + '.' + (h2 >>> 0).toString(36) + '.' + (to - from);
}

/** Parent key of the first block: empty, or the salt (vLLM hashes it into block 0's extra keys). */
const rootKey = (salt: string | undefined): string => (salt ? `salt:${salt}` : '');

export class BlockCache implements PrefixCache {
  readonly kind = 'block' as const;
  private readonly blocks = new Map<string, Block>();
  /** Unreferenced cached blocks; Map insertion order = eviction order (front first). */
  private readonly free = new Map<string, Block>();
  private readonly capacityBlocks: number;
  private partialRunning = 0;
  private counters: PrefixCacheStats = { queries: 0, hits: 0, evictions: 0 };

  constructor(
    capacityTokens: number,
    readonly blockSize: number = DEFAULT_BLOCK_SIZE,
  ) {
    if (!(blockSize >= 1)) throw new Error('block size must be >= 1');
    this.capacityBlocks = Math.max(1, Math.floor(capacityTokens / blockSize));
  }

  begin(prompt: ArrayLike<number>, salt?: string): CacheLease {
    const bs = this.blockSize;
    const limitBlocks = Math.floor(maxCacheable(prompt.length) / bs);
    let parent = rootKey(salt);
    let hitBlocks = 0;
    const held: Block[] = [];
    const fullBlocks = Math.floor(prompt.length / bs);
    let hitting = true;
    for (let b = 0; b < fullBlocks; b++) {
      const key = blockKey(parent, prompt, b * bs, (b + 1) * bs);
      let block = this.blocks.get(key);
      if (block && hitting && b < limitBlocks) hitBlocks++;
      else hitting = false;
      if (block) this.ref(block);
      else {
        block = this.allocate(key);
        if (!block) break; // cache full of running blocks: the rest runs uncached
      }
      held.push(block);
      parent = key;
    }
    if (prompt.length % bs) this.partialRunning++;
    const cachedTokens = hitBlocks * bs;
    this.counters.queries += prompt.length;
    this.counters.hits += cachedTokens;
    const lease: BlockLease = { cachedTokens, prompt, held, tailKey: parent, done: false };
    return lease;
  }

  finish(lease: CacheLease, output: ArrayLike<number>): void {
    const l = lease as BlockLease;
    if (l.done) return;
    l.done = true;
    if (l.prompt.length % this.blockSize) this.partialRunning--;
    const bs = this.blockSize;
    // The sequence whose KV exists: prompt + every output token except the last.
    const seqLen = l.prompt.length + Math.max(0, output.length - 1);
    const seq = (i: number): number => (i < l.prompt.length ? l.prompt[i] : output[i - l.prompt.length]);
    const view = { length: seqLen } as { length: number; [i: number]: number };
    let parent = l.tailKey;
    // Only extend when every prompt block was held: a break in the chain ends caching.
    if (l.held.length === Math.floor(l.prompt.length / bs)) {
      for (let b = l.held.length; b < Math.floor(seqLen / bs); b++) {
        for (let i = b * bs; i < (b + 1) * bs; i++) view[i] = seq(i);
        const key = blockKey(parent, view, b * bs, (b + 1) * bs);
        let block = this.blocks.get(key);
        if (block) this.ref(block);
        else block = this.allocate(key);
        if (!block) break;
        l.held.push(block);
        parent = key;
      }
    }
    for (let i = l.held.length - 1; i >= 0; i--) this.unref(l.held[i]);
    l.held = [];
  }

  usage(): number {
    const used = this.blocks.size - this.free.size + this.partialRunning;
    return Math.min(1, used / this.capacityBlocks);
  }

  /** Cached blocks currently stored (referenced or not). */
  size(): number {
    return this.blocks.size;
  }

  has(prefix: ArrayLike<number>, salt?: string): number {
    let parent = rootKey(salt);
    let n = 0;
    for (let b = 0; b < Math.floor(prefix.length / this.blockSize); b++) {
      parent = blockKey(parent, prefix, b * this.blockSize, (b + 1) * this.blockSize);
      if (!this.blocks.has(parent)) break;
      n++;
    }
    return n;
  }

  flush(): void {
    for (const [key] of this.free) this.blocks.delete(key);
    this.free.clear();
  }

  stats(): PrefixCacheStats {
    return { ...this.counters };
  }

  private ref(block: Block): void {
    if (block.refs === 0) this.free.delete(block.key);
    block.refs++;
  }

  private unref(block: Block): void {
    block.refs--;
    if (block.refs === 0) this.free.set(block.key, block);
  }

  private allocate(key: string): Block | undefined {
    if (this.blocks.size + this.partialRunning >= this.capacityBlocks) {
      const victim = this.free.values().next();
      if (victim.done) return undefined;
      this.free.delete(victim.value.key);
      this.blocks.delete(victim.value.key);
      this.counters.evictions++;
    }
    const block: Block = { key, refs: 1 };
    this.blocks.set(key, block);
    return block;
  }
}
