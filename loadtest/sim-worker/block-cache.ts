// vLLM-style prefix cache: the prompt is cut into full blocks of `blockSize` tokens; each
// block's key is a hash chained over (parent key, block ids), so a block only hits when its
// whole prefix matches. Only full blocks are cached, and a hit never covers the last prompt
// token. Blocks of running requests are referenced; unreferenced blocks sit in a free queue
// and are evicted least-recently-freed first, the tail of a sequence before its head (vLLM
// frees a request's blocks in reverse order). When every block is referenced, new blocks
// simply go uncached. A request's `cache_salt` is mixed into its first block's key only (as vLLM
// does), so the whole chain of a salted prompt differs from the same prompt under another salt.
// The block bookkeeping is BlockPool's (shared with the fleet simulator). With a BlockEventSink the
// cache reports what vLLM publishes as KV events: each block as it becomes cached (with its
// parent's key, its token ids and, for a chain's first block, the salt), each evicted one, and a
// flush that emptied the cache.
// Cost: O(prompt/blockSize) map operations per request.
import { BlockPool, type BlockPoolEvents, type PoolBlock } from './block-pool.ts';
import { maxCacheable, type CacheLease, type PrefixCache, type PrefixCacheStats } from './prefix-cache.ts';
import { DEFAULT_BLOCK_SIZE } from '../../kvplanner/block-hash.ts';

type Block = PoolBlock<string>;

interface BlockLease extends CacheLease {
  prompt: ArrayLike<number>;
  /** Blocks this request references, in sequence order. */
  held: Block[];
  /** Chain key of the last held block ('' = root). */
  tailKey: string;
  /** The private block holding a trailing partial prompt block, when one was free. */
  partial: Block | undefined;
  done: boolean;
  salt: string | undefined;
}

/** Where a cache's KV events go (the worker's publisher). */
export interface BlockEventSink {
  stored(key: string, parent: string | undefined, tokenIds: number[], salt: string | undefined): void;
  removed(key: string): void;
  /** Every cached block dropped at once (vLLM reset_prefix_cache: AllBlocksCleared). */
  cleared(): void;
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
  readonly pool: BlockPool<string>;
  private counters: PrefixCacheStats = { queries: 0, hits: 0, evictions: 0 };
  private flushing = false;

  constructor(
    capacityTokens: number,
    readonly blockSize: number = DEFAULT_BLOCK_SIZE,
    events: BlockPoolEvents<string> = {},
    private readonly sink?: BlockEventSink,
  ) {
    if (!(blockSize >= 1)) throw new Error('block size must be >= 1');
    const removed = sink
      ? (key: string) => {
          events.removed?.(key);
          if (!this.flushing) sink.removed(key);
        }
      : events.removed;
    this.pool = new BlockPool<string>(Math.max(1, Math.floor(capacityTokens / blockSize)), {
      stored: events.stored,
      removed,
    });
  }

  /** A newly cached block, reported to the sink (ids copied: the prompt buffer is the caller's). */
  private announce(key: string, parent: string, ids: ArrayLike<number>, from: number, salt?: string): void {
    if (!this.sink) return;
    const tokens = new Array<number>(this.blockSize);
    for (let i = 0; i < this.blockSize; i++) tokens[i] = ids[from + i];
    const root = parent === rootKey(salt);
    this.sink.stored(key, root ? undefined : parent, tokens, root ? salt : undefined);
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
      let block = this.pool.get(key);
      if (block && hitting && b < limitBlocks) hitBlocks++;
      else hitting = false;
      if (block) this.pool.ref(block);
      else {
        block = this.pool.allocate(key);
        if (!block) break; // cache full of running blocks: the rest runs uncached
        this.announce(key, parent, prompt, b * bs, salt);
      }
      held.push(block);
      parent = key;
    }
    const partial = prompt.length % bs ? this.pool.allocate() : undefined;
    const cachedTokens = hitBlocks * bs;
    this.counters.queries += prompt.length;
    this.counters.hits += cachedTokens;
    const lease: BlockLease = { cachedTokens, prompt, held, tailKey: parent, partial, done: false, salt };
    return lease;
  }

  finish(lease: CacheLease, output: ArrayLike<number>): void {
    const l = lease as BlockLease;
    if (l.done) return;
    l.done = true;
    if (l.partial) this.pool.unref(l.partial);
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
        let block = this.pool.get(key);
        if (block) this.pool.ref(block);
        else {
          block = this.pool.allocate(key);
          if (block) this.announce(key, parent, view, b * bs, l.salt);
        }
        if (!block) break;
        l.held.push(block);
        parent = key;
      }
    }
    for (let i = l.held.length - 1; i >= 0; i--) this.pool.unref(l.held[i]);
    l.held = [];
  }

  usage(): number {
    return Math.min(1, this.pool.usedBlocks() / this.pool.capacity);
  }

  /** Cached blocks currently stored (referenced or not). */
  size(): number {
    return this.pool.cachedBlocks();
  }

  has(prefix: ArrayLike<number>, salt?: string): number {
    let parent = rootKey(salt);
    let n = 0;
    for (let b = 0; b < Math.floor(prefix.length / this.blockSize); b++) {
      parent = blockKey(parent, prefix, b * this.blockSize, (b + 1) * this.blockSize);
      if (!this.pool.get(parent)) break;
      n++;
    }
    return n;
  }

  flush(): void {
    // vLLM reports a reset as AllBlocksCleared; blocks running requests still hold stay cached
    // here, so then each dropped block is reported instead
    const whole = this.pool.usedBlocks() === 0;
    this.flushing = whole;
    try {
      this.pool.flush();
    } finally {
      this.flushing = false;
    }
    if (whole) this.sink?.cleared();
  }

  stats(): PrefixCacheStats {
    return { ...this.counters, evictions: this.pool.evictions };
  }
}
