// The reference worker's SGLang flavour (RadixCache) against more of SGLang's radix cache unit
// tests, test/registered/unit/mem_cache/test_radix_cache_unit.py (TestRadixCache), page size 1
// (SGLang's default, the one this tree models), with upstream's own sequences. The first cases
// are in engine-conformance.test.ts. Upstream's match_prefix may return the whole key; a request
// here never hits its own last token, so whole-key matches are read through match().
import { describe, expect, it } from 'vitest';
import { RadixCache, type RadixEventSink } from '../../loadtest/sim-worker/radix-cache.ts';

function events() {
  const log: { stored: number[][]; removed: string[][]; cleared: number } = { stored: [], removed: [], cleared: 0 };
  const sink: RadixEventSink = {
    stored: (_key, _parent, tokenIds) => log.stored.push(tokenIds),
    removedMany: (keys) => log.removed.push([...keys]),
    cleared: () => log.cleared++,
  };
  return { log, sink };
}

describe('test_radix_cache_unit.py TestRadixCache', () => {
  it('test_advanced_prefix_match_with_node_splits: [1..8] and [1, 2, 9, 10], splits while matching', () => {
    const c = new RadixCache(1000);
    const seq1 = [1, 2, 3, 4, 5, 6, 7, 8];
    const seq2 = [1, 2, 9, 10];
    c.insert(seq1);
    c.insert(seq2);
    expect(c.size()).toBe(10); // 8 + 2
    expect(c.match([1, 2, 3, 4, 999, 1000]).length).toBe(4);
    expect(c.size()).toBe(10); // no data change after a structural split during matching
    expect(c.match(seq1).length).toBe(8);
    expect(c.match([1, 2, 3, 4, 5, 6, 777, 888]).length).toBe(6);
    expect(c.size()).toBe(10);
    expect(c.match(seq2).length).toBe(4);
  });

  it('test_lock_ref_operations: locking moves the path from evictable to protected and back', () => {
    const c = new RadixCache(1000);
    c.insert([1, 2, 3]);
    const { node } = c.match([1, 2, 3]);
    const evictable = () => c.size() - c.lockedSize();
    const [e0, p0] = [evictable(), c.lockedSize()];
    c.lock(node);
    expect([evictable(), c.lockedSize()]).toEqual([e0 - 3, p0 + 3]);
    c.unlock(node);
    expect([evictable(), c.lockedSize()]).toEqual([e0, p0]);
  });

  it('test_extra_key_isolation: the same tokens under different extra keys never match each other', () => {
    const c = new RadixCache(1000);
    for (const salt of ['key1', 'key2', undefined]) c.finish(c.begin([1, 2, 3], salt), []);
    for (const salt of ['key1', 'key2', undefined]) expect(c.begin([1, 2, 3, 99], salt).cachedTokens).toBe(3);
    expect(c.begin([1, 2, 3, 99], 'nonexistent').cachedTokens).toBe(0);
  });

  it('test_kv_cache_events (page size 1): BlockStored per page, at most one token each', () => {
    const { log, sink } = events();
    const c = new RadixCache(1000, sink);
    c.insert([1, 2, 3, 4, 5]);
    expect(log.stored).toHaveLength(5);
    for (const ids of log.stored) expect(ids.length).toBeLessThanOrEqual(1);
  });

  it('test_kv_cache_events_with_eviction: evicting 3 tokens reports BlockStored, then BlockRemoved with hashes', () => {
    const { log, sink } = events();
    const c = new RadixCache(1000, sink);
    c.insert([1, 2, 3]);
    expect(c.evict(3)).toBeGreaterThanOrEqual(3);
    expect(log.stored.length).toBeGreaterThan(0);
    expect(log.removed.length).toBeGreaterThan(0);
    for (const hashes of log.removed) expect(hashes.length).toBeGreaterThan(0);
    expect(c.size()).toBe(0);
  });

  it('test_reset: total, evictable and protected sizes all 0 (one AllBlocksCleared)', () => {
    const { log, sink } = events();
    const c = new RadixCache(1000, sink);
    c.insert([1, 2, 3]);
    expect(c.size()).toBeGreaterThan(0);
    c.flush();
    expect([c.size(), c.lockedSize(), c.size() - c.lockedSize()]).toEqual([0, 0, 0]);
    expect(log.cleared).toBe(1);
  });
});
