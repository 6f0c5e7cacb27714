// The plain redaction scan (every rule's global regex over the whole text, in order, no gates or
// anchors) and the check that redact.ts's fast paths give exactly its answers, match for match.
import { expect } from 'vitest';
import { type Anchor, forEachAnchored } from '../../../middleware/redaction/anchored-scan.ts';
import {
  CLI_ANCHOR,
  CLI_SECRET,
  ENV_ANCHOR,
  ENV_SECRET,
  URL_ANCHOR,
  URL_PASSWORD,
} from '../../../middleware/redaction/keyword-rules.ts';
import { looksSecret, redact, redactionRules } from '../../../middleware/redaction/redact.ts';

const RULES = redactionRules();

export function plainMatches(re: RegExp, text: string): RegExpExecArray[] {
  const g = new RegExp(re.source, re.flags);
  const out: RegExpExecArray[] = [];
  for (let m = g.exec(text); m; m = g.exec(text)) {
    out.push(m);
    if (m[0].length === 0) g.lastIndex++;
  }
  return out;
}

export function plainLooksSecret(text: string): boolean {
  return RULES.some((r) => plainMatches(r.re, text).some((m) => r.replace(r.kind, m[0], m.slice(1)) !== null));
}

export function plainRedact(text: string): { text: string; findings: { kind: string; count: number }[] } {
  let out = text;
  const findings: { kind: string; count: number }[] = [];
  for (const r of RULES) {
    let count = 0;
    out = out.replace(new RegExp(r.re.source, r.re.flags), (...args: unknown[]) => {
      const m = args[0] as string;
      const got = r.replace(r.kind, m, args.slice(1, -2) as (string | undefined)[]);
      if (got === null) return m;
      count++;
      return got;
    });
    if (count > 0) findings.push({ kind: r.kind, count });
  }
  return { text: out, findings };
}

function anchoredMatches(text: string, anchor: Anchor): RegExpExecArray[] {
  const out: RegExpExecArray[] = [];
  forEachAnchored(text, anchor, (m) => {
    out.push(m);
    return false;
  });
  return out;
}

const shape = (ms: RegExpExecArray[]) => ms.map((m) => [m.index, ...m]);

/** Asserts each fast path equals the plain scan on `text`; returns whether an anchored rule matched. */
export function sameAsPlain(text: string): boolean {
  const env = plainMatches(ENV_SECRET, text);
  const cli = plainMatches(CLI_SECRET, text);
  expect(shape(anchoredMatches(text, ENV_ANCHOR)), `env ${JSON.stringify(text)}`).toEqual(shape(env));
  expect(shape(anchoredMatches(text, CLI_ANCHOR)), `cli ${JSON.stringify(text)}`).toEqual(shape(cli));
  const url = plainMatches(URL_PASSWORD, text);
  expect(shape(anchoredMatches(text, URL_ANCHOR)), `url ${JSON.stringify(text)}`).toEqual(shape(url));
  expect(looksSecret(text), JSON.stringify(text)).toBe(plainLooksSecret(text));
  expect(redact(text), JSON.stringify(text)).toEqual(plainRedact(text));
  return env.length + cli.length + url.length > 0;
}
