// Secret redaction applied before anything is persisted (ledger, artifacts, checkpoints, logs,
// stored originals). One linear pass per rule over the text: O(rules × n). Rules are ordered
// most specific first so an Anthropic key is reported as `anthropic`, not `openai`.

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
  /** Replacement; `$1` style groups keep the non-secret part (e.g. the variable name). */
  replace: (kind: string) => string;
}

const whole = (kind: string): string => `[REDACTED:${kind}]`;

const RULES: Rule[] = [
  {
    kind: 'private_key',
    re: /-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY-----[\s\S]*?(?:-----END \1PRIVATE KEY-----|$)/g,
    replace: whole,
  },
  { kind: 'anthropic', re: /\bsk-ant-[A-Za-z0-9_-]{16,}/g, replace: whole },
  { kind: 'openai', re: /\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}/g, replace: whole },
  { kind: 'stripe', re: /\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}/g, replace: whole },
  { kind: 'aws_access_key', re: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g, replace: whole },
  {
    kind: 'aws_secret',
    re: /(aws_secret_access_key|AWS_SECRET_ACCESS_KEY|aws_secret)(\s*[=:]\s*["']?)[A-Za-z0-9/+=]{40}/g,
    replace: (k) => `$1$2[REDACTED:${k}]`,
  },
  { kind: 'github', re: /\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})/g, replace: whole },
  { kind: 'slack', re: /\bxox[bpars]-[A-Za-z0-9-]{10,}/g, replace: whole },
  { kind: 'google', re: /\bAIza[0-9A-Za-z_-]{35}/g, replace: whole },
  { kind: 'huggingface', re: /\bhf_[A-Za-z0-9]{30,}/g, replace: whole },
  { kind: 'bearer', re: /(\bBearer\s+)[A-Za-z0-9._~+/=-]{16,}/g, replace: (k) => `$1[REDACTED:${k}]` },
  {
    kind: 'url_password',
    re: /\b([a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:)[^\s@/]+@/gi,
    replace: (k) => `$1[REDACTED:${k}]@`,
  },
  {
    kind: 'env_secret',
    // `.env` style assignments; the name stays so the agent still knows the variable exists.
    re: /(^|[\s;'"`])((?:export\s+)?[A-Z0-9_]*(?:SECRET|PASSWORD|PASSWD|TOKEN|API_KEY|APIKEY|PRIVATE_KEY)[A-Z0-9_]*\s*[=:]\s*)(?!\[REDACTED)(["']?)[^\s"'#]{4,}\3/gm,
    replace: (k) => `$1$2[REDACTED:${k}]`,
  },
];

export function redact(text: string): RedactionResult {
  let out = text;
  const findings: RedactionFinding[] = [];
  for (const rule of RULES) {
    let count = 0;
    out = out.replace(rule.re, (...args: unknown[]) => {
      count++;
      const groups = args.slice(1, -2) as (string | undefined)[];
      return rule.replace(rule.kind).replace(/\$(\d)/g, (_m, d: string) => groups[Number(d) - 1] ?? '');
    });
    if (count > 0) findings.push({ kind: rule.kind, count });
  }
  return { text: out, findings };
}

export function looksSecret(text: string): boolean {
  return redact(text).findings.length > 0;
}

/** Redacts every string inside a JSON-like value (for state documents and checkpoints). */
export function redactDeep<T>(value: T): { value: T; findings: RedactionFinding[] } {
  const totals = new Map<string, number>();
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') {
      const r = redact(v);
      for (const f of r.findings) totals.set(f.kind, (totals.get(f.kind) ?? 0) + f.count);
      return r.text;
    }
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') {
      const o: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) o[k] = walk(x);
      return o;
    }
    return v;
  };
  const out = walk(value) as T;
  return { value: out, findings: [...totals].map(([kind, count]) => ({ kind, count })) };
}
