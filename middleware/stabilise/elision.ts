// Recognises an agent's in-place elision or truncation of an output it sent before
// (SWE-agent LastNObservations `Old environment output: (N lines omitted)`, OpenHands
// condensers' masked observations, head/tail truncation). O(lines of the old text).

const ELISION_RE = /(Old (environment )?output|\(\s*\d+\s+lines?\s+(omitted|elided|truncated|removed)\s*\)|\[(output |content )?(omitted|elided|truncated|removed|cleared)[^\]]*\]|<\/?(elided|truncated|omitted)|\.\.\. ?\(?truncated|observation (omitted|masked|elided))/i;
const MARKER_LINE_RE = /^\s*(\.\.\.|…|\[.*(omitted|truncated|elided|removed).*\]|.*\(\s*\d+\s+(more\s+)?(lines?|chars?|characters?)\s+(omitted|truncated|elided|removed)\s*\).*|<(response clipped|truncated)[^>]*>.*)\s*$/i;

/** Short marker texts that stand for a removed output. */
export function isElisionMarker(text: string): boolean {
  const t = text.trim();
  return t === '' || (t.length <= 400 && ELISION_RE.test(t));
}

/** Is `next` an elision or truncation of `prev` (and nothing else)? */
export function isElisionOf(prev: string, next: string): boolean {
  const n = next.trim();
  // A marker may be longer than a short output it replaced; it is still an elision.
  if (isElisionMarker(n)) return n !== prev.trim();
  if (n.length >= prev.trim().length) return false;
  const kept = n.split('\n').filter((l) => !MARKER_LINE_RE.test(l));
  if (kept.length === 0) return true;
  // Truncation: what remains is an in-order subsequence of the old lines (head, tail or both).
  const old = prev.split('\n');
  let j = 0;
  for (const line of kept) {
    while (j < old.length && old[j] !== line && !old[j].startsWith(line)) j++;
    if (j >= old.length) return false;
    j++;
  }
  return true;
}
