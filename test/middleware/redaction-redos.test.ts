// Regression: adversarial texts that made the redaction rules and the derived session id backtrack
// super-linearly (seconds to minutes of blocked event loop per ~200 KB request). Each case must stay
// linear: its CPU time on an input GROWTH times longer is under MAX_RATIO times its time on the SIZE
// input (a linear pass reads ~GROWTH, a quadratic one ~GROWTH²). A ratio of two measurements in this
// process, each the least of RUNS (a GC or a preemption only adds), so neither the machine's speed
// nor its load moves it; CPU time, so another process's load does not count, while backtracking does.
// Both sizes stay under V8's large-object size (strings over 128 KiB): above it each call's strings
// are allocated and collected page by page and cost ~4-7x more per character (cli_digits: 1.6 ns a
// character up to 100 KB, 8-12 from 200 KB), which read as growth across it (the inputs were
// 200 KB -> 1.6 MB before for that reason, ~2x this file's CPU time now). The short input is timed
// GROWTH times in a row (the same characters as one long call), so a per-call fixed cost or the
// timer's resolution does not read as a ratio.
import { beforeAll, describe, expect, it } from 'vitest';
import { identifySession, stripThink } from '../../middleware/layout/session-id.ts';
import { redact } from '../../middleware/redaction/redact.ts';
import type { ChatRequest } from '../../middleware/types.ts';

const SIZE = 12_500;
const GROWTH = 8;
/** Linear code reads 1-13 at 12.5 KB -> 100 KB (load 12); a quadratic pattern reads ~64 (the
 * control case checks the measure still sees it); the patterns before the fix read 60 to thousands
 * on these sizes (they backtracked over the rest of the text from every start). */
const MAX_RATIO = 32;
const RUNS = 5;
const fill = (unit: string, n: number): string => unit.repeat(Math.ceil(n / unit.length));

/** CPU time of the call (this process, user + system), not wall time. */
function cpuMs(f: () => unknown): number {
  const t = process.cpuUsage();
  f();
  const d = process.cpuUsage(t);
  return (d.user + d.system) / 1000;
}

/** How much longer f takes on the input GROWTH times longer (least of RUNS each): the short input's
 * time is per call, over GROWTH calls. Both sizes are warmed up first and measured in turns: the
 * process's CPU time includes V8's helper threads, which optimise code that a new input size runs
 * (cli_digits, the first case, once read 44 with the long input timed after the short one). */
function growth(f: (n: number) => unknown, size: number): { ratio: number; small: number; big: number } {
  let small = Number.POSITIVE_INFINITY;
  let big = Number.POSITIVE_INFINITY;
  for (let run = -1; run < RUNS; run++) {
    const s = cpuMs(() => {
      for (let i = 0; i < GROWTH; i++) f(size);
    });
    const b = cpuMs(() => f(size * GROWTH));
    if (run < 0) continue; // the warm-up
    small = Math.min(small, s / GROWTH);
    big = Math.min(big, b);
  }
  return { ratio: big / Math.max(small, 0.005), small, big };
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
  // one header run (a start at every eyJ) before one long payload, both growing with n
  jwt_payload: (n) => `${'eyJ-'.repeat(Math.ceil(n / 64))}.eyJ${'a-'.repeat(Math.ceil(n / 2))}`,
  authorization: (n) => `authorization${' '.repeat(n)}`,
  bearer: (n) => `bearer ${fill('a-', n)}`,
};

describe('redaction and session id stay linear on adversarial input', () => {
  // every case at both sizes once before any is measured: the first case's long input otherwise
  // runs while V8's helper threads still optimise the redaction code (read 27 once, 6.6-8 after)
  beforeAll(() => {
    for (const text of Object.values(ADVERSARIAL)) for (const n of [SIZE, SIZE * GROWTH]) redact(text(n));
  });

  for (const [name, text] of Object.entries(ADVERSARIAL)) {
    it(`redact: ${name}`, { timeout: 60_000 }, () => {
      const g = growth((n) => redact(text(n)), SIZE);
      expect(g.ratio, `${g.small.toFixed(3)} -> ${g.big.toFixed(3)} ms`).toBeLessThan(MAX_RATIO);
    });
  }

  it('the measure tells: a quadratic pattern reads above MAX_RATIO', { timeout: 60_000 }, () => {
    // \w+x on a run of letters without an x: every start scans to the end (n²/2 steps)
    const g = growth((n) => /\w+x/.test('a'.repeat(n)), 2_000);
    expect(g.ratio, `${g.small.toFixed(3)} -> ${g.big.toFixed(3)} ms`).toBeGreaterThan(MAX_RATIO);
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
    // 1,500 -> 12,000 openers (10.5 -> 84 KB): under the large-object size, as above
    const g = growth((n) => identifySession(body(n), { tenant: 't', headers: {} }), 1_500);
    expect(g.ratio, `${g.small.toFixed(3)} -> ${g.big.toFixed(3)} ms`).toBeLessThan(MAX_RATIO);
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
