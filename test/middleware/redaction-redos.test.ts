// Regression: adversarial texts (~200 KB) that made the redaction rules and the derived session id
// backtrack super-linearly (seconds to minutes of blocked event loop per request). Each case must
// finish well inside BUDGET_MS of CPU time; the old patterns took > 10 s on the same inputs. The
// budget is generous (the linear code needs ~0.2 s) and counts CPU time, so load does not flake it.
import { describe, expect, it } from 'vitest';
import { identifySession, stripThink } from '../../middleware/layout/session-id.ts';
import { redact } from '../../middleware/redaction/redact.ts';
import type { ChatRequest } from '../../middleware/types.ts';

const BUDGET_MS = 3000;
const SIZE = 200_000;
const fill = (unit: string, n = SIZE): string => unit.repeat(Math.ceil(n / unit.length));

/** CPU time of the call (this process, user + system), not wall time: another process's load
 * on the machine does not count, while backtracking does. */
function timed<T>(f: () => T): { out: T; ms: number } {
  const t = process.cpuUsage();
  const out = f();
  const d = process.cpuUsage(t);
  return { out, ms: (d.user + d.system) / 1000 };
}

// one input per rule shape: long name-like runs (keyword rules), unterminated openers (putty, PEM),
// runs with a word boundary at every character (url, jwt), long blanks (trimming), unclosed quotes
const ADVERSARIAL: Record<string, string> = {
  cli_digits: fill('1-'),
  cli_keyword_run: fill('token-'),
  cli_keyword_run2: fill('-token'),
  cli_unclosed_quotes: fill('--token "'),
  env_keyword_run: ` ${fill('token')}`,
  env_escaped_quote: fill('a_token=\\"x'),
  env_blanks: `api_key: a${' '.repeat(SIZE)}b`,
  env_blanks_before_op: `api_key${' '.repeat(SIZE)}=x`,
  putty: fill('PuTTY-User-Key-File-2:'),
  pem: fill('-----BEGIN A'),
  url_scheme_run: fill('a-'),
  url_password: `x://${fill('b:')}`,
  jwt: fill('eyJaaaaaaaa-'),
  jwt_payload: fill(`${'eyJ-'.repeat(256)}.eyJ${'a-'.repeat(30_000)}`),
  authorization: `authorization${' '.repeat(SIZE)}`,
  bearer: `bearer ${fill('a-')}`,
};

describe('redaction and session id stay linear on adversarial input', () => {
  for (const [name, text] of Object.entries(ADVERSARIAL)) {
    it(`redact: ${name}`, { timeout: 60_000 }, () => {
      const { ms } = timed(() => redact(text));
      expect(ms).toBeLessThan(BUDGET_MS);
    });
  }

  it('still finds a secret placed after the adversarial prefix', () => {
    for (const text of Object.values(ADVERSARIAL)) {
      const r = redact(`${text.slice(0, 20_000)}\nmysql --password hunter2cli77 -u root\n`);
      expect(r.text).not.toContain('hunter2cli77');
    }
    const putty = `${fill('PuTTY-User-Key-File-2:', 5000)}\nPuTTY-User-Key-File-2: ssh-rsa\nPrivate-Lines: 1\nAAAAsecret\nPrivate-MAC: 0a1b2c\n`;
    expect(redact(putty).text).not.toContain('AAAAsecret');
  });

  it('identifySession: 30k unclosed <think> openers in the first assistant message', { timeout: 60_000 }, () => {
    const body = {
      model: 'm',
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: '<think>'.repeat(30_000) },
        { role: 'user', content: 'go' },
      ],
    } as ChatRequest;
    const { out, ms } = timed(() => identifySession(body, { tenant: 't', headers: {} }));
    expect(out.source).toBe('hash');
    expect(ms).toBeLessThan(BUDGET_MS);
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
