// Learning which value runs of a line change between calls of a session: the one algorithm behind
// volatile relocation in the root (volatile-stage.ts) and in tool definitions (volatile-tools.ts).
// Lines are keyed by their shape (value runs normalised, volatile-spans.ts) and rank among the
// lines of that shape in the same text; when the line under a key differs from the previous
// call's, the runs that differed are learned as changing (-1: only whitespace around it changed,
// the line as a whole). A line whose words change has another shape: a prompt edit, never learned.
// O(line length); the state holds short hashes only, never the text.
import { hash } from 'node:crypto';
import { lineShape, valueRuns, type Span } from './volatile-spans.ts';

/** Short hash of a text (line keys, whole lines). */
export const shortHash = (s: string): string => hash('sha1', s, 'base64').slice(0, 12);

/** FNV-1a of a value run, base 36: cheap, and enough to tell which run of a line changed. */
function runHash(s: string, from: number, to: number): string {
  let x = 0x811c9dc5;
  for (let i = from; i < to; i++) x = Math.imul(x ^ s.charCodeAt(i), 0x01000193);
  return (x >>> 0).toString(36);
}

export interface LearnState {
  /** line key → hash of the line, then a short hash per value run (previous call). */
  prev: Record<string, string[]>;
  /** line key → indices of value runs seen changing (-1: the whole line). */
  learned: Record<string, number[]>;
}

/** Keys of the non-empty lines of one text: `<scope>` + shape hash + rank/count among that shape. */
export function lineKeys(scope: string, lines: readonly string[]): (string | undefined)[] {
  const shapes = lines.map((l) => (l.trim() === '' ? undefined : shortHash(lineShape(l))));
  const count = new Map<string, number>();
  for (const s of shapes) if (s) count.set(s, (count.get(s) ?? 0) + 1);
  const rank = new Map<string, number>();
  return shapes.map((s) => {
    if (!s) return undefined;
    const r = rank.get(s) ?? 0;
    rank.set(s, r + 1);
    return `${scope}${s}#${r}/${count.get(s)}`;
  });
}

/**
 * Observes `line` under `key` against the previous call (`prev`), records it in `next`, and
 * returns the runs known to change (updating `learned`), with the line's runs.
 */
export function observeLine(
  key: string,
  line: string,
  prev: LearnState['prev'],
  learned: LearnState['learned'],
  next: LearnState['prev'],
): { known: number[] | undefined; runs: Span[] } {
  const runs = valueRuns(line);
  const cur = [shortHash(line), ...runs.map((sp) => runHash(line, sp.start, sp.end))];
  next[key] = cur;
  const before = prev[key];
  if (before && before[0] !== cur[0]) {
    const seen = new Set(learned[key] ?? []);
    let any = false;
    for (let k = 0; k < runs.length; k++) {
      if (before[k + 1] !== cur[k + 1]) {
        seen.add(k);
        any = true;
      }
    }
    if (!any) seen.add(-1);
    learned[key] = [...seen].sort((a, b) => a - b);
  }
  return { known: learned[key], runs };
}

/** Learned entries of keys no longer seen are dropped: the state stays O(text). */
export function pruneLearned(learned: LearnState['learned'], next: LearnState['prev']): void {
  for (const k of Object.keys(learned)) if (!(k in next)) delete learned[k];
}
