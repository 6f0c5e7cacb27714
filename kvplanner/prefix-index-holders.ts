// The prefix index's global view: block hash -> which worker slots hold it, as one bitmask per
// block (bit s: slot s holds it; `words` 32-bit words per mask). PrefixIndex keeps it in step with
// its per-worker entries; matchAll (prefix-index-match-all.ts) reads it to run every worker's
// binary search at once, and matchLength reads a worker's bit here instead of its entry's Map.
// Layout: one open-addressing table (linear probing) in a single Int32Array, one row per block:
// [key low 32 bits, key high 32 bits, mask words…] (`stride` = 2 + words Int32s). A block hash is
// a 16-character lowercase hex string (block-hash.ts: 64 bits of SHA-256), parsed into the two key
// words, so a lookup reads one row (one cache line, where a string-keyed Map of ~550k blocks went
// through a bucket, an entry and a mask record: about three) and compares the whole 64-bit key on
// a hit: answers are exactly a hash-keyed Map's. Any other string (tests, a hash whose high word is
// all ones) gets a small id from the `odd` Map and the key (id, -1): still exact, one Map lookup
// more. The row a key starts probing at mixes both key words with a per-process random seed, so a
// tenant that crafts prompts cannot cluster the table's rows (the key bits alone would let it).
// Cost: lookup, add, drop O(1) expected (load ≤ MAX_LOAD: ≤ ~3 rows probed on a miss); a row is
// removed by backward shift (no deleted-row markers, so probe chains never lengthen with churn);
// the table doubles past MAX_LOAD, halves below MIN_LOAD (bounded memory: ≤ 16/5 rows per block
// plus MIN_ROWS), rebuilt O(rows) each time; widen() (a 33rd, 65th… slot) rebuilds it once.
// Tombstones: a block dropped by a guessed entry's evict() (drop's `keep`) keeps its row, all zero
// (read as no holder: matchAll treats an all-zero mask as a missing one), so a chain evicted and
// inserted again makes no removal and re-insertion churn; swept (the table rebuilt without them)
// once there are more than TOMBS_OVER_LIVE plus the live rows: an O(rows) pass per that many
// tombstones made. A precise index's removals (KV events) delete at once.
// Inactive (constructed so, until activate()): add and drop do nothing. PrefixIndex keeps it so
// while it has one worker slot, where matchAll is that worker's matchLength and the masks would
// only cost a table operation per block stored or evicted.

import { KEY, readKey } from './hash-keys.ts';

/** Tombstones kept beyond the live rows before a sweep. */
const TOMBS_OVER_LIVE = 32_768;
/** Smallest table, in rows. */
const MIN_ROWS = 1024;
/** Rows in use (live and tombstones) per table row above which the table doubles. */
const MAX_LOAD = 0.625;
/** Rows in use per table row below which it halves (not under MIN_ROWS). */
const MIN_LOAD = 0.125;
/** Key words of an empty row (no key maps there: an odd id is never -1). */
const EMPTY = -1;

export class HolderMasks {
  /** rows: [key lo, key hi, mask words…], `stride` Int32s each; empty rows have both keys EMPTY */
  table: Int32Array;
  stride: number;
  words = 1;
  /** table rows - 1 (a power of two minus one) */
  private mask: number;
  /** rows in use: live and tombstones */
  private used = 0;
  /** rows in use with an all-zero mask (tombstones) */
  private tombs = 0;
  /** the key of the last keyOf() */
  private kLo = 0;
  private kHi = 0;
  /** strings that are not a canonical block hash -> their id (key (id, -1)) while they have a row */
  private readonly odd = new Map<string, number>();
  private readonly oddKeys: Array<string | undefined> = [];
  private readonly oddFree: number[] = [];
  private readonly seed: number;

  /** @param active false: add/drop do nothing until activate()
   *  @param seed row placement (default random); answers never depend on it */
  constructor(
    private active = true,
    seed?: number,
  ) {
    this.seed = seed ?? (Math.random() * 2 ** 32) | 0;
    this.stride = 2 + this.words;
    this.mask = MIN_ROWS - 1;
    this.table = emptyTable(MIN_ROWS, this.stride);
  }

  /** Whether add/drop keep the masks. */
  get isActive(): boolean {
    return this.active;
  }

  /** From now on add/drop keep the masks; the caller adds what its slots already hold. */
  activate(): void {
    this.active = true;
  }

  /** Blocks some slot holds. */
  get size(): number {
    return this.used - this.tombs;
  }

  /** Rows in use, tombstones included. */
  get rowsUsed(): number {
    return this.used;
  }

  /** Rows of the table (its memory: rows × stride Int32s). */
  get rows(): number {
    return this.mask + 1;
  }

  /** Row of `hash` (its mask at table[row·stride + 2 …]), -1 when no slot holds it. Valid until the
   *  next add or drop (a removal moves rows). */
  recordOf(hash: string): number {
    return this.keyOf(hash, false) ? this.find(this.kLo, this.kHi) : -1;
  }

  /** recordOf by the hash's key (hash-keys.ts: the caller read a high word other than NOT_A_KEY;
   *  a hash that reads NOT_A_KEY goes through recordOf). */
  rowOfKey(lo: number, hi: number): number {
    return this.find(lo, hi);
  }

  /** has() by the hash's key (as rowOfKey). */
  hasKey(lo: number, hi: number, slot: number): boolean {
    const r = this.find(lo, hi);
    return r >= 0 && (this.table[r * this.stride + 2 + (slot >>> 5)] & (1 << (slot & 31))) !== 0;
  }

  /** Whether slot `slot` holds `hash`. */
  has(hash: string, slot: number): boolean {
    if (!this.keyOf(hash, false)) return false;
    const r = this.find(this.kLo, this.kHi);
    return r >= 0 && (this.table[r * this.stride + 2 + (slot >>> 5)] & (1 << (slot & 31))) !== 0;
  }

  /** Room for slot `slot`: one more word per mask once it passes the current width. */
  fit(slot: number): void {
    while (slot >= this.words * 32) this.rebuild(this.mask + 1, this.words + 1, false);
  }

  add(h: string, slot: number): void {
    if (!this.active) return;
    this.keyOf(h, true);
    const lo = this.kLo;
    const hi = this.kHi;
    let r = this.find(lo, hi);
    if (r < 0) {
      if (this.used + 1 > MAX_LOAD * (this.mask + 1)) this.rebuild(2 * (this.mask + 1), this.words, false);
      r = this.place(lo, hi);
      this.used++;
    } else if (this.tombs > 0 && this.isZero(r)) this.tombs--; // a tombstone revived
    this.table[r * this.stride + 2 + (slot >>> 5)] |= 1 << (slot & 31);
  }

  /** Slot `slot` no longer holds `h`; the row leaves once no slot does (`keep`: it stays, a
   *  tombstone, see above). */
  drop(h: string, slot: number, keep = false): void {
    if (!this.active || !this.keyOf(h, false)) return;
    const r = this.find(this.kLo, this.kHi);
    if (r < 0) return;
    const i = r * this.stride + 2 + (slot >>> 5);
    const bit = 1 << (slot & 31);
    // not held by the slot: nothing changes (a row is never all zero unless a tombstone)
    if ((this.table[i] & bit) === 0) return;
    this.table[i] &= ~bit;
    if (!this.isZero(r)) return;
    if (keep) {
      if (++this.tombs > TOMBS_OVER_LIVE + this.used - this.tombs)
        this.rebuild(this.rowsFor(this.used - this.tombs), this.words, true);
      return;
    }
    this.remove(r);
    if (this.used < MIN_LOAD * (this.mask + 1) && this.mask + 1 > MIN_ROWS)
      this.rebuild((this.mask + 1) / 2, this.words, false);
  }

  /** Rows for `n` rows in use after a sweep: the current size halved while under MIN_LOAD. */
  private rowsFor(n: number): number {
    let rows = this.mask + 1;
    while (rows > MIN_ROWS && n < MIN_LOAD * rows) rows /= 2;
    return rows;
  }

  /** Each row in use: its block hash and row (inspection: tests, diagnostics). O(rows). */
  forEachRecord(fn: (hash: string, row: number) => void): void {
    const t = this.table;
    const S = this.stride;
    for (let r = 0; r <= this.mask; r++) {
      const lo = t[r * S];
      const hi = t[r * S + 1];
      if (lo === EMPTY && hi === EMPTY) continue;
      fn(hi === -1 ? (this.oddKeys[lo] as string) : hex8(hi) + hex8(lo), r);
    }
  }

  /** Word `w` of row `row`'s mask. */
  maskWord(row: number, w: number): number {
    return this.table[row * this.stride + 2 + w];
  }

  /**
   * Sets kLo/kHi to the key of `h`: a canonical hash (16 lowercase hex characters, high word not
   * all ones) parsed; any other string its odd id (a new one when `create`). False when `h` is odd
   * and has no id (then no row holds it).
   */
  private keyOf(h: string, create: boolean): boolean {
    if (readKey(h)) {
      this.kLo = KEY[0];
      this.kHi = KEY[1];
      return true;
    }
    let id = this.odd.get(h);
    if (id === undefined) {
      if (!create) return false;
      id = this.oddFree.pop() ?? this.oddKeys.length;
      this.odd.set(h, id);
      this.oddKeys[id] = h;
    }
    this.kLo = id;
    this.kHi = -1;
    return true;
  }

  /** Row where probing for key (lo, hi) starts. */
  private home(lo: number, hi: number): number {
    let x = Math.imul(lo ^ this.seed, 0xcc9e2d51);
    x = Math.imul(x ^ (x >>> 15) ^ hi, 0x1b873593);
    x = Math.imul(x ^ (x >>> 13), 0x85ebca6b);
    return (x ^ (x >>> 16)) & this.mask;
  }

  /** Row holding key (lo, hi), or -1. */
  private find(lo: number, hi: number): number {
    const t = this.table;
    const S = this.stride;
    const m = this.mask;
    for (let r = this.home(lo, hi); ; r = (r + 1) & m) {
      const o = r * S;
      const a = t[o];
      const b = t[o + 1];
      if (a === lo && b === hi) return r;
      if (a === EMPTY && b === EMPTY) return -1;
    }
  }

  /** A new row for key (lo, hi) (not in the table; room checked by the caller), mask zero. */
  private place(lo: number, hi: number): number {
    const t = this.table;
    const S = this.stride;
    const m = this.mask;
    let r = this.home(lo, hi);
    while (!(t[r * S] === EMPTY && t[r * S + 1] === EMPTY)) r = (r + 1) & m;
    t[r * S] = lo;
    t[r * S + 1] = hi;
    return r;
  }

  /** Removes row `r` (all-zero mask) by backward shift: each later row of the probe run moves up
   *  when the gap lies between its home and itself, so every key stays reachable from its home. */
  private remove(r: number): void {
    const t = this.table;
    const S = this.stride;
    const m = this.mask;
    if (t[r * S + 1] === -1) this.freeOdd(t[r * S]);
    let gap = r;
    for (let j = (r + 1) & m; ; j = (j + 1) & m) {
      const o = j * S;
      if (t[o] === EMPTY && t[o + 1] === EMPTY) break;
      const k = this.home(t[o], t[o + 1]);
      // k cyclically in (gap, j]: the row cannot move before its home
      if (gap <= j ? gap < k && k <= j : gap < k || k <= j) continue;
      t.copyWithin(gap * S, o, o + S);
      gap = j;
    }
    t[gap * S] = EMPTY;
    t[gap * S + 1] = EMPTY;
    t.fill(0, gap * S + 2, gap * S + S);
    this.used--;
  }

  private freeOdd(id: number): void {
    const h = this.oddKeys[id] as string;
    this.odd.delete(h);
    this.oddKeys[id] = undefined;
    this.oddFree.push(id);
  }

  private isZero(r: number): boolean {
    const o = r * this.stride + 2;
    for (let w = 0; w < this.words; w++) if (this.table[o + w] !== 0) return false;
    return true;
  }

  /** The table again with `rows` rows and `words` mask words (`sweep`: tombstones left out). O(rows). */
  private rebuild(rows: number, words: number, sweep: boolean): void {
    const old = this.table;
    const oS = this.stride;
    const oW = this.words;
    const oRows = this.mask + 1;
    const S = 2 + words;
    this.table = emptyTable(rows, S);
    this.stride = S;
    this.words = words;
    this.mask = rows - 1;
    this.used = 0;
    for (let r = 0; r < oRows; r++) {
      const o = r * oS;
      const lo = old[o];
      const hi = old[o + 1];
      if (lo === EMPTY && hi === EMPTY) continue;
      let zero = true;
      for (let w = 0; w < oW; w++) if (old[o + 2 + w] !== 0) zero = false;
      if (sweep && zero) {
        if (hi === -1) this.freeOdd(lo);
        continue;
      }
      const n = this.place(lo, hi) * S + 2;
      for (let w = 0; w < oW; w++) this.table[n + w] = old[o + 2 + w];
      this.used++;
    }
    if (sweep) this.tombs = 0;
  }
}

/** A table of `rows` empty rows. */
function emptyTable(rows: number, stride: number): Int32Array {
  const t = new Int32Array(rows * stride);
  for (let r = 0; r < rows; r++) {
    t[r * stride] = EMPTY;
    t[r * stride + 1] = EMPTY;
  }
  return t;
}

function hex8(x: number): string {
  return (x >>> 0).toString(16).padStart(8, '0');
}
