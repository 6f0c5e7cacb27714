// Report grouping: the SQL aggregation over the SQLite ledger equals the in-memory reference for
// every group_by, with time bounds and tenant filters; formats carry the same totals.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteLedger } from '../../gateway/accounting/stores/sqlite.ts';
import { aggregateRecords } from '../../gateway/accounting/report/aggregate.ts';
import { renderCsv, renderMarkdown, toJsonReport } from '../../gateway/accounting/report/format.ts';
import { GROUP_BY, type ReportData, type ReportQuery } from '../../gateway/accounting/types/report.ts';
import { compilePricing, DEFAULT_PRICING_TABLE } from '../../gateway/accounting/record/pricing.ts';
import { buildUsageRecord } from '../../gateway/accounting/record/record.ts';
import type { UsageRecord } from '../../gateway/accounting/types/usage.ts';

const dir = mkdtempSync(join(tmpdir(), 'ctxgate-report-agg-'));
const pricing = compilePricing(DEFAULT_PRICING_TABLE.default!, 'default');
const T0 = Date.UTC(2026, 2, 1);
const H = 3_600_000;
let ledger: SqliteLedger;
const records: UsageRecord[] = [];

beforeAll(async () => {
  ledger = new SqliteLedger({ path: join(dir, 'r.sqlite'), retentionDays: 100_000, batchSize: 64, flushMs: 50 });
  for (let i = 0; i < 300; i++) {
    const prompt = 1000 + ((i * 37) % 900);
    const r = buildUsageRecord(
      {
        time: T0 + i * 0.4 * H, // ~5 days
        requestId: `r${i}`,
        tenant: ['alpha', 'beta', 'gamma'][i % 3],
        keyId: 'k',
        sessionId: `s${i % 17}`,
        model: i % 4 === 0 ? 'big' : 'small',
        worker: `w${i % 5}`,
        status: i % 29 === 0 ? 502 : 200,
        stream: i % 2 === 0,
        promptTokens: prompt,
        cachedTokens: (i * 53) % prompt,
        predictedCachedTokens: (i * 41) % prompt,
        outputTokens: i % 50,
        usageReported: i % 11 !== 0,
        ttftMs: (i * 97) % 15000,
        totalMs: 20_000,
        gatewayOverheadMs: 0.2,
        attempts: 1,
        breakCause: i % 7 === 0 ? ['tool_schema_changed', 'system_prompt_changed'][i % 2] : undefined,
        counterfactualPromptTokensCached: i % 3 === 0 ? (i * 13) % prompt : undefined,
        uniformCachedTokens: i % 5 === 0 ? (i * 7) % prompt : undefined,
      },
      pricing,
    );
    records.push(r);
    ledger.append(r);
  }
  await ledger.flush();
});
afterAll(async () => {
  await ledger.close();
  rmSync(dir, { recursive: true, force: true });
});

const strip = (d: ReportData) => ({ ...d, generatedAt: 0 });

describe('report aggregation', () => {
  const queries: ReportQuery[] = [
    ...GROUP_BY.map((groupBy) => ({ groupBy })),
    { groupBy: 'model', since: T0 + 24 * H, until: T0 + 72 * H },
    { groupBy: 'session', tenant: 'beta', top: 3 },
    { groupBy: 'day', tenant: 'gamma', since: T0 + 30 * H },
  ];
  it.each(queries)('SQL equals in-memory for %o', async (q) => {
    const sql = await ledger.report(q);
    const mem = await aggregateRecords(records, q);
    expect(strip(sql)).toEqual(strip(mem));
    expect(sql.groups.reduce((a, g) => a + g.requests, 0)).toBe(sql.totals.requests);
    expect(sql.series.reduce((a, p) => a + p.costNusd, 0)).toBe(sql.totals.costNusd);
  });

  it('groups and totals are right by hand', async () => {
    const d = await ledger.report({ groupBy: 'tenant' });
    expect(d.totals.requests).toBe(300);
    expect(d.groups.map((g) => g.key).sort()).toEqual(['alpha', 'beta', 'gamma']);
    expect(d.groups.every((g) => g.requests === 100)).toBe(true);
    const beta = records.filter((r) => r.tenant === 'beta');
    const g = d.groups.find((x) => x.key === 'beta')!;
    expect(g.costNusd).toBe(beta.reduce((a, r) => a + r.costNusd, 0));
    expect(g.cachedTokens).toBe(beta.reduce((a, r) => a + r.cachedTokens, 0));
    expect(d.totals.errors).toBe(records.filter((r) => r.status >= 400).length);
    expect(d.breaks.reduce((a, b) => a + b.count, 0)).toBe(records.filter((r) => r.breakCause).length);
    expect(d.ttft.counts.reduce((a, b) => a + b, 0)).toBe(300);
    const days = await ledger.report({ groupBy: 'day' });
    expect(days.groups.map((x) => x.key)).toEqual([
      '2026-03-01',
      '2026-03-02',
      '2026-03-03',
      '2026-03-04',
      '2026-03-05',
    ]);
  });

  it('the tenant filter keeps only that tenant; time bounds are [since, until)', async () => {
    const d = await ledger.report({ groupBy: 'worker', tenant: 'alpha', since: T0, until: T0 + 4 * H });
    const want = records.filter((r) => r.tenant === 'alpha' && r.time >= T0 && r.time < T0 + 4 * H);
    expect(d.totals.requests).toBe(want.length);
    expect(d.totals.costNusd).toBe(want.reduce((a, r) => a + r.costNusd, 0));
  });

  it('json, csv and markdown carry the same totals', async () => {
    const d = await ledger.report({ groupBy: 'model' });
    const j = toJsonReport(d);
    expect(Object.keys(j.totals)).toEqual(
      expect.arrayContaining([
        'requests',
        'prompt_tokens',
        'cached_tokens',
        'output_tokens',
        'cost_usd',
        'savings_usd',
        'hit_rate',
      ]),
    );
    expect(j.totals.cost_nusd).toBe(d.totals.costNusd);
    expect(j.groups.map((g) => g.key)).toEqual(d.groups.map((g) => g.key));
    const csv = renderCsv(d).trim().split('\n');
    expect(csv).toHaveLength(1 + d.groups.length + 1);
    const total = csv[csv.length - 1].split(',');
    expect(total[0]).toBe('TOTAL');
    expect(Number(total[6])).toBe(j.totals.cost_usd);
    const md = renderMarkdown(d);
    expect(md).toContain('| big |');
    expect(md).toContain(`Requests: 300`);
  });
});
