// The visible, stable mark a root line carries where a changing span left it: the full line
// travels whole in the leaf note. Shared by the volatile stage (writes it) and the lossless
// checker (accepts a line with it only when the full line is in the note). Constant text, so a
// root holding it stays byte-stable across calls.

export const VOLATILE_PLACEHOLDER = '⟦ctxgate: see note⟧';

/** Does `line` (as sent upstream, with placeholders) stand for `original` (as the agent sent it)? */
export function placeholderMatches(line: string, original: string): boolean {
  const pieces = line.split(VOLATILE_PLACEHOLDER);
  if (pieces.length < 2) return false;
  const first = pieces[0];
  const last = pieces[pieces.length - 1];
  if (!original.startsWith(first) || !original.endsWith(last) || original.length < first.length + last.length)
    return false;
  let at = first.length;
  const end = original.length - last.length;
  for (let i = 1; i < pieces.length - 1; i++) {
    const k = original.indexOf(pieces[i], at);
    if (k < 0 || k + pieces[i].length > end) return false;
    at = k + pieces[i].length;
  }
  return at <= end;
}
