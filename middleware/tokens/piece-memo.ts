// A string-keyed generation cache bounded by bytes, for the tokenizer's per-piece memos
// (fast-bpe.ts: piece → ids; byte-level-memo.ts: pre-token → byte-alphabet string). Each entry is
// charged an estimate of the heap it holds (key UTF-16 + the caller's value estimate + the table
// slots and headers); when the next entry would pass PIECE_MEMO_MAX_BYTES the table is dropped
// whole and starts over (no per-entry bookkeeping on a hit). Keys longer than PIECE_MEMO_MAX_CHARS
// are never held: rare, and they would crowd the memo. An attacker's stream of distinct pieces
// costs at most PIECE_MEMO_MAX_BYTES per memo (each tokenizer, each thread), and evicts other
// tenants' pieces: a slowdown, not a leak. Keys are held as copies of their own (never a view that
// keeps the encoded text alive).
// Its own open-addressing table rather than a Map, so that a piece can be looked up where it lies
// in the text (getRange: no slice per piece): the fast encoder looks up every piece of every new
// text, and a Map needs each as a string of its own (an allocation and a hash of a fresh string,
// most of the encoder's garbage). Hashes are seeded per table; a probe walks at most MAX_PROBES
// slots, and a key that would need more is not held (a miss, the encoder's slow path, never a
// longer walk), so crafted collisions cost a bounded lookup. O(key length) per get and set.

import { ownString } from './own-string.ts';

/** Estimated heap one memo may hold before it starts over (per tokenizer, per thread). */
export const PIECE_MEMO_MAX_BYTES = 4 * 1024 * 1024;
/** Longer keys are not memoised. */
export const PIECE_MEMO_MAX_CHARS = 64;
/** Per entry, besides its key's characters and its value: the table's slots (at most half full),
 *  the key string's and the value array's headers (64-bit heap, no pointer compression). */
export const PIECE_MEMO_ENTRY_BYTES = 96;
/** Slots a lookup or insert probes before it gives up (a miss; the key is then not held). */
export const MAX_PROBES = 32;
const INITIAL_SLOTS = 1024;

export class PieceMemo<V> {
  private keys: (string | undefined)[] = [];
  private vals: (V | undefined)[] = [];
  private hashes = new Int32Array(0);
  private mask = 0;
  private count = 0;
  private held = 0;
  private readonly seed = (Math.random() * 0x7fffffff) | 0;
  constructor(readonly maxBytes: number = PIECE_MEMO_MAX_BYTES) {
    this.reset(INITIAL_SLOTS);
  }

  private reset(slots: number): void {
    this.keys = new Array<string | undefined>(slots).fill(undefined);
    this.vals = new Array<V | undefined>(slots).fill(undefined);
    this.hashes = new Int32Array(slots);
    this.mask = slots - 1;
  }

  /** FNV-1a over UTF-16 code units, from a per-table seed; never 0 (0 marks an empty slot). */
  private hash(s: string, from: number, to: number): number {
    let h = this.seed ^ 0x811c9dc5;
    for (let i = from; i < to; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
    h ^= h >>> 15;
    return h === 0 ? 1 : h;
  }

  get(key: string): V | undefined {
    return this.getRange(key, 0, key.length);
  }

  /** The value of key s.slice(from, to), without building that string. */
  getRange(s: string, from: number, to: number): V | undefined {
    const len = to - from;
    if (len > PIECE_MEMO_MAX_CHARS) return undefined;
    const h = this.hash(s, from, to);
    const { keys, hashes, mask } = this;
    for (let p = 0, i = h & mask; p < MAX_PROBES; p++, i = (i + 1) & mask) {
      const kh = hashes[i];
      if (kh === 0) return undefined;
      if (kh !== h) continue;
      const k = keys[i]!;
      if (k.length !== len) continue;
      let j = 0;
      while (j < len && k.charCodeAt(j) === s.charCodeAt(from + j)) j++;
      if (j === len) return this.vals[i];
    }
    return undefined;
  }

  /** Remembers `value` (estimated at `valueBytes`) unless the key is too long to memoise. */
  set(key: string, value: V, valueBytes: number): void {
    if (key.length > PIECE_MEMO_MAX_CHARS) return;
    const cost = PIECE_MEMO_ENTRY_BYTES + 2 * key.length + valueBytes;
    if (this.held + cost > this.maxBytes) {
      this.reset(INITIAL_SLOTS);
      this.count = 0;
      this.held = 0;
    }
    // Kept at most half full: probes stay short.
    if (2 * (this.count + 1) > this.keys.length) this.grow();
    if (this.insert(key, value, this.hash(key, 0, key.length))) this.held += cost;
  }

  /** Inserts or replaces; false when no slot lies within MAX_PROBES (the key is not held). */
  private insert(key: string, value: V, h: number): boolean {
    const { keys, hashes, mask } = this;
    for (let p = 0, i = h & mask; p < MAX_PROBES; p++, i = (i + 1) & mask) {
      const kh = hashes[i];
      if (kh === 0) {
        // A piece is usually a slice of the text being encoded: held as is, it kept that whole text
        // alive (400 texts of 46k characters, one new long word each: 18.9 MB, beyond the byte bound).
        keys[i] = ownString(key);
        this.vals[i] = value;
        hashes[i] = h;
        this.count++;
        return true;
      }
      if (kh === h && keys[i] === key) {
        this.vals[i] = value;
        return false;
      }
    }
    return false;
  }

  private grow(): void {
    const { keys, vals, hashes } = this;
    this.reset(keys.length * 2);
    this.count = 0;
    for (let i = 0; i < keys.length; i++) if (hashes[i] !== 0) this.insert(keys[i]!, vals[i] as V, hashes[i]);
  }

  /** Estimated bytes held (diagnostics and tests). */
  bytes(): number {
    return this.held;
  }

  get size(): number {
    return this.count;
  }
}
