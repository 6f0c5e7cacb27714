// Recognises an agent's in-place reduction of an output it sent before, whatever its wording:
// SWE-agent's `Old environment output: (N lines omitted)`, OpenHands' masked observations,
// tool-result clearing (empty content), `(output truncated)`, head/tail truncation, a harness's
// own marker. The test is structural, not a list of markers: what the new text keeps of the old
// is an in-order run of its lines (a line may be cut short), and what it adds is at most
// MAX_MARKER_LINES short lines (the marker). Position is checked by the caller (same index, same
// role and tool_call_id, anchored neighbours). O(lines of both texts).

/** Lines the new text may add (the agent's marker), at most. */
export const MAX_MARKER_LINES = 3;
/** Characters of one added line, at most. */
export const MAX_MARKER_CHARS = 400;

export interface Reduction {
  /** Lines of the new text found, in order, among the old text's lines. */
  kept: number;
  /** Lines the new text adds (non-empty). */
  added: number;
  /** Non-empty lines of the old text. */
  old: number;
}

/** What `next` keeps of `prev` and adds to it, or undefined when it adds more than a marker. */
export function reductionOf(prev: string, next: string): Reduction | undefined {
  const old = prev.split('\n');
  let j = 0;
  let kept = 0;
  let added = 0;
  for (const line of next.split('\n')) {
    if (line.trim() === '') continue;
    let k = j;
    // A kept line is an old line, or the start of one cut mid-line (a few characters at least).
    while (k < old.length && old[k] !== line && !(line.length >= 8 && old[k].startsWith(line))) k++;
    if (k < old.length) {
      kept++;
      j = k + 1;
      continue;
    }
    if (++added > MAX_MARKER_LINES || line.length > MAX_MARKER_CHARS) return undefined;
  }
  return { kept, added, old: old.filter((l) => l.trim() !== '').length };
}

export interface ElisionOptions {
  /** Only a shorter text counts (user messages); otherwise a pure marker may be longer than a tiny output. */
  strictlyShorter?: boolean;
}

/** Is `next` an elision or truncation of `prev` (and nothing else)? */
export function isElisionOf(prev: string, next: string, o: ElisionOptions = {}): boolean {
  if (next === prev) return false;
  const r = reductionOf(prev, next);
  if (!r) return false;
  // Something kept and lines dropped: a head/tail truncation, its marker may outweigh the cut.
  if (r.kept > 0) return r.kept < r.old || next.length < prev.length;
  // Nothing kept: a marker (or nothing) in place of the output; longer than it only for tools.
  return next.length < prev.length || (!o.strictlyShorter && r.added > 0);
}

/** Without the old text (a compacted prefix keeps only hashes): short enough to be a marker. */
export function looksLikeMarker(text: string): boolean {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  return lines.length <= MAX_MARKER_LINES && lines.every((l) => l.length <= MAX_MARKER_CHARS);
}
