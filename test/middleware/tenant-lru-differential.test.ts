// TenantLru finds the oldest tenant over its reserve in a treap instead of scanning every active
// tenant (stamp-treap.ts): its decisions must be the scan's. Random operations (sets of random
// weight, gets, has) on random settings (both bounds binding, idle tenants, reserve shares 0 to 1,
// one tenant to many), the same sequence given to TenantLru and to the scan it replaced
// (test/fixtures/tenant-lru-scan.ts); every answer and every tenant's count compared after each
// operation, and every key held compared every few operations.
import { describe, expect, it } from 'vitest';
import { TenantLru } from '../../middleware/tenant-lru.ts';
import { TenantLruScan } from '../fixtures/tenant-lru-scan.ts';
import { mulberry32 as rng } from '../../kvplanner/rng.ts';

interface Run {
  ops: number;
  divergence: string | undefined;
}

function run(seed: number, ops: number): Run {
  const r = rng(seed);
  const pick = (n: number) => Math.floor(r() * n);
  const tenants = 1 + pick(pick(2) ? 40 : 6);
  const keys = 2 + pick(30);
  const max = 2 + pick(60);
  const opts = {
    max,
    maxSize: 5 + pick(max * 8),
    sizeOf: (v: number) => v,
    idleTurnovers: 1 + pick(4),
    reserveShare: [0, 0.25, 0.5, 0.9, 1][pick(5)],
  };
  const a = new TenantLru<number>(opts);
  const b = new TenantLruScan<number>(opts);
  // a few tenants busy, the rest rarely: idle tenants and active ones both
  const busy = 1 + pick(tenants);
  const tenantOf = () => `t${r() < 0.8 ? pick(busy) : pick(tenants)}`;
  for (let i = 0; i < ops; i++) {
    const t = tenantOf();
    const k = `k${pick(keys)}`;
    const op = r();
    const what = `op ${i} (${t}/${k}) of ${JSON.stringify({ seed, tenants, keys, ...opts, sizeOf: undefined })}`;
    if (op < 0.65) {
      const size = r() < 0.1 ? 1 + pick(opts.maxSize + 2) : 1 + pick(4);
      a.set(t, k, size);
      b.set(t, k, size);
    } else if (op < 0.95) {
      const [x, y] = [a.get(t, k), b.get(t, k)];
      if (x !== y) return { ops: i, divergence: `get ${x} vs ${y} at ${what}` };
    } else if (a.has(t, k) !== b.has(t, k)) return { ops: i, divergence: `has at ${what}` };
    if (a.size !== b.size) return { ops: i, divergence: `size ${a.size} vs ${b.size} at ${what}` };
    for (let j = 0; j < tenants; j++)
      if (a.countOf(`t${j}`) !== b.countOf(`t${j}`)) return { ops: i, divergence: `countOf t${j} at ${what}` };
    if (i % 16 === 0)
      for (let j = 0; j < tenants; j++)
        for (let q = 0; q < keys; q++)
          if (a.has(`t${j}`, `k${q}`) !== b.has(`t${j}`, `k${q}`))
            return { ops: i, divergence: `has t${j}/k${q} at ${what}` };
  }
  return { ops, divergence: undefined };
}

describe('TenantLru decides as the scan it replaced', () => {
  it('on 200 random settings × 1,200 random operations', () => {
    const found: string[] = [];
    for (let seed = 1; seed <= 200; seed++) {
      const r = run(seed, 1_200);
      if (r.divergence) found.push(r.divergence);
    }
    expect(found.slice(0, 3)).toEqual([]);
  });

  it('with many tenants and one that floods', () => {
    const opts = { max: 300, maxSize: 3_000, sizeOf: (v: number) => v };
    const a = new TenantLru<number>(opts);
    const b = new TenantLruScan<number>(opts);
    const r = rng(7);
    let diverged = -1;
    for (let i = 0; i < 30_000 && diverged < 0; i++) {
      const t = r() < 0.5 ? 'flood' : `q${Math.floor(r() * 200)}`;
      const k = t === 'flood' ? `f${i}` : `k${Math.floor(r() * 3)}`;
      const size = 1 + Math.floor(r() * 20);
      a.set(t, k, size);
      b.set(t, k, size);
      if (a.countOf('flood') !== b.countOf('flood') || a.size !== b.size) diverged = i;
    }
    expect(diverged).toBe(-1);
    for (let j = 0; j < 200; j++)
      for (let q = 0; q < 3; q++) expect(a.has(`q${j}`, `k${q}`)).toBe(b.has(`q${j}`, `k${q}`));
  });
});
