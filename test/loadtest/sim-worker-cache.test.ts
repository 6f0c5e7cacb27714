import { describe, expect, it } from 'vitest';
import { BlockCache } from '../../loadtest/sim-worker/block-cache.ts';
import { RadixCache } from '../../loadtest/sim-worker/radix-cache.ts';

const seq = (from: number, n: number): number[] => Array.from({ length: n }, (_, i) => from + i);

describe('vLLM block cache', () => {
  it('hits only full blocks and never the last prompt token', () => {
    const c = new BlockCache(1000, 4);
    const a = seq(0, 10); // 2 full blocks + 2 tokens
    c.finish(c.begin(a), []);
    expect(c.begin([...a, 99]).cachedTokens).toBe(8); // partial 3rd block never cached
    const exact = seq(0, 8);
    expect(c.begin(exact).cachedTokens).toBe(4); // prompt-1 = 7 → one full block
  });

  it('chains hashes: a different first block misses every later block', () => {
    const c = new BlockCache(1000, 4);
    c.finish(c.begin(seq(0, 12)), []);
    const changed = seq(0, 12);
    changed[1] = 500;
    expect(c.begin(changed).cachedTokens).toBe(0);
  });

  it('caches generated tokens except the last one', () => {
    const c = new BlockCache(1000, 4);
    const prompt = seq(0, 6);
    c.finish(c.begin(prompt), [6, 7, 8]); // KV exists for 0..7 → 2 blocks
    expect(c.begin([...seq(0, 9), 100]).cachedTokens).toBe(8);
  });

  it('evicts unreferenced blocks least-recently-freed first, tail before head', () => {
    const c = new BlockCache(16, 4); // 4 blocks
    const a = seq(0, 8);
    const b = seq(100, 8);
    c.finish(c.begin(a), []);
    c.finish(c.begin(b), []);
    expect(c.size()).toBe(4);
    c.finish(c.begin(seq(200, 4)), []); // needs 1 block: evicts a's tail block
    expect(c.has(a)).toBe(1);
    expect(c.has(b)).toBe(2);
    c.finish(c.begin(seq(300, 4)), []); // next victim: a's head
    expect(c.has(a)).toBe(0);
    expect(c.has(b)).toBe(2);
  });

  it('never evicts blocks referenced by running requests', () => {
    const c = new BlockCache(8, 4); // 2 blocks
    const running = c.begin(seq(0, 8));
    const other = c.begin(seq(100, 8)); // no free block: runs uncached
    expect(c.has(seq(0, 8))).toBe(2);
    c.finish(other, []);
    expect(c.has(seq(100, 8))).toBe(0);
    c.finish(running, []);
    expect(c.begin(seq(0, 9)).cachedTokens).toBe(8);
    expect(c.stats().hits).toBe(8);
  });
});

describe('SGLang radix cache', () => {
  it('splits a node where prompts diverge and shares the common prefix', () => {
    const c = new RadixCache(1000);
    c.finish(c.begin([1, 2, 3, 4, 5, 6]), []);
    const l = c.begin([1, 2, 3, 9, 9]);
    expect(l.cachedTokens).toBe(3);
    const top = c.root.children.get(1)!;
    expect(top.key).toEqual([1, 2, 3]);
    expect([...top.children.keys()].sort()).toEqual([4, 9]);
    expect(c.size()).toBe(8);
    c.finish(l, []);
  });

  it('reports at most prompt-1 tokens as cached, at token granularity', () => {
    const c = new RadixCache(1000);
    c.finish(c.begin([1, 2, 3, 4, 5]), [6, 7]);
    expect(c.begin([1, 2, 3, 4, 5]).cachedTokens).toBe(4);
    expect(c.begin([1, 2, 3, 4, 5, 6, 8]).cachedTokens).toBe(6);
  });

  it('evicts least recently used leaves first and never locked nodes', () => {
    const c = new RadixCache(12);
    const a = [1, 2, 3, 4];
    const b = [5, 6, 7, 8];
    c.finish(c.begin(a), []);
    c.finish(c.begin(b), []);
    const locked = c.begin([9, 10, 11, 12]); // running: locked
    c.match(b); // b is now more recent than a
    const d = c.begin([13, 14, 15, 16]); // needs 4 tokens: evicts a (LRU, unlocked)
    expect(c.match(a).length).toBe(0);
    expect(c.match(b).length).toBe(4);
    expect(c.match([9, 10, 11, 12]).length).toBe(4);
    c.finish(d, []);
    c.begin([20, 21, 22, 23]); // evicts b or d, never the locked path
    expect(c.match([9, 10, 11, 12]).length).toBe(4);
    c.finish(locked, []);
    expect(c.evict(100)).toBeGreaterThan(0);
  });
});

describe('cache_salt namespaces', () => {
  const prompt = Array.from({ length: 40 }, (_, i) => i + 1);
  it('vLLM blocks: the salt enters the first block, so nothing is shared across salts', () => {
    const c = new BlockCache(10_000, 4);
    c.finish(c.begin(prompt, 'tenant-a'), []);
    expect(c.begin(prompt, 'tenant-a').cachedTokens).toBe(36);
    expect(c.begin(prompt, 'tenant-b').cachedTokens).toBe(0);
    expect(c.begin(prompt).cachedTokens).toBe(0);
  });
  it('SGLang radix: one root per salt; eviction still frees salted entries', () => {
    const c = new RadixCache(100);
    c.finish(c.begin(prompt, 'tenant-a'), []);
    expect(c.begin(prompt, 'tenant-a').cachedTokens).toBe(39);
    const b = c.begin(prompt, 'tenant-b');
    expect(b.cachedTokens).toBe(0);
    c.finish(b, []);
    c.flush();
    expect(c.size()).toBe(40); // tenant-a's second lease is still running (locked)
  });
});
