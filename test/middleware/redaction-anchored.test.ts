// The redaction fast paths (the gates shared by groups of rules, and `env_secret` searched only at the
// name runs before its operators) against the plain scan they replace: every rule's global regex
// over the whole text, in order. Compared on seeded generated texts built from the pieces the rules
// turn on (keywords, `export`, quotes, escapes, blanks of every kind, line breaks, name runs at the
// 64-character bounds, characters that case-fold onto ASCII, token openings, earlier tags), and on
// every string of the recorded agent captures and trajectory excerpts under test/fixtures.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeFile } from '../../loadtest/synth/content.ts';
import { mulberry32 } from '../../loadtest/profiles/rng.ts';
import { isSpace } from '../../middleware/redaction/anchored-scan.ts';
import { plainLooksSecret, sameAsPlain as same } from './helpers/plain-redact.ts';

const PIECES = [
  'token',
  'TOKEN',
  'Token',
  'secret',
  'password',
  'passwd',
  'pwd',
  'api_key',
  'api-key',
  'apikey',
  'auth_token',
  'conn_str',
  'client.secret',
  'max_tokens',
  'tokens_per_s',
  'file.py',
  'export',
  'EXPORT',
  'Export',
  'db',
  'x1',
  'hunter2pass',
  'a'.repeat(60),
  'b'.repeat(64),
  'c'.repeat(5),
  ' ',
  '  ',
  '\t',
  '\n',
  '\r\n',
  '\r',
  '\u2028',
  '\u00a0',
  '\ufeff',
  '"',
  "'",
  '\\',
  '\\"',
  '=',
  '==',
  ':',
  ': ',
  '=>',
  ':=',
  '-',
  '--',
  '_',
  '.',
  ',',
  ';',
  '}',
  ']',
  '#',
  '&',
  '(',
  ')',
  '@',
  '/',
  '4096',
  'true',
  '$'.concat('{X}'),
  '<x>',
  '***',
  '42:',
  '[REDACTED:env_secret]',
  'ſ',
  'K',
  'İ',
  'ı',
  'é',
  '--token ',
  '-password=',
  '--api-key\t',
  '->',
  ' - ',
  'sk-',
  'sk-ant-',
  'ghp_',
  'eyJ',
  'AKIA',
  'SG.',
  'xoxb-',
  'hf_',
  'npm_',
  'glpat-',
  'sk_live_',
  'AIza',
  'Bearer ',
  'basic ',
  'Authorization',
  'AccountKey=',
  'sig=',
  '://',
  '-----BEGIN ',
  'PRIVATE KEY',
  '-----',
  'PuTTY-User-Key-File-2:',
  'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0',
];

function generated(seed: number, n: number): string[] {
  const rnd = mulberry32(seed);
  return Array.from({ length: n }, () => {
    let s = '';
    for (let k = 1 + Math.floor(rnd() * 40); k > 0; k--) s += PIECES[Math.floor(rnd() * PIECES.length)];
    return s;
  });
}

/** Every string value (and key) in the JSON lines and text files under `dir`. */
function fixtureStrings(dir: string): string[] {
  const out: string[] = [];
  const walk = (v: unknown): void => {
    if (typeof v === 'string') out.push(v);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object')
      for (const [k, x] of Object.entries(v)) {
        out.push(k);
        walk(x);
      }
  };
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...fixtureStrings(path));
    else if (name.endsWith('.jsonl'))
      for (const line of readFileSync(path, 'utf8').split('\n')) line && walk(JSON.parse(line));
    else out.push(readFileSync(path, 'utf8'));
  }
  return out;
}

describe('redaction fast paths equal the plain scan', () => {
  it('isSpace equals /\\s/ for every UTF-16 code unit', () => {
    const wrong: number[] = [];
    for (let c = 0; c <= 0xffff; c++) if (isSpace(c) !== /\s/.test(String.fromCharCode(c))) wrong.push(c);
    expect(wrong).toEqual([]);
  });

  it('hand-picked edges: operators, quotes, export, line starts, bounds, case folding', () => {
    const cases = [
      'token=abc12345',
      ' token = flush_token(route)',
      'export  TOKEN="hunter2pass"',
      'EXPORT\tapi_key=hunter2pass',
      'xexport token=hunter2pass',
      'x export "token"=hunter2pass',
      "export\t 'secret' = 'abc12345'",
      '"password": "jsonpassw0rd!"',
      '{\\"api_key\\": \\"abc12345\\"}',
      'a_token=\\"x a_token=\\"y\\" z',
      `${'a'.repeat(64)}token${'b'.repeat(64)}=hunter2pass`,
      `${'a'.repeat(65)}token=hunter2pass`,
      `token${'b'.repeat(65)}=hunter2pass`,
      'tokentoken=hunter2pass',
      '\ntoken=hunter2pass\r\ntoken: yaml value 42\u2028secret=abc12345',
      'ſecret=abc12345 ſecret=abc12345 secret=abc12345',
      'K token=abc12345 İ password=abc12345 ı passwd: hunter2pass',
      'token=[REDACTED:env_secret] token=abc12345',
      'max_tokens: 4096, tokens_per_s: 12.5, token=$' + '{TOKEN}',
      'services/auth_token.py:142: in validate_claims',
      'token :=  value99 ; token => "v a l u e 7"',
      "'secret' = 'hunter2pass' # comment",
      'mysql --password hunter2cli77 -u root --token=abcd1234',
      '-token abc12345 x--token abc12345 a -token=\\"q u o t e d\\" --api-key\t"v a l" -secret',
      `--${'a'.repeat(64)}token${'b'.repeat(64)} hunter2pass --${'a'.repeat(65)}token hunter2pass`,
      'postgres://admin:hunter2secret@db.internal:5432/app https://x.org/a://b:c@d',
      `${'s'.repeat(31)}://u:p4ssw0rd@h ${'s'.repeat(32)}://u:p4ssw0rd@h ${'s'.repeat(33)}://u:p4ssw0rd@h`,
      'a-a-a-a://u:[REDACTED:url_password]@ 1http://u:pw123456@h _x://u:pw123456@h git+ssh://u:pw@h',
      '--token -- token --password=[REDACTED:cli_secret] --passwd=1234 --pwd\n\nhunter2pass',
      'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijkl',
      'password\u00a0=\ufeffhunter2pass',
      'token = \\"escaped\\"',
    ];
    let env = 0;
    for (const c of cases) if (same(c)) env++;
    expect(env).toBeGreaterThan(15);
  });

  it('seeded generated texts (4 seeds × 1,500)', () => {
    let env = 0;
    let secret = 0;
    for (const seed of [1, 2, 3, 4])
      for (const text of generated(seed, 1500)) {
        if (same(text)) env++;
        if (plainLooksSecret(text)) secret++;
      }
    // the generator reaches both answers often
    expect(env).toBeGreaterThan(1000);
    expect(secret).toBeGreaterThan(1000);
    expect(secret).toBeLessThan(5900);
  });

  it('every string of the recorded agent captures and trajectory excerpts', () => {
    const texts = fixtureStrings(new URL('../fixtures/', import.meta.url).pathname);
    expect(texts.length).toBeGreaterThan(1000);
    for (const t of texts) same(t);
  });

  it("bench overhead's synthetic source files (the growing sessions' tool outputs)", () => {
    const rng = mulberry32(17);
    let env = 0;
    for (let k = 0; k < 150; k++) {
      const f = makeFile(`src/mod${k % 7}/file_${k}.py`, rng, 12);
      if (same(f.lines.map((l, i) => `${String(i + 1).padStart(4)}\t${l}`).join('\n'))) env++;
    }
    expect(env).toBeGreaterThan(50);
  });
});
