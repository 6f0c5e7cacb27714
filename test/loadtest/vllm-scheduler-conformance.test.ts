// More of vLLM's own tests ported to the engine models (engine-conformance.test.ts has the first
// set): the V1 scheduler's tests/v1/core/test_scheduler.py on the fleet simulator's EngineModel,
// and tests/v1/core/test_prefix_caching.py cases on the reference worker's BlockCache (and its
// KV events) and on the fleet model's block pool. Block size 16 and vLLM's pool sizes (num_blocks
// minus the null block) as upstream; trace blocks of 16 tokens, one hash id per block.
import { describe, expect, it } from 'vitest';
import { EngineModel, type SimRequest } from '../../loadtest/fleet/engine-model.ts';
import { ChainInterner, fromMooncake } from '../../loadtest/fleet/trace.ts';
import { BlockCache, type BlockEventSink } from '../../loadtest/sim-worker/block-cache.ts';
import { PRESETS } from '../../loadtest/sim-worker/timing.ts';

const BS = 16;
const timing = PRESETS['qwen3-32b-h200'];
const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, i) => from + i);

function engine(blocks: number, maxBatchedTokens: number, maxSeqs?: number): EngineModel {
  return new EngineModel({ kvTokens: blocks * BS, blockSize: BS, timing, maxBatchedTokens, maxSeqs });
}
const chain = new ChainInterner();
let nextId = 0;
/** A request of `tokens` prompt tokens with its own block ids from `firstBlock` (16-token blocks). */
function request(firstBlock: number, tokens: number, output: number) {
  const ids = range(firstBlock, firstBlock + Math.ceil(tokens / BS));
  return fromMooncake(
    { timestamp: 0, input_length: tokens, output_length: output, hash_ids: ids },
    nextId++,
    chain,
    BS,
  );
}
function drain(e: EngineModel, from: number): void {
  for (let t = from, r = e.step(t); r; r = e.step(++t));
}

describe('tests/v1/core/test_scheduler.py on the fleet EngineModel', () => {
  it('test_schedule: ten 10-token prompts are all scheduled in the first step, in order, whole', () => {
    const e = engine(10_000, 8192, 16);
    const rs = range(0, 10).map((i) => e.add(request(1000 + i * 10, 10, 2)));
    const step = e.step(0)!;
    expect(e.waiting).toEqual([]);
    expect(e.running).toEqual(rs);
    expect(rs.every((r) => r.prefilled === 10)).toBe(true);
    expect(step.firstTokens).toEqual(rs);
  });

  it('test_schedule_order (chunked prefill): two 800-token prompts take the 1024-token step, the short ones wait', () => {
    const e = engine(10_000, 1024, 3);
    const [a, b, c, d] = [request(2000, 800, 4), request(2100, 800, 4), request(2200, 10, 4), request(2300, 10, 4)].map(
      (r) => e.add(r),
    );
    e.step(0);
    // "When enable chunked prefill, long requests will be chunked": 2 new requests scheduled
    expect(e.running).toEqual([a, b]);
    expect([a.prefilled, b.prefilled]).toEqual([800, 224]);
    expect(e.waiting).toEqual([c, d]);
  });

  // test_preempt_during_execution: 10 usable blocks, a 100-token budget, two 80-token prompts
  // (5 blocks each). Upstream schedules the second while the first is still executing (pipeline
  // parallelism); one batch at a time here, both arrive together, so the second is admitted in
  // the same step with a 20-token chunk (its whole prompt's 5 blocks are free then). When the
  // first request decodes token 81 it needs a 6th block, and the second's next chunk no longer
  // fits: the last running request — the second — is preempted, as upstream asserts
  // (running == [req0], req1 PREEMPTED).
  it('test_preempt_during_execution: the KV cache runs full and the second request is preempted', () => {
    const e = engine(10, 100);
    const [r0, r1] = [request(3000, 80, 8), request(3100, 80, 8)].map((r) => e.add(r));
    e.step(0);
    expect(e.running).toEqual([r0, r1]);
    expect([r0.blocks.length, r1.blocks.length]).toEqual([5, 2]);
    e.step(1);
    expect(e.running).toEqual([r0]);
    expect(e.waiting[0]).toBe(r1);
    expect([r0.preemptions, r1.preemptions]).toEqual([0, 1]);
    expect(r1.computed).toBe(0); // recompute preemption: its progress is dropped
    expect(r1.blocks).toEqual([]);
    drain(e, 2);
    expect([r0.generated, r1.generated]).toEqual([8, 8]);
    // upstream runs this case with prefix caching off; with it on (as here), vLLM's
    // _preempt_request frees the blocks with their hashes, so the recompute hits the one full
    // block the 20-token chunk cached: 20 + (80 − 16) tokens prefilled in all, not 100
    expect(r1.prefilled).toBe(20 + 80 - 16);
    expect(e.peakUsedBlocks).toBeLessThanOrEqual(10);
    expect(r1.finishMs).toBeGreaterThan(r0.finishMs);
  });
});

describe('tests/v1/core/test_prefix_caching.py, more cases', () => {
  // make_kv_cache_config(16, 3): 2 usable blocks. req0 caches [0..16), req1 [16..32) (a different
  // root block); both freed. req2 = [0..32) hits req0's block and needs one more: the free block
  // evicted is req1's, not the one req2 just hit.
  it('test_computed_blocks_not_evicted (reference worker)', () => {
    const c = new BlockCache(2 * BS, BS);
    const req0 = c.begin(range(0, BS));
    const req1 = c.begin(range(BS, 2 * BS));
    expect([req0.cachedTokens, req1.cachedTokens]).toEqual([0, 0]);
    c.finish(req0, []);
    c.finish(req1, []);
    const req2 = c.begin(range(0, 2 * BS));
    expect(req2.cachedTokens).toBe(BS);
    expect(c.has(range(0, BS))).toBe(1);
    expect(c.has(range(BS, 2 * BS))).toBe(0);
    c.finish(req2, []);
  });

  it('test_computed_blocks_not_evicted (fleet engine model, same pool)', () => {
    const e = engine(2, 8192);
    const one = (ids: number[], tokens: number): SimRequest => {
      const r = e.add(
        fromMooncake({ timestamp: 0, input_length: tokens, output_length: 1, hash_ids: ids }, nextId++, chain, BS),
      );
      drain(e, 0);
      return r;
    };
    one([900], BS);
    one([901], BS);
    expect(one([900, 902], 2 * BS).cachedTokens).toBe(BS);
    expect(one([901, 903], 2 * BS).cachedTokens).toBe(0); // req1's block was the one evicted
  });

  // test_reset_prefix_cache: 10 blocks; req0 = 3 full blocks + 7 tokens, req1 the same 3 blocks
  // + 7 others (3 hit, 1 new block). A reset while both run leaves the cache intact (upstream:
  // reset_prefix_cache() returns False); once both are freed it empties it.
  it('test_reset_prefix_cache: no reset while blocks are in use; all cleared once freed', () => {
    const cleared: string[] = [];
    const c = new BlockCache(
      10 * BS,
      BS,
      {},
      { stored() {}, removed: (k) => cleared.push(k), cleared: () => cleared.push('all') },
    );
    const full = [0, 1, 2].flatMap((b) => new Array<number>(BS).fill(b));
    const req0 = c.begin([...full, ...new Array(7).fill(3)]);
    expect(c.pool.usedBlocks()).toBe(4);
    const req1 = c.begin([...full, ...new Array(7).fill(4)]);
    expect(req1.cachedTokens).toBe(3 * BS);
    expect(c.pool.usedBlocks()).toBe(5);
    c.flush();
    expect(c.size()).toBe(3);
    expect(cleared).toEqual([]);
    c.finish(req0, []);
    c.finish(req1, []);
    c.flush();
    expect(c.size()).toBe(0);
    expect(cleared).toEqual(['all']);
  });

  // test_kv_cache_events[2|3|10]: a pool of exactly blocks_to_cache blocks. Caching a prompt of
  // that many blocks reports them all stored; freeing it and caching another prompt that size
  // reports every one removed (each a block stored before) and the new ones stored; freeing and
  // resetting the cache reports AllBlocksCleared and leaves nothing cached. (Upstream re-allocates
  // the same tokens without a cache lookup to force the evictions; the reference worker always
  // looks up, so a different prompt forces them.)
  for (const n of [2, 3, 10]) {
    it(`test_kv_cache_events[${n}]: stored, removed then stored, all cleared`, () => {
      const log: Array<['stored' | 'removed', string] | ['cleared']> = [];
      const sink: BlockEventSink = {
        stored: (key, _parent, tokenIds) => {
          expect(tokenIds.length).toBe(BS);
          log.push(['stored', key]);
        },
        removed: (key) => log.push(['removed', key]),
        cleared: () => log.push(['cleared']),
      };
      const c = new BlockCache(n * BS, BS, {}, sink);
      const req0 = c.begin(range(0, n * BS));
      const first = log.splice(0).map((x) => x[1]);
      expect(log.length + first.length).toBe(n);
      expect(c.size()).toBe(n);
      c.finish(req0, []);
      const req1 = c.begin(range(5000, 5000 + n * BS));
      const second = log.splice(0);
      expect(second.filter((x) => x[0] === 'removed').map((x) => x[1])).toEqual(expect.arrayContaining(first));
      expect(second.filter((x) => x[0] === 'removed')).toHaveLength(n);
      expect(second.filter((x) => x[0] === 'stored')).toHaveLength(n);
      expect(c.size()).toBe(n);
      c.finish(req1, []);
      c.flush();
      expect(log).toEqual([['cleared']]);
      expect(c.size()).toBe(0);
    });
  }
});
