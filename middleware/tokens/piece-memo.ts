// A string-keyed generation cache bounded by bytes, for the tokenizer's per-piece memos
// (fast-bpe.ts: piece → ids; byte-level-memo.ts: pre-token → byte-alphabet string). Each entry is
// charged an estimate of the heap it holds (key UTF-16 + the caller's value estimate + the Map
// entry and headers); when the next entry would pass PIECE_MEMO_MAX_BYTES the map is dropped
// whole and starts over (no per-entry bookkeeping on a hit). Keys longer than PIECE_MEMO_MAX_CHARS
// are never held: rare, and they would crowd the memo. An attacker's stream of distinct pieces
// costs at most PIECE_MEMO_MAX_BYTES per memo (each tokenizer, each thread), and evicts other
// tenants' pieces: a slowdown, not a leak. Keys are held as copies of their own (never a view that
// keeps the encoded text alive). O(1) per get and set.

import { ownString } from './own-string.ts';

/** Estimated heap one memo may hold before it starts over (per tokenizer, per thread). */
export const PIECE_MEMO_MAX_BYTES = 4 * 1024 * 1024;
/** Longer keys are not memoised. */
export const PIECE_MEMO_MAX_CHARS = 64;
/** Per entry, besides its key's characters and its value: the Map entry, the key string's and the
 *  value array's headers (64-bit heap, no pointer compression). */
export const PIECE_MEMO_ENTRY_BYTES = 96;

export class PieceMemo<V> {
  private map = new Map<string, V>();
  private held = 0;
  constructor(readonly maxBytes: number = PIECE_MEMO_MAX_BYTES) {}

  get(key: string): V | undefined {
    return this.map.get(key);
  }

  /** Remembers `value` (estimated at `valueBytes`) unless the key is too long to memoise. */
  set(key: string, value: V, valueBytes: number): void {
    if (key.length > PIECE_MEMO_MAX_CHARS) return;
    const cost = PIECE_MEMO_ENTRY_BYTES + 2 * key.length + valueBytes;
    if (this.held + cost > this.maxBytes) {
      this.map = new Map();
      this.held = 0;
    }
    // A piece is usually a slice of the text being encoded: held as is, it kept that whole text alive
    // (400 texts of 46k characters, one new long word each: 18.9 MB, beyond the byte bound).
    this.map.set(ownString(key), value);
    this.held += cost;
  }

  /** Estimated bytes held (diagnostics and tests). */
  bytes(): number {
    return this.held;
  }

  get size(): number {
    return this.map.size;
  }
}
