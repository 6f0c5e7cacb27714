// Regression: adversarial texts (~200 KB) that made the redaction rules and the derived session id
// backtrack super-linearly (seconds to minutes of blocked event loop per request). Each case must
// stay linear: its CPU time on an input GROWTH times longer is under MAX_RATIO times its time on
// the SIZE input. A ratio of two measurements in this process, each the least of RUNS (a GC or a
// preemption only adds), so neither the machine's speed nor its load moves it; CPU time, so another
// process's load does not count, while backtracking does. The inputs are large because below
// ~200 KB the linear code's time is not proportional here (100 KB: ~0.3 ms, 800 KB: ~10 ms, each
// least of 3, load 15), which would read as growth.
import { describe, expect, it } from 'vitest';
import { identifySession, stripThink } from '../../middleware/layout/session-id.ts';
import { redact } from '../../middleware/redaction/redact.ts';
import type { ChatRequest } from '../../middleware/types.ts';

const SIZE = 200_000;
const GROWTH = 8;
/** Linear code read 4-8.5 (200 KB → 1.6 MB) and, in the noisiest run, up to 16.6 (300 KB → 2.4 MB:
 * escaped and unclosed quotes, GC-heavy) at load 15-17 on 2 cores; a quadratic pattern reads 64-67
 * (the control case checks the measure still sees it); the old patterns read thousands. */
const MAX_RATIO = 32;
const RUNS = 3;
const fill = (unit: string, n: number): string => unit.repeat(Math.ceil(n / unit.length));

/** CPU time of the call (this process, user + system), not wall time. */
function cpuMs(f: () => unknown): number {
  const t = process.cpuUsage();
  f();
  const d = process.cpuUsage(t);
  return (d.user + d.system) / 1000;
}

/** How much longer f takes on the input GROWTH times longer (least of RUNS each, after a warm-up). */
function growth(f: (n: number) => unknown, size: number): { ratio: number; small: number; big: number } {
  f(size / 10);
  const least = (n: number) => Math.min(...Array.from({ length: RUNS }, () => cpuMs(() => f(n))));
  const small = least(size);
  const big = least(size * GROWTH);
  return { ratio: big / Math.max(small, 0.05), small, big };
}

// one input per rule shape: long name-like runs (keyword rules), unterminated openers (putty, PEM),
// runs with a word boundary at every character (url, jwt), long blanks (trimming), unclosed quotes
const ADVERSARIAL: Record<string, (n: number) => string> = {
  cli_digits: (n) => fill('1-', n),
  cli_keyword_run: (n) => fill('token-', n),
  cli_keyword_run2: (n) => fill('-token', n),
  cli_unclosed_quotes: (n) => fill('--token "', n),
  env_keyword_run: (n) => ` ${fill('token', n)}`,
  env_escaped_quote: (n) => fill('a_token=\\"x', n),
  env_blanks: (n) => `api_key: a${' '.repeat(n)}b`,
  env_blanks_before_op: (n) => `api_key${' '.repeat(n)}=x`,
  putty: (n) => fill('PuTTY-User-Key-File-2:', n),
  pem: (n) => fill('-----BEGIN A', n),
  url_scheme_run: (n) => fill('a-', n),
  url_password: (n) => `x://${fill('b:', n)}`,
  jwt: (n) => fill('eyJaaaaaaaa-', n),
  jwt_payload: (n) => fill(`${'eyJ-'.repeat(256)}.eyJ${'a-'.repeat(30_000)}`, n),
  authorization: (n) => `authorization${' '.repeat(n)}`,
  bearer: (n) => `bearer ${fill('a-', n)}`,
};

describe('redaction and session id stay linear on adversarial input', () => {
  for (const [name, text] of Object.entries(ADVERSARIAL)) {
    it(`redact: ${name}`, { timeout: 60_000 }, () => {
      const g = growth((n) => redact(text(n)), SIZE);
      expect(g.ratio, `${g.small.toFixed(1)} -> ${g.big.toFixed(1)} ms`).toBeLessThan(MAX_RATIO);
    });
  }

  it('the measure tells: a quadratic pattern reads above MAX_RATIO', { timeout: 60_000 }, () => {
    // \w+x on a run of letters without an x: every start scans to the end (n²/2 steps)
    const g = growth((n) => /\w+x/.test('a'.repeat(n)), 2_000);
    expect(g.ratio, `${g.small.toFixed(1)} -> ${g.big.toFixed(1)} ms`).toBeGreaterThan(MAX_RATIO);
  });

  it('still finds a secret placed after the adversarial prefix', () => {
    for (const text of Object.values(ADVERSARIAL)) {
      const r = redact(`${text(20_000).slice(0, 20_000)}\nmysql --password hunter2cli77 -u root\n`);
      expect(r.text).not.toContain('hunter2cli77');
    }
    const putty = `${fill('PuTTY-User-Key-File-2:', 5000)}\nPuTTY-User-Key-File-2: ssh-rsa\nPrivate-Lines: 1\nAAAAsecret\nPrivate-MAC: 0a1b2c\n`;
    expect(redact(putty).text).not.toContain('AAAAsecret');
  });

  it('identifySession: 30k unclosed <think> openers in the first assistant message', { timeout: 60_000 }, () => {
    const body = (n: number) =>
      ({
        model: 'm',
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: '<think>'.repeat(n) },
          { role: 'user', content: 'go' },
        ],
      }) as ChatRequest;
    expect(identifySession(body(30_000), { tenant: 't', headers: {} }).source).toBe('hash');
    const g = growth((n) => identifySession(body(n), { tenant: 't', headers: {} }), 30_000);
    expect(g.ratio, `${g.small.toFixed(1)} -> ${g.big.toFixed(1)} ms`).toBeLessThan(MAX_RATIO);
  });

  it('stripThink keeps the lazy-regex semantics', () => {
    const old = (s: string) => s.replace(/<think>[\s\S]*?<\/think>/g, '').replace(/^[\s\S]*?<\/think>/, '');
    for (const s of [
      'a<think>x</think>b',
      'a<think>x</think>b<think>y</think>c',
      'r</think>answer',
      '<think>a<think>b</think>c</think>d',
      'a<think>unclosed',
      'a<think>x</think>b<think>unclosed</think',
      'x</think>y<think>z</think>w</think>v',
      '',
    ])
      expect(stripThink(s)).toBe(old(s));
  });
});
