// Conformance of the reference worker's caches and the fleet simulator's engine model with the
// engines they stand in for: scenarios ported from vLLM's tests/v1/core/test_prefix_caching.py
// (block size 16, a pool of 10 usable blocks: vLLM's 11 minus its null block) and SGLang's
// test/registered/unit/mem_cache/test_radix_cache_unit.py. Each case names the upstream test.
import { describe, expect, it } from 'vitest';
import { EngineModel } from '../../loadtest/fleet/engine-model.ts';
import { SglangEngineModel } from '../../loadtest/fleet/sglang-engine-model.ts';
import { ChainInterner, fromMooncake } from '../../loadtest/fleet/trace.ts';
import { BlockCache } from '../../loadtest/sim-worker/block-cache.ts';
import { RadixCache } from '../../loadtest/sim-worker/radix-cache.ts';
import { PRESETS } from '../../loadtest/sim-worker/timing.ts';

const BS = 16;
const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, i) => from + i);
/** vLLM's common prefix: 3 full blocks, [0]*16 + [1]*16 + [2]*16. */
const COMMON = [0, 1, 2].flatMap((b) => new Array<number>(BS).fill(b));

describe('vLLM prefix caching (tests/v1/core/test_prefix_caching.py) on the reference worker', () => {
  it('test_prefill: a miss, hits on the common prefix while in use and after free, eviction by a 10-block miss', () => {
    const c = new BlockCache(10 * BS, BS);
    const req0 = c.begin([...COMMON, ...new Array(7).fill(3)]);
    expect(req0.cachedTokens).toBe(0);
    // cache hit in the common prefix when the original block is still in use
    const req1 = c.begin([...COMMON, ...new Array(5).fill(3)]);
    expect(req1.cachedTokens).toBe(3 * BS);
    expect(c.pool.availableBlocks()).toBe(5); // "we should have 5 free blocks left"
    c.finish(req0, []);
    c.finish(req1, []);
    expect(c.pool.availableBlocks()).toBe(10); // "all blocks should be available"
    // cache hit in the common prefix when the original block is already free
    const req2 = c.begin([...COMMON, ...new Array(6).fill(3)]);
    expect(req2.cachedTokens).toBe(3 * BS);
    c.finish(req2, []);
    // cache miss and eviction: [99]*160 takes every block, the common prefix included
    const req3 = c.begin(new Array(16 * 10).fill(99));
    expect(req3.cachedTokens).toBe(0);
    expect(c.pool.availableBlocks()).toBe(0);
    c.finish(req3, []);
    expect(c.begin([...COMMON, 3]).cachedTokens).toBe(0);
  });

  it('test_evict: freed blocks go least-recently-freed first, a request tail before its head', () => {
    const c = new BlockCache(10 * BS, BS);
    const last = 5 * 16 + 7;
    const req0 = c.begin(range(0, last)); // 5 full + 1 partial
    const req1 = c.begin(range(last, last + 3 * 16)); // 3 blocks
    expect(c.pool.availableBlocks()).toBe(1);
    c.finish(req0, []);
    c.finish(req1, []);
    expect(c.pool.availableBlocks()).toBe(10);
    // "req0's first 2 blocks + 3 tokens" hits 2 blocks, as upstream
    const req2 = c.begin(range(0, 2 * 16 + 3));
    expect(req2.cachedTokens).toBe(2 * BS);
    c.finish(req2, []);
    // free queue now: req0's 5, 4, 3 | req1's 3, 2, 1 | req0's 2, 1 (touched by req2). A 7-block
    // miss takes the 2 never-used blocks, then evicts 5 from the front: req0's 5, 4, 3 and
    // req1's 3, 2 — tails first, so both requests keep their roots
    c.finish(c.begin(range(1000, 1000 + 7 * 16)), []);
    expect(c.has(range(0, 5 * 16))).toBe(2);
    expect(c.has(range(last, last + 3 * 16))).toBe(1);
  });

  it('chaining: a block only hits under its whole prefix', () => {
    // Not an upstream case (upstream's test_hash_block_correct_reuse checks that a reused block's hash
    // is reset): the chaining scenario. Cache [0..7] (two blocks of 4), then send [4,5,6,7,...]: its
    // first block equals the second cached block's tokens, but not its prefix — 0 cached. Breaks if
    // keys stop chaining.
    const c = new BlockCache(64, 4);
    c.finish(c.begin([0, 1, 2, 3, 4, 5, 6, 7, 8]), []);
    expect(c.begin([4, 5, 6, 7, 8, 9, 10, 11, 12]).cachedTokens).toBe(0);
    expect(c.begin([0, 1, 2, 3, 4, 5, 6, 7, 99]).cachedTokens).toBe(8);
  });

  it('test_prefill_not_enough_free_blocks: referenced blocks are never evicted; the rest runs uncached', () => {
    const c = new BlockCache(4 * BS, BS);
    const a = c.begin(range(0, 3 * BS + 1)); // 3 keyed + 1 partial: the pool is full
    const b = c.begin(range(500, 500 + 3 * BS + 1));
    expect(b.cachedTokens).toBe(0);
    expect(c.has(range(0, 3 * BS))).toBe(3); // a's blocks untouched
    c.finish(a, []);
    c.finish(b, []);
  });
});

describe('vLLM prefix caching on the fleet engine model (same block pool)', () => {
  const timing = PRESETS['qwen3-32b-h200'];
  const chain = new ChainInterner();
  const req = (id: number, ids: number[], input: number) =>
    fromMooncake({ timestamp: 0, input_length: input, output_length: 1, hash_ids: ids }, id, chain);
  function run(e: EngineModel): void {
    for (let t = 0, r = e.step(0); r; r = e.step(t)) t += r.durationS * 1000;
  }

  it('test_prefill: hit on the common prefix, eviction order, then a miss', () => {
    const e = new EngineModel({ kvTokens: 10 * 512, blockSize: 512, timing });
    const a = e.add(req(0, [1, 2, 3, 4], 3 * 512 + 7));
    run(e);
    const b = e.add(req(1, [1, 2, 3, 5], 3 * 512 + 5));
    run(e);
    expect([a.cachedTokens, b.cachedTokens]).toEqual([0, 3 * 512]);
    e.add(req(2, range(100, 110), 10 * 512));
    run(e);
    const c = e.add(req(3, [1, 2, 3, 6], 3 * 512 + 6));
    run(e);
    expect(c.cachedTokens).toBe(0);
  });

  it('chaining: cache hash ids [0..7], then send [4,5,6,7,…]: 0 cached', () => {
    const e = new EngineModel({ kvTokens: 64 * 512, blockSize: 512, timing });
    e.add(req(4, range(0, 8), 8 * 512 + 1));
    run(e);
    const shifted = e.add(req(5, [4, 5, 6, 7, 8, 9], 6 * 512));
    const same = e.add(req(6, [...range(0, 8), 50], 8 * 512 + 10));
    run(e);
    expect(shifted.cachedTokens).toBe(0);
    expect(same.cachedTokens).toBe(8 * 512);
  });

  it('sub-blocks: --block-size 128 re-cuts a 512-token trace block into 4 chained keys', () => {
    const e = new EngineModel({ kvTokens: 64 * 512, blockSize: 128, timing });
    e.add(req(7, [70, 71], 2 * 512));
    run(e);
    const b = e.add(req(8, [70, 72], 2 * 512));
    run(e);
    expect(b.cachedTokens).toBe(512);
  });
});

describe('SGLang radix cache (test/registered/unit/mem_cache/test_radix_cache_unit.py) on the reference worker', () => {
  it('test_insert_and_match_basic / test_total_size', () => {
    const c = new RadixCache(1000);
    c.insert([1, 2, 3]);
    expect(c.size()).toBe(3);
    expect(c.match([1, 2, 3]).length).toBe(3);
    expect(c.match([1, 2]).length).toBe(2);
    c.insert([4, 5]);
    expect(c.size()).toBe(5);
  });

  it('test_advanced_prefix_match_with_node_splits: a match ending inside an edge splits it', () => {
    const c = new RadixCache(1000);
    c.insert([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(c.match([1, 2, 3, 10, 11]).length).toBe(3);
    c.insert([1, 2, 3, 10, 11]);
    expect(c.size()).toBe(10); // 8 + the 2 new tokens; the split shares [1, 2, 3]
    expect(c.match([1, 2, 3, 4, 5, 6, 7, 8]).length).toBe(8);
    expect(c.match([1, 2, 3, 10, 11, 12]).length).toBe(5);
    expect(c.root.children.get(1)!.key).toEqual([1, 2, 3]);
  });

  it('test_lock_ref_operations / test_evict_functionality: locked paths survive, unlocked leaves go LRU first', () => {
    const c = new RadixCache(1000);
    const locked = c.insert([1, 2, 3]);
    c.lock(locked);
    c.insert([4, 5]);
    c.insert([6, 7]);
    c.match([4, 5]); // touch: [6, 7] is now the least recently used
    expect(c.evict(2)).toBeGreaterThanOrEqual(2);
    expect(c.match([6, 7]).length).toBe(0);
    expect(c.match([4, 5]).length).toBe(2);
    c.evict(1000);
    expect(c.match([1, 2, 3]).length).toBe(3); // locked
    c.unlock(locked);
    c.evict(1000);
    expect(c.size()).toBe(0);
  });

  it('a hit never covers the last prompt token (the engine must compute its logits)', () => {
    const c = new RadixCache(1000);
    c.finish(c.begin([1, 2, 3, 4]), []);
    expect(c.begin([1, 2, 3, 4]).cachedTokens).toBe(3);
  });
});

// vLLM V1 scheduler (vllm/v1/core/sched/scheduler.py schedule(), vllm/v1/core/kv_cache_manager.py
// allocate_slots) on the fleet engine model, 512-token blocks.
describe('vLLM V1 scheduler admission and preemption on the fleet engine model', () => {
  const timing = PRESETS['qwen3-32b-h200'];
  const chain = new ChainInterner();
  const req = (id: number, ids: number[], input: number, output = 1) =>
    fromMooncake({ timestamp: 0, input_length: input, output_length: output, hash_ids: ids }, id, chain);

  // Two 12-block prompts, a 20-block pool, an 8-block token budget. A is admitted with its first
  // chunk (8 blocks). B waits for budget; in step 2 A takes 4 more blocks (12 used, 8 free).
  function twoLongPrompts(reserveFullPrompt: boolean) {
    const e = new EngineModel({
      kvTokens: 20 * 512,
      blockSize: 512,
      timing,
      maxBatchedTokens: 8 * 512,
      reserveFullPrompt,
    });
    const a = e.add(req(0, range(200, 212), 12 * 512, 50));
    const b = e.add(req(1, range(300, 312), 12 * 512, 50));
    return { e, a, b };
  }

  it('scheduler_reserve_full_isl (default on): a waiting prompt is admitted only when ALL its blocks are free', () => {
    const { e, a, b } = twoLongPrompts(true);
    e.step(0);
    expect(e.running).toEqual([a]);
    e.step(1);
    // B needs 12 blocks and 8 are free: it waits, though its first 4-block chunk would fit
    expect(e.running).toEqual([a]);
    expect(e.waiting).toEqual([b]);
    for (let t = 2, r = e.step(t); r; r = e.step(++t));
    expect(e.preemptions).toBe(0);
    expect(b.finishMs).toBeGreaterThan(a.finishMs);
  });

  it('first-chunk admission (scheduler_reserve_full_isl=False) over-admits: B runs out mid-prefill and is preempted', () => {
    const { e, a, b } = twoLongPrompts(false);
    e.step(0);
    e.step(1);
    expect(e.running).toEqual([a, b]); // B's 4-block chunk fit the 8 free blocks
    for (let t = 2, r = e.step(t); r; r = e.step(++t));
    // B's second chunk needs 8 more blocks than the pool has: the last running request (B) goes
    expect(b.preemptions).toBeGreaterThan(0);
    expect(a.preemptions).toBe(0);
    expect(e.peakUsedBlocks).toBeLessThanOrEqual(20);
  });

  it('cache_blocks: a block is cached only once the chunk that fills it is scheduled, never while partial', () => {
    // budget 700 tokens: step 1 computes tokens 0..699, filling block 0 but only 188 of block 1
    const e = new EngineModel({ kvTokens: 20 * 512, blockSize: 512, timing, maxBatchedTokens: 700 });
    e.add(req(2, [400, 401, 402], 3 * 512, 4));
    e.step(0);
    expect(e.pool.cachedBlocks()).toBe(1); // block 1 holds 188 computed tokens: not a hit for anyone
    e.step(1); // tokens 700..1399 fill block 1
    expect(e.pool.cachedBlocks()).toBe(2);
    e.step(2); // the last 136 tokens fill block 2, which holds the prompt's last token
    expect(e.pool.cachedBlocks()).toBe(3);
  });
});

// The fleet simulator's SGLang engine model against the reference worker's SGLang flavour
// (RadixCache, the same LRU-leaf radix tree SGLang's test_radix_cache_unit.py scenarios pin):
// one trace block = one radix token, the prompt's partial last block one more token.
describe('SGLang engine model (fleet) agrees with the reference worker radix cache', () => {
  const timing = PRESETS['qwen3-32b-h200'];
  const chain = new ChainInterner();
  let nextPartial = 1_000_000;
  const prompts: Record<string, number[]> = {
    a: [1, 2, 3, 4],
    b: [1, 2, 5, 6],
    c: [7, 8, 9, 10, 11],
  };
  function runBoth(order: string[], capacityBlocks: number): { sim: number[]; ref: number[] } {
    const e = new SglangEngineModel({ kvTokens: capacityBlocks * 512, blockSize: 512, timing });
    const ref = new RadixCache(capacityBlocks);
    const sim: number[] = [];
    const refHits: number[] = [];
    order.forEach((name, i) => {
      const ids = prompts[name];
      const r = e.add(
        fromMooncake(
          { timestamp: 0, input_length: ids.length * 512 + 100, output_length: 1, hash_ids: [...ids, nextPartial++] },
          i,
          chain,
        ),
      );
      for (let t = 0, s = e.step(0); s; s = e.step(t)) t += s.durationS * 1000;
      sim.push(r.cachedTokens / 512);
      // the reference worker keys tokens; its chain is the same block ids plus the partial block
      const lease = ref.begin([...ids, 1_000_000 + i]);
      refHits.push(lease.cachedTokens);
      ref.finish(lease, [0]);
    });
    return { sim, ref: refHits };
  }

  it('test_insert_and_match: shared prefixes hit, a diverging branch hits up to the split', () => {
    const { sim, ref } = runBoth(['a', 'b', 'a', 'b', 'c'], 64);
    expect(sim).toEqual([0, 2, 4, 4, 0]);
    expect(ref).toEqual(sim);
  });

  it('test_evict_functionality: at capacity the least recently used unlocked leaf goes first', () => {
    // 11 blocks: a and b share [1, 2]; c (5 blocks + its partial one) needs room, and the leaf
    // evicted is a's tail [3, 4] (used before b's): b keeps 4 blocks, a only the shared root
    const { sim, ref } = runBoth(['a', 'b', 'c', 'b', 'a'], 11);
    expect(sim[3]).toBe(4); // b, used after a, survived
    expect(sim[4]).toBe(2); // a kept only the shared root [1, 2]
    expect(ref[3]).toBe(sim[3]);
    expect(ref[4]).toBe(sim[4]);
  });
});

// SGLang's token_usage (scheduler _get_token_info): (total − available − evictable) / total. The
// unlocked radix cache is evictable, so a warm idle engine reads 0, as vLLM's kv_cache_usage_perc
// leaves out cached free blocks; counting the whole tree made every warm engine read full.
describe('SGLang engine model (fleet): kvUsage is token_usage, without the evictable tree', () => {
  it('a running request counts (its blocks and the path it locks), the cache it leaves does not', () => {
    const timing = PRESETS['qwen3-32b-h200'];
    const chain = new ChainInterner();
    const e = new SglangEngineModel({ kvTokens: 64 * 512, blockSize: 512, timing });
    const req = (id: number, ids: number[], out: number) =>
      fromMooncake({ timestamp: 0, input_length: ids.length * 512, output_length: out, hash_ids: ids }, id, chain);
    e.add(req(0, [1, 2, 3, 4], 1));
    for (let t = 0, s = e.step(0); s; s = e.step(t)) t += s.durationS * 1000;
    expect(e.cachedBlocks()).toBe(4);
    expect(e.kvUsage()).toBe(0);
    // the same prefix again, still decoding: it locks the cached path [1..4] and holds its own tail
    e.add(req(1, [1, 2, 3, 4, 5, 6], 1000));
    e.step(0);
    e.step(1);
    expect(e.kvUsage()).toBeGreaterThanOrEqual(6 / 64);
    expect(e.kvUsage()).toBeLessThan(8 / 64);
  });

  it('the radix cache counts locked tokens through locks, unlocks and splits', () => {
    const c = new RadixCache(100);
    const a = c.begin([1, 2, 3, 4, 5]);
    expect(c.lockedSize()).toBe(5);
    // b splits a's node into [1, 2, 3] + [4, 5], both still locked by a, and adds [9]
    const b = c.begin([1, 2, 3, 9]);
    expect(c.lockedSize()).toBe(6);
    c.finish(a, []);
    expect(c.lockedSize()).toBe(4); // b's path: [1, 2, 3] and [9]
    const d = c.begin([1, 2, 3, 4, 5, 6]);
    expect(c.lockedSize()).toBe(7);
    c.finish(b, []);
    expect(c.lockedSize()).toBe(6);
    expect(c.usage()).toBe(6 / 100); // the reference worker's sglang:token_usage
    c.finish(d, []);
    expect(c.lockedSize()).toBe(0);
    expect(c.size()).toBe(7);
    expect(c.usage()).toBe(0);
  });
});
