// The verbatim set V of a text (docs/architecture.md, "Compaction"): what no compression may drop. ONE definition, used
// by compaction (refuses an eviction that loses an item), `bench strategies` (verbatim
// retention over the raw history). Deliberately narrow so it is satisfiable:
//   - file paths with a known extension, and `path:line` references (`src/x.py:42`);
//   - `line N` of Python tracebacks;
//   - error codes (`TS2345`, `E0425`, `W605`, `errno 2`) and commit-like hex hashes (7–64);
//   - identifiers: exception/error/warning class names (`TypeError`, `SSLEOFError`) and the
//     function names of traceback frames (`in validate_claims`);
//   - failing-assertion lines (pytest `E   …`, `AssertionError …`, `FAILED …`, go/jest/rust).
// Gutter numbers of `cat -n` and code identifiers of plain file reads are not in V.
// "Present" means the item occurs in the text with no word character glued to either end
// (`line 12` is not kept by `line 123`; `foo.py` is kept by `foo.py:12`). O(n) per text.
import type { ChatMessage } from '../types.ts';
import { messageText } from '../ledger/message-text.ts';

const EXT =
  'py|pyi|ts|tsx|js|jsx|mjs|cjs|go|rs|c|h|cc|cpp|hpp|java|kt|rb|php|cs|swift|scala|sh|toml|ya?ml|json|cfg|ini|md|rst|txt|lock|sql|html|css|vue|patch|diff|proto|xml|gradle|mk';
const PATH_RE = new RegExp(
  `(?:^|[\\s"'\`(\\[=:,])((?:\\.{0,2}/)?(?:[\\w.@+-]+/)*[\\w@+-][\\w.@+-]*\\.(?:${EXT}))(?::(\\d+)(?::\\d+)?)?(?=$|[\\s"'\`()\\],:;])`,
  'gm',
);
const TRACE_RE = /File "([^"]+)", line (\d+)(?:, in ([\w<>.]+))?/g;
const CODE_RE = /\b(?:TS\d{4}|E\d{4}|[A-Z]{1,3}\d{3,4}|errno \d+)\b/g;
const HASH_RE = /\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}\b/g;
const EXC_RE = /\b[A-Z][A-Za-z]*(?:Error|Exception|Warning)\b/g;
const ASSERT_LINE_RE =
  /^\s*(?:E\s{2,}.*\S|.*\bAssertionError\b.*|FAILED \S+.*|--- FAIL: .*|.*panicked at .*|\s*(?:Expected|Received)(?: value)?: .*|assert(?:ion)? failed.*)$/gm;

export function verbatimSet(input: string): string[] {
  const out = new Set<string>();
  // Identifier lists ctxgate wrote itself are not evidence; their items are counted on their own.
  const text = input.replace(/^\s*(kept|Kept identifiers): .*$/gm, '');
  for (const m of text.matchAll(PATH_RE)) {
    out.add(m[1]);
    if (m[2]) out.add(`${m[1]}:${m[2]}`);
  }
  for (const m of text.matchAll(TRACE_RE)) {
    out.add(m[1]);
    out.add(`line ${m[2]}`);
    if (m[3]) out.add(m[3]);
  }
  for (const m of text.matchAll(CODE_RE)) out.add(m[0]);
  for (const m of text.matchAll(HASH_RE)) out.add(m[0]);
  for (const m of text.matchAll(EXC_RE)) out.add(m[0]);
  for (const m of text.matchAll(ASSERT_LINE_RE)) {
    const line = m[0].trim().slice(0, 240);
    if (line.length > 3) out.add(line);
  }
  return [...out];
}

const WORD = /[\w]/;

/** Does `item` occur in `text` with no word character glued to a word-character end? */
export function occursIn(item: string, text: string): boolean {
  if (!item) return true;
  const checkStart = WORD.test(item[0]);
  const checkEnd = WORD.test(item[item.length - 1]);
  for (let i = text.indexOf(item); i >= 0; i = text.indexOf(item, i + 1)) {
    if (checkStart && i > 0 && WORD.test(text[i - 1])) continue;
    const j = i + item.length;
    if (checkEnd && j < text.length && WORD.test(text[j])) continue;
    return true;
  }
  return false;
}

/** Items of `items` that do not occur in `text` verbatim (see occursIn). */
export function missingFrom(items: Iterable<string>, text: string): string[] {
  const miss: string[] = [];
  for (const v of items) if (!occursIn(v, text)) miss.push(v);
  return miss;
}

/** Everything a message shows the model: content plus tool-call arguments, string values
 * decoded (a command's newlines are lines, not `\n` escapes inside one JSON line). */
export function shownText(m: ChatMessage): string {
  if (!m.tool_calls?.length) return messageText(m);
  const args = m.tool_calls.map((t) => {
    const raw = t.function?.arguments ?? '';
    try {
      const a = JSON.parse(raw) as unknown;
      if (a && typeof a === 'object')
        return Object.values(a)
          .map((v) => (typeof v === 'string' ? v : JSON.stringify(v)))
          .join('\n');
    } catch {
      /* not JSON: shown as sent */
    }
    return raw;
  });
  return `${messageText(m)}\n${args.join('\n')}`;
}

/** Verbatim set of one message as the agent sent it (content and tool-call arguments). */
export function messageVerbatim(m: ChatMessage): string[] {
  return verbatimSet(shownText(m));
}

/** Separator of a kept-identifiers list; items never contain it at their ends. */
export const KEPT_SEP = ' | ';

/**
 * A short list that keeps every item present: longest first, an item already present in the
 * list so far (`foo.py` once `foo.py:12` is listed) is left out. Order: first appearance.
 * O(items × list length).
 */
export function keptList(items: string[]): string[] {
  const uniq = [...new Set(items)];
  const byLen = uniq.map((v, i) => [v, i] as const).sort((a, b) => b[0].length - a[0].length || a[1] - b[1]);
  let acc = '';
  const keep = new Set<number>();
  for (const [v, i] of byLen) {
    if (occursIn(v, acc)) continue;
    keep.add(i);
    acc += `${KEPT_SEP}${v}`;
  }
  return uniq.filter((_, i) => keep.has(i));
}

const CONSTRAINT_RE =
  /\b(do not|don't|never|must|only|must not|should not|shouldn't|avoid|without modifying|make sure)\b/i;

/** Lines (or sentences of long lines) that state a constraint. */
export function constraintLines(text: string): string[] {
  const out: string[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || !CONSTRAINT_RE.test(line)) continue;
    if (line.length <= 300) {
      out.push(line);
      continue;
    }
    for (const s of line.split(/(?<=[.!?])\s+/)) if (CONSTRAINT_RE.test(s)) out.push(s.trim().slice(0, 300));
  }
  return [...new Set(out)];
}
