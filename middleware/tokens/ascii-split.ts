// The pre-tokenizer split of Qwen (2.5, 3) and Llama 3 read by character codes where the text is
// ASCII. Their Split stage's pattern (as @lenml/tokenizers compiles it, flags `gu`):
//   '(s|t|re|ve|m|ll|d) (either case) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N} (Llama 3: \p{N}{1,3})
//   | ' '?[^\s\p{L}\p{N}]+[\r\n]* | \s*[\r\n]+ | \s+(?!\S) | \s+
// Tried at each piece's start, V8's regex engine retries its Unicode classes alternative by
// alternative: ~6-7 ns a character of a code tool output, over a third of a warm fast encode
// (fast-bpe.ts); this scan ~4 ns (same-run micro-benchmark, loaded 2-core host). Here the first
// match at a position is worked out from the classes of the ASCII code units it reads (letter,
// digit, blank, newline, other), alternative by alternative as the regex would; the moment the
// answer would depend on a code unit at or above U+0080 (a letter? a blank? a digit?) it gives up
// and the caller asks the regex, for that piece only. So every answer it gives is the regex's, and
// non-ASCII text costs one extra look at its first code unit. O(piece length) per piece, no
// allocation. Applies only to a pattern whose source is exactly one of the two above.

/** The Split pattern's source in Qwen's tokenizer.json, as the library compiles it. */
export const QWEN_SPLIT_SOURCE =
  "(?:'([sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD]))|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
/** The same with digits in runs of up to three (Llama 3). */
export const LLAMA3_SPLIT_SOURCE = QWEN_SPLIT_SOURCE.replace('|\\p{N}|', '|\\p{N}{1,3}|');

// Classes of the code units: one table lookup per code unit, no separate test for non-ASCII.
const LETTER = 1;
const DIGIT = 2;
/** \s: tab, \n, \v, \f, \r, space. */
const BLANK = 4;
/** \r, \n (also BLANK). */
const NEWLINE = 8;
/** Neither \s nor a letter nor a digit: punctuation, symbols, control characters. */
const OTHER = 16;
/** From U+0080 on: the scan stops and asks the regex. */
const WIDE = 32;

/** Every UTF-16 code unit's class (64 KB, one byte each: most stay WIDE). */
const CLASS = new Uint8Array(0x10000).fill(WIDE);
for (let c = 0; c < 128; c++) {
  if ((c >= 65 && c <= 90) || (c >= 97 && c <= 122)) CLASS[c] = LETTER;
  else if (c >= 48 && c <= 57) CLASS[c] = DIGIT;
  else if (c === 10 || c === 13) CLASS[c] = BLANK | NEWLINE;
  else if (c === 32 || (c >= 9 && c <= 13)) CLASS[c] = BLANK;
  else CLASS[c] = OTHER;
}

/** Returned where the match depends on a code unit outside ASCII: ask the regex. */
export const ASK_REGEX = -1;

/** The end of the run of letters from `j`, or ASK_REGEX where a non-ASCII code unit ends it. */
function letterRun(x: string, j: number, n: number): number {
  let k = 0;
  while (j < n && (k = CLASS[x.charCodeAt(j)]) === LETTER) j++;
  return j < n && k === WIDE ? ASK_REGEX : j;
}

/**
 * The end of the pattern's match at `at` (`at` < x.length; every ASCII code unit starts one), or
 * ASK_REGEX. `maxDigits`: 1 (Qwen) or 3 (Llama 3).
 */
export function asciiPieceEnd(x: string, at: number, maxDigits: number): number {
  const n = x.length;
  const c = x.charCodeAt(at);
  const k = CLASS[c];
  // A letter starts no contraction and takes no prefix: \p{L}+ (the commonest piece first)
  if (k === LETTER) return letterRun(x, at + 1, n);
  if (k === WIDE) return ASK_REGEX;
  // the next code unit's class; 0 past the end
  const k1 = at + 1 < n ? CLASS[x.charCodeAt(at + 1)] : 0;
  // '(s|t|re|ve|m|ll|d), either case (| 0x20 lower-cases an ASCII letter; NaN past the end gives
  // 32, and no code unit from 0x80 on gives a letter)
  if (c === 39) {
    const l1 = x.charCodeAt(at + 1) | 0x20;
    if (l1 === 115 || l1 === 116 || l1 === 109 || l1 === 100) return at + 2;
    const l2 = x.charCodeAt(at + 2) | 0x20;
    if ((l1 === 114 && l2 === 101) || (l1 === 118 && l2 === 101) || (l1 === 108 && l2 === 108)) return at + 3;
  }
  // [^\r\n\p{L}\p{N}]\p{L}+: a blank but \r \n, or an other, then letters
  if ((k & (NEWLINE | DIGIT)) === 0) {
    if (k1 === LETTER) return letterRun(x, at + 2, n);
    if (k1 === WIDE) return ASK_REGEX;
  }
  // \p{N} or \p{N}{1,3}
  if (k === DIGIT) {
    let j = at + 1;
    const last = Math.min(n, at + maxDigits);
    for (; j < last; j++) {
      const d = CLASS[x.charCodeAt(j)];
      if (d === WIDE) return ASK_REGEX;
      if (d !== DIGIT) break;
    }
    return j;
  }
  // ' '?[^\s\p{L}\p{N}]+[\r\n]*
  let from = -1;
  if (k === OTHER) from = at + 1;
  else if (c === 32 && k1 === OTHER) from = at + 2;
  if (from >= 0) {
    let j = from;
    let d = 0;
    while (j < n && (d = CLASS[x.charCodeAt(j)]) === OTHER) j++;
    if (j < n && d === WIDE) return ASK_REGEX;
    while (j < n && (CLASS[x.charCodeAt(j)] & NEWLINE) !== 0) j++;
    return j;
  }
  // Only blanks are left: their run [at, end).
  let end = at + 1;
  let d = 0;
  while (end < n && ((d = CLASS[x.charCodeAt(end)]) & BLANK) !== 0) end++;
  if (end < n && d === WIDE) return ASK_REGEX;
  // \s*[\r\n]+: up to the run's last newline
  for (let j = end - 1; j >= at; j--) if ((CLASS[x.charCodeAt(j)] & NEWLINE) !== 0) return j + 1;
  // \s+(?!\S): the whole run at the text's end, else all of it but its last blank
  if (end === n) return n;
  if (end - at >= 2) return end - 1;
  // \s+
  return end;
}

/** The longest digit run of a Split stage's compiled pattern that asciiPieceEnd reads (1: Qwen,
 *  3: Llama 3), or 0 for any other pattern. */
export function asciiSplitDigits(pattern: RegExp): number {
  if (pattern.flags.replace(/[gy]/g, '') !== 'u') return 0;
  if (pattern.source === QWEN_SPLIT_SOURCE) return 1;
  if (pattern.source === LLAMA3_SPLIT_SOURCE) return 3;
  return 0;
}
