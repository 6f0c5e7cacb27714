// PrefixIndex.matchAll (every worker's binary search at once over holder bitmasks) against naive
// models kept beside the index: per worker a Set of the blocks it holds, a linear scan (the longest
// held prefix) and an independent copy of matchLength's binary search (with the hint matchAll takes
// from its previous call). Generated insert / evict / clear / removeWorker sequences over branching
// chains; workers join during the run, so the masks widen from one word to three.
import { describe, expect, it } from 'vitest';
import { PrefixIndex } from '../../kvplanner/prefix-index.ts';

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

/** Longest prefix of `q` held (the answer wherever held blocks are prefix-closed). */
function linear(held: Set<string>, q: readonly string[]): number {
  let k = 0;
  while (k < q.length && held.has(q[k])) k++;
  return k;
}

/** matchLength's search, written out again: the answer wherever holes exist too. */
function binary(has: (h: string) => boolean, q: readonly string[], hint = 0): number {
  if (q.length === 0 || !has(q[0])) return 0;
  let lo = 1;
  let hi = q.length;
  if (hint > 1 && hint <= hi) {
    if (has(q[hint - 1])) {
      if (hint === hi || !has(q[hint])) return hint;
      lo = hint + 1;
    } else hi = hint - 1;
  }
  if (has(q[hi - 1])) return hi;
  hi -= 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (has(q[mid - 1])) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** matchAll is called without a hint: its answers must not depend on earlier calls. */
const hintOf = (_idx: PrefixIndex): number => 0;

/** Chains sharing a root, branching into conversations, some branching again (a forked session). */
function chains(r: () => number, count: number): string[][] {
  const out: string[][] = [];
  const root = Array.from({ length: 6 }, (_, i) => `root${i}`);
  for (let c = 0; c < count; c++) {
    const parent = c > 0 && r() < 0.3 ? out[Math.floor(r() * out.length)] : root;
    const cut = Math.min(parent.length, root.length + Math.floor(r() * (parent.length - root.length + 1)));
    const len = 1 + Math.floor(r() * 40);
    out.push([...parent.slice(0, cut), ...Array.from({ length: len }, (_, i) => `c${c}-${i}`)]);
  }
  return out;
}

interface Run {
  /** arbitrary evictions (holes) allowed; otherwise an eviction takes a block's whole subtree */
  holes: boolean;
  seed: number;
}

function runSequence({ holes, seed }: Run): number {
  const r = rng(seed);
  const pool = chains(r, 60);
  const idx = new PrefixIndex(2 ** 40); // never evicts by itself: the model knows every block
  const held = new Map<string, Set<string>>();
  let workers = 4;
  const out: number[] = [];
  let checks = 0;
  const wrong: string[] = [];
  for (let step = 0; step < 1500; step++) {
    if (step % 25 === 24 && workers < 70) workers += 6; // slots 32 and 64 widen the masks
    const w = `w${Math.floor(r() * workers)}`;
    let set = held.get(w);
    if (!set) held.set(w, (set = new Set()));
    const c = pool[Math.floor(r() * pool.length)];
    const op = r();
    if (op < 0.55) {
      const k = 1 + Math.floor(r() * c.length);
      idx.insert(w, c.slice(0, k));
      for (const h of c.slice(0, k)) set.add(h);
    } else if (op < 0.85) {
      let gone: string[];
      if (holes) gone = c.filter(() => r() < 0.3);
      else {
        // a block and every held block below it: held sets stay prefix-closed
        const j = Math.floor(r() * c.length);
        gone = [];
        for (const d of pool) if (d[j] === c[j]) gone.push(...d.slice(j));
      }
      idx.evict(w, gone);
      for (const h of gone) set.delete(h);
    } else if (op < 0.95) {
      idx.clear(w);
      set.clear();
    } else {
      idx.removeWorker(w);
      set.clear();
    }
    // every few steps, every pooled chain (and a few prefixes of one) against the models
    if (step % 5 !== 0) continue;
    for (const q of [...pool.slice(0, 20), c.slice(0, 1), c.slice(0, 2), c.slice(0, 7), []]) {
      out.length = idx.slotCount();
      out.fill(-1);
      const hint = hintOf(idx);
      idx.matchAll(q, out);
      for (const [id, s] of held) {
        const slot = idx.slotOf(id);
        const got = slot < 0 ? 0 : out[slot]; // a worker only ever evicted from has no entry
        // with holes, insert fills only the blocks past its own search's answer, so the model is
        // the entry's own membership; without, the model Set is independent of the index
        const want = holes ? binary((h) => idx.has(id, h), q, hint) : linear(s, q);
        if (got !== want || got !== idx.matchLength(id, q, hint) || (!holes && got !== binary((h) => s.has(h), q)))
          wrong.push(`step ${step} ${id}: ${got} vs ${want}`);
        checks++;
      }
    }
  }
  expect(wrong.slice(0, 5)).toEqual([]);
  expect(idx.slotCount()).toBeGreaterThan(64);
  return checks;
}

describe('PrefixIndex.matchAll against naive models', () => {
  it('prefix-closed holdings: every worker gets its longest held prefix', () => {
    for (const seed of [1, 2, 3]) expect(runSequence({ holes: false, seed })).toBeGreaterThan(10_000);
  });

  it('holdings with holes: every worker gets exactly what its own binary search (matchLength) gives', () => {
    for (const seed of [4, 5, 6]) expect(runSequence({ holes: true, seed })).toBeGreaterThan(10_000);
  });

  it('an LRU-bounded index (its own evictions) agrees with matchLength for every worker', () => {
    const r = rng(9);
    const pool = chains(r, 40);
    const idx = new PrefixIndex(50);
    const ids = Array.from({ length: 40 }, (_, i) => `w${i}`);
    const out: number[] = [];
    const wrong: string[] = [];
    for (let step = 0; step < 3000; step++) {
      const c = pool[Math.floor(r() * pool.length)];
      idx.insert(ids[Math.floor(r() * ids.length)], c.slice(0, 1 + Math.floor(r() * c.length)));
      if (step % 10 !== 0) continue;
      for (const q of pool) {
        out.length = idx.slotCount();
        const hint = hintOf(idx);
        idx.matchAll(q, out);
        for (const id of ids) {
          const got = idx.slotOf(id) < 0 ? 0 : out[idx.slotOf(id)];
          if (got !== idx.matchLength(id, q, hint) || got !== binary((h) => idx.has(id, h), q, hint))
            wrong.push(`step ${step} ${id}: ${got} vs ${idx.matchLength(id, q, hint)}`);
        }
      }
    }
    expect(wrong.slice(0, 5)).toEqual([]);
    expect(idx.stats().evictions).toBeGreaterThan(1000);
  });

  it("a worker's depth with a hole in its blocks does not depend on earlier calls (another tenant's included)", () => {
    const build = (): PrefixIndex => {
      const idx = new PrefixIndex(1000);
      idx.insert('w1', ['a', 'b', 'c', 'd', 'e']);
      idx.evict('w1', ['b', 'd', 'e']); // w1 keeps a and c: a hole at b
      for (const w of ['w2', 'w3', 'w4']) idx.insert(w, ['a', 'b']);
      return idx;
    };
    const q = ['a', 'b', 'c', 'd', 'e'];
    const depth = (previous: string[][]): number => {
      const idx = build();
      const out = new Array<number>(idx.slotCount()).fill(0);
      for (const p of previous) idx.matchAll(p, out);
      idx.matchAll(q, out);
      return out[idx.slotOf('w1')];
    };
    const alone = depth([]);
    expect(alone).toBe(build().matchLength('w1', q));
    expect(depth([['a', 'b', 'z']])).toBe(alone); // was 1 after this call, 3 without it
    expect(depth([['a', 'b', 'c', 'x'], ['a']])).toBe(alone);
  });

  it('gapped holdings: answers equal matchLength without a hint whatever calls came before', () => {
    let seed = 11;
    const rnd = (): number => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32;
    const root = Array.from({ length: 8 }, (_, i) => `r${i}`);
    const convs = Array.from({ length: 10 }, (_, c) => [
      ...root,
      ...Array.from({ length: 24 }, (_, i) => `c${c}-${i}`),
    ]);
    const idx = new PrefixIndex(2 ** 40);
    for (let w = 0; w < 12; w++)
      for (let k = 0; k < 3; k++) {
        const c = convs[Math.floor(rnd() * convs.length)];
        idx.insert(`w${w}`, c.slice(0, 1 + Math.floor(rnd() * c.length)));
        // holes: a few single blocks of the chain go (remote eviction events)
        for (let h = 0; h < 3; h++) idx.evict(`w${w}`, [c[Math.floor(rnd() * c.length)]]);
      }
    const wrong: string[] = [];
    for (let round = 0; round < 200; round++) {
      // an arbitrary history of earlier calls, then a query
      for (let p = Math.floor(rnd() * 3); p > 0; p--) {
        const c = convs[Math.floor(rnd() * convs.length)];
        idx.matchAll(c.slice(0, 1 + Math.floor(rnd() * c.length)), new Array<number>(idx.slotCount()).fill(0));
      }
      const q = convs[Math.floor(rnd() * convs.length)];
      const out = new Array<number>(idx.slotCount()).fill(-1);
      idx.matchAll(q, out);
      for (let w = 0; w < 12; w++)
        if (out[idx.slotOf(`w${w}`)] !== idx.matchLength(`w${w}`, q)) wrong.push(`round ${round} w${w}`);
    }
    expect(wrong.slice(0, 5)).toEqual([]);
  });

  it('a block no worker holds any more leaves the holder table (no growth under churn)', () => {
    const idx = new PrefixIndex(2 ** 40);
    for (let k = 0; k < 200; k++) {
      const c = Array.from({ length: 50 }, (_, i) => `k${k}-${i}`);
      idx.insert(`w${k % 40}`, c);
      idx.evict(`w${k % 40}`, c);
    }
    const out = new Array<number>(idx.slotCount()).fill(-1);
    idx.matchAll(['k199-0'], out);
    expect(out.every((d) => d === 0)).toBe(true);
    expect(idx.stats().blocks).toBe(0);
    expect((idx as unknown as { holders: Map<string, number> }).holders.size).toBe(0);
  });
});
