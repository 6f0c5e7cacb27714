// The verbatim set V of a text (DESIGN §4): what no compression may drop. Deliberately narrow
// so it is satisfiable: file paths, `file:line` references, `line N` of tracebacks, error codes,
// commit-like hashes, failing-assertion lines, exception names and traceback function names.
// Gutter numbers of `cat -n` and code identifiers of plain file reads are not in V. O(n).

const EXT = 'py|pyi|ts|tsx|js|jsx|mjs|cjs|go|rs|c|h|cc|cpp|hpp|java|kt|rb|php|cs|swift|scala|sh|toml|ya?ml|json|cfg|ini|md|rst|txt|lock|sql|html|css|vue|patch|diff|proto|xml|gradle|mk';
const PATH_RE = new RegExp(`(?:^|[\\s"'\`(\\[=:,])((?:\\.{0,2}/)?(?:[\\w.@+-]+/)*[\\w@+-][\\w.@+-]*\\.(?:${EXT}))(?::(\\d+)(?::\\d+)?)?(?=$|[\\s"'\`()\\],:;])`, 'gm');
const TRACE_RE = /File "([^"]+)", line (\d+)(?:, in ([\w<>.]+))?/g;
const CODE_RE = /\b(?:TS\d{4}|E\d{4}|[A-Z]{1,3}\d{3,4}|errno \d+)\b/g;
const HASH_RE = /\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}\b/g;
const EXC_RE = /\b[A-Z][A-Za-z]*(?:Error|Exception|Warning)\b/g;
const ASSERT_LINE_RE = /^\s*(?:E\s{2,}.*\S|.*\bAssertionError\b.*|FAILED \S+.*|--- FAIL: .*|.*panicked at .*|\s*(?:Expected|Received)(?: value)?: .*|assert(?:ion)? failed.*)$/gm;

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

/** Items of `items` that do not occur in `text` verbatim. */
export function missingFrom(items: Iterable<string>, text: string): string[] {
  const miss: string[] = [];
  for (const v of items) if (!text.includes(v)) miss.push(v);
  return miss;
}

const CONSTRAINT_RE = /\b(do not|don't|never|must|only|must not|should not|shouldn't|avoid|without modifying|make sure)\b/i;

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
