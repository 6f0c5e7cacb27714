// One simulated SGLang engine (python/sglang/srt/managers/scheduler.py, schedule_policy.py
// PrefillAdder, mem_cache/radix_cache.py) on the fleet simulator's virtual clock, at block
// granularity (SGLang's page_size = the engine block). Differences from the vLLM model:
//  - the prefix cache is a radix tree (the reference worker's RadixCache over block keys): a
//    running request locks its matched path; at capacity, unlocked leaves go least recently used
//    first; a prompt enters the tree when its prefill completes (cache_unfinished_req), the
//    blocks it computed until then are its own;
//  - a step is either a prefill batch or a decode batch, never both (enable_mixed_chunk off):
//    prefill first whenever a waiting request can be admitted;
//  - admission (PrefillAdder): waiting requests in longest-prefix-match order (schedule_policy
//    "lpm"; FCFS once more than 128 wait), one chunked request at a time, up to
//    chunked_prefill_size tokens per batch; a request is admitted while its uncached prompt plus
//    min(max_new_tokens, 4096) fits what is free or evictable after reserving
//    new_token_ratio × the remaining output of every running request (the ratio starts at 0.7,
//    decays by 0.001 per decode batch to 0.1 and goes back to 0.7 on a retraction);
//  - a decode batch that cannot get its blocks retracts requests (fewest output tokens first,
//    then the longest prompt) back to the waiting queue (retract_decode), freeing their blocks.
// The trace's output length stands for max_new_tokens. Step time is the vLLM model's.
// With `events`, the tree's KV events (SGLang publishes one BlockStored per radix page, here one
// per block: page_size = the engine block) reach the caller as block keys: stored when a leaf
// enters the tree, removed when eviction drops it (a split keeps both halves' blocks).
// Cost per step: O(running + admitted), plus O(tree) per eviction round (the radix cache's).
import type { BlockPoolEvents } from '../sim-worker/block-pool.ts';
import { type RadixEventSink, type RadixNode, RadixCache } from '../sim-worker/radix-cache.ts';
import type { TimingModel } from '../sim-worker/timing.ts';
import { EngineBase, type SimRequest, type StepResult } from './engine-model.ts';

/** SGLang server_args defaults: chunked_prefill_size 8192 (large GPUs), max_running_requests high. */
export const SGLANG_CHUNKED_PREFILL = 8192;
const CLIP_MAX_NEW_TOKENS = 4096;
const INIT_NEW_TOKEN_RATIO = 0.7;
const MIN_NEW_TOKEN_RATIO = 0.1;
const NEW_TOKEN_RATIO_DECAY = 0.001;
/** schedule_policy: LPM only while the queue is short (its sort is O(queue · prompt)). */
const LPM_MAX_QUEUE = 128;

export interface SglangEngineConfig {
  kvTokens: number;
  blockSize: number;
  timing: TimingModel;
  chunkedPrefillSize?: number;
  maxRunning?: number;
  /** KV events of the tree, by block key (as the vLLM model's block pool reports them) */
  events?: BlockPoolEvents<number>;
}

/** The radix cache's page events as block keys: its pages are token pages whose one "token" is
 *  the block key; a removal names pages, so each stored page's key is kept until then. */
function blockEvents(events: BlockPoolEvents<number>): RadixEventSink {
  const keyOf = new Map<string, number>();
  return {
    stored(page, _parent, tokenIds) {
      keyOf.set(page, tokenIds[0]);
      events.stored?.(tokenIds[0]);
    },
    removedMany(pages) {
      for (const page of pages) {
        const key = keyOf.get(page);
        if (key === undefined) continue;
        keyOf.delete(page);
        events.removed?.(key);
      }
    },
    cleared() {
      for (const key of keyOf.values()) events.removed?.(key);
      keyOf.clear();
    },
  };
}

interface Lease {
  node: RadixNode;
  /** prompt blocks found in the tree (locked) */
  hitBlocks: number;
  /** blocks this request holds outside the tree */
  own: number;
  inTree: boolean;
}

export class SglangEngineModel extends EngineBase {
  readonly tree: RadixCache;
  private readonly capacity: number;
  private readonly chunk: number;
  private readonly maxRunning: number;
  private readonly leases = new Map<SimRequest, Lease>();
  /** blocks held outside the tree by running requests */
  private own = 0;
  private ratio = INIT_NEW_TOKEN_RATIO;

  constructor(cfg: SglangEngineConfig) {
    super(cfg.blockSize, cfg.timing);
    this.capacity = Math.max(1, Math.floor(cfg.kvTokens / cfg.blockSize));
    this.tree = new RadixCache(this.capacity, cfg.events && blockEvents(cfg.events));
    this.chunk = cfg.chunkedPrefillSize ?? SGLANG_CHUNKED_PREFILL;
    this.maxRunning = cfg.maxRunning ?? 1024;
  }

  /** Free blocks, evicting unlocked tree leaves (LRU) when `need` exceeds what is empty. */
  private makeRoom(need: number): boolean {
    const free = this.capacity - this.tree.size() - this.own;
    if (free >= need) return true;
    this.tree.evict(need - free);
    return this.capacity - this.tree.size() - this.own >= need;
  }

  private take(l: Lease, blocks: number): void {
    l.own += blocks;
    this.own += blocks;
    const used = this.tree.size() + this.own;
    if (used > this.peakUsedBlocks) this.peakUsedBlocks = used;
  }

  protected release(r: SimRequest): void {
    const l = this.leases.get(r);
    if (!l) return;
    this.leases.delete(r);
    this.own -= l.own;
    this.tree.unlock(l.node);
  }

  private blocksFor(tokens: number): number {
    return Math.ceil(tokens / this.blockSize);
  }

  /** Tokens reserved for the running requests' remaining output (PrefillAdder). */
  private reserved(): number {
    let sum = 0;
    for (const r of this.running) {
      const left = Math.min(r.req.outputTokens - r.generated, CLIP_MAX_NEW_TOKENS);
      sum += Math.max(0, left) * this.ratio;
    }
    return sum;
  }

  private orderWaiting(): void {
    if (this.waiting.length < 2 || this.waiting.length > LPM_MAX_QUEUE) return;
    const depth = new Map<SimRequest, number>();
    for (const r of this.waiting) depth.set(r, this.prefixBlocks(r));
    // stable: equal matches keep arrival order
    this.waiting.sort((a, b) => depth.get(b)! - depth.get(a)!);
  }

  /** Cached prompt blocks of `r` (never covering its last token to compute). */
  private prefixBlocks(r: SimRequest): number {
    const limit = Math.min(r.keys.length, Math.floor((this.target(r) - 1) / this.blockSize));
    return this.tree.match(r.keys, limit).length;
  }

  private admit(nowMs: number, chunks: Array<[SimRequest, number]>): void {
    let budget = this.chunk;
    // a request still prefilling (chunked) goes first
    for (const r of this.running) {
      if (!r.prefilling || budget <= 0) continue;
      const want = Math.min(this.target(r) - r.computed, budget);
      const l = this.leases.get(r)!;
      const need = this.blocksFor(r.computed + want) - l.hitBlocks - l.own;
      if (need > 0 && !this.makeRoom(need)) return;
      if (need > 0) this.take(l, need);
      chunks.push([r, want]);
      budget -= want;
    }
    if (budget <= 0) return; // the chunked request took the whole batch
    this.orderWaiting();
    let rem = (this.capacity - this.own) * this.blockSize - this.reserved();
    while (budget > 0 && this.waiting.length > 0 && this.running.length < this.maxRunning) {
      const r = this.waiting[0];
      const limit = Math.min(r.keys.length, Math.floor((this.target(r) - 1) / this.blockSize));
      const m = this.tree.match(r.keys, limit);
      const hit = m.length * this.blockSize;
      const extend = this.target(r) - hit;
      const total = extend + Math.min(Math.max(0, r.req.outputTokens - r.generated), CLIP_MAX_NEW_TOKENS);
      // what the tree holds unlocked can be evicted: rem counts it as available
      if (total > rem) break;
      const want = Math.min(extend, budget);
      const need = this.blocksFor(hit + want) - m.length;
      this.tree.lock(m.node);
      if (!this.makeRoom(need)) {
        this.tree.unlock(m.node);
        break;
      }
      const l: Lease = { node: m.node, hitBlocks: m.length, own: 0, inTree: false };
      this.leases.set(r, l);
      this.take(l, need);
      this.schedule(r, hit, want, nowMs, chunks);
      budget -= want;
      rem -= total;
      if (want < extend) break; // this one is chunked: nothing after it in this batch
    }
  }

  /** A decode batch: every running request that finished prefill takes one token. */
  private decode(chunks: Array<[SimRequest, number]>): void {
    let need = 0;
    for (const r of this.running) if (!r.prefilling && (r.computed + 1) % this.blockSize === 1) need++;
    while (need > 0 && !this.makeRoom(need) && this.running.length > 1) {
      // retract_decode: fewest output tokens first, then the longest prompt
      let v = 0;
      for (let i = 1; i < this.running.length; i++) {
        const a = this.running[i];
        const b = this.running[v];
        if (a.generated < b.generated || (a.generated === b.generated && a.req.inputTokens > b.req.inputTokens)) v = i;
      }
      const victim = this.running.splice(v, 1)[0];
      if (!victim.prefilling && (victim.computed + 1) % this.blockSize === 1) need--;
      this.release(victim);
      victim.computed = 0;
      victim.prefilling = true;
      victim.preemptions++;
      this.preemptions++;
      this.waiting.unshift(victim);
      this.ratio = INIT_NEW_TOKEN_RATIO;
    }
    for (const r of this.running) {
      if (r.prefilling) continue;
      if ((r.computed + 1) % this.blockSize === 1) {
        if (!this.makeRoom(1)) continue; // nothing left to retract: it waits a step
        this.take(this.leases.get(r)!, 1);
      }
      chunks.push([r, 1]);
    }
    this.ratio = Math.max(MIN_NEW_TOKEN_RATIO, this.ratio - NEW_TOKEN_RATIO_DECAY);
  }

  step(nowMs: number): StepResult | null {
    const chunks: Array<[SimRequest, number]> = [];
    this.admit(nowMs, chunks);
    if (chunks.length === 0) this.decode(chunks);
    if (chunks.length === 0) return null;
    return this.settle(chunks, nowMs, (r) => this.cachePrompt(r));
  }

  /** Prefill done: the prompt's full blocks move from the request into the tree, locked. */
  private cachePrompt(r: SimRequest): void {
    const l = this.leases.get(r)!;
    if (l.inTree) return;
    const before = this.tree.size();
    // the blocks leave the request's own count first, so the tree has room for them
    const moved = Math.min(l.own, r.keys.length - l.hitBlocks);
    l.own -= moved;
    this.own -= moved;
    const node = this.tree.insert(r.keys);
    const added = this.tree.size() - before;
    // blocks another request cached meanwhile stay this request's own (a duplicate)
    l.own += moved - added;
    this.own += moved - added;
    this.tree.lock(node);
    this.tree.unlock(l.node);
    l.node = node;
    l.inTree = true;
  }

  /** What SGLang reports as token_usage (sglang:token_usage, the scheduler's _get_token_info):
   *  (total − available − evictable) / total, i.e. running requests' own blocks and the tree paths
   *  they lock; the unlocked radix cache is evictable and not counted (vLLM's kv_cache_usage_perc
   *  likewise leaves out cached free blocks). Counting the whole tree made every warm engine read
   *  full. */
  kvUsage(): number {
    return Math.min(1, (this.own + this.tree.lockedSize()) / this.capacity);
  }

  capacityBlocks(): number {
    return this.capacity;
  }

  cachedBlocks(): number {
    return this.tree.size();
  }
}
