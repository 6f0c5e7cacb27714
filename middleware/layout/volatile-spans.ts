// Finds the volatile parts of a root (system prompt) text: spans that look volatile on first sight
// (dates/times, unix timestamps, UUIDs, long hex ids, counters) and lines that changed against the
// session's previous root only in their digits/ids (a clock, budget or request counter in any
// format). Legitimate prompt edits (words changed) are NOT treated as volatile: they stay in the
// root and show up as `system_changed`. O(root length) per call; regexes are linear.

/** A line shorter than this that holds a volatile span is moved whole ("Current date: …"). */
export const WHOLE_LINE_MAX_CHARS = 160;

const PATTERNS: { name: string; re: RegExp }[] = [
  { name: 'labelled-date', re: /\b(?:current|today'?s?|now|local|system)\s+(?:date|time|datetime|timestamp)\b\s*(?:is)?\s*[:=]?[^\n]*/gi },
  { name: 'iso8601', re: /\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b/g },
  { name: 'rfc2822', re: /\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun),?\s+\d{1,2}\s+(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\s+\d{4}(?:\s+\d{2}:\d{2}(?::\d{2})?(?:\s*(?:[+-]\d{4}|GMT|UTC|Z))?)?/g },
  { name: 'clock-time', re: /\b\d{1,2}:\d{2}:\d{2}(?:\.\d+)?\b/g },
  { name: 'unix-ts', re: /\b1[5-9]\d{8}(?:\d{3})?\b/g },
  { name: 'uuid', re: /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi },
  { name: 'hex-id', re: /\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{16,}\b/gi },
  { name: 'turn-counter', re: /\bturn\s*#?\s*\d+\b/gi },
  { name: 'request-id', re: /\b(?:request|req)(?:[ _-]?id)?\s*[:=#]?\s*(?=[0-9a-f-]*\d)[0-9a-f][0-9a-f-]{3,}\b/gi },
  { name: 'step-counter', re: /\b(?:step|iteration|attempt|call)\s*#?\s*\d+\s*(?:of|\/)\s*\d*\b/gi },
];

export interface VolatileLine {
  index: number;
  text: string;
  reason: 'pattern' | 'changed';
  /** Set when only parts of the line are volatile: these spans leave the root, the rest stays. */
  spans?: { start: number; end: number }[];
  pattern?: string;
}

/**
 * At most this many words beside the volatile spans make the line a label ("Current date: …",
 * "Today is …"): it moves whole. More words are an instruction that must stay in the root.
 */
export const LABEL_MAX_WORDS = 3;

/** Digits and long ids normalised away: two lines with the same shape differ only in values. */
export function lineShape(line: string): string {
  return line.replace(/[0-9a-f]{6,}/gi, '#').replace(/\d+/g, '#').trim();
}

/** Every pattern match of the line, merged where they overlap, in order. */
function patternSpans(line: string): { start: number; end: number; name: string }[] {
  const all: { start: number; end: number; name: string }[] = [];
  for (const { name, re } of PATTERNS) {
    re.lastIndex = 0;
    for (let m = re.exec(line); m; m = re.exec(line)) {
      if (m[0].trim().length > 0) all.push({ start: m.index, end: m.index + m[0].length, name });
      if (m[0].length === 0) re.lastIndex++;
    }
  }
  all.sort((a, b) => a.start - b.start || b.end - a.end);
  const merged: typeof all = [];
  for (const sp of all) {
    const last = merged[merged.length - 1];
    if (last && sp.start <= last.end) last.end = Math.max(last.end, sp.end);
    else merged.push({ ...sp });
  }
  return merged;
}

function cut(line: string, spans: readonly { start: number; end: number }[]): string {
  let out = '';
  let at = 0;
  for (const sp of spans) {
    out += line.slice(at, sp.start);
    at = sp.end;
  }
  return (out + line.slice(at)).replace(/ {2,}/g, ' ').trimEnd();
}

/**
 * How a volatile line leaves the root. Only its volatile spans, when what stays is an instruction
 * (more than LABEL_MAX_WORDS words) that can no longer change between calls (no digits or id-like
 * runs left: a line of the same shape differs only there), or when the line is long; else the
 * whole line. The note carries the line as written (or the spans of a long line), for context.
 */
export function volatileEntry(index: number, line: string, reason: VolatileLine['reason']): VolatileLine {
  const spans = patternSpans(line);
  const pattern = spans[0]?.name;
  if (spans.length > 0) {
    const rest = cut(line, spans);
    const stableRest = !/\d/.test(rest) && !/[0-9a-f]{6,}/i.test(rest);
    const words = rest.split(/\s+/).filter((w) => /\w/.test(w)).length;
    if (line.length > WHOLE_LINE_MAX_CHARS) return { index, text: spans.map((sp) => line.slice(sp.start, sp.end)).join(' '), reason, pattern, spans };
    if (stableRest && words > LABEL_MAX_WORDS) return { index, text: line, reason, pattern, spans };
  }
  return reason === 'pattern' ? { index, text: line, reason, pattern } : { index, text: line, reason };
}

/**
 * Volatile lines of `lines`. `prevShapes` maps line shape → exact lines seen on the session's
 * previous call; `learned` holds shapes already known to be volatile in this session.
 */
export function findVolatileLines(lines: readonly string[], prevShapes: ReadonlyMap<string, string> | undefined, learned: ReadonlySet<string>): VolatileLine[] {
  const out: VolatileLine[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.trim().length === 0) continue;
    const shape = lineShape(line);
    const changed = learned.has(shape) || (prevShapes !== undefined && prevShapes.has(shape) && prevShapes.get(shape) !== line);
    if (changed) {
      out.push(volatileEntry(i, line, 'changed'));
      continue;
    }
    if (patternSpans(line).length > 0) out.push(volatileEntry(i, line, 'pattern'));
  }
  return out;
}

/** Root text with volatile lines (or spans of long lines) removed; no placeholders left behind. */
export function stripVolatile(lines: readonly string[], found: readonly VolatileLine[]): string {
  const byIndex = new Map(found.map((v) => [v.index, v]));
  const kept: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const v = byIndex.get(i);
    if (!v) kept.push(lines[i]);
    else if (v.spans) kept.push(cut(lines[i], v.spans));
  }
  return kept.join('\n');
}

/** Root text with every first-sight pattern and all digits removed: the session-hash input. */
export function sessionRootKey(text: string): string {
  const lines = text.split('\n');
  return stripVolatile(lines, findVolatileLines(lines, undefined, new Set())).replace(/\d+/g, '');
}
