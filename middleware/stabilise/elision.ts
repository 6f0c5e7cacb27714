// Recognises an agent's in-place reduction of an output it sent before, whatever its wording:
// SWE-agent's `Old environment output: (N lines omitted)`, OpenHands' masked observations,
// tool-result clearing (empty content), `(output truncated)`, head/tail truncation, a harness's
// own marker. The test is structural, not a list of markers: what the new text keeps of the old
// is an in-order run of its lines (a line may be cut short), and what it adds is at most
// MAX_MARKER_LINES short lines (the marker). Position is checked by the caller (same index, same
// role and tool_call_id, anchored neighbours). O(lines of both texts).
// Below a compaction watermark only a fingerprint of the old text is kept (hashes of its first
// FINGERPRINT_HEAD and last FINGERPRINT_TAIL lines): the same test runs against it, so a head or
// tail truncation whose marker outweighs a tiny output is still an elision there.
import { hash } from 'node:crypto';

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
  // A kept line is an old line, or the start of one cut mid-line (a few characters at least).
  const r = reduce(old.length, next, (k, line) => old[k] === line || (line.length >= 8 && old[k].startsWith(line)));
  return r && { ...r, old: old.filter((l) => l.trim() !== '').length };
}

function reduce(
  oldLines: number,
  next: string,
  keeps: (k: number, line: string) => boolean,
): Omit<Reduction, 'old'> | undefined {
  let j = 0;
  let kept = 0;
  let added = 0;
  for (const line of next.split('\n')) {
    if (line.trim() === '') continue;
    let k = j;
    while (k < oldLines && !keeps(k, line)) k++;
    if (k < oldLines) {
      kept++;
      j = k + 1;
      continue;
    }
    if (++added > MAX_MARKER_LINES || line.length > MAX_MARKER_CHARS) return undefined;
  }
  return { kept, added };
}

export interface ElisionOptions {
  /** Only a shorter text counts (user messages); otherwise a pure marker may be longer than a tiny output. */
  strictlyShorter?: boolean;
}

/** Is `next` an elision or truncation of `prev` (and nothing else)? */
export function isElisionOf(prev: string, next: string, o: ElisionOptions = {}): boolean {
  if (next === prev) return false;
  const r = reductionOf(prev, next);
  return !!r && decide(r, next.length, prev.length, o);
}

function decide(r: Reduction, nextSize: number, oldSize: number, o: ElisionOptions): boolean {
  // Something kept and lines dropped: a head/tail truncation, its marker may outweigh the cut.
  if (r.kept > 0) return r.kept < r.old || nextSize < oldSize;
  // Nothing kept: a marker (or nothing) in place of the output; longer than it only for tools.
  return nextSize < oldSize || (!o.strictlyShorter && r.added > 0);
}

/** Without the old text (a compacted prefix keeps only hashes): short enough to be a marker. */
export function looksLikeMarker(text: string): boolean {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  return lines.length <= MAX_MARKER_LINES && lines.every((l) => l.length <= MAX_MARKER_CHARS);
}

/** Lines of an old text whose hashes a fingerprint keeps: the head and the tail. */
export const FINGERPRINT_HEAD = 16;
export const FINGERPRINT_TAIL = 8;

/** A text's elision fingerprint: `['<non-empty lines> <chars>', ...head line hashes, '', ...tail]`. */
export type Fingerprint = string[];

const lineHash = (l: string): string => hash('sha1', l, 'base64').slice(0, 8);

/** O(lines). A few hundred bytes at most, whatever the text's size. */
export function fingerprintOf(text: string): Fingerprint {
  const lines = text.split('\n');
  const n = `${lines.filter((l) => l.trim() !== '').length} ${text.length}`;
  if (lines.length <= FINGERPRINT_HEAD + FINGERPRINT_TAIL) return [n, ...lines.map(lineHash)];
  return [n, ...lines.slice(0, FINGERPRINT_HEAD).map(lineHash), '', ...lines.slice(-FINGERPRINT_TAIL).map(lineHash)];
}

/**
 * isElisionOf against a fingerprint of the old text: kept lines must be whole lines of its head
 * or tail (a line kept from the middle, or cut mid-line, counts as added). Never true for an
 * unchanged text (the caller compares hashes first).
 */
export function isElisionOfFingerprint(fp: Fingerprint, next: string, o: ElisionOptions = {}): boolean {
  const [old, size] = (fp[0] ?? '').split(' ').map(Number);
  if (!Number.isFinite(old) || !Number.isFinite(size)) return false;
  const hashes = fp.slice(1);
  const r = reduce(hashes.length, next, (k, line) => hashes[k] !== '' && hashes[k] === lineHash(line));
  return !!r && decide({ ...r, old }, next.length, size, o);
}
