// Line and span helpers of volatile relocation. A root line is volatile only when it was SEEN
// changing between calls of a session (volatile-stage.ts diffs it against the previous call):
// its "shape" (the line with every value run — digits, long hex ids — replaced) stays, the runs
// that differed are its changing spans. Patterns (dates, unix times, UUIDs, hex ids, counters)
// only widen an observed changing run to the whole value around it, and, with the opt-in
// `eager` mode, pick whole label lines ("Current date: …") to move on first sight. Nothing here
// edits text except by replacing whole spans with the visible placeholder. O(line length).
import { VOLATILE_PLACEHOLDER } from '../lossless/placeholder.ts';

/**
 * At most this many words beside the changing spans make the line a label ("Current date: …",
 * "Today is …"): it moves whole. More words are an instruction: it stays, with a placeholder.
 */
export const LABEL_MAX_WORDS = 3;

export interface Span {
  start: number;
  end: number;
}

/** Value runs: long hex-like ids first, then digit runs. Lines differing only there share a shape. */
const RUN_RE = /[0-9a-f]{6,}|\d+/gi;

const PATTERNS: { name: string; re: RegExp; label?: boolean }[] = [
  {
    name: 'labelled-date',
    label: true,
    re: /\b(?:current|today'?s?|now|local|system)\s+(?:date|time|datetime|timestamp)\b\s*(?:is)?\s*[:=]?[^\n]*/gi,
  },
  { name: 'iso8601', re: /\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b/g },
  {
    name: 'rfc2822',
    re: /\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun),?\s+\d{1,2}\s+(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\s+\d{4}(?:\s+\d{2}:\d{2}(?::\d{2})?(?:\s*(?:[+-]\d{4}|GMT|UTC|Z))?)?/g,
  },
  { name: 'clock-time', re: /\b\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?\b/g },
  { name: 'unix-ts', re: /\b1[5-9]\d{8}(?:\d{3})?\b/g },
  { name: 'uuid', re: /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi },
  { name: 'hex-id', re: /\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{16,}\b/gi },
  { name: 'turn-counter', re: /\bturn\s*#?\s*\d+\b/gi },
  { name: 'request-id', re: /\b(?:request|req)(?:[ _-]?id)?\s*[:=#]?\s*(?=[0-9a-f-]*\d)[0-9a-f][0-9a-f-]{3,}\b/gi },
];

/** Every value run of the line, in order. */
export function valueRuns(line: string): Span[] {
  const out: Span[] = [];
  RUN_RE.lastIndex = 0;
  for (let m = RUN_RE.exec(line); m; m = RUN_RE.exec(line)) out.push({ start: m.index, end: m.index + m[0].length });
  return out;
}

/** The line with its value runs normalised away: two lines with one shape differ only in values. */
export function lineShape(line: string): string {
  return line.replace(RUN_RE, '#').trim();
}

/** Pattern matches of the line (label patterns only when asked), merged where they overlap, in order. */
export function patternSpans(line: string, withLabels = true): (Span & { name: string })[] {
  const all: (Span & { name: string })[] = [];
  for (const { name, re, label } of PATTERNS) {
    if (label && !withLabels) continue;
    re.lastIndex = 0;
    for (let m = re.exec(line); m; m = re.exec(line)) {
      if (m[0].trim().length > 0) all.push({ start: m.index, end: m.index + m[0].length, name });
      if (m[0].length === 0) re.lastIndex++;
    }
  }
  return mergeSpans(all);
}

function mergeSpans<T extends Span>(spans: T[]): T[] {
  const sorted = [...spans].sort((a, b) => a.start - b.start || b.end - a.end);
  const merged: T[] = [];
  for (const sp of sorted) {
    const last = merged[merged.length - 1];
    if (last && sp.start <= last.end) last.end = Math.max(last.end, sp.end);
    else merged.push({ ...sp });
  }
  return merged;
}

/** Observed changing runs, each widened to the value pattern around it (a date, a clock), merged. */
export function changingSpans(line: string, runs: readonly Span[]): Span[] {
  const pats = patternSpans(line, false);
  const out = runs.map((r) => pats.find((p) => p.start <= r.start && r.end <= p.end) ?? r);
  // Runs separated only by value punctuation (`10:05:07`, `v1.2.3`) form one span.
  const merged = mergeSpans(out.map((s) => ({ ...s })));
  const joined: Span[] = [];
  for (const s of merged) {
    const last = joined[joined.length - 1];
    if (last && /^[-:./,T]{1,2}$/.test(line.slice(last.end, s.start))) last.end = s.end;
    else joined.push({ ...s });
  }
  return joined;
}

/** Words of the line outside `spans`: few of them make it a label line. */
export function wordsOutside(line: string, spans: readonly Span[]): number {
  let rest = '';
  let at = 0;
  for (const sp of spans) {
    rest += line.slice(at, sp.start) + ' ';
    at = sp.end;
  }
  rest += line.slice(at);
  return rest.split(/\s+/).filter((w) => /[A-Za-z]{2,}/.test(w)).length;
}

/** The line with each span replaced by the placeholder; everything else byte for byte. */
export function withPlaceholders(line: string, spans: readonly Span[]): string {
  let out = '';
  let at = 0;
  for (const sp of spans) {
    out += line.slice(at, sp.start) + VOLATILE_PLACEHOLDER;
    at = sp.end;
  }
  return out + line.slice(at);
}

/** Eager mode, first sight: a label line a pattern marks as volatile ("Current date: …"), else undefined. */
export function eagerLabelSpans(line: string): Span[] | undefined {
  const spans = patternSpans(line);
  if (spans.length === 0) return undefined;
  return wordsOutside(line, spans) <= LABEL_MAX_WORDS ? spans : undefined;
}

/** Root text with every first-sight pattern and all digits removed: the session-hash input. */
export function sessionRootKey(text: string): string {
  return text
    .split('\n')
    .map((l) => {
      const spans = patternSpans(l);
      if (spans.length === 0) return l;
      return wordsOutside(l, spans) <= LABEL_MAX_WORDS ? undefined : withPlaceholders(l, spans);
    })
    .filter((l): l is string => l !== undefined)
    .join('\n')
    .replace(/\d+/g, '');
}
