// The per-tenant LRU (middleware/tenant-lru.ts): plain LRU above the active tenants' reserves, so
// an active tenant is never starved by idle ones (9 idle + 1 active reuses what lru-cache reuses),
// while a tenant flooding by count or by weight evicts its own entries before a quieter tenant's
// reserve (a victim's one heavy session survives a flood of small calls); idle tenants lose their
// reserve after the idle window (in turnovers of either bound); with one tenant it keeps exactly what lru-cache keeps.
import { LRUCache } from 'lru-cache';
import { describe, expect, it } from 'vitest';
import { DEFAULT_IDLE_TURNOVERS, TenantLru } from '../../middleware/tenant-lru.ts';

/** 9 tenants fill the cache (50 sessions each) and go quiet; one tenant then runs 1,200 calls
 * round-robin over 60 sessions (each call: get its session's kept call, then set it). */
function nineIdleOneActive(get: (t: string, k: string) => unknown, set: (t: string, k: string) => void): number {
  for (let t = 0; t < 9; t++) for (let i = 0; i < 50; i++) set(`idle${t}`, `s${i}`);
  let reused = 0;
  for (let call = 0; call < 1_200; call++) {
    const k = `s${call % 60}`;
    if (get('active', k) !== undefined) reused++;
    set('active', k);
  }
  return reused;
}

describe('TenantLru', () => {
  it('9 idle tenants + 1 active: the active one reuses what a plain LRU reuses (was 0 of 1,200)', () => {
    const plain = new LRUCache<string, number>({ max: 500 });
    const expected = nineIdleOneActive(
      (t, k) => plain.get(`${t}/${k}`),
      (t, k) => plain.set(`${t}/${k}`, 1),
    );
    const c = new TenantLru<number>({ max: 500, maxSize: 1e9, sizeOf: () => 1 });
    const reused = nineIdleOneActive(
      (t, k) => c.get(t, k),
      (t, k) => c.set(t, k, 1),
    );
    expect(expected).toBe(1_140);
    expect(reused).toBe(expected);
    // the idle tenants are still within the idle window: each keeps its reserve (500 × ½ / 10)
    for (let t = 0; t < 9; t++) expect(c.countOf(`idle${t}`)).toBeGreaterThanOrEqual(25);
  });

  it('after the idle window an idle tenant keeps nothing: one active tenant gets the whole cache', () => {
    const max = 100;
    const c = new TenantLru<number>({ max, maxSize: 1e9, sizeOf: () => 1 });
    for (let i = 0; i < 50; i++) c.set('idle', `s${i}`, 1);
    // the active tenant's working set is the whole cache: within the window it has all but the
    // idle tenant's reserve (100 × ½ / 2 = 25)
    for (let i = 0; i < 3 * max; i++) c.set('active', `s${i % max}`, 1);
    expect(c.countOf('idle')).toBe(25);
    for (let i = 0; i < DEFAULT_IDLE_TURNOVERS * max; i++) c.set('active', `s${i % max}`, 1);
    expect(c.countOf('idle')).toBe(0);
    expect(c.countOf('active')).toBe(max);
    // a tenant back from idle has its reserve again: the active one pays for its new entries
    for (let i = 0; i < 10; i++) c.set('idle', `back${i}`, 1);
    for (let i = 0; i < max; i++) c.set('active', `n${i}`, 1);
    expect(c.countOf('idle')).toBe(10);
  });

  it('the idle window counts turnovers of the weight bound too: agent-sized calls at the pipeline bounds', () => {
    // The pipeline's bounds: entries = max_sessions (10,000) × tenants, weight 16M tokens. With
    // 50k-token kept calls the weight binds (320 fit): counted in entry turnovers only, stopped
    // tenants kept their reserves for 8 × 100,000 sets and the one working tenant, capped near 55 %
    // of the weight, reused none of its 250 sessions (review s39 W1).
    const size = 50_000;
    const maxSize = 16_000_000;
    const c = new TenantLru<number>({ max: 10_000 * 10, maxSize, sizeOf: (v) => v });
    for (let t = 0; t < 9; t++) for (let i = 0; i < 30; i++) c.set(`stopped${t}`, `s${i}`, size);
    const calls = 6_000;
    let reused = 0;
    let first = -1;
    for (let call = 0; call < calls; call++) {
      const k = `s${call % 250}`;
      if (c.get('working', k) !== undefined) {
        reused++;
        if (first < 0) first = call;
      }
      c.set('working', k, size);
    }
    // idle after 8 weight turnovers (8 × 320 = 2,560 sets); from then on a plain LRU's reuse
    const idleAfter = (DEFAULT_IDLE_TURNOVERS * maxSize) / size;
    expect(first).toBeGreaterThan(0);
    expect(first).toBeLessThanOrEqual(idleAfter + 250);
    expect(reused).toBeGreaterThanOrEqual(calls - idleAfter - 250);
    // the working tenant holds its whole working set; the stopped ones only what is left over
    expect(c.countOf('working')).toBe(250);
    let stopped = 0;
    for (let t = 0; t < 9; t++) stopped += c.countOf(`stopped${t}`);
    expect(stopped).toBeLessThanOrEqual((maxSize - 250 * size) / size);
  });

  it("a victim's one heavy session survives another tenant's flood of small calls (was wiped)", () => {
    const c = new TenantLru<number>({ max: 100, maxSize: 1_000, sizeOf: (v) => v });
    c.set('victim', 'long', 600);
    let kept = 0;
    for (let i = 0; i < 200; i++) {
      c.set('flood', `f${i}`, 5);
      if (i % 20 === 19 && c.get('victim', 'long') !== undefined) kept++;
    }
    expect(kept).toBe(10);
    // the flood evicted its own: it holds what the weight bound leaves it
    expect(c.countOf('flood')).toBe(80);
    expect(c.has('flood', 'f199')).toBe(true);
    expect(c.has('flood', 'f119')).toBe(false);
  });

  it("a tenant's flood of entries (by count) evicts its own, not an active tenant's", () => {
    const c = new TenantLru<number>({ max: 10, maxSize: 1_000, sizeOf: () => 1 });
    c.set('b', 'b1', 1);
    c.set('b', 'b2', 1);
    for (let i = 0; i < 60; i++) c.set('a', `a${i}`, i);
    expect(c.has('b', 'b1')).toBe(true);
    expect(c.has('b', 'b2')).toBe(true);
    expect(c.countOf('a')).toBe(8);
    expect(c.size).toBe(10);
    // the flood's newest entries are the ones kept
    expect(c.has('a', 'a59')).toBe(true);
    expect(c.has('a', 'a51')).toBe(false);
  });

  it('by weight too: a few huge entries of one tenant evict its own first', () => {
    const c = new TenantLru<number>({ max: 100, maxSize: 100, sizeOf: (v) => v });
    c.set('b', 'small', 5);
    for (let i = 0; i < 10; i++) c.set('a', `huge${i}`, 40);
    expect(c.get('b', 'small')).toBe(5);
    expect(c.countOf('a')).toBe(2);
  });

  it('above the reserves it is LRU across tenants; within them the entry just set stays', () => {
    // reserve: 8 × ½ / 2 = 2 entries a tenant
    const c = new TenantLru<number>({ max: 8, maxSize: 1_000, sizeOf: () => 1 });
    for (let i = 0; i < 8; i++) c.set('a', `a${i}`, i);
    c.set('b', 'b0', 0); // b holds only the entry just set: a pays
    expect(c.has('b', 'b0')).toBe(true);
    expect(c.has('a', 'a0')).toBe(false);
    for (let i = 1; i < 4; i++) c.set('b', `b${i}`, i); // b over its reserve: still a's oldest go (LRU)
    expect(c.countOf('a')).toBe(4);
    c.get('a', 'a4'); // a's oldest is now a5
    for (let i = 4; i < 10; i++) c.set('b', `b${i}`, i);
    // a is down to its reserve (2): b's own oldest go from here on
    expect(c.countOf('a')).toBe(2);
    expect(c.has('a', 'a4')).toBe(true);
    expect(c.has('a', 'a7')).toBe(true);
    expect(c.countOf('b')).toBe(6);
    expect(c.has('b', 'b3')).toBe(false);
  });

  it('many tenants, random sets: the bounds hold, the entry just set stays, reserves are kept', () => {
    let seed = 777;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const c = new TenantLru<number>({ max: 40, maxSize: 300, sizeOf: (v) => v });
    for (let i = 0; i < 5_000; i++) {
      // tenant t0 is quiet: one small session, called every 50 operations
      const t = i % 50 === 0 ? 't0' : `t${1 + rnd(12)}`;
      const key = t === 't0' ? 'only' : `k${rnd(30)}`;
      if (t === 't0' && i > 0) expect(c.get(t, key)).toBe(3);
      c.set(t, key, t === 't0' ? 3 : 1 + rnd(20));
      expect(c.has(t, key)).toBe(true);
      expect(c.size).toBeLessThanOrEqual(40);
    }
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
