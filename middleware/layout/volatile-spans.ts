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
  /** Set when only part of a long line is volatile: the span moved out of it. */
  span?: { start: number; end: number };
  pattern?: string;
}

/** Digits and long ids normalised away: two lines with the same shape differ only in values. */
export function lineShape(line: string): string {
  return line.replace(/[0-9a-f]{6,}/gi, '#').replace(/\d+/g, '#').trim();
}

function firstPatternSpan(line: string): { start: number; end: number; name: string } | undefined {
  let best: { start: number; end: number; name: string } | undefined;
  for (const { name, re } of PATTERNS) {
    re.lastIndex = 0;
    const m = re.exec(line);
    if (m && m[0].trim().length > 0 && (!best || m.index < best.start)) best = { start: m.index, end: m.index + m[0].length, name };
  }
  return best;
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
      out.push({ index: i, text: line, reason: 'changed' });
      continue;
    }
    const span = firstPatternSpan(line);
    if (!span) continue;
    if (line.length <= WHOLE_LINE_MAX_CHARS) out.push({ index: i, text: line, reason: 'pattern', pattern: span.name });
    else out.push({ index: i, text: line.slice(span.start, span.end), reason: 'pattern', pattern: span.name, span });
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
    else if (v.span) kept.push((lines[i].slice(0, v.span.start) + lines[i].slice(v.span.end)).replace(/ {2,}/g, ' '));
  }
  return kept.join('\n');
}

/** Root text with every first-sight pattern and all digits removed: the session-hash input. */
export function sessionRootKey(text: string): string {
  const lines = text.split('\n');
  return stripVolatile(lines, findVolatileLines(lines, undefined, new Set())).replace(/\d+/g, '');
}
