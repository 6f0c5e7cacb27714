// Secret redaction applied before anything is persisted (ledger, artifacts, checkpoints, capture
// files, stored originals, logs). The rule set follows the maintained collections' patterns
// (secretlint's rule packages: private keys, AWS, GCP, GitHub, Slack, npm, SendGrid, OpenAI,
// Anthropic, basic auth, database connection strings; gitleaks' generic-api-key keyword list),
// hand-written here because those libraries lint asynchronously and this runs inline on the
// request path. Keyword rules are case-insensitive and cover key=value, `key: value` (YAML),
// JSON `"key": "value"`, quoted values with spaces, `--key value` flags; structural rules cover
// PEM and PGP private key blocks, bearer/basic credentials and URL passwords. Rules run most
// specific first (an Anthropic key is reported as `anthropic`, not `openai`); a redacted value
// is never matched again. Cost: O(rules × n), each rule one linear regex pass: every repetition that
// can fail after a long scan is bounded or stops at the next possible start (test/middleware/redaction-redos.test.ts).
// Gates skip what a text cannot match: rules sharing a need test it once per text, and the keyword
// rules are tried only at the name runs a match can use (anchored-scan.ts); both keep every match
// (test/middleware/redaction-anchored.test.ts compares them with the plain scan).
import { forEachAnchored, type Anchor } from './anchored-scan.ts';
import {
  benign,
  CLI_ANCHOR,
  CLI_SECRET,
  ENV_ANCHOR,
  ENV_SECRET,
  HAS_KEYWORD,
  NAME,
  URL_ANCHOR,
  URL_PASSWORD,
} from './keyword-rules.ts';
import { STRUCTURAL_GATE, TOKEN_GATE } from './gates.ts';

export interface RedactionFinding {
  kind: string;
  count: number;
}

export interface RedactionResult {
  text: string;
  findings: RedactionFinding[];
}

interface Rule {
  kind: string;
  re: RegExp;
  /** A pattern or literal every match of `re` contains, or a test every text with a match passes:
   * a text without it skips the rule's costlier scan (a literal only where `re` matches it
   * case-sensitively). Rules sharing one need object test it once per text. */
  need?: Need;
  /** The replacement of one match, or null to keep it (a value that is no secret). */
  replace: (kind: string, m: string, groups: (string | undefined)[]) => string | null;
  /** Where the rule's matches can be (anchored-scan.ts): the same matches, found from fewer starts. */
  anchor?: Anchor;
}

type Need = RegExp | string | ((text: string) => boolean);

const tag = (kind: string): string => `[REDACTED:${kind}]`;
const whole = (kind: string): string => tag(kind);

const RULES: Rule[] = [
  {
    kind: 'private_key',
    // PEM (RSA, EC, OPENSSH, ENCRYPTED, PKCS#8) and PGP armour; an unterminated block runs to the end
    re: /-----BEGIN ([A-Z0-9 ]*?)PRIVATE KEY( BLOCK)?-----[\s\S]*?(?:-----END \1PRIVATE KEY\2-----|$(?![\s\S]))/gi,
    need: STRUCTURAL_GATE,
    replace: whole,
  },
  {
    kind: 'putty_key',
    // the body stops at the next header: every opener then scans only up to the next one (linear,
    // where a plain lazy body rescans to the end for each unterminated header)
    re: /PuTTY-User-Key-File-\d+:(?:(?!PuTTY-User-Key-File-)[\s\S])*?Private-MAC: *[0-9a-f]+/gi,
    need: STRUCTURAL_GATE,
    replace: whole,
  },
  { kind: 'anthropic', re: /\bsk-ant-[A-Za-z0-9_-]{16,}/g, need: TOKEN_GATE, replace: whole },
  { kind: 'openai', re: /\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}/g, need: TOKEN_GATE, replace: whole },
  { kind: 'stripe', re: /\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}/g, need: TOKEN_GATE, replace: whole },
  { kind: 'aws_access_key', re: /\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b/g, need: TOKEN_GATE, replace: whole },
  {
    kind: 'github',
    re: /\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})/g,
    need: TOKEN_GATE,
    replace: whole,
  },
  { kind: 'gitlab', re: /\bglpat-[A-Za-z0-9_-]{20,}/g, need: TOKEN_GATE, replace: whole },
  { kind: 'slack', re: /\bxox[bpars]-[A-Za-z0-9-]{10,}/g, need: TOKEN_GATE, replace: whole },
  { kind: 'google', re: /\bAIza[0-9A-Za-z_-]{35}/g, need: TOKEN_GATE, replace: whole },
  { kind: 'huggingface', re: /\bhf_[A-Za-z0-9]{30,}/g, need: TOKEN_GATE, replace: whole },
  { kind: 'npm', re: /\bnpm_[A-Za-z0-9]{36}\b/g, need: TOKEN_GATE, replace: whole },
  { kind: 'sendgrid', re: /\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b/g, need: TOKEN_GATE, replace: whole },
  // header and payload bounded (1 KiB, 16 KiB: HTTP header limits are ~8 KiB): `eyJ-eyJ-…` has a
  // start at every `eyJ` of one run
  {
    kind: 'jwt',
    re: /\beyJ[A-Za-z0-9_-]{8,1024}\.eyJ[A-Za-z0-9_-]{8,16384}\.[A-Za-z0-9_-]{8,}/g,
    need: TOKEN_GATE,
    replace: whole,
  },
  {
    kind: 'azure_key',
    re: /((?:AccountKey|SharedAccessKey|sig)=)[A-Za-z0-9+/%]{20,}={0,2}/gi,
    need: STRUCTURAL_GATE,
    replace: (k, _m, g) => `${g[0]}${tag(k)}`,
  },
  {
    kind: 'authorization',
    // an Authorization / Proxy-Authorization header or field, whatever the scheme
    re: /((?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:bearer|basic|token|digest|negotiate|apikey)?\s*)([^\s"',;]{6,})/gi,
    need: STRUCTURAL_GATE,
    replace: (k, _m, g) => (g[1]!.startsWith('[REDACTED') ? null : `${g[0]}${tag(k)}`),
  },
  {
    kind: 'bearer',
    re: /(\bbearer\s+)((?=[A-Za-z0-9._~+/=-]*\d)[A-Za-z0-9._~+/=-]{12,})/gi,
    need: STRUCTURAL_GATE,
    replace: (k, _m, g) => `${g[0]}${tag(k)}`,
  },
  {
    kind: 'basic_auth',
    re: /(\bbasic\s+)((?=[A-Za-z0-9+/]*[0-9+/=])[A-Za-z0-9+/]{8,}={0,2})/gi,
    need: STRUCTURAL_GATE,
    replace: (k, _m, g) => `${g[0]}${tag(k)}`,
  },
  {
    kind: 'url_password',
    re: URL_PASSWORD,
    need: '://',
    anchor: URL_ANCHOR,
    replace: (k, _m, g) => `${g[0]}${tag(k)}@`,
  },
  {
    kind: 'cli_secret',
    need: HAS_KEYWORD,
    re: CLI_SECRET,
    anchor: CLI_ANCHOR,
    replace: (k, _m, g) => (benign(g[0]!, g[1]!.replace(/^["']|["']$/g, '')) ? null : `${g[0]}${quoted(g[1]!, k)}`),
  },
  {
    kind: 'env_secret',
    need: HAS_KEYWORD,
    re: ENV_SECRET,
    anchor: ENV_ANCHOR,
    replace: (k, _m, g) => {
      const prefix = g[0]!;
      let value = g[2]!;
      // an unquoted value after '=' ends at whitespace (shell, URL query); after ':' (YAML) at the line end
      let rest = '';
      if (!/^\\?["']/.test(value) && /=\s*$/.test(prefix)) {
        const sp = value.search(/[\s&]/);
        if (sp >= 0) [value, rest] = [value.slice(0, sp), value.slice(sp)];
      }
      const trimmed = value.trimEnd(); // not /\s+$/: O(n²) on a value with long inner blanks
      rest = value.slice(trimmed.length) + rest;
      // the name is the run of name characters after the opener (an unanchored `\s*op\s*$` strip of
      // the tail would be O(n²) on long blanks)
      const name = /^[A-Za-z0-9_.-]*/.exec(prefix.replace(/^[^A-Za-z0-9_.-]*(?:export\s+)?["']?/, ''))![0];
      if (benign(name, trimmed.replace(/^\\?["']|\\?["']$/g, ''))) return null;
      return `${prefix}${quoted(trimmed, k)}${rest}`;
    },
  },
];

/** The tag, inside the value's own quotes when it had them (JSON stays JSON). */
function quoted(value: string, kind: string): string {
  if (value.startsWith('\\"') && value.endsWith('\\"') && value.length >= 4) return `\\"${tag(kind)}\\"`;
  const q = value[0];
  return (q === '"' || q === "'") && value.endsWith(q) && value.length >= 2 ? `${q}${tag(kind)}${q}` : tag(kind);
}

/** The rules in the order they run (kind, pattern, replacement): the tests' plain reference scan. */
export function redactionRules(): readonly Pick<Rule, 'kind' | 're' | 'replace'>[] {
  return RULES;
}

const has = (text: string, need: Need): boolean =>
  typeof need === 'string' ? text.includes(need) : typeof need === 'function' ? need(text) : need.test(text);

/** Each need's answer for the text in hand (cleared when the text changes). */
const needs = new Map<Need, boolean>();
function passes(text: string, need: Need): boolean {
  let ok = needs.get(need);
  if (ok === undefined) {
    ok = has(text, need);
    needs.set(need, ok);
  }
  return ok;
}

export function redact(text: string): RedactionResult {
  let out = text;
  const findings: RedactionFinding[] = [];
  needs.clear();
  for (const rule of RULES) {
    let count = 0;
    // Tested on the text the rule scans (earlier rules' tags included): exact.
    if (rule.need && !passes(out, rule.need)) continue;
    if (rule.anchor) {
      // the same matches as the global replace below, spliced the way replace() splices them
      let done = '';
      let last = 0;
      const text = out;
      forEachAnchored(text, rule.anchor, (m) => {
        const r = rule.replace(rule.kind, m[0], m.slice(1));
        if (r !== null) {
          done += text.slice(last, m.index) + r;
          last = m.index + m[0].length;
          count++;
        }
        return false;
      });
      if (count > 0) out = done + text.slice(last);
    } else {
      rule.re.lastIndex = 0;
      out = out.replace(rule.re, (...args: unknown[]) => {
        const m = args[0] as string;
        const groups = args.slice(1, -2).filter((g) => typeof g !== 'object') as (string | undefined)[];
        const r = rule.replace(rule.kind, m, groups);
        if (r === null) return m;
        count++;
        return r;
      });
    }
    if (count > 0) {
      findings.push({ kind: rule.kind, count });
      needs.clear();
    }
  }
  return { text: out, findings };
}

/** Whether redact(text) finds anything, without building the redacted text: the first rule with
 * a kept match ran on the text as given (no rule before it changed anything), so that match is
 * enough. O(rules × n), stopping at the first finding. */
export function looksSecret(text: string): boolean {
  needs.clear();
  for (const rule of RULES) {
    if (rule.need && !passes(text, rule.need)) continue;
    if (rule.anchor) {
      let found = false;
      forEachAnchored(text, rule.anchor, (m) => (found = rule.replace(rule.kind, m[0], m.slice(1)) !== null));
      if (found) return true;
      continue;
    }
    const re = rule.re;
    re.lastIndex = 0;
    for (let m = re.exec(text); m; m = re.exec(text)) {
      if (rule.replace(rule.kind, m[0], m.slice(1)) !== null) return true;
      if (m[0].length === 0) re.lastIndex++;
    }
  }
  return false;
}

/** A key not yet used in `o`: the redacted text, then `#2`, `#3`, … on collision. */
function freeKey(o: Record<string, unknown>, k: string): string {
  if (!Object.hasOwn(o, k)) return k;
  let n = 2;
  while (Object.hasOwn(o, `${k}#${n}`)) n++;
  return `${k}#${n}`;
}

/** Redacts every string inside a JSON-like value (for state documents, checkpoints and capture
 * files), object keys included: client maps (`metadata`, schema property names, tool inputs) may
 * use a secret as a key. A redacted key is renamed to its redacted text (suffixed on collision). */
export function redactDeep<T>(value: T): { value: T; findings: RedactionFinding[] } {
  const totals = new Map<string, number>();
  const text = (v: string): string => {
    const r = redact(v);
    for (const f of r.findings) totals.set(f.kind, (totals.get(f.kind) ?? 0) + f.count);
    return r.text;
  };
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return text(v);
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') {
      const o: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) {
        // a secret-named key's value is a secret even when the value alone looks harmless
        const val =
          typeof x === 'string' && new RegExp(`^${NAME}$`, 'i').test(k) && !benign(k, x) ? tag('env_secret') : walk(x);
        // defineProperty: a key such as `__proto__` stays an own data property; freeKey: a plain key
        // equal to an earlier redacted one gets the suffix instead of overwriting it
        Object.defineProperty(o, freeKey(o, text(k)), {
          value: val,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      return o;
    }
    return v;
  };
  const out = walk(value) as T;
  return { value: out, findings: [...totals].map(([kind, count]) => ({ kind, count })) };
}
