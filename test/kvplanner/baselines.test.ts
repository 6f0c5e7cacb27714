// The re-implemented routers against worked examples from their sources: smg's own unit tests
// (model_gateway/src/policies/cache_aware.rs), Dynamo's cost formula as its router docs state it
// (logit = overlap_score_weight · prefill_blocks + decode_blocks), llm-d's precise profile weights
// (2 · prefix + 1 · KV usage + 1 · queue, min-max normalised, max-score picker).
import { describe, expect, it } from 'vitest';
import { KvEventIndex } from '../../kvplanner/kv-events/event-index.ts';
import { DYNAMO_DEFAULTS, DynamoKvPolicy } from '../../kvplanner/policies/dynamo-kv.ts';
import { LLMD_DEFAULTS, LlmdPrecisePolicy, minMax } from '../../kvplanner/policies/llmd-precise.ts';
import { SMG_DEFAULTS, SmgCacheAwarePolicy } from '../../kvplanner/policies/smg-cache-aware.ts';
import { info, workers } from './fixtures.ts';

describe('smg_cache_aware (smg cache_aware.rs)', () => {
  it('ships the gateway CLI defaults', () => {
    expect(SMG_DEFAULTS).toMatchObject({ cache_threshold: 0.3, balance_abs_threshold: 64, balance_rel_threshold: 1.5 });
  });

  it('test_cache_aware_with_balanced_load: the same and a shorter text follow the first pick', () => {
    const p = new SmgCacheAwarePolicy({ eviction_interval_secs: 0 });
    const ws = workers(2);
    const a = p.select(ws, info({ text: 'hello world' }))!;
    expect(p.select(ws, info({ text: 'hello world' }))!.worker.id).toBe(a.worker.id);
    const c = p.select(ws, info({ text: 'hello' }))!;
    expect(c.worker.id).toBe(a.worker.id);
    expect(c.branch).toBe('prefix_match');
  });

  it('test_cache_aware_with_imbalanced_load: abs 5, rel 2.0, loads 20 vs 0 → the idle worker every time', () => {
    const p = new SmgCacheAwarePolicy({
      cache_threshold: 0.5,
      balance_abs_threshold: 5,
      balance_rel_threshold: 2,
      eviction_interval_secs: 0,
      max_tree_size: 10_000,
    });
    const ws = workers(2);
    ws[0].inFlight = 20;
    for (let i = 0; i < 5; i++) {
      const c = p.select(ws, info({ text: 'test' }))!;
      expect(c.worker.id).toBe('w1');
      expect(c.branch).toBe('balance');
    }
  });

  it('a miss goes to the least-loaded worker, not the smallest tree (the 2024 router)', () => {
    const p = new SmgCacheAwarePolicy({ eviction_interval_secs: 0 });
    const ws = workers(3);
    p.select(ws, info({ text: 'a'.repeat(300) }));
    ws[0].inFlight = 1;
    ws[1].inFlight = 2;
    ws[2].inFlight = 3; // w2 has the smallest (empty) tree but the most load
    const c = p.select(ws, info({ text: 'z'.repeat(100) }))!;
    expect(c.branch).toBe('min_load');
    expect(c.worker.id).toBe('w0');
  });

  it('event-driven: the most overlapping blocks win, ties → lower load; no overlap → least load', () => {
    const ev = new KvEventIndex();
    ev.blockStored('w0', ['a', 'b']);
    ev.blockStored('w1', ['a', 'b', 'c']);
    ev.blockStored('w2', ['a', 'b', 'c']);
    const p = new SmgCacheAwarePolicy({ kv_index: ev, eviction_interval_secs: 0 });
    const ws = workers(3);
    ws[1].inFlight = 2;
    ws[2].inFlight = 1;
    const c = p.select(ws, info({ blockHashes: ['a', 'b', 'c', 'd'], promptTokens: 64 }))!;
    expect(c.worker.id).toBe('w2');
    expect(c.branch).toBe('overlap');
    expect(c.predictedCachedTokens).toBe(48);
    const miss = p.select(ws, info({ blockHashes: ['x'], promptTokens: 20 }))!;
    expect(miss).toMatchObject({ branch: 'min_load' });
    expect(miss.worker.id).toBe('w0');
  });
});

describe('dynamo_kv (Dynamo KV router cost)', () => {
  it('ships Dynamo defaults: overlap weight 1, temperature 0', () => {
    expect(DYNAMO_DEFAULTS).toMatchObject({ overlap_score_weight: 1, temperature: 0 });
  });

  // 100-token request, block 16: worker A holds 3 blocks (48 tokens), B none.
  // A: prefill 52/16 = 3.25 blocks, decode 7 − 3 = 4 new blocks → logit 7.25
  // B: prefill 100/16 = 6.25 blocks, decode 7 new blocks       → logit 13.25
  function setup(opts: Record<string, unknown> = {}) {
    const ev = new KvEventIndex();
    ev.blockStored('w0', ['h1', 'h2', 'h3']);
    const p = new DynamoKvPolicy({ kv_index: ev, block_size: 16, ...opts });
    return { p, ws: workers(2) };
  }
  const req = () => info({ blockHashes: ['h1', 'h2', 'h3', 'h4', 'h5', 'h6'], promptTokens: 100 });

  it('worked example: logits 7.25 vs 13.25 → the worker with the overlap', () => {
    const { p, ws } = setup();
    expect(p.logit(ws[0], 100, 3)).toBeCloseTo(7.25);
    expect(p.logit(ws[1], 100, 0)).toBeCloseTo(13.25);
    const c = p.select(ws, req())!;
    expect(c.worker.id).toBe('w0');
    expect(c.predictedCachedTokens).toBe(48);
  });

  // Dynamo's own worked example (docs "Routing Concepts", the KV-aware router diagram): a
  // 10-block request; worker 1 has 2 blocks cached (prefill 8, decode 10), worker 2 has 5
  // (prefill 5, decode 5), worker 3 has 8 (prefill 2, decode 9); worker 2 is selected. With
  // overlap_score_weight 1 the costs are 18, 10, 11. Decode blocks here are the active blocks of
  // earlier picks plus the request's uncached ones: 2 + 8, 0 + 5, 7 + 2.
  it("the router docs' example: cached 2 / 5 / 8 of 10 blocks, decode 10 / 5 / 9 → worker 2 (costs 18, 10, 11)", () => {
    const chain = Array.from({ length: 10 }, (_, i) => `d${i}`);
    const setupDocs = (weight: number) => {
      const ev = new KvEventIndex();
      ev.blockStored('w0', chain.slice(0, 2));
      ev.blockStored('w1', chain.slice(0, 5));
      ev.blockStored('w2', chain.slice(0, 8));
      const p = new DynamoKvPolicy({ kv_index: ev, block_size: 16, overlap_score_weight: weight });
      const ws = workers(3);
      // active decode blocks from picks still in flight: 2 on worker 1, 7 on worker 3
      p.select([ws[0]], info({ blockHashes: ['x0', 'x1'], promptTokens: 32 }));
      p.select([ws[2]], info({ blockHashes: ['y0'], promptTokens: 7 * 16 }));
      return { p, ws };
    };
    const { p, ws } = setupDocs(1);
    expect([p.logit(ws[0], 160, 2), p.logit(ws[1], 160, 5), p.logit(ws[2], 160, 8)]).toEqual([18, 10, 11]);
    expect(p.select(ws, info({ blockHashes: chain, promptTokens: 160 }))!.worker.id).toBe('w1');
    // "higher weights favor cache reuse": at weight 2 the costs are 26, 15, 13 → worker 3
    const heavy = setupDocs(2);
    expect([
      heavy.p.logit(heavy.ws[0], 160, 2),
      heavy.p.logit(heavy.ws[1], 160, 5),
      heavy.p.logit(heavy.ws[2], 160, 8),
    ]).toEqual([26, 15, 13]);
    expect(heavy.p.select(heavy.ws, info({ blockHashes: chain, promptTokens: 160 }))!.worker.id).toBe('w2');
  });

  it('queued prefill and active decode blocks outweigh the overlap when large enough', () => {
    const { p, ws } = setup();
    ws[0].queuedPrefillTokens = 160; // +10 prefill blocks on A: 17.25 > 13.25
    expect(p.logit(ws[0], 100, 3)).toBeCloseTo(17.25);
    expect(p.select(ws, req())!.worker.id).toBe('w1');
  });

  it('active blocks are counted from select to observe', () => {
    const { p, ws } = setup();
    const first = req();
    p.select(ws, first); // A: +7 active blocks
    expect(p.logit(ws[0], 100, 3)).toBeCloseTo(14.25);
    p.observe({ workerId: 'w0', info: first, ok: true });
    expect(p.logit(ws[0], 100, 3)).toBeCloseTo(7.25);
  });

  it('overlap weight 0 ignores the cache (pure load balance)', () => {
    const { p, ws } = setup({ overlap_score_weight: 0 });
    ws[0].queuedPrefillTokens = 0;
    expect(p.logit(ws[0], 100, 3)).toBeCloseTo(4);
    expect(p.logit(ws[1], 100, 0)).toBeCloseTo(7);
  });

  it('temperature > 0 samples: the costlier worker is picked sometimes, the cheaper one mostly', () => {
    const { p, ws } = setup({ temperature: 0.5, seed: 3 });
    const picks = { w0: 0, w1: 0 } as Record<string, number>;
    for (let i = 0; i < 400; i++) {
      const r = req();
      const c = p.select(ws, r)!;
      picks[c.worker.id]++;
      p.observe({ workerId: c.worker.id, info: r, ok: true });
    }
    expect(picks.w0).toBeGreaterThan(picks.w1);
    expect(picks.w1).toBeGreaterThan(0);
  });

  it('a pick pushed out of the full pending map stops counting its active blocks', () => {
    const p = new DynamoKvPolicy({ block_size: 16 });
    const ws = workers(2);
    const picks = Array.from({ length: 16_384 + 100 }, () => info({ promptTokens: 64 }));
    for (const r of picks) p.select(ws, r);
    expect(p.stats().pending).toBe(16_384);
    const counted = Object.values(p.stats().activeBlocks).reduce((a, b) => a + b, 0);
    expect(counted).toBe(16_384 * 4); // the 100 oldest picks' 4 blocks each no longer count
    for (const r of picks) p.observe({ workerId: 'w0', info: r, ok: true });
    expect(p.stats()).toEqual({ activeBlocks: { w0: 0, w1: 0 }, pending: 0 });
  });

  it('approximate mode learns from its own decisions', () => {
    const p = new DynamoKvPolicy({ block_size: 16 });
    const ws = workers(2);
    const a = p.select(ws, req())!;
    p.observe({ workerId: a.worker.id, info: req(), ok: true });
    const b = p.select(ws, req())!;
    expect(b.worker.id).toBe(a.worker.id);
    expect(b.predictedCachedTokens).toBe(96);
  });
});

describe('llmd_precise (llm-d precise prefix-cache profile)', () => {
  it('ships the profile weights: prefix 2, KV usage 1, queue 1', () => {
    expect(LLMD_DEFAULTS).toMatchObject({ prefix_weight: 2, kv_usage_weight: 1, queue_weight: 1 });
  });

  it('min-max normalisation: all equal → 1', () => {
    expect(minMax([4, 2, 0], false)).toEqual([1, 0.5, 0]);
    expect(minMax([3, 3], false)).toEqual([1, 1]);
    expect(minMax([3, 0, 1], true)).toEqual([0, 1, 2 / 3]);
  });

  // prompt of 5 blocks; pods: a holds 4, b 2, c 0; waiting 3 / 0 / 1; KV usage 0.5 / 0.2 / 0.9
  // prefix score = held ÷ prompt blocks (llm-d's absoluteScoredPods); queue min-max, inverted
  // a: 2·4/5 + (1−0.5) + 1·0   = 2.1
  // b: 2·2/5 + (1−0.2) + 1·1   = 2.6   ← max
  // c: 2·0   + (1−0.9) + 1·2/3 ≈ 0.767
  it('worked example: 2.1 / 2.6 / 0.77 → b', () => {
    const ev = new KvEventIndex();
    ev.blockStored('w0', ['p1', 'p2', 'p3', 'p4']);
    ev.blockStored('w1', ['p1', 'p2']);
    const p = new LlmdPrecisePolicy({ kv_index: ev, block_size: 64 });
    const ws = workers(3);
    ws[0].engine = { waiting: 3, kvUsage: 0.5 };
    ws[1].engine = { waiting: 0, kvUsage: 0.2 };
    ws[2].engine = { waiting: 1, kvUsage: 0.9 };
    const s = p.scores(ws, [4, 2, 0], 5);
    expect(s[0]).toBeCloseTo(2.1);
    expect(s[1]).toBeCloseTo(2.6);
    expect(s[2]).toBeCloseTo(0.1 + 2 / 3);
    const c = p.select(ws, info({ blockHashes: ['p1', 'p2', 'p3', 'p4', 'p5'], promptTokens: 320 }))!;
    expect(c.worker.id).toBe('w1');
    expect(c.predictedCachedTokens).toBe(128);
  });

  // Every pod holds a 20-block prompt's shared first block; w0 also its second, but w0 is
  // loaded (10 waiting, KV 90 %). Min-max (the scorer before llm-d #1107) gave w0 the whole
  // prefix weight for that one block: 2·1 + 0.1 + 0 = 2.1 beat 0 + 0.5 + 1 = 1.5 everywhere
  // else, which piled a trace sharing one root onto a few pods. Absolute: w0 2·2/20 + 0.1 = 0.3,
  // the others 2·1/20 + 0.5 + 1 = 1.6.
  it('one block more than the rest does not outvote queue and KV usage', () => {
    const ev = new KvEventIndex();
    const chain = Array.from({ length: 20 }, (_, i) => `q${i}`);
    for (let i = 0; i < 4; i++) ev.blockStored(`w${i}`, chain.slice(0, i === 0 ? 2 : 1));
    const p = new LlmdPrecisePolicy({ kv_index: ev, block_size: 64 });
    const ws = workers(4);
    ws[0].engine = { waiting: 10, kvUsage: 0.9 };
    for (let i = 1; i < 4; i++) ws[i].engine = { waiting: 0, kvUsage: 0.5 };
    const s = p.scores(ws, [2, 1, 1, 1], 20);
    expect(s[0]).toBeCloseTo(0.3);
    expect(s[1]).toBeCloseTo(1.6);
    const c = p.select(ws, info({ blockHashes: chain, promptTokens: 20 * 64 }))!;
    expect(c.worker.id).not.toBe('w0');
    expect(c.predictedCachedTokens).toBe(64);
  });
});
