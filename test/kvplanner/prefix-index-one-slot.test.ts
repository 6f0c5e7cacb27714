// PrefixIndex with one worker slot keeps no holder masks (a gateway in front of one engine: nothing
// to batch); matchAll is then that worker's matchLength. A second worker starts the masks from what
// the first one's entry holds at that moment. Checked over generated bounded (guessed) entries with
// evictions, holes and tombstones, and a stepped insert in progress when the second worker joins:
// every answer equals matchLength with the same hint, and once the masks run, each record's bits
// are exactly the slots whose entries hold that block.
import { describe, expect, it } from 'vitest';
import { PrefixIndex } from '../../kvplanner/prefix-index.ts';
import type { HolderMasks } from '../../kvplanner/prefix-index-holders.ts';
import { rng } from '../helpers/chain-stream.ts';

const masksOf = (idx: PrefixIndex): HolderMasks => (idx as unknown as { holders: HolderMasks }).holders;

/** Block hashes whose mask says slot `slot` holds them. */
function listed(m: HolderMasks, slot: number): Set<string> {
  const out = new Set<string>();
  m.forEachRecord((h, r) => {
    if ((m.maskWord(r, slot >>> 5) & (1 << (slot & 31))) !== 0) out.add(h);
  });
  return out;
}

/** Random conversations over a shared root, growing, some blocks evicted singly (holes). */
const root = Array.from({ length: 6 }, (_, i) => `root${i}`);
const convs = Array.from({ length: 40 }, (_, c) => [...root, ...Array.from({ length: 60 }, (_, i) => `c${c}-${i}`)]);

function drive(idx: PrefixIndex, ids: readonly string[], steps: number, r: () => number, check: () => void): void {
  for (let step = 0; step < steps; step++) {
    const id = ids[Math.floor(r() * ids.length)];
    const c = convs[Math.floor(r() * convs.length)];
    const q = c.slice(0, 1 + Math.floor(r() * c.length));
    const k = r();
    if (k < 0.7) idx.insert(id, q, true, r() < 0.5 ? idx.matchLength(id, q) : undefined);
    else if (k < 0.85) idx.evict(id, q, true, Math.floor(r() * q.length));
    else idx.evict(id, [q[Math.floor(r() * q.length)]]);
    const hint = r() < 0.5 ? Math.floor(r() * (q.length + 2)) : 0;
    const out = new Array<number>(idx.slotCount()).fill(-1);
    idx.matchAll(q, out, hint);
    for (const w of ids) {
      const s = idx.slotOf(w);
      if (s >= 0) expect(out[s], `step ${step} ${w}`).toBe(idx.matchLength(w, q, hint));
    }
    check();
  }
}

describe('PrefixIndex with one worker slot', () => {
  it('keeps no holder masks and answers matchAll as matchLength, evictions and holes included', () => {
    const idx = new PrefixIndex(300);
    const m = masksOf(idx);
    drive(idx, ['w0'], 3000, rng(5), () => expect(m.rowsUsed).toBe(0));
    expect(m.isActive).toBe(false);
    expect(idx.stats().evictions).toBeGreaterThan(500);
    const none = [0];
    idx.matchAll([], none);
    expect(none).toEqual([0]);
  });

  it('a second worker starts the masks from the first one held, mid stepped insert; they stay exact', () => {
    const r = rng(9);
    const idx = new PrefixIndex(400);
    const m = masksOf(idx);
    drive(idx, ['w0'], 2000, r, () => {});
    // a long chain half stepped in on w0 when w1 appears: its remaining steps must reach the masks
    const long = Array.from({ length: 300 }, (_, i) => `long${i}`);
    const step = idx.inserting('w0', long);
    expect(step(100)).toBe(false);
    idx.insert('w1', long.slice(0, 50));
    expect(m.isActive).toBe(true);
    while (!step(64));
    const every = new Set([...convs.flat(), ...long]);
    const exact = (): void => {
      for (const w of ['w0', 'w1', 'w2']) {
        const s = idx.slotOf(w);
        if (s < 0) continue;
        const want = new Set([...every].filter((h) => idx.has(w, h)));
        expect(listed(m, s), w).toEqual(want);
      }
    };
    exact();
    expect(listed(m, 0).size).toBeGreaterThan(100);
    drive(idx, ['w0', 'w1', 'w2'], 1500, r, exact);
  });
});
