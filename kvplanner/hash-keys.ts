// A block-hash chain's 64-bit keys, for the routing index's holder table (prefix-index-holders.ts):
// a canonical block hash (16 lowercase hex characters, block-hash.ts) is the 64-bit number it
// spells. Made where the chain's hashes are made (the strings are in cache there), they let a
// routing decision probe the table from one small typed array instead of reading a hash string per
// probe (each a cache miss on a ~550k-block index: about half the misses of a probe).
// Layout: keys[2i] = low 32 bits, keys[2i + 1] = high 32 bits of hashes[i]. A hash that is not
// canonical, or whose high word is all ones, reads (0, -1): the table keeps such a string under a
// small id of its own, so a reader looks it up by its string (exactly as without keys).
// Cost: O(blocks) integer work, no allocation but the result (hashKeys) or none (into an array).

/** Value of each UTF-16 code unit as a lowercase hex digit, -1 for any other character (64 KiB:
 *  charCodeAt's every result indexes it; no branch per character: random hex digits made digit /
 *  letter tests mispredict, ~100 ns a parse, ~25 with the table, measured on 4,096 block hashes). */
const NIBBLE = new Int8Array(65_536).fill(-1);
for (let d = 0; d < 10; d++) NIBBLE[48 + d] = d;
for (let x = 0; x < 6; x++) NIBBLE[97 + x] = 10 + x;

/** High word of a key that is read by its string instead (see above). */
export const NOT_A_KEY = -1;

/** The words readKey() read last: KEY[0] low, KEY[1] high (scratch, valid until its next call). */
export const KEY = new Int32Array(2);

/**
 * Reads the key of `h` into KEY: true for a canonical hash (16 lowercase hex characters, high word
 * other than NOT_A_KEY), false for any other string (KEY then unspecified). The one parse of a
 * block hash: the holder table's string lookups and writeHashKeys both go through it.
 */
export function readKey(h: string): boolean {
  if (h.length !== 16) return false;
  let hi = 0;
  let lo = 0;
  // any character that is not a lowercase hex digit reads -1 and makes `bad` negative: no branch
  // per character
  let bad = 0;
  for (let c = 0; c < 8; c++) {
    const a = NIBBLE[h.charCodeAt(c)];
    const b = NIBBLE[h.charCodeAt(c + 8)];
    bad |= a | b;
    hi = (hi << 4) | a;
    lo = (lo << 4) | b;
  }
  KEY[0] = lo;
  KEY[1] = hi;
  return bad >= 0 && hi !== NOT_A_KEY;
}

/** keys[2i], keys[2i + 1] = the key of hashes[i] for i in [from, to) (layout above). */
export function writeHashKeys(hashes: readonly string[], keys: Int32Array, from: number, to: number): void {
  for (let i = from; i < to; i++) {
    if (readKey(hashes[i])) {
      keys[2 * i] = KEY[0];
      keys[2 * i + 1] = KEY[1];
    } else {
      keys[2 * i] = 0;
      keys[2 * i + 1] = NOT_A_KEY;
    }
  }
}

/** The keys of a whole chain (layout above). */
export function hashKeys(hashes: readonly string[]): Int32Array {
  const keys = new Int32Array(2 * hashes.length);
  writeHashKeys(hashes, keys, 0, hashes.length);
  return keys;
}
