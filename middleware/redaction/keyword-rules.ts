// The keyword rules' parts (redact.ts's `cli_secret` and `env_secret`): the key names that carry
// secrets, the values that are none, both patterns, and where their matches can be (anchored-scan.ts:
// a flag's run, found from its `-`; an assignment's NAME run, found from the `=` or `:` after it);
// likewise for the URL-password rule (from its `://`).
import { type Anchor, isNameChar, isSpace, type Run } from './anchored-scan.ts';

/** Key names that carry secrets (gitleaks' generic keywords, plus common spellings). */
export const KEYWORDS =
  '(?:secret|passw(?:or)?d|pwd|passphrase|token|api[_.-]?key|apikey|access[_.-]?key|private[_.-]?key|client[_.-]?secret|credentials?|auth[_.-]?(?:key|token)|session[_.-]?(?:key|secret)|signing[_.-]?key|encryption[_.-]?key|account[_.-]?key|conn(?:ection)?[_.-]?str(?:ing)?)';
/** Characters a key name may carry on each side of its keyword. Bounded: an unbounded
 * `[…]*keyword[…]*` backtracks O(run²) on a long name-like run (`token-token-…`, `1-1-1-…`) from
 * every start inside it; with the bound each start costs O(NAME_SIDE²), so a rule stays linear. */
const NAME_SIDE = 64;
export const NAME = `[A-Za-z0-9_.-]{0,${NAME_SIDE}}${KEYWORDS}[A-Za-z0-9_.-]{0,${NAME_SIDE}}`;
/** Every NAME holds a keyword: text with none has no match of the rules built on NAME. */
export const HAS_KEYWORD = new RegExp(KEYWORDS, 'i');
/** A value quoted inside a JSON string (`\"…\"`, e.g. tool-call arguments). */
const ESCAPED_QUOTED = '\\\\"(?:(?!\\\\")[^\\n])*\\\\"';

/** Values that are no secret: numbers, booleans, references to one kept elsewhere, placeholders. */
export function benign(name: string, value: string): boolean {
  const v = value.trim();
  if (v.length < 4) return true;
  if (/^(?:\d+(?:\.\d+)?|true|false|null|none|nil|undefined|yes|no|required|optional|string|number|boolean)$/i.test(v))
    return true;
  if (/^(?:\$\{?[A-Za-z_][\w.]*\}?|process\.env\.\w+|os\.environ.*|env\(.*\)|<[^>]*>|\*+|x{4,}|\[REDACTED.*)$/i.test(v))
    return true;
  // a file reference, not a key: `services/auth_token.py:142: in validate_claims` (tracebacks, grep -n)
  if (/\.[A-Za-z][A-Za-z0-9]{0,5}$/.test(name) && /^\d+(?:[:,)\s]|$)/.test(v)) return true;
  // counts and limits named after tokens (max_tokens: 4096, tokens_per_s) are not credentials
  return /tokens$|token_?count|token_?limit|tokens?_per/i.test(name) && /^\d/.test(v);
}

// --password hunter2, --api-key=…; a flag starts a word (one start per name-like run, not one per `-`)
export const CLI_SECRET = new RegExp(
  `(?<![A-Za-z0-9_.-])(--?${NAME}(?:\\s+|=))(?!\\[REDACTED)(${ESCAPED_QUOTED}|"[^"\\n]*"|'[^'\\n]*'|[^\\s"'\\\\-][^\\s"'\\\\]*)`,
  'gi',
);
// NAME=value, NAME: value, "name": "value", name => 'value', name := value (env, YAML, JSON, INI, TOML, code);
// a colon counts only before a space or a quote (YAML, JSON), so `auth_token.py:142:` stays
export const ENV_SECRET = new RegExp(
  `((?:^|[^A-Za-z0-9_.-])(?:export\\s+)?(["']?)${NAME}\\\\?\\2\\s*(?:=>|:=|=|:(?=[ \\t"'\\\\]))[ \\t]*)(?!\\[REDACTED)(${ESCAPED_QUOTED}|"(?:[^"\\\\\\n]|\\\\.)*"|'[^'\\n]*'|[^\\s"',;}\\]#\\\\][^\\n"',;}\\]#\\\\]*)`,
  'gim',
);

const isQuote = (c: number): boolean => c === 34 || c === 39;
export const ENV_ANCHOR: Anchor = {
  sticky: new RegExp(ENV_SECRET.source, `${ENV_SECRET.flags}y`),
  lowest: envLowest,
  runs: envRuns,
};

/** A match opens with at most: one opener character, `export` and blanks, one quote, then its NAME at `a`. */
function envLowest(t: string, a: number): number {
  let p = a;
  if (p > 0 && isQuote(t.charCodeAt(p - 1))) p--;
  while (p > 0 && isSpace(t.charCodeAt(p - 1))) p--;
  return Math.max(0, p - 7);
}

export const CLI_ANCHOR: Anchor = {
  sticky: new RegExp(CLI_SECRET.source, `${CLI_SECRET.flags}y`),
  lowest: (_t, a) => a,
  runs: cliRuns,
};

/** The runs a cli_secret flag can be, in text order: a whole name run that opens with `-` (the
 * lookbehind: no name character before it), holds a keyword, and is followed by a blank or `=`
 * (NAME then ends where the run does). The flag's match starts at the run. */
function cliRuns(t: string): (at: number, run: Run) => boolean {
  return (at, run) => {
    for (let d = t.indexOf('-', at); d >= 0; d = t.indexOf('-', at)) {
      at = d + 1;
      if (d > 0 && isNameChar(t.charCodeAt(d - 1))) continue;
      let b = d + 1;
      while (b < t.length && isNameChar(t.charCodeAt(b))) b++;
      at = b;
      const c = t.charCodeAt(b);
      if (b - d < 4 || !(c === 61 || isSpace(c)) || !HAS_KEYWORD.test(t.slice(d, b))) continue;
      run.a = d;
      run.b = b;
      run.next = b;
      return true;
    }
    return false;
  };
}

// scheme://user:password@ (bounded parts: `a-a-a-…` has a word boundary at every character)
export const URL_PASSWORD = /\b([a-z][a-z0-9+.-]{0,31}:\/\/[^\s:/@]{1,256}:)(?!\[REDACTED)[^\s@/]{1,1024}@/gi;
/** Every match's `://` follows its scheme of 1 to 32 characters, so it starts 1 to 32 characters
 * before that `://`; each `://` is a candidate. */
export const URL_ANCHOR: Anchor = {
  sticky: new RegExp(URL_PASSWORD.source, `${URL_PASSWORD.flags}y`),
  lowest: (_t, a) => Math.max(0, a - URL_SCHEME_MAX),
  runs: (t) => (at, run) => {
    const q = t.indexOf('://', at);
    if (q < 0) return false;
    run.a = q;
    run.b = q + 3;
    run.next = q + 1;
    return true;
  },
};
const URL_SCHEME_MAX = 32;

const nextOf = (t: string, c: string, at: number): number => {
  const i = t.indexOf(c, at);
  return i < 0 ? Number.POSITIVE_INFINITY : i;
};

/** The runs an env_secret NAME can be, in text order: a name run holding a keyword, then `\\?["']?\s*`
 * and `=` or `:` (the walk back from each operator undoes exactly that, and reaches one run at most). */
function envRuns(t: string): (at: number, run: Run) => boolean {
  let eq = -1; // the next '=' at or after the last search (Infinity: none)
  let co = -1; // the next ':'
  return (at, run) => {
    for (;;) {
      if (eq < at) eq = nextOf(t, '=', at);
      if (co < at) co = nextOf(t, ':', at);
      const o = Math.min(eq, co);
      if (o === Number.POSITIVE_INFINITY) return false;
      at = o + 1;
      let b = o;
      while (b > 0 && isSpace(t.charCodeAt(b - 1))) b--;
      if (b > 0 && isQuote(t.charCodeAt(b - 1))) b--;
      if (b > 0 && t.charCodeAt(b - 1) === 92) b--;
      let a = b;
      while (a > 0 && isNameChar(t.charCodeAt(a - 1))) a--;
      if (b - a < 3 || !HAS_KEYWORD.test(t.slice(a, b))) continue;
      run.a = a;
      run.b = b;
      run.next = at;
      return true;
    }
  };
}
