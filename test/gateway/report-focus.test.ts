// `ctxgate report --format focus` as a user runs it (a real process over a SQLite ledger): FOCUS
// 1.2 columns, and rows that reconcile exactly (to the nano-dollar, token and request) with
// `--format json` over the same range and tenant, for token and GPU-time pricing; unbilled
// failures produce no row; CSV quoting survives hostile tenant and session names.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteLedger } from '../../gateway/accounting/stores/sqlite.ts';
import { FOCUS_COLUMNS } from '../../gateway/accounting/report/focus.ts';
import { compilePricing, DEFAULT_PRICING_TABLE } from '../../gateway/accounting/record/pricing.ts';
import { buildUsageRecord } from '../../gateway/accounting/record/record.ts';

const dir = mkdtempSync(join(tmpdir(), 'ctxgate-focus-'));
const path = join(dir, 'usage.sqlite');
const T0 = Date.UTC(2026, 6, 30, 20);
const TENANTS = ['red', 'blue', 'we"ird,tenant'];

beforeAll(async () => {
  const l = new SqliteLedger({ path, retentionDays: 100_000, batchSize: 16, flushMs: 20 });
  const token = compilePricing(DEFAULT_PRICING_TABLE.default!, 'd');
  const gpu = compilePricing({ gpu_hour_usd: 2.75 }, 'g');
  for (let i = 0; i < 120; i++) {
    const prompt = 5_000 + ((i * 131) % 4000);
    l.append(
      buildUsageRecord(
        {
          time: T0 + i * 1_234_567,
          requestId: `r${i}`,
          tenant: TENANTS[i % 3],
          keyId: 'k',
          sessionId: i % 7 === 0 ? 'sess,\n"x"' : `s${i % 5}`,
          model: i % 4 === 0 ? 'gpu-model' : 'tok-model',
          worker: `w${i % 3}`,
          status: i % 13 === 0 ? 503 : 200,
          stream: false,
          promptTokens: prompt,
          cachedTokens: (i * 977) % prompt,
          outputTokens: 10 + (i % 90),
          usageReported: i % 13 !== 0,
          totalMs: 900 + i,
          ttftMs: 100 + i,
          gatewayOverheadMs: 0.1,
          attempts: 1,
          cacheWriteTokens: i % 5 === 0 ? 100 : undefined,
          counterfactualPromptTokensCached: i % 2 ? 0 : undefined,
          prefillMs: i % 4 === 0 ? 40 + i : undefined,
          decodeMs: i % 4 === 0 ? 700 : undefined,
        },
        i % 4 === 0 ? gpu : token,
      ),
    );
  }
  await l.close();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const cli = (...args: string[]) =>
  spawnSync(process.execPath, ['bin/ctxgate.js', 'report', '--ledger', path, ...args], { encoding: 'utf8' });

/** RFC 4180 parser (quoted cells with commas, quotes and newlines). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let q = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (q) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') q = false;
      else cell += c;
    } else if (c === '"') q = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
    } else cell += c;
  }
  return rows;
}

/** Exact decimal USD -> integer nano-dollars. */
function nusd(s: string): number {
  const [w, f = ''] = s.split('.');
  return Number(w) * 1e9 + Number(f.padEnd(9, '0'));
}

describe('ctxgate report --format focus', () => {
  it.each([
    [[] as string[]],
    [['--tenant', 'blue']],
    [['--since', new Date(T0 + 20 * 3_600_000).toISOString(), '--until', new Date(T0 + 30 * 3_600_000).toISOString()]],
  ])('rows reconcile exactly with --format json (%j)', (extra) => {
    const f = cli('--format', 'focus', ...extra);
    expect(f.stderr).toBe('');
    const [header, ...rows] = parseCsv(f.stdout);
    expect(header).toEqual([...FOCUS_COLUMNS]);
    const col = (n: (typeof FOCUS_COLUMNS)[number]) => header.indexOf(n);
    const j = JSON.parse(cli('--format', 'json', '--group-by', 'tenant', ...extra).stdout);
    expect(rows.length).toBeGreaterThan(0);
    let cost = 0;
    let savings = 0;
    let requests = 0;
    const byTenant = new Map<string, number>();
    const tokens = { input: 0, cached_input: 0, cache_write: 0, output: 0 };
    for (const r of rows) {
      expect(r).toHaveLength(header.length);
      const c = nusd(r[col('BilledCost')]);
      for (const k of ['EffectiveCost', 'ListCost', 'ContractedCost'] as const)
        expect(r[col(k)]).toBe(r[col('BilledCost')]);
      expect(r[col('ChargeCategory')]).toBe('Usage');
      expect(r[col('ServiceCategory')]).toBe('AI and Machine Learning');
      expect(Date.parse(r[col('ChargePeriodEnd')]) - Date.parse(r[col('ChargePeriodStart')])).toBe(3_600_000);
      expect(Date.parse(r[col('BillingPeriodStart')])).toBeLessThanOrEqual(Date.parse(r[col('ChargePeriodStart')]));
      expect(Date.parse(r[col('BillingPeriodEnd')])).toBeGreaterThanOrEqual(Date.parse(r[col('ChargePeriodEnd')]));
      const tags = JSON.parse(r[col('Tags')]) as { tenant: string; session: string; model: string };
      expect(Object.keys(tags).sort()).toEqual(['model', 'session', 'tenant']);
      expect(r[col('SkuId')].startsWith(`${tags.model}/`)).toBe(true);
      expect(r[col('ResourceId')]).toMatch(/^w\d$/);
      cost += c;
      savings += nusd(r[col('x_SavingsUsd')]);
      requests += Number(r[col('x_Requests')]);
      byTenant.set(tags.tenant, (byTenant.get(tags.tenant) ?? 0) + c);
      const sku = r[col('SkuId')].split('/')[1];
      if (sku in tokens) {
        expect(r[col('ConsumedUnit')]).toBe('Tokens');
        tokens[sku as keyof typeof tokens] += Number(r[col('ConsumedQuantity')]);
      } else expect(r[col('ConsumedUnit')]).toBe('GPU Hours');
    }
    expect(cost).toBe(j.totals.cost_nusd);
    expect(savings).toBe(j.totals.savings_nusd);
    // Unbilled failures are not rows; every billed request is counted once.
    expect(requests).toBe(j.totals.requests - j.totals.errors + j.totals.billed_failures);
    for (const g of j.groups) expect(byTenant.get(g.key) ?? 0).toBe(g.cost_nusd);
    expect(byTenant.size).toBe(
      j.groups.filter((g: { cost_nusd: number; requests: number; errors: number }) => g.requests > g.errors).length,
    );
    expect(tokens.output).toBeGreaterThan(0);
  });

  it('rejects an unknown format, naming the choices', () => {
    const r = cli('--format', 'focus2');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('md, csv, json, html, focus');
  });
});
