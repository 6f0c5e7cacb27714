// The per-tenant LRU (middleware/tenant-lru.ts): a tenant over the bound evicts its own least
// recently used entries, never those of a tenant holding less; with one tenant it keeps exactly
// what lru-cache (the LRU it replaced) keeps, on the same random operations.
import { LRUCache } from 'lru-cache';
import { describe, expect, it } from 'vitest';
import { TenantLru } from '../../middleware/tenant-lru.ts';

describe('TenantLru', () => {
  it("a tenant's flood of entries evicts its own, not another tenant's", () => {
    const c = new TenantLru<number>({ max: 10, maxSize: 1_000, sizeOf: () => 1 });
    c.set('b', 'b1', 1);
    c.set('b', 'b2', 1);
    for (let i = 0; i < 100; i++) c.set('a', `a${i}`, i);
    expect(c.has('b', 'b1')).toBe(true);
    expect(c.has('b', 'b2')).toBe(true);
    expect(c.countOf('a')).toBe(8);
    expect(c.size).toBe(10);
    // the flood's newest entries are the ones kept
    expect(c.has('a', 'a99')).toBe(true);
    expect(c.has('a', 'a91')).toBe(false);
  });

  it('by weight too: a few huge entries of one tenant evict its own first', () => {
    const c = new TenantLru<number>({ max: 100, maxSize: 100, sizeOf: (v) => v });
    c.set('b', 'small', 5);
    for (let i = 0; i < 10; i++) c.set('a', `huge${i}`, 40);
    expect(c.get('b', 'small')).toBe(5);
    expect(c.countOf('a')).toBe(2);
  });

  it('a tenant holding more than another is evicted from first; the entry just set stays', () => {
    const c = new TenantLru<number>({ max: 4, maxSize: 1_000, sizeOf: () => 1 });
    for (let i = 0; i < 4; i++) c.set('a', `a${i}`, i);
    c.set('b', 'b0', 0); // b holds only the entry just set: a pays
    expect(c.has('b', 'b0')).toBe(true);
    expect(c.has('a', 'a0')).toBe(false);
    expect(c.countOf('a')).toBe(3);
    c.set('b', 'b1', 1); // a (3) still holds more than b (2)
    expect(c.countOf('a')).toBe(2);
    c.set('b', 'b2', 2); // now b (3) holds more: b evicts its own oldest
    expect(c.has('b', 'b0')).toBe(false);
    expect(c.countOf('a')).toBe(2);
  });

  it('an entry over the whole weight bound is not stored (and drops the old value)', () => {
    const c = new TenantLru<number>({ max: 10, maxSize: 50, sizeOf: (v) => v });
    c.set('a', 'k', 10);
    c.set('a', 'k', 60);
    expect(c.has('a', 'k')).toBe(false);
    expect(c.size).toBe(0);
  });

  it('with one tenant it keeps what lru-cache keeps, on the same random operations', () => {
    let seed = 12345;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (const [max, maxSize] of [
      [8, 1_000],
      [50, 120],
      [20, 40],
    ]) {
      const ours = new TenantLru<number>({ max, maxSize, sizeOf: (v) => v });
      const ref = new LRUCache<string, number>({ max, maxSize, sizeCalculation: (v) => v });
      for (let i = 0; i < 5_000; i++) {
        const key = `k${rnd(60)}`;
        const op = rnd(3);
        if (op === 0) {
          const v = 1 + rnd(15);
          ours.set('t', key, v);
          ref.set(key, v);
        } else if (op === 1) expect(ours.get('t', key)).toBe(ref.get(key));
        else expect(ours.has('t', key)).toBe(ref.has(key));
      }
      for (let k = 0; k < 60; k++) expect(ours.has('t', `k${k}`)).toBe(ref.has(`k${k}`));
      expect(ours.size).toBe(ref.size);
    }
  });
});
