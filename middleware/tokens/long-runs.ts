// Keeps BPE linear on hostile input. Byte-level BPE tokenizers first split text into pre-tokens
// (a run of letters, of punctuation, …) and merge within each one; the merge loop of the JS ports
// is quadratic in the pre-token's length, so 100k letters without a space stall the event loop for
// seconds. Runs longer than MAX_RUN_CHARS of letters (with marks) or of punctuation are encoded in
// RUN_PIECE_CHARS pieces instead. Ids differ from the engine's only at those cuts, inside such
// runs — never in real prose or code, whose pre-tokens are short. O(n) scan (strided probes first,
// the regex only where a long enough run of non-blanks exists); pieces bounded.

/** Longest letter or punctuation run encoded whole. */
export const MAX_RUN_CHARS = 256;
/** Piece length a longer run is encoded in. */
export const RUN_PIECE_CHARS = 128;
const LONG_RUN = new RegExp(
  `[\\p{L}\\p{M}]{${MAX_RUN_CHARS + 1},}|[^\\s\\p{L}\\p{M}\\p{N}]{${MAX_RUN_CHARS + 1},}`,
  'gu',
);

/**
 * Whether `text` may hold a LONG_RUN match, which needs more than MAX_RUN_CHARS consecutive code
 * units that are not blanks (letters, marks and punctuation never are). Only ASCII blanks end a
 * run here, so a run counted here is never shorter than the regex's and a false answer is always
 * right. The regex retries its quantified Unicode classes from every character of every word
 * (~4x slower than a plain scan on code and prose); a plain scan still reads every character
 * (~9 µs for a 1.7k-character tool output, on every fresh output's count). Here only every
 * (MAX_RUN_CHARS + 1)-th code unit is probed: a run longer than MAX_RUN_CHARS spans MAX_RUN_CHARS
 * + 1 consecutive indices, one of each residue, so it covers a probe; the run through a probe that
 * is no blank is measured to its blanks on both sides (it cannot reach back past the previous
 * probe, whose run was measured shorter). Same answer as a scan of every character, O(n) reads
 * worst case, ~n / MAX_RUN_CHARS × (a word's length) on ordinary text.
 */
export function mayHoldLongRun(text: string): boolean {
  const n = text.length;
  for (let j = MAX_RUN_CHARS; j < n; j += MAX_RUN_CHARS + 1) {
    if (isBlank(text.charCodeAt(j))) continue;
    let a = j;
    while (a > 0 && !isBlank(text.charCodeAt(a - 1))) a--;
    let b = j + 1;
    while (b < n && !isBlank(text.charCodeAt(b))) if (++b - a > MAX_RUN_CHARS) return true;
    if (b - a > MAX_RUN_CHARS) return true;
  }
  return false;
}

/** An ASCII blank (space, \t, \n, \v, \f, \r): what ends a run for mayHoldLongRun. */
const isBlank = (c: number): boolean => c === 32 || (c >= 9 && c <= 13);

/** `encode` applied piecewise where `text` holds runs too long for one pre-token. */
export function encodeBounded(text: string, encode: (s: string) => number[]): number[] {
  if (text.length <= MAX_RUN_CHARS || !mayHoldLongRun(text)) return encode(text);
  LONG_RUN.lastIndex = 0;
  let m = LONG_RUN.exec(text);
  if (!m) return encode(text);
  const out: number[] = [];
  const push = (ids: number[]): void => {
    for (const id of ids) out.push(id);
  };
  // a cut never splits a surrogate pair
  const at = (i: number, end: number): number => (i < end && isHigh(text.charCodeAt(i - 1)) ? i + 1 : Math.min(i, end));
  let from = 0;
  for (; m; m = LONG_RUN.exec(text)) {
    const end = m.index + m[0].length;
    // the text before the run travels with the run's first piece: ordinary text encodes as before
    let cut = at(m.index + RUN_PIECE_CHARS, end);
    push(encode(text.slice(from, cut)));
    while (cut < end) {
      const to = at(cut + RUN_PIECE_CHARS, end);
      push(encode(text.slice(cut, to)));
      cut = to;
    }
    from = end;
  }
  if (from < text.length) push(encode(text.slice(from)));
  return out;
}

const isHigh = (c: number): boolean => c >= 0xd800 && c <= 0xdbff;
