// The matches of the keyword rules (redact.ts's `cli_secret` and `env_secret`) and of `url_password`
// (parts in keyword-rules.ts), found from the few places they can start instead of from every
// position. A global search for a keyword rule tries its key-name part (up to 64 name characters on
// each side of a keyword, tried at every backtrack) at each start the text offers; on source code
// that was ~50 µs per 1.7 KB output for `env_secret`, most of the redaction check.
//
// Why it is exact: every match has an anchor a that `runs` lists (in text order) and starts at a
// position s with lowest(a) <= s <= a; and for the first listed a >= L (where the global search
// would resume), no match starting at or after L starts before lowest(a). For the keyword rules the
// anchor is the start of the NAME: a whole maximal run of name characters ([A-Za-z0-9_.-];
// case-insensitive matching maps no non-ASCII character onto them without the `u` flag) that holds
// a keyword and is followed by what the rule needs after it, and between a match's start and its
// NAME lies no other keyword-holding run; for the URL rule it is the `://` after a scheme of at most
// 32 characters. So the rule's own pattern, made sticky, is tried at every position from
// max(L, lowest(a)) to a, in order, which is exactly what the global search does there. A match
// found resumes the scan at its end; none resumes it at a + 1. The matches are therefore the
// global search's, match for match (test/middleware/redaction-anchored.test.ts).
// Cost: one or two indexOf scans for the characters the anchors sit by; per hit a walk over its
// blanks and run (each character walked a bounded number of times) and one keyword test; per
// anchor at most (blanks + 8) sticky attempts, or 33 for a `://`: O(n).

/** A candidate NAME run [a, b) and where the operator search resumes. */
export interface Run {
  a: number;
  b: number;
  next: number;
}

/** Where a rule's matches can be: its candidate NAME runs in text order, and its pattern made sticky. */
export interface Anchor {
  /** The rule's pattern with the sticky flag added (same source, same other flags). */
  sticky: RegExp;
  /** The lowest position a match whose NAME starts at `a` can start at. */
  lowest(text: string, a: number): number;
  /** For one text: the first candidate run whose operator is at or after `at`, into `run`
   * (false when none is left); `at` only grows from call to call. */
  runs(text: string): (at: number, run: Run) => boolean;
}

/** [A-Za-z0-9_.-]: the key-name characters. */
export function isNameChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95 || c === 46 || c === 45;
}

/** `\s` of a JS regular expression for one UTF-16 code unit (WhiteSpace and LineTerminator:
 * tab, LF, VT, FF, CR, space, NBSP, BOM, U+2028/2029 and the Space_Separator letters), without a
 * regex call: the walks back over blanks call it per character. */
export function isSpace(c: number): boolean {
  if (c < 128) return c === 32 || (c >= 9 && c <= 13);
  if (c >= 0x2000 && c <= 0x200a) return true;
  switch (c) {
    case 0xa0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202f:
    case 0x205f:
    case 0x3000:
    case 0xfeff:
      return true;
    default:
      return false;
  }
}

/** Calls `visit` with each match of the anchor's rule in `text`, in the order and with the
 * results a global `exec` loop gives; `visit` returns true to stop. */
export function forEachAnchored(text: string, anchor: Anchor, visit: (m: RegExpExecArray) => boolean): void {
  const { sticky } = anchor;
  const find = anchor.runs(text);
  const run: Run = { a: 0, b: 0, next: 0 };
  let from = 0; // no match not yet visited starts before it
  let at = 0; // the next candidate's operator is at or after it
  while (find(at, run)) {
    at = run.next;
    const a = run.a;
    if (a < from) continue;
    let p = Math.max(from, anchor.lowest(text, a));
    for (; p <= a; p++) {
      sticky.lastIndex = p;
      const m = sticky.exec(text);
      if (m === null) continue;
      if (visit(m)) return;
      from = p + Math.max(m[0].length, 1);
      at = Math.max(at, from);
      break;
    }
    if (p > a) from = a + 1;
  }
}
