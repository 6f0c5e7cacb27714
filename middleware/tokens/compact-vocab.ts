// A BPE vocabulary (token string <-> id) and merge table in a handful of flat objects instead of
// the library's Maps, arrays and strings (@lenml/tokenizers holds ~750k heap objects and ~46 MB for
// Qwen's 151k tokens and merges: every old-generation mark walks them). Tokens live in one string
// with an Int32Array of offsets indexed by id; lookup by text is an open-addressing hash table
// (Int32Array of id+1, linear probing, FNV-1a over UTF-16 units, load ≤ 1/2); merges are a second
// table keyed by the pair of ids. O(token length) per lookup, O(vocab + merges) to build; memory
// ~4 B per character + ~20 B per token + ~24 B per merge. Exact by construction and checked at
// build (compact-bpe-model.ts compares every entry with the library's before using it).

/** Table sizes: the smallest power of two at least this many times the entry count. */
const TABLE_FACTOR = 2;
const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

function tableSize(entries: number): number {
  let n = 16;
  while (n < entries * TABLE_FACTOR) n *= 2;
  return n;
}

/** FNV-1a over the string's UTF-16 code units. */
function hashString(s: string): number {
  let h = FNV_OFFSET;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), FNV_PRIME);
  return h >>> 0;
}

/** A pair of non-negative int32s mixed into one 32-bit hash. */
function hashPair(a: number, b: number): number {
  let h = Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) ^ b;
  h = Math.imul(h ^ (h >>> 15), 0xc2b2ae35);
  return (h ^ (h >>> 13)) >>> 0;
}

/**
 * Token ids 0..length-1, each with its string or none. `id(text)` is the id whose string is `text`;
 * `token(id)` the string (a new slice of the pool on each call).
 */
export class CompactVocab {
  private readonly pool: string;
  private readonly starts: Int32Array;
  /** 1 where the id has a string. */
  private readonly present: Uint8Array;
  /** id + 1 per slot, 0 = empty. */
  private readonly table: Int32Array;
  private readonly mask: number;
  /** Ids with a string. */
  readonly size: number;

  /** `tokens[id]` is id's string (undefined: none). Throws if two ids share a string. */
  constructor(tokens: ArrayLike<string | undefined>) {
    const n = tokens.length;
    const parts: string[] = [];
    this.starts = new Int32Array(n + 1);
    this.present = new Uint8Array(n);
    let at = 0;
    let size = 0;
    for (let i = 0; i < n; i++) {
      this.starts[i] = at;
      const t = tokens[i];
      if (typeof t !== 'string') continue;
      parts.push(t);
      at += t.length;
      this.present[i] = 1;
      size++;
    }
    this.starts[n] = at;
    this.size = size;
    // One flat string (join flattens: no rope of 151k parts left behind).
    this.pool = parts.join('');
    this.table = new Int32Array(tableSize(size));
    this.mask = this.table.length - 1;
    for (let i = 0; i < n; i++) {
      if (this.present[i] === 0) continue;
      const t = tokens[i] as string;
      let slot = hashString(t) & this.mask;
      while (this.table[slot] !== 0) {
        if (this.equals(this.table[slot] - 1, t))
          throw new Error(`compact vocab: ids ${this.table[slot] - 1} and ${i} share a string`);
        slot = (slot + 1) & this.mask;
      }
      this.table[slot] = i + 1;
    }
  }

  /** Number of ids (with or without a string). */
  get length(): number {
    return this.present.length;
  }

  private equals(id: number, s: string): boolean {
    const from = this.starts[id];
    if (this.starts[id + 1] - from !== s.length) return false;
    const pool = this.pool;
    for (let i = 0; i < s.length; i++) if (pool.charCodeAt(from + i) !== s.charCodeAt(i)) return false;
    return true;
  }

  /** The id whose string is `s`, or undefined. */
  id(s: string): number | undefined {
    const table = this.table;
    let slot = hashString(s) & this.mask;
    for (;;) {
      const e = table[slot];
      if (e === 0) return undefined;
      if (this.equals(e - 1, s)) return e - 1;
      slot = (slot + 1) & this.mask;
    }
  }

  /** The string of `id` (an integer), or undefined. */
  token(id: number): string | undefined {
    if (!(id >= 0 && id < this.present.length) || this.present[id] === 0) return undefined;
    // A non-integer in range: the array it replaces has no element there either.
    if (!Number.isInteger(id)) return undefined;
    return this.pool.slice(this.starts[id], this.starts[id + 1]);
  }
}

/** Merge ranks keyed by the pair of ids; a pair merged twice keeps its last rank (as a Map built from the list does). */
export class CompactRanks {
  private readonly left: Int32Array;
  private readonly right: Int32Array;
  /** rank + 1 per slot, 0 = empty. */
  private readonly rank1: Int32Array;
  private readonly mask: number;
  /** Distinct pairs. */
  readonly size: number;

  /** `pairs[2r]`, `pairs[2r+1]`: the ids merged at rank r. */
  constructor(pairs: Int32Array) {
    const n = pairs.length >> 1;
    const cap = tableSize(n);
    this.left = new Int32Array(cap);
    this.right = new Int32Array(cap);
    this.rank1 = new Int32Array(cap);
    this.mask = cap - 1;
    let size = 0;
    for (let r = 0; r < n; r++) {
      const a = pairs[2 * r];
      const b = pairs[2 * r + 1];
      let slot = hashPair(a, b) & this.mask;
      while (this.rank1[slot] !== 0 && (this.left[slot] !== a || this.right[slot] !== b)) slot = (slot + 1) & this.mask;
      if (this.rank1[slot] === 0) size++;
      this.left[slot] = a;
      this.right[slot] = b;
      this.rank1[slot] = r + 1;
    }
    this.size = size;
  }

  /** The rank of merging ids a and b, or undefined. */
  get(a: number, b: number): number | undefined {
    let slot = hashPair(a, b) & this.mask;
    for (;;) {
      const r = this.rank1[slot];
      if (r === 0) return undefined;
      if (this.left[slot] === a && this.right[slot] === b) return r - 1;
      slot = (slot + 1) & this.mask;
    }
  }
}
