// Cases derived from the SGLang router's documented cache-aware behaviour (cache_aware.rs header).
import { describe, expect, it } from 'vitest';
import { SGLANG_DEFAULTS, SglangCacheAwarePolicy } from '../../kvplanner/policies/sglang-cache-aware.ts';
import { info, workers } from './fixtures.ts';

const SYS = 'You are a careful coding agent. Follow the repository rules. '.repeat(4);

describe('sglang_cache_aware', () => {
  it('uses the SGLang router defaults', () => {
    expect(SGLANG_DEFAULTS).toMatchObject({
      cache_threshold: 0.5,
      balance_abs_threshold: 32,
      balance_rel_threshold: 1.0001,
    });
  });

  it('a match above cache_threshold goes to the matching worker', () => {
    const p = new SglangCacheAwarePolicy({ eviction_interval_secs: 0 });
    const ws = workers(3);
    const first = p.select(ws, info({ text: SYS + 'task A', promptTokens: 100 }))!;
    expect(first.branch).toBe('smallest_tree');
    const again = p.select(ws, info({ text: SYS + 'task A, step 2', promptTokens: 110 }))!;
    expect(again.branch).toBe('prefix_match');
    expect(again.worker.id).toBe(first.worker.id);
    expect(again.predictedCachedTokens).toBeGreaterThan(80);
  });

  it('below the threshold goes to the worker with the smallest tree', () => {
    const p = new SglangCacheAwarePolicy({ eviction_interval_secs: 0 });
    const ws = workers(3);
    p.select(ws, info({ text: 'a'.repeat(300) })); // w0 (all empty: first)
    p.select(ws, info({ text: 'b'.repeat(100) })); // w1
    p.select(ws, info({ text: 'c'.repeat(200) })); // w2
    expect(['w0', 'w1', 'w2'].map((id) => p.tree.size(id))).toEqual([300, 100, 200]);
    // shares 10 of 100 chars with w0's text: rate 0.1 ≤ 0.5 → smallest tree (w1)
    const c = p.select(ws, info({ text: 'a'.repeat(10) + 'z'.repeat(90) }))!;
    expect(c.branch).toBe('smallest_tree');
    expect(c.worker.id).toBe('w1');
  });

  it('imbalance (abs and rel both exceeded) triggers shortest queue even against a cache match', () => {
    const p = new SglangCacheAwarePolicy({ eviction_interval_secs: 0 });
    const ws = workers(3);
    const home = p.select(ws, info({ text: SYS }))!.worker;
    home.inFlight = 40;
    ws.find((w) => w !== home)!.inFlight = 5;
    const last = ws.find((w) => w !== home && w.inFlight === 0)!;
    const c = p.select(ws, info({ text: SYS + 'more' }))!;
    expect(c.branch).toBe('balance');
    expect(c.worker.id).toBe(last.id);
    // the text is inserted for the chosen worker even when balancing
    expect(p.tree.size(last.id)).toBe(SYS.length + 4);
  });

  it('a difference within balance_abs_threshold keeps cache affinity', () => {
    const p = new SglangCacheAwarePolicy({ eviction_interval_secs: 0 });
    const ws = workers(2);
    const home = p.select(ws, info({ text: SYS }))!.worker;
    home.inFlight = 32; // 32 − 0 is not > 32
    expect(p.select(ws, info({ text: SYS + 'x' }))!.worker.id).toBe(home.id);
  });

  it('eviction cuts each tree to max_tree_size, least recently used leaves first', () => {
    const p = new SglangCacheAwarePolicy({ eviction_interval_secs: 0, max_tree_size: 150 });
    const ws = workers(1);
    p.select(ws, info({ text: 'old-' + 'o'.repeat(96) }));
    p.select(ws, info({ text: 'new-' + 'n'.repeat(96) }));
    expect(p.tree.size('w0')).toBe(200);
    p.evict();
    expect(p.tree.size('w0')).toBe(100);
    expect(p.tree.matchFor('new-' + 'n'.repeat(96), 'w0')).toBe(100);
    expect(p.tree.matchFor('old-' + 'o'.repeat(96), 'w0')).toBe(0);
  });
});
