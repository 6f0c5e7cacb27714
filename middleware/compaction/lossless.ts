// Lossless filtering (docs/architecture.md "Compaction", level 1): strip ANSI escapes, resolve carriage-return
// overwrites, keep only the last line of a run of progress bars (tqdm, pip, npm), fold long
// runs of unchanged diff context. O(n) in the text length. Nothing the agent can act on is lost.

export const DIFF_CONTEXT_KEEP = 3;

const ANSI_RE = /\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/g;
const PROGRESS_RE =
  /(\d{1,3}%\|[^|]*\||\d{1,3}%\s*[[(]?[#=█▏▎▍▌▋▊▉━─>\s.-]{5,}|━{5,}|[#=]{10,}>?\s*\]?\s*\d{1,3}%|\d+(\.\d+)?\s*[kMG]?i?B\s*\/\s*\d+(\.\d+)?\s*[kMG]?i?B|\b\d+\/\d+ \[\d\d:\d\d)/;

export function stripAnsi(text: string): string {
  return text.replace(ANSI_RE, '');
}

/** A terminal shows only what was written after the last `\r` of a line. */
export function resolveCarriageReturns(text: string): string {
  if (!text.includes('\r')) return text;
  return text
    .split('\n')
    .map((line) => {
      const l = line.endsWith('\r') ? line.slice(0, -1) : line;
      const parts = l.split('\r').filter((p) => p.length > 0);
      return parts.length ? parts[parts.length - 1] : '';
    })
    .join('\n');
}

export function collapseProgressBars(text: string): string {
  const lines = text.split('\n');
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (PROGRESS_RE.test(lines[i]) && i + 1 < lines.length && PROGRESS_RE.test(lines[i + 1])) continue;
    out.push(lines[i]);
  }
  return out.join('\n');
}

/** In unified diffs, runs of more than 2·DIFF_CONTEXT_KEEP context lines fold to a marker. */
export function foldDiffContext(text: string): string {
  if (!/^@@ .* @@/m.test(text)) return text;
  const lines = text.split('\n');
  const out: string[] = [];
  let run: string[] = [];
  let inHunk = false;
  const flush = (): void => {
    if (run.length > 2 * DIFF_CONTEXT_KEEP + 1) {
      out.push(
        ...run.slice(0, DIFF_CONTEXT_KEEP),
        ` … (${run.length - 2 * DIFF_CONTEXT_KEEP} unchanged lines)`,
        ...run.slice(-DIFF_CONTEXT_KEEP),
      );
    } else out.push(...run);
    run = [];
  };
  for (const l of lines) {
    if (l.startsWith('@@')) inHunk = true;
    else if (l.startsWith('diff ') || l.startsWith('--- ') || l.startsWith('+++ ')) inHunk = false;
    if (inHunk && l.startsWith(' ')) {
      run.push(l);
      continue;
    }
    flush();
    out.push(l);
  }
  flush();
  return out.join('\n');
}

export function losslessFilter(text: string): string {
  return foldDiffContext(collapseProgressBars(resolveCarriageReturns(stripAnsi(text))));
}
