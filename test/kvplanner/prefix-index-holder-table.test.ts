// The holder table (prefix-index-holders.ts: open addressing over 64-bit keys parsed from the
// block hash, removal by backward shift) against a plain Map of sets under random adds, drops,
// tombstones and sweeps, growth and shrinking, widening past 32 and 64 slots: every answer (has,
// recordOf's mask, size, the listed records) is the Map's, for canonical hashes and for strings
// that are not one (upper case, other lengths, a high word of all ones, one character outside the
// hex digits or not ASCII, a canonical hash's text with one character changed). Then
// PrefixIndex.matchLength, which now reads the table, against a binary search over has() on a
// precise index fed KV-event style stores and single-block removals (holes), and memory: the table
// shrinks back once its blocks leave.
import { describe, expect, it } from 'vitest';
import { HolderMasks } from '../../kvplanner/prefix-index-holders.ts';
import { PrefixIndex } from '../../kvplanner/prefix-index.ts';
import { rng } from '../helpers/chain-stream.ts';

const hex = (r: () => number): string =>
  Array.from({ length: 16 }, () => '0123456789abcdef'[Math.floor(r() * 16)]).join('');

/** A pool of keys of every kind the table must keep apart. */
function keyPool(r: () => number, n: number): string[] {
  const out = new Set<string>();
  while (out.size < n) {
    const k = r();
    const h = hex(r);
    if (k < 0.6) out.add(h);
    else if (k < 0.7) out.add(`ffffffff${h.slice(8)}`);
    else if (k < 0.78) out.add(h.toUpperCase());
    else if (k < 0.86) out.add(`${h.slice(0, 15)}g`);
    else if (k < 0.93) out.add(h.slice(0, 1 + Math.floor(r() * 15)));
    else if (k < 0.97) out.add(`${h}0`);
    else {
      // one character just outside the digit and letter ranges, or not ASCII (the parse reads
      // every UTF-16 code unit through a table)
      const odd = ['/', ':', '`', 'g', '@', 'G', '\u00e9', '\u0130', '\ud800', '\uffff'][Math.floor(r() * 10)];
      const at = Math.floor(r() * 16);
      out.add(h.slice(0, at) + odd + h.slice(at + 1));
    }
  }
  // near neighbours: the same text with a changed last character, or its case, is another key
  const some = [...out].slice(0, 50);
  for (const h of some) {
    out.add(h.slice(0, -1) + (h.endsWith('0') ? '1' : '0'));
    out.add(h.toUpperCase());
  }
  return [...out];
}

type Ref = Map<string, Set<number>>;

function check(H: HolderMasks, ref: Ref, keys: readonly string[], slots: number): void {
  let live = 0;
  for (const s of ref.values()) if (s.size > 0) live++;
  expect(H.size).toBe(live);
  // every answer, compared at once (one expect per key would take minutes)
  const wrong: string[] = [];
  for (const h of keys) {
    const s = ref.get(h);
    if (H.recordOf(h) >= 0 !== (s !== undefined)) wrong.push(`recordOf ${h}`);
    for (let slot = 0; slot < slots; slot++) if (H.has(h, slot) !== (s?.has(slot) ?? false)) wrong.push(`${h} ${slot}`);
  }
  expect(wrong).toEqual([]);
  const listed: Ref = new Map();
  H.forEachRecord((h, row) => {
    const bits = new Set<number>();
    for (let slot = 0; slot < slots; slot++)
      if ((H.maskWord(row, slot >>> 5) & (1 << (slot & 31))) !== 0) bits.add(slot);
    listed.set(h, bits);
  });
  expect(listed).toEqual(ref);
  expect(H.rowsUsed).toBeLessThanOrEqual(0.625 * H.rows);
}

describe('holder table', () => {
  it('answers as a Map of holder sets: adds, drops, tombstones, growth, shrink, widening', () => {
    for (const seed of [1, 2, 3]) {
      const r = rng(seed);
      // a fixed placement seed for some runs, a random one for the others: answers never depend on it
      const H = new HolderMasks(true, seed === 1 ? 0 : undefined);
      const ref: Ref = new Map();
      const keys = keyPool(r, 3000);
      let slots = 3;
      for (let step = 0; step < 40_000; step++) {
        if (step === 12_000) slots = 40; // a 33rd slot: one more mask word
        if (step === 24_000) slots = 70; // and a third
        H.fit(slots - 1);
        const h = keys[Math.floor(r() * keys.length)];
        const slot = Math.floor(r() * slots);
        const k = r();
        // phases: mostly adds (growth), then mostly drops (shrink), then mixed
        const addShare = step % 12_000 < 6_000 ? 0.8 : 0.25;
        if (k < addShare) {
          H.add(h, slot);
          let s = ref.get(h);
          if (s === undefined) ref.set(h, (s = new Set()));
          s.add(slot);
        } else {
          const keep = r() < 0.3;
          H.drop(h, slot, keep);
          const s = ref.get(h);
          if (s?.delete(slot) && s.size === 0 && !keep) ref.delete(h);
        }
        if (step % 4000 === 3999) {
          // tombstones: the reference keeps their keys listed with no holder; forEachRecord lists
          // them too (all-zero rows), until a sweep
          const listed = new Set<string>();
          H.forEachRecord((x) => listed.add(x));
          for (const [x, s] of ref) if (s.size === 0 && !listed.has(x)) ref.delete(x);
          check(H, ref, keys, slots);
        }
      }
      expect(H.words).toBe(3);
    }
  });

  it('sweeps tombstones past the live rows plus 32,768, and shrinks back once its blocks leave', () => {
    const H = new HolderMasks(true);
    const r = rng(7);
    const keys = [...new Set(Array.from({ length: 60_000 }, () => hex(r)))];
    expect(keys.length).toBe(60_000);
    for (const h of keys) H.add(h, 0);
    expect([H.size, H.rowsUsed, H.rows]).toEqual([60_000, 60_000, 131_072]);
    // 45,000 tombstones: kept (45,000 <= 32,768 + 15,000 live)
    for (const h of keys.slice(0, 45_000)) H.drop(h, 0, true);
    expect([H.size, H.rowsUsed, H.rows]).toEqual([15_000, 60_000, 131_072]);
    // the 46,385th passes 32,768 + 13,615 live: all go at once, the table halves to fit
    // 13,615 rows, then 615 more tombstones
    for (const h of keys.slice(45_000, 47_000)) H.drop(h, 0, true);
    expect([H.size, H.rowsUsed, H.rows]).toEqual([13_000, 13_615, 65_536]);
    for (const h of keys.slice(0, 47_000)) expect(H.has(h, 0)).toBe(false);
    // removals shrink it as they go
    for (const h of keys.slice(47_000)) H.drop(h, 0);
    expect([H.size, H.rowsUsed, H.rows]).toEqual([0, 615, 4096]);
    // the tombstones come back as live rows, then leave for good
    for (const h of keys) H.add(h, 1);
    expect([H.size, H.rowsUsed]).toEqual([60_000, 60_000]);
    for (const h of keys) H.drop(h, 1);
    expect([H.size, H.rowsUsed, H.rows]).toEqual([0, 0, 1024]);
  });

  it('a removal leaves every other key reachable (backward shift over wrapped probe runs)', () => {
    // a small table at its load limit: long probe runs, many of them wrapping past the last row
    const wrong: string[] = [];
    for (let seed = 0; seed < 20; seed++) {
      const H = new HolderMasks(true, seed * 977);
      const r = rng(100 + seed);
      const keys = Array.from({ length: 640 }, () => hex(r));
      for (const h of keys) H.add(h, 0);
      expect(H.rows).toBe(1024);
      const gone = new Set<string>();
      for (let i = 0; i < 400; i++) {
        const h = keys[Math.floor(r() * keys.length)];
        H.drop(h, 0);
        gone.add(h);
        for (const x of keys) if (H.has(x, 0) === gone.has(x)) wrong.push(`seed ${seed} step ${i} ${x}`);
        if (i % 3 === 0) {
          const back = [...gone][0];
          H.add(back, 0);
          gone.delete(back);
        }
      }
    }
    expect(wrong).toEqual([]);
  });
});

describe('PrefixIndex.matchLength over the holder table', () => {
  it('equals a binary search over has(), holes from single-block removals included', () => {
    const r = rng(11);
    const idx = new PrefixIndex(2 ** 40);
    const root = Array.from({ length: 8 }, () => hex(r));
    const convs = Array.from({ length: 60 }, () => [...root, ...Array.from({ length: 80 }, () => hex(r))]);
    const workers = ['a', 'b', 'c', 'd', 'e'];
    const reference = (w: string, q: readonly string[], hint: number): number => {
      if (q.length === 0 || !idx.has(w, q[0])) return 0;
      let lo = 1;
      let hi = q.length;
      if (hint > 1 && hint <= hi) {
        if (idx.has(w, q[hint - 1])) {
          if (hint === hi || !idx.has(w, q[hint])) return hint;
          lo = hint + 1;
        } else hi = hint - 1;
      }
      if (idx.has(w, q[hi - 1])) return hi;
      hi -= 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >>> 1;
        if (idx.has(w, q[mid - 1])) lo = mid;
        else hi = mid - 1;
      }
      return lo;
    };
    let holes = 0;
    for (let step = 0; step < 6000; step++) {
      const w = workers[Math.floor(r() * workers.length)];
      const c = convs[Math.floor(r() * convs.length)];
      const q = c.slice(0, 1 + Math.floor(r() * c.length));
      const k = r();
      if (k < 0.6) idx.insert(w, q, false);
      else if (k < 0.8) {
        // a KV event removing one block inside a chain: a hole
        idx.evict(w, [q[Math.floor(r() * q.length)]], false);
        holes++;
      } else idx.evict(w, q, false, Math.floor(r() * q.length));
      for (const x of workers) {
        const hint = r() < 0.5 ? Math.floor(r() * (q.length + 2)) : 0;
        expect(idx.matchLength(x, q, hint), `step ${step} ${x}`).toBe(reference(x, q, hint));
      }
    }
    expect(holes).toBeGreaterThan(1000);
    // everything removed: the table lets its rows go
    for (const w of workers) idx.removeWorker(w);
    const H = (idx as unknown as { holders: HolderMasks }).holders;
    expect(H.size).toBe(0);
    expect(H.rows).toBe(1024);
  });
});
