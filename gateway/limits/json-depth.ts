// Nesting depth of a JSON document, from its raw bytes, before anything recursive walks it:
// JSON.parse copes with deep nesting, but later recursive code (stringify, structuredClone,
// template rendering) would overflow the stack on attacker-chosen depth. O(n), no allocation.
// Settings: limits.max_json_depth.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJ = 0x7b;
const OPEN_ARR = 0x5b;
const CLOSE_OBJ = 0x7d;
const CLOSE_ARR = 0x5d;

/** Deepest array/object nesting in `buf`, stopping early once it passes `stopAt`. */
export function jsonDepth(buf: Uint8Array, stopAt = Infinity): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < buf.length; i++) {
    const c = buf[i];
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
      continue;
    }
    if (c === QUOTE) inString = true;
    else if (c === OPEN_OBJ || c === OPEN_ARR) {
      if (++depth > max) {
        max = depth;
        if (max > stopAt) return max;
      }
    } else if (c === CLOSE_OBJ || c === CLOSE_ARR) depth--;
  }
  return max;
}
