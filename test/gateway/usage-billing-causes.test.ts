// Failed requests are not billed (unless the worker reported usage, then billed as reported and
// flagged); savings split by cause (layout, routing, engine) sum to the saving exactly in every
// record, in SQL and in-memory reports and in JSON; a version-1 ledger file is migrated in place.
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteLedger } from '../../gateway/accounting/stores/sqlite.ts';
import { aggregateRecords } from '../../gateway/accounting/report/aggregate.ts';
import { renderCsv, toJsonReport } from '../../gateway/accounting/report/format.ts';
import { renderHtmlReport } from '../../gateway/accounting/report/html.ts';
import { compilePricing, DEFAULT_PRICING_TABLE, type Pricing } from '../../gateway/accounting/record/pricing.ts';
import { buildUsageRecord, splitSavings } from '../../gateway/accounting/record/record.ts';
import type { UsageInput } from '../../gateway/accounting/types/usage.ts';

const dir = mkdtempSync(join(tmpdir(), 'ctxgate-billing-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const DEFAULT: Pricing = compilePricing(DEFAULT_PRICING_TABLE.default!, 'default');
const GPU: Pricing = compilePricing({ gpu_hour_usd: 3.6 }, 'gpu');
const T0 = Date.UTC(2026, 3, 1);

function ev(i: number, over: Partial<UsageInput> = {}): UsageInput {
  return {
    time: T0 + i * 1000,
    requestId: `r${i}`,
    tenant: 't',
    keyId: 'k',
    sessionId: 's',
    model: 'm',
    worker: 'w1',
    status: 200,
    stream: false,
    promptTokens: 10_000,
    cachedTokens: 8_000,
    outputTokens: 100,
    usageReported: true,
    ttftMs: 50,
    totalMs: 500,
    gatewayOverheadMs: 0.1,
    attempts: 1,
    ...over,
  };
}

describe('failures are not billed', () => {
  it('a worker 400 with no usage costs nothing and keeps its status; no tokens are invented', () => {
    const r = buildUsageRecord(
      ev(1, {
        status: 400,
        errorCode: 'upstream_400',
        usageReported: false,
        promptTokens: 200_000,
        cachedTokens: 0,
        outputTokens: 0,
        predictedCachedTokens: 150_000,
      }),
      DEFAULT,
    );
    expect(r.status).toBe(400);
    expect(r.billing).toBe('unbilled_failure');
    expect([r.costNusd, r.cfNoCacheNusd, r.savingsNusd, r.promptTokens, r.cachedTokens]).toEqual([0, 0, 0, 0, 0]);
    // The prediction stays visible for diagnostics, but nothing is priced on it.
    expect(r.predictedCachedTokens).toBe(150_000);
  });

  it('a 503 is never priced on predicted usage', () => {
    const r = buildUsageRecord(
      ev(2, { status: 503, errorCode: 'upstream_503', usageReported: false, predictedCachedTokens: 9_000 }),
      DEFAULT,
    );
    expect(r.costNusd).toBe(0);
    expect(r.billing).toBe('unbilled_failure');
    const gw = buildUsageRecord(ev(3, { status: 502, usageReported: false, prefillMs: 100, decodeMs: 900 }), GPU);
    expect(gw.costNusd).toBe(0);
  });

  it('a failure with worker-reported usage is billed as reported and flagged', () => {
    const r = buildUsageRecord(
      ev(4, { status: 499, errorCode: 'client_closed', promptTokens: 1000, cachedTokens: 0, outputTokens: 10 }),
      DEFAULT,
    );
    expect(r.billing).toBe('billed_failure');
    expect(r.costNusd).toBe(1000 * 1000 + 10 * 4000);
    const ok = buildUsageRecord(ev(5), DEFAULT);
    expect(ok.billing).toBe('billed');
  });

  it('reports count billed failures and sum only billed money', async () => {
    const recs = [
      ev(6),
      ev(7, { status: 400, usageReported: false }),
      ev(8, { status: 500, errorCode: 'upstream_500' }),
    ].map((e) => buildUsageRecord(e, DEFAULT));
    const d = await aggregateRecords(recs, { groupBy: 'model' });
    expect(d.totals.errors).toBe(2);
    expect(d.totals.billedFailures).toBe(1);
    expect(d.totals.costNusd).toBe(recs[0].costNusd + recs[2].costNusd);
    expect(toJsonReport(d).totals.billed_failures).toBe(1);
  });
});

describe('savings by cause', () => {
  it('layout = cached tokens beyond the original layout, routing = beyond a uniform worker, engine = the rest', () => {
    // 8000 cached: the original layout would have had 2000 (layout 6000 tokens), a uniform worker
    // 500 of the remaining 2000 (routing 1500), engine 500. Saving 8000 × $0.9/M = 7.2 mUSD.
    const r = buildUsageRecord(ev(10, { counterfactualPromptTokensCached: 2000, uniformCachedTokens: 500 }), DEFAULT);
    expect(r.savingsNusd).toBe(8000 * 900);
    expect([r.savingsLayoutNusd, r.savingsRoutingNusd, r.savingsEngineNusd]).toEqual([
      6000 * 900,
      1500 * 900,
      500 * 900,
    ]);
    // The original-layout counterfactual is this cost plus what the layout saved (not the cost itself).
    expect(r.cfOriginalNusd).toBe(r.costNusd + r.savingsLayoutNusd);
    expect(r.cfOriginalNusd).not.toBe(r.costNusd);
  });

  it('no diagnostics, no index: everything is the engine', () => {
    const r = buildUsageRecord(ev(11), DEFAULT);
    expect([r.savingsLayoutNusd, r.savingsRoutingNusd, r.savingsEngineNusd]).toEqual([0, 0, r.savingsNusd]);
    expect(r.cfOriginalNusd).toBeNull();
  });

  it('property: the three parts are non-negative integers summing to the saving exactly', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -5_000_000, max: 1e12 }),
        fc.nat(2_000_000),
        fc.option(fc.nat(2_000_000)),
        fc.option(fc.nat(2_000_000)),
        (s, c, o, u) => {
          const p = splitSavings(s, c, o, u);
          expect(p.layout + p.routing + p.engine).toBe(s);
          expect(Number.isInteger(p.layout) && Number.isInteger(p.routing) && Number.isInteger(p.engine)).toBe(true);
          if (s >= 0) expect(Math.min(p.layout, p.routing, p.engine)).toBeGreaterThanOrEqual(0);
        },
      ),
    );
  });

  it('SQL and in-memory reports, JSON, CSV and HTML carry the split, summing to savings_usd', async () => {
    const ledger = new SqliteLedger({
      path: join(dir, 'causes.sqlite'),
      retentionDays: 100_000,
      batchSize: 8,
      flushMs: 50,
    });
    const recs = Array.from({ length: 40 }, (_, i) =>
      buildUsageRecord(
        ev(20 + i, {
          tenant: `t${i % 3}`,
          cachedTokens: 100 * i,
          counterfactualPromptTokensCached: i % 2 ? 37 * i : undefined,
          uniformCachedTokens: i % 3 ? 11 * i : undefined,
        }),
        i % 4 ? DEFAULT : GPU,
      ),
    );
    for (const r of recs) ledger.append(r);
    await ledger.flush();
    const sql = await ledger.report({ groupBy: 'tenant' });
    const mem = await aggregateRecords(recs, { groupBy: 'tenant' });
    expect(sql.totals).toEqual(mem.totals);
    expect(sql.groups).toEqual(mem.groups);
    const j = toJsonReport(sql);
    for (const s of [j.totals, ...j.groups]) {
      const c = s.savings_by_cause_nusd;
      expect(c.layout + c.routing + c.engine).toBe(s.savings_nusd);
      expect(
        Number(
          (s.savings_by_cause_usd.layout + s.savings_by_cause_usd.routing + s.savings_by_cause_usd.engine).toFixed(9),
        ),
      ).toBeCloseTo(s.savings_usd, 8);
    }
    expect(j.totals.savings_by_cause_nusd.layout).toBeGreaterThan(0);
    expect(j.totals.savings_by_cause_nusd.routing).toBeGreaterThan(0);
    expect(renderCsv(sql).split('\n')[0]).toContain('savings_layout_usd,savings_routing_usd,savings_engine_usd');
    const html = renderHtmlReport(sql);
    expect(html).toContain('Savings by cause');
    expect(html).toContain('saved by routing');
    await ledger.close();
  });
});

describe('ledger schema migration', () => {
  it('a version-1 file gains the new columns; old rows credit their saving to the engine', async () => {
    const path = join(dir, 'v1.sqlite');
    const db = new Database(path);
    // The version-1 table, as shipped before savings by cause.
    db.exec(`CREATE TABLE usage (id INTEGER PRIMARY KEY, time INTEGER NOT NULL, request_id TEXT NOT NULL, tenant TEXT NOT NULL, key_id TEXT NOT NULL,
      session_id TEXT NOT NULL, model TEXT NOT NULL, worker TEXT NOT NULL, status INTEGER NOT NULL, stream INTEGER NOT NULL, usage_source TEXT NOT NULL,
      prompt_tokens INTEGER NOT NULL, cached_tokens INTEGER NOT NULL, predicted_cached_tokens INTEGER, output_tokens INTEGER NOT NULL, cache_write_tokens INTEGER NOT NULL,
      ttft_ms REAL, total_ms REAL NOT NULL, overhead_ms REAL NOT NULL, attempts INTEGER NOT NULL, error_code TEXT, break_cause TEXT, prefill_ms REAL, decode_ms REAL,
      pricing_kind TEXT NOT NULL, cost_uncached_nusd INTEGER NOT NULL, cost_cached_nusd INTEGER NOT NULL, cost_write_nusd INTEGER NOT NULL, cost_output_nusd INTEGER NOT NULL,
      cost_nusd INTEGER NOT NULL, cf_nocache_nusd INTEGER NOT NULL, cf_original_nusd INTEGER, savings_nusd INTEGER NOT NULL);
      CREATE TABLE meta (k TEXT PRIMARY KEY, v TEXT NOT NULL); INSERT INTO meta VALUES ('schema_version', '1');
      INSERT INTO usage VALUES (1, ${Date.now()}, 'old', 't', 'k', 's', 'm', 'w', 200, 0, 'reported', 100, 50, NULL, 10, 0, 5, 50, 0.1, 1, NULL, NULL, NULL, NULL,
        'token', 50000, 5000, 0, 40000, 95000, 140000, NULL, 45000);`);
    db.close();
    const ledger = new SqliteLedger({ path, retentionDays: 100_000, batchSize: 8, flushMs: 50 });
    ledger.append(buildUsageRecord(ev(99, { time: Date.now(), counterfactualPromptTokensCached: 0 }), DEFAULT));
    await ledger.flush();
    const d = await ledger.report({ groupBy: 'model' });
    expect(d.totals.requests).toBe(2);
    expect(d.totals.savingsLayoutNusd + d.totals.savingsRoutingNusd + d.totals.savingsEngineNusd).toBe(
      d.totals.savingsNusd,
    );
    const old = [];
    for await (const r of ledger.query({})) if (r.requestId === 'old') old.push(r);
    expect(old[0]).toMatchObject({ savingsEngineNusd: 45000, savingsLayoutNusd: 0, billing: 'billed' });
    expect((ledger.db.prepare("SELECT v FROM meta WHERE k = 'schema_version'").get() as { v: string }).v).toBe('2');
    await ledger.close();
  });
});
