// `ctxgate report` as a user runs it: a real process over a SQLite ledger file.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryFromArgs } from '../../cli/commands/report.ts';
import { SqliteLedger } from '../../gateway/accounting/stores/sqlite.ts';
import { compilePricing, DEFAULT_PRICING_TABLE } from '../../gateway/accounting/record/pricing.ts';
import { buildUsageRecord } from '../../gateway/accounting/record/record.ts';

const dir = mkdtempSync(join(tmpdir(), 'ctxgate-report-cli-'));
const path = join(dir, 'usage.sqlite');
const T0 = Date.UTC(2026, 5, 1, 12);

beforeAll(async () => {
  const l = new SqliteLedger({ path, retentionDays: 100_000, batchSize: 10, flushMs: 20 });
  const pricing = compilePricing(DEFAULT_PRICING_TABLE.default!, 'd');
  for (let i = 0; i < 6; i++) {
    l.append(
      buildUsageRecord(
        {
          time: T0 + i * 86_400_000,
          requestId: `r${i}`,
          tenant: i < 4 ? 'red' : 'blue',
          keyId: 'k',
          sessionId: `s${i}`,
          model: 'm',
          worker: 'w',
          status: 200,
          stream: false,
          promptTokens: 10_000,
          cachedTokens: 9_000,
          outputTokens: 100,
          usageReported: true,
          totalMs: 5,
          gatewayOverheadMs: 0.1,
          attempts: 1,
        },
        pricing,
      ),
    );
  }
  await l.close();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const cli = (...args: string[]) =>
  spawnSync(process.execPath, ['bin/ctxgate.js', 'report', ...args], { encoding: 'utf8' });

describe('ctxgate report', () => {
  it('prints the JSON report: totals and groups, filtered by time and tenant', () => {
    const r = cli(
      '--ledger',
      path,
      '--format',
      'json',
      '--group-by',
      'day',
      '--tenant',
      'red',
      '--since',
      new Date(T0 + 86_400_000).toISOString(),
    );
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const j = JSON.parse(r.stdout) as {
      totals: Record<string, number>;
      groups: { key: string; requests: number; cost_usd: number }[];
    };
    // 1,000 uncached × $1/M + 9,000 cached × $0.10/M + 100 output × $4/M = $0.0023 per request.
    expect(j.totals).toMatchObject({
      requests: 3,
      prompt_tokens: 30_000,
      cached_tokens: 27_000,
      output_tokens: 300,
      cost_usd: 0.0069,
      hit_rate: 0.9,
    });
    expect(j.totals.savings_usd).toBeCloseTo(3 * (0.0104 - 0.0023), 9);
    expect(j.groups.map((g) => g.key)).toEqual(['2026-06-02', '2026-06-03', '2026-06-04']);
  });

  it('writes a self-contained HTML file with --out, and markdown by default', () => {
    const out = join(dir, 'r.html');
    const r = cli('--ledger', path, '--format', 'html', '--out', out);
    expect(r.status).toBe(0);
    expect(readFileSync(out, 'utf8')).toMatch(/^<!doctype html>[\s\S]*<svg[\s\S]*<\/html>\n$/);
    const md = cli('--ledger', path, '--group-by', 'tenant');
    expect(md.stdout).toContain('| red | 4 |');
    expect(md.stdout).toContain('| blue | 2 |');
  });

  it('fails with exit 2 and a message on a missing ledger or a bad option', () => {
    const missing = cli('--ledger', join(dir, 'nope.sqlite'));
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/no ledger at/);
    const cfg = join(dir, 'gw.yaml');
    writeFileSync(
      cfg,
      `models:\n  - name: m\n    workers: [{ url: "http://127.0.0.1:1" }]\nledger:\n  path: ${path}\n`,
    );
    const viaConfig = cli('--config', cfg, '--format', 'csv');
    expect(viaConfig.status).toBe(0);
    expect(viaConfig.stdout.trim().split('\n').pop()).toMatch(/^TOTAL,6,/);
    expect(() => queryFromArgs({ 'group-by': 'planet' })).toThrow(/--group-by/);
    expect(() => queryFromArgs({ format: 'pdf' })).toThrow(/--format/);
    expect(queryFromArgs({ since: '-24h' }, 1_000_000_000_000).query.since).toBe(1_000_000_000_000 - 86_400_000);
  });
});
