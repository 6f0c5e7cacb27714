// Nesting depth of a JSON document, from its raw bytes, before anything recursive walks it:
// JSON.parse copes with deep nesting, but later recursive code (stringify, structuredClone,
// template rendering) would overflow the stack on attacker-chosen depth, and parsing a body of
// brackets costs ~160 ms per million levels, so the scan stops as soon as the limit is passed.
// O(n), no allocation. Strings are most of a chat body's bytes: a short one is stepped through,
// a long one is crossed with Buffer#indexOf (memchr) from quote to quote, ~50x faster per byte.
// Settings: limits.max_json_depth.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJ = 0x7b;
const OPEN_ARR = 0x5b;
const CLOSE_OBJ = 0x7d;
const CLOSE_ARR = 0x5d;
/** Bytes of a string stepped through one by one before jumping: a native call costs about this much. */
const STEP_BYTES = 48;

/**
 * Index of the quote closing the string whose content starts at `i`, or `buf.length` when it is
 * unterminated. `i` is always at the start of a character, never in the middle of an escape.
 */
export function stringEnd(buf: Uint8Array, i: number): number {
  const n = buf.length;
  const stop = Math.min(n, i + STEP_BYTES);
  for (; i < stop; i++) {
    const c = buf[i];
    if (c === QUOTE) return i;
    if (c === BACKSLASH) i++;
  }
  if (i >= n) return n;
  // A long string: from quote to quote. An escaped quote (code, quoted JSON) continues the jump
  // from just after it; stepping again would cost STEP_BYTES per quote in quote-dense text.
  for (;;) {
    const j = buf.indexOf(QUOTE, i);
    if (j < 0) return n;
    // Escaped when an odd run of backslashes precedes it; the run cannot start before `i`.
    let k = j - 1;
    while (k >= i && buf[k] === BACKSLASH) k--;
    if ((j - 1 - k) % 2 === 0) return j;
    i = j + 1;
  }
}

/**
 * Deepest array/object nesting in `buf`, stopping early once it passes `stopAt`. `from` and
 * `depth` resume the count at a byte outside any string whose nesting is known (the incremental
 * body parse scans only the bytes a request added): the result is then the deepest nesting from there.
 */
export function jsonDepth(buf: Uint8Array, stopAt = Infinity, from = 0, depth = 0): number {
  let max = depth;
  const n = buf.length;
  for (let i = from; i < n; i++) {
    const c = buf[i];
    if (c === QUOTE) i = stringEnd(buf, i + 1);
    else if (c === OPEN_OBJ || c === OPEN_ARR) {
      if (++depth > max) {
        max = depth;
        if (max > stopAt) return max;
      }
    } else if (c === CLOSE_OBJ || c === CLOSE_ARR) depth--;
  }
  return max;
}
