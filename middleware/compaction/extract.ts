// Structured extraction (docs/architecture.md "Compaction", level 2): keep head and tail lines plus every line a
// compiler or test runner marks as an error, failure or warning, with stack frames and
// `file:line` references. Patterns cover pytest, jest/vitest, go test, cargo, tsc, gcc/clang,
// eslint and Python tracebacks. O(lines). Settings: head/tail/max kept lines.

export const EXTRACT_HEAD = 6;
export const EXTRACT_TAIL = 10;
export const EXTRACT_MAX_IMPORTANT = 60;

const IMPORTANT: RegExp[] = [
  /\b(error|errors|failed|failure|fatal|panic|panicked|exception|traceback)\b/i,
  /\bwarning\b/i,
  /^E\s{2,}/, // pytest assertion detail
  /^(FAILED|ERROR|PASSED|XFAIL|XPASS)\b|^_{3,} .* _{3,}$|^={3,} .* ={3,}$/, // pytest summary/headers
  /^\s*File "[^"]+", line \d+/, // python frames
  /^\s+at .+[:(]\d+(:\d+)?\)?$/, // js frames
  /[●✕×]\s|\bExpected\b|\bReceived\b|Tests?:\s+\d+/, // jest / vitest
  /^(--- FAIL:?|FAIL)\s|_test\.go:\d+:/, // go test
  /^error(\[E\d+\])?:|^\s*--> |^warning:|test result:/, // cargo / rustc
  /\(\d+,\d+\): error TS\d+|error TS\d+:/, // tsc
  /:\d+:\d+: (error|warning|note):/, // gcc / clang
  /^\s+\d+:\d+\s+(error|warning)\s/, // eslint
  /\b[\w./-]+\.\w+:\d+\b/, // any file:line
  /^<returncode>/,
];

export function isImportant(line: string): boolean {
  return IMPORTANT.some((re) => re.test(line));
}

export interface ExtractOptions {
  head?: number;
  tail?: number;
  maxImportant?: number;
}

export function extractStructured(text: string, o: ExtractOptions = {}): string {
  const head = o.head ?? EXTRACT_HEAD;
  const tail = o.tail ?? EXTRACT_TAIL;
  const maxImp = o.maxImportant ?? EXTRACT_MAX_IMPORTANT;
  const lines = text.split('\n');
  if (lines.length <= head + tail + 2) return text;
  const keep = new Array<boolean>(lines.length).fill(false);
  for (let i = 0; i < head; i++) keep[i] = true;
  for (let i = lines.length - tail; i < lines.length; i++) keep[i] = true;
  let imp = 0;
  for (let i = head; i < lines.length - tail && imp < maxImp; i++) {
    if (isImportant(lines[i])) {
      keep[i] = true;
      imp++;
    }
  }
  const out: string[] = [];
  let gap = 0;
  for (let i = 0; i < lines.length; i++) {
    if (keep[i]) {
      if (gap) out.push(`[… ${gap} lines omitted]`);
      gap = 0;
      out.push(lines[i]);
    } else gap++;
  }
  if (gap) out.push(`[… ${gap} lines omitted]`);
  return out.join('\n');
}
