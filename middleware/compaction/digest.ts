// History digest of a compacted region: one entry per call, rendered at a level chosen to fit
// the budget — 0 lossless text, 1 structured extraction, 2 pointer (command, exit, kept
// identifiers), 3 ranges of pointers merged. Each entry carries its verbatim set, so lower
// levels list the identifiers their text no longer shows. O(entries × entry text).
import { extractStructured } from './extract.ts';
import { losslessFilter } from './lossless.ts';
import { keptList, KEPT_SEP, missingFrom, occursIn } from './verbatim.ts';

export const THOUGHT_CHARS = 240;
export const LABEL_CHARS = 160;

export interface DigestEntry {
  /** First and last action numbers covered (equal for a single call). */
  from: number;
  to: number;
  id: string;
  label: string;
  exit: number | null;
  level: 0 | 1 | 2 | 3;
  /** Lossless text of the output (dropped once the entry reaches level 2). */
  text?: string;
  /** Fixed pointer body (superseded, identical, stale), used instead of the text. */
  pointer?: string;
  thought?: string;
  lines: number;
  hash: string;
  verbatim: string[];
  /** Command heads of a range entry. */
  kinds?: Record<string, number>;
  /** Non-zero exits inside a range entry. */
  failed?: number[];
}

export function header(e: DigestEntry): string {
  if (e.level === 3) {
    const kinds = Object.entries(e.kinds ?? {})
      .sort((a, b) => b[1] - a[1])
      .slice(0, 8)
      .map(([k, n]) => `${k}×${n}`)
      .join(', ');
    const failed = e.failed?.length
      ? `; non-zero exits at ${e.failed
          .slice(-12)
          .map((n) => `#${n}`)
          .join(' ')}`
      : '';
    return `#${e.from}–#${e.to}: ${e.to - e.from + 1} earlier calls (${kinds})${failed}`;
  }
  const exit = e.exit === null ? '' : ` → exit ${e.exit}`;
  return e.label ? `#${e.from} $ ${e.label}${exit}` : `#${e.from}`;
}

/** Is an item already shown elsewhere in the prompt (pinned head, verbatim tail, header)? */
export type ShownElsewhere = (item: string) => boolean;

export function renderEntry(e: DigestEntry, keepIdentifiers = true, elsewhere?: ShownElsewhere): string {
  const head = header(e);
  let body: string;
  if (e.level >= 2)
    body = e.level === 2 ? `[output: ${e.lines} lines, kept by the gateway${e.pointer ? `; ${e.pointer}` : ''}]` : '';
  else if (e.pointer) body = `[${e.pointer}]`;
  else body = e.level === 0 ? (e.text ?? '') : extractStructured(e.text ?? '');
  const thought = e.level <= 1 && e.thought ? `${e.thought}\n` : '';
  const shown = body ? `${thought}${head}\n${body}` : `${thought}${head}`;
  let kept = keepIdentifiers ? missingFrom(e.verbatim, shown) : [];
  if (elsewhere) kept = kept.filter((v) => !elsewhere(v));
  kept = keptList(kept);
  return (kept.length ? `${shown}\n  kept: ${kept.join(KEPT_SEP)}` : shown).trimEnd();
}

/**
 * The digest text: entries in order, each listing only the identifiers that neither its own
 * text, the rest of the prompt (`elsewhere`) nor an earlier entry of the digest already shows.
 * O(entries × digest length).
 */
export function renderDigest(entries: DigestEntry[], keepIdentifiers = true, elsewhere?: ShownElsewhere): string {
  let acc = '';
  const parts: string[] = [];
  for (const e of entries) {
    const seen = acc;
    const part = renderEntry(e, keepIdentifiers, (v) => (elsewhere?.(v) ?? false) || occursIn(v, seen));
    parts.push(part);
    acc += `\n${part}`;
  }
  return parts.join('\n');
}

/** Merges consecutive entries (all level ≥ 2) into one range entry. */
export function mergeRange(es: DigestEntry[]): DigestEntry {
  const kinds: Record<string, number> = {};
  const failed: number[] = [];
  const verbatim = new Set<string>();
  for (const e of es) {
    if (e.level === 3) {
      for (const [k, n] of Object.entries(e.kinds ?? {})) kinds[k] = (kinds[k] ?? 0) + n;
      failed.push(...(e.failed ?? []));
    } else {
      const k = e.label.split(/\s+/).find((w) => w && w !== 'cd' && !w.startsWith('/') && w !== '&&') ?? 'note';
      kinds[k] = (kinds[k] ?? 0) + 1;
      if (e.exit) failed.push(e.from);
    }
    for (const v of e.verbatim) verbatim.add(v);
  }
  return {
    from: es[0].from,
    to: es[es.length - 1].to,
    id: `range-${es[0].from}-${es[es.length - 1].to}`,
    label: '',
    exit: null,
    level: 3,
    lines: es.reduce((n, e) => n + e.lines, 0),
    hash: '',
    verbatim: [...verbatim],
    kinds,
    failed,
  };
}

export function losslessText(output: string): string {
  return losslessFilter(output);
}

export function shortLabel(cmd: string): string {
  const lines = cmd.split('\n');
  let first = lines[0].trim();
  if (lines.length > 1) first += ` ⏎(+${lines.length - 1} lines)`;
  return first.length > LABEL_CHARS ? first.slice(0, LABEL_CHARS - 1) + '…' : first;
}
