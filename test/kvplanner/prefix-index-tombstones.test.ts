// A guessed entry keeps a record that leaves as a tombstone (read as absent) and revives it when
// its hash comes back: a worker that never caches has each call's whole chain evicted by the
// feedback and inserted again by the next call, which then makes no new records. The tombstone
// count must match the Map (it gates `holds`'s Map-only answer and the sweep) and stay bounded by
// the sweep; the answers themselves are checked against the hash-keyed reference entry in
// prefix-index-records.test.ts.
import { describe, expect, it } from 'vitest';
import type { BlockRec, WorkerEntry } from '../../kvplanner/prefix-index-entry.ts';
import { PrefixIndex } from '../../kvplanner/prefix-index.ts';
import { rng } from '../helpers/chain-stream.ts';

function entryOf(idx: PrefixIndex, id: string): WorkerEntry {
  return (idx as unknown as { workers: Map<string, WorkerEntry> }).workers.get(id)!;
}

/** Tombstones in the Map: records neither held nor listed with children. */
function tombsIn(e: WorkerEntry): number {
  let n = 0;
  for (const r of e.recs.values()) if (r.t === 0 && r.kids === undefined) n++;
  return n;
}

const chain = (p: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${p}${i}`);

describe('PrefixIndex entry tombstones', () => {
  it('a chain evicted and inserted again reuses its records (no new record, no Map change)', () => {
    const idx = new PrefixIndex(1000);
    const a = chain('a', 20);
    idx.insert('w', a);
    const e = entryOf(idx, 'w');
    const before = a.map((h) => e.recs.get(h));
    expect(idx.evict('w', a, true, 0)).toBe(20);
    expect(e.recs.size).toBe(20);
    expect(e.tombs).toBe(20);
    expect(tombsIn(e)).toBe(20);
    expect(idx.matchLength('w', a)).toBe(0);
    expect(a.some((h) => idx.has('w', h))).toBe(false);
    idx.insert('w', a, true, 0);
    expect(e.tombs).toBe(0);
    expect(tombsIn(e)).toBe(0);
    const after: (BlockRec | undefined)[] = a.map((h) => e.recs.get(h));
    for (let i = 0; i < a.length; i++) expect(after[i]).toBe(before[i]);
    expect(idx.matchLength('w', a)).toBe(20);
    expect(idx.size('w')).toBe(20);
  });

  it('the count matches the Map after every operation and the sweep bounds it (at most half the capacity + 16)', () => {
    const r = rng(2026_1201);
    const idx = new PrefixIndex(40);
    idx.prepare('w');
    let swept = 0;
    let maxTombs = 0;
    for (let step = 0; step < 4000; step++) {
      const c = chain(`c${Math.floor(r() * 30)}-`, 1 + Math.floor(r() * 12));
      const op = r();
      if (op < 0.55) idx.insert('w', c);
      else if (op < 0.9) idx.evict('w', c, true, Math.floor(r() * c.length));
      else if (op < 0.97) idx.insert('w', c, true, 0);
      else idx.setCapacity('w', 20 + Math.floor(r() * 40));
      const e = entryOf(idx, 'w');
      expect(e.tombs).toBe(tombsIn(e));
      if (e.tombs < maxTombs) swept++;
      maxTombs = e.tombs;
      // swept at the end of an operation once over half the capacity + 16
      expect(e.tombs).toBeLessThanOrEqual(e.capacity * 0.5 + 16);
    }
    expect(swept).toBeGreaterThan(10);
    // a precise entry (no children kept) deletes at once: no tombstones, `holds` from the Map alone
    idx.setCapacity('p', 2 ** 33);
    idx.insert('p', chain('p', 10));
    idx.evict('p', chain('p', 10), true, 3);
    expect(entryOf(idx, 'p').tombs).toBe(0);
    expect(entryOf(idx, 'p').recs.size).toBe(3);
  });
});

describe('PrefixIndex holder masks tombstones', () => {
  it('an evicted chain keeps its holder records (read as no holder) until a sweep at 32,768 over the live ones', () => {
    const idx = new PrefixIndex(100_000);
    const H = (idx as unknown as { holders: { size: number; rowsUsed: number } }).holders;
    const a = chain('h', 40_000);
    idx.insert('w', a);
    idx.insert('v', a.slice(0, 10));
    expect(H.size).toBe(40_000);
    const out = [0, 0];
    expect(idx.evict('w', a, true, 0)).toBe(40_000);
    // with x tombstones, 40,000 - x records are live: the sweep came at x > 32,768 + 40,000 - x,
    // the 36,385th; v still holds 10 blocks, and 39,990 - 36,385 = 3,605 tombstones came since
    expect(H.size).toBe(10);
    expect(H.rowsUsed).toBe(10 + 3_605);
    idx.matchAll(a, out);
    expect(out).toEqual([0, 10]);
    idx.insert('w', a, true, 0);
    expect(H.size).toBe(40_000);
    expect(H.rowsUsed).toBe(40_000);
    idx.matchAll(a, out);
    expect(out).toEqual([40_000, 10]);
  });
});
