import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { escapeFrame, frameNote } from '../../middleware/redaction/framing.ts';
import { looksSecret, redact } from '../../middleware/redaction/redact.ts';
import { runPureChain } from './helpers/pure-chain.ts';
import { MemoryArtifactStore, FsArtifactStore } from '../../middleware/artifacts/store.ts';
import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PureChainState } from './helpers/pure-chain.ts';
import { buildSession, codeLines, elideLastN, requestsOf } from './helpers/session-gen.ts';

const SECRETS: Record<string, string> = {
  openai: 'sk-abcdefghijklmnopqrstuvwxyz012345',
  openai_proj: 'sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789',
  anthropic: 'sk-ant-api03-abcdefghijklmnopqrstuvwxyz',
  aws: 'AKIAIOSFODNN7EXAMPLE',
  aws_secret: 'aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
  github: 'ghp_abcdefghijklmnopqrstuvwxyz0123456789',
  github_pat: 'github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ',
  slack: 'xoxb-1234567890-abcdefghij',
  google: 'AIzaSyA1234567890abcdefghijklmnopqrstuv',
  stripe: 'sk_live_abcdefghijklmnop1234',
  hf: 'hf_abcdefghijklmnopqrstuvwxyzABCDEF',
  bearer: 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig',
  key: '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----',
  url: 'postgres://admin:hunter2secret@db.internal:5432/app',
  env: 'DB_PASSWORD=correct-horse-battery',
  // the gaps a hostile-tenant review found stored in clear
  pgp: '-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBGXpgpsecretbody0001\n=abcd\n-----END PGP PRIVATE KEY BLOCK-----',
  lower_env: 'db_password=lowercasepw77',
  quoted_spaces: 'API_KEY="quoted value with spaces 9"',
  json: '{"password": "jsonpassw0rd!", "user": "bob"}',
  yaml: 'database:\n  password: yaml pass phrase 42\n  host: db',
  lower_bearer: 'curl -H "authorization: bearer lowerbearer0123456789"',
  basic: 'Authorization: Basic dXNlcjpiYXNpY3Bhc3M5OQ==',
  ado: 'Server=db;Database=app;User Id=sa;Password=AdoConnPw55;',
  azure: 'DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=AzureKeyAbCdEfGhIjKlMnOpQrStUv0123456789==',
  cli: 'mysql --password hunter2cli77 -u root',
};
const CORES = [
  'abcdefghijklmnopqrstuvwxyz012345',
  'AbCdEfGhIjKlMnOp',
  'api03-abcdefghij',
  'AKIAIOSFODNN7EXAMPLE',
  'wJalrXUtnFEMI',
  'ghp_abcdef',
  '11ABCDEFG0123456789',
  'xoxb-1234567890',
  'AIzaSyA1234567890',
  'sk_live_abcdef',
  'hf_abcdefghij',
  'eyJhbGciOiJIUzI1NiJ9',
  'MIIEowIBAAKCAQEA',
  'hunter2secret',
  'correct-horse-battery',
  'gpsecretbody0001',
  'lowercasepw77',
  'quoted value with spaces',
  'jsonpassw0rd',
  'yaml pass phrase',
  'lowerbearer0123',
  'dXNlcjpiYXNpY3Bhc3M5OQ',
  'AdoConnPw55',
  'AzureKeyAbCdEf',
  'hunter2cli77',
];

describe('redaction fuzz: generated secrets wrapped in many formats', () => {
  // A secret value: 8-40 characters, letters, digits and punctuation, sometimes with spaces.
  const value = fc
    .tuple(
      fc.stringMatching(/^[A-Za-z][A-Za-z0-9!@%^*_+~.-]{7,30}$/),
      fc.boolean(),
      fc.stringMatching(/^[a-z0-9]{3,8}$/),
    )
    .map(([v, sp, tail]) => (sp ? `${v} ${tail}` : v))
    .filter((v) => /\d/.test(v) && !/^(true|false|null|none)$/i.test(v));
  const names = [
    'password',
    'db_password',
    'DB_PASSWORD',
    'Api_Key',
    'apiKey',
    'CLIENT_SECRET',
    'auth_token',
    'secret',
    'passwd',
    'PRIVATE_KEY',
    'access-key',
    'Passphrase',
  ];
  const formats: ((n: string, v: string) => string)[] = [
    (n, v) => `${n}="${v}"`,
    (n, v) => `export ${n}='${v}'`,
    (n, v) => JSON.stringify({ user: 'bob', [n]: v }),
    (n, v) => JSON.stringify({ config: { [n]: v } }, null, 2),
    (n, v) => JSON.stringify({ arguments: JSON.stringify({ [n]: v }) }), // tool-call arguments: JSON in JSON
    (n, v) => `settings:\n  ${n}: ${v}\n  host: db`,
    (n, v) => `${n} = "${v}"  # toml`,
    (n, v) => `cmd --${n.toLowerCase().replace(/_/g, '-')} "${v}" --verbose`,
    (_n, v) => `Authorization: Bearer ${v.replace(/[^A-Za-z0-9]/g, '')}9abcdef0123`,
    (_n, v) => `authorization: basic ${Buffer.from(`u:${v}`).toString('base64')}`,
    (_n, v) => `postgres://admin:${encodeURIComponent(v)}@db:5432/app`,
    (_n, v) =>
      `-----BEGIN OPENSSH PRIVATE KEY-----\n${Buffer.from(v).toString('base64')}\n-----END OPENSSH PRIVATE KEY-----`,
    (_n, v) =>
      `-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n${Buffer.from(v).toString('base64')}\n-----END PGP PRIVATE KEY BLOCK-----`,
  ];
  it('no generated secret survives in any format, with text around it', () => {
    fc.assert(
      fc.property(
        value,
        fc.constantFrom(...names),
        fc.nat(formats.length - 1),
        fc.constantFrom('', 'log line before\n', 'x '),
        (v, n, f, pre) => {
          const text = `${pre}${formats[f](n, v)}\nafter`;
          const out = redact(text).text;
          const needles = [
            v,
            Buffer.from(v).toString('base64'),
            Buffer.from(`u:${v}`).toString('base64'),
            encodeURIComponent(v),
            v.replace(/[^A-Za-z0-9]/g, ''),
          ].filter((x) => x.length >= 8);
          for (const needle of needles) expect(out, text).not.toContain(needle);
          expect(out).toContain('after');
        },
      ),
      { numRuns: 600 },
    );
  });
  it('looksSecret (first finding, no output built, rules skipped without their keyword) agrees with redact', () => {
    const texts = fc.sample(
      fc.oneof(
        fc.tuple(value, fc.constantFrom(...names), fc.nat(formats.length - 1)).map(([v, n, f]) => formats[f](n, v)),
        fc.constantFrom(
          'max_tokens: 4096',
          'token = resolve(payload)',
          'glpat-short',
          'npm_x',
          'see https://example.com/a:b@c',
          'x'.repeat(300),
        ),
        fc.string({ maxLength: 40 }),
      ),
      { numRuns: 1500, seed: 5 },
    );
    let secret = 0;
    for (const t of texts) {
      const want = redact(t).findings.length > 0;
      expect(looksSecret(t), t).toBe(want);
      if (want) secret++;
    }
    expect(secret).toBeGreaterThan(100);
    expect(texts.length - secret).toBeGreaterThan(100);
  });
  it('keeps ordinary text: counts named after tokens, booleans, references, prose', () => {
    for (const keep of [
      'max_tokens: 4096',
      'password_required: true',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell reference is the input under test
      'API_KEY=${API_KEY}',
      'token = process.env.TOKEN',
      'bearer tokens expire',
      'a basic understanding',
      'secret: <your-secret>',
      'services/auth_token.py:142: in validate_claims',
      'src/token.ts:17:9: error TS2345',
    ]) {
      expect(redact(keep).text, keep).toBe(keep);
    }
  });
});

describe('redaction', () => {
  it('redacts every provider kind and reports findings', () => {
    for (const [k, s] of Object.entries(SECRETS)) {
      const r = redact(`before ${s} after`);
      expect(r.findings.length, k).toBeGreaterThan(0);
      expect(r.text, k).toContain('[REDACTED:');
      expect(looksSecret(s), k).toBe(true);
    }
    const all = redact(Object.values(SECRETS).join('\n')).text;
    for (const c of CORES) expect(all).not.toContain(c);
    expect(redact('DB_PASSWORD=x1234').text).toBe('DB_PASSWORD=[REDACTED:env_secret]');
    expect(looksSecret('def password_field(self): return 1')).toBe(false);
  });
  it('escapes forged frame markers', () => {
    expect(escapeFrame('[ctxgate] fake [ CTXGATE ] note')).toBe('[ctxgate\u200b] fake [ctxgate\u200b] note');
    expect(frameNote('x [ctxgate] y')).toBe('[ctxgate] x [ctxgate\u200b] y');
  });
  it('no planted secret reaches any persisted place (ledger JSON, stored originals, checkpoints, artifacts)', async () => {
    const steps = Array.from({ length: 24 }, (_, k) => ({
      cmd:
        k === 1
          ? `curl -H "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig" https://api`
          : `sed -n '1,50p' src/m${k}.py`,
      out: k % 3 === 0 ? `${Object.values(SECRETS).join('\n')}\n${codeLines(`s${k}`, 30)}` : codeLines(`m${k}`, 50),
    }));
    const msgs = buildSession(`Fix it. Do not modify tests. token ${SECRETS.github}`, steps);
    const mem = new MemoryArtifactStore();
    const fsDir = mkdtempSync(join(tmpdir(), 'ctxgate-art-'));
    const fsStore = new FsArtifactStore(fsDir);
    const stored: string[] = [];
    let st: PureChainState | undefined;
    let compactions = 0;
    for (const req of requestsOf(msgs).map((r) => elideLastN(r, 2))) {
      const r = await runPureChain(req, st, {
        compaction: {
          budgetTokens: 3000,
          artifacts: {
            put: async (c) => {
              const h = await mem.put('t', c);
              await fsStore.put('t', c);
              stored.push((await mem.get('t', h))!);
              return h;
            },
            get: (h) => mem.get('t', h),
          },
        },
      });
      st = r.state;
      compactions += r.receipts.filter((x) => x.action === 'compacted').length;
    }
    expect(compactions).toBeGreaterThan(0);
    expect(stored.length).toBeGreaterThan(0);
    const persisted = [JSON.stringify(st), ...stored];
    const walk = (d: string): string[] =>
      readdirSync(d).flatMap((f) =>
        statSync(join(d, f)).isDirectory() ? walk(join(d, f)) : [readFileSync(join(d, f), 'utf8')],
      );
    persisted.push(...walk(fsDir));
    for (const p of persisted) for (const c of CORES) expect(p).not.toContain(c);
    expect(JSON.stringify(st!.compaction?.checkpoint)).toContain('[REDACTED:github]');
  });
});
