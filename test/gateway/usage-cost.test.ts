// Cost reconciliation: hand-computed cases in every usage shape agree exactly (nano-dollars)
// between the per-request record, the SQLite ledger row and the report totals, and cached tokens
// are billed once (inside the prompt, never on top).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteLedger } from '../../gateway/accounting/stores/sqlite.ts';
import { aggregateRecords } from '../../gateway/accounting/report/aggregate.ts';
import { toJsonReport } from '../../gateway/accounting/report/format.ts';
import { extractUsage, parseSimTiming } from '../../gateway/accounting/record/extract.ts';
import {
  compilePricing,
  DEFAULT_PRICING_TABLE,
  loadPricingTable,
  type Pricing,
} from '../../gateway/accounting/record/pricing.ts';
import { buildUsageRecord, formatCostHeader } from '../../gateway/accounting/record/record.ts';
import type { UsageInput, UsageRecord } from '../../gateway/accounting/types/usage.ts';

const dir = mkdtempSync(join(tmpdir(), 'ctxgate-usage-cost-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const DEFAULT: Pricing = compilePricing(DEFAULT_PRICING_TABLE.default!, 'default');
const T0 = Date.UTC(2026, 0, 5, 10, 0, 0);

function event(i: number, over: Partial<UsageInput>): UsageInput {
  return {
    time: T0 + i * 1000,
    requestId: `req-${i}`,
    tenant: 'team-a',
    keyId: 'k1',
    sessionId: `s${i}`,
    model: 'qwen3-8b',
    worker: 'w1',
    status: 200,
    stream: false,
    promptTokens: 0,
    cachedTokens: 0,
    outputTokens: 0,
    usageReported: true,
    ttftMs: 100,
    totalMs: 400,
    gatewayOverheadMs: 0.3,
    attempts: 1,
    ...over,
  };
}

function fromPayload(i: number, payload: unknown, over: Partial<UsageInput> = {}): UsageInput {
  const u = extractUsage(payload);
  expect(u).toBeDefined();
  return event(i, {
    promptTokens: u!.promptTokens,
    cachedTokens: u!.cachedTokens,
    outputTokens: u!.outputTokens,
    ...over,
  });
}

// Hand-computed at $1/M input, $0.10/M cached, $4/M output (1 token at $1/M = 1000 nUSD).
const CASES: { name: string; ev: UsageInput; cost: number; savings: number; cached: number }[] = [
  {
    name: 'vLLM non-stream usage',
    ev: fromPayload(0, {
      usage: {
        prompt_tokens: 12000,
        completion_tokens: 350,
        total_tokens: 12350,
        prompt_tokens_details: { cached_tokens: 10240 },
      },
    }),
    cost: 1_760_000 + 1_024_000 + 1_400_000,
    savings: 12_000_000 + 1_400_000 - 4_184_000,
    cached: 10240,
  },
  {
    name: 'SGLang meta_info',
    ev: fromPayload(1, { text: 'hi', meta_info: { prompt_tokens: 5000, completion_tokens: 200, cached_tokens: 4096 } }),
    cost: 904_000 + 409_600 + 800_000,
    savings: 5_000_000 + 800_000 - 2_113_600,
    cached: 4096,
  },
  {
    name: 'streaming final chunk',
    ev: fromPayload(
      2,
      {
        id: 'c',
        object: 'chat.completion.chunk',
        choices: [],
        usage: {
          prompt_tokens: 2048,
          completion_tokens: 64,
          total_tokens: 2112,
          prompt_tokens_details: { cached_tokens: 2048 },
        },
      },
      { stream: true },
    ),
    cost: 0 + 204_800 + 256_000,
    savings: 2_048_000 + 256_000 - 460_800,
    cached: 2048,
  },
  {
    name: 'no usage -> predicted',
    ev: event(3, {
      usageReported: false,
      promptTokens: 3000,
      cachedTokens: 0,
      predictedCachedTokens: 2000,
      outputTokens: 100,
      stream: true,
    }),
    cost: 1_000_000 + 200_000 + 400_000,
    savings: 3_000_000 + 400_000 - 1_600_000,
    cached: 2000,
  },
];

describe('usage record cost', () => {
  it.each(CASES)('$name: exact cost split, cached counted once', ({ ev, cost, savings, cached }) => {
    const r = buildUsageRecord(ev, DEFAULT);
    expect(r.cachedTokens).toBe(cached);
    expect(r.costUncachedInputNusd).toBe((r.promptTokens - cached) * 1000);
    expect(r.costCachedInputNusd).toBe(cached * 100);
    expect(r.costOutputNusd).toBe(r.outputTokens * 4000);
    expect(r.costNusd).toBe(cost);
    expect(r.savingsNusd).toBe(savings);
    expect(r.cfNoCacheNusd).toBe(r.promptTokens * 1000 + r.outputTokens * 4000);
    expect(r.usageSource).toBe(ev.usageReported ? 'reported' : 'predicted');
  });

  it('the cost header is the exact USD amount', () => {
    expect(formatCostHeader(buildUsageRecord(CASES[0].ev, DEFAULT))).toBe('0.004184');
    expect(formatCostHeader(buildUsageRecord(CASES[2].ev, DEFAULT))).toBe('0.0004608');
  });

  it('a worker reporting cached > prompt is clamped, not double-billed', () => {
    const r = buildUsageRecord(
      fromPayload(9, {
        usage: { prompt_tokens: 100, completion_tokens: 0, prompt_tokens_details: { cached_tokens: 500 } },
      }),
      DEFAULT,
    );
    expect(r.cachedTokens).toBe(100);
    expect(r.costNusd).toBe(100 * 100);
  });

  it('custom prices apply their own cached rate; Anthropic-style cache reads and writes are part of the prompt', () => {
    const table = loadPricingTable();
    const mini = compilePricing(table.models['gpt-4o-mini'], 't');
    const r = buildUsageRecord(event(10, { promptTokens: 2000, cachedTokens: 1000, outputTokens: 10 }), mini);
    expect(r.costCachedInputNusd).toBe(75_000); // 1000 × $0.075/M
    expect(r.costUncachedInputNusd).toBe(150_000); // 1000 × $0.15/M
    expect(r.costOutputNusd).toBe(6_000);

    const u = extractUsage({
      usage: { input_tokens: 100, cache_read_input_tokens: 5000, cache_creation_input_tokens: 1000, output_tokens: 50 },
    })!;
    expect(u).toEqual({ promptTokens: 6100, cachedTokens: 5000, outputTokens: 50, cacheWriteTokens: 1000 });
    const sonnet = compilePricing(table.models['claude-sonnet-4'], 't');
    const a = buildUsageRecord(event(11, { ...u }), sonnet);
    expect([a.costUncachedInputNusd, a.costCachedInputNusd, a.costCacheWriteNusd, a.costOutputNusd]).toEqual([
      300_000, 1_500_000, 3_750_000, 750_000,
    ]);
    expect(a.costNusd).toBe(6_300_000);
  });

  it('GPU-time pricing bills prefill and decode seconds; savings scale prefill by uncached tokens', () => {
    const gpu = compilePricing({ gpu_hour_usd: 2.5 }, 't');
    const r = buildUsageRecord(
      event(12, { promptTokens: 1000, cachedTokens: 600, outputTokens: 50, prefillMs: 360, decodeMs: 1440 }),
      gpu,
    );
    expect(r.costUncachedInputNusd).toBe(250_000);
    expect(r.costCachedInputNusd).toBe(0);
    expect(r.costOutputNusd).toBe(1_000_000);
    expect(r.cfNoCacheNusd).toBe(625_000 + 1_000_000);
    expect(r.savingsNusd).toBe(375_000);
  });

  it("a break cause of 'none' is not a cache break; timing from x-sim-timing is kept", () => {
    expect(buildUsageRecord(event(15, { breakCause: 'none' }), DEFAULT).breakCause).toBeNull();
    expect(buildUsageRecord(event(16, { breakCause: 'tool_schema_changed' }), DEFAULT).breakCause).toBe(
      'tool_schema_changed',
    );
    const r = buildUsageRecord(
      event(17, { ...parseSimTiming('queue_ms=1.000;prefill_ms=12.500;decode_ms=80.000;ttft_ms=13.5') }),
      DEFAULT,
    );
    expect([r.prefillMs, r.decodeMs]).toEqual([12.5, 80]);
  });

  it('counterfactual for the original layout uses the diagnostics estimate', async () => {
    const r = buildUsageRecord(
      event(13, { promptTokens: 10000, cachedTokens: 9000, outputTokens: 0, counterfactualPromptTokensCached: 1000 }),
      DEFAULT,
    );
    expect(r.cfOriginalNusd).toBe(9000 * 1000 + 1000 * 100);
    const none = buildUsageRecord(event(14, { promptTokens: 10 }), DEFAULT);
    expect(none.cfOriginalNusd).toBeNull();
    // Reports fall back to the actual cost where diagnostics gave no estimate.
    const d = await aggregateRecords([r, none], { groupBy: 'model' });
    expect(d.totals.cfOriginalNusd).toBe(r.cfOriginalNusd! + none.costNusd);
  });
});

describe('record -> ledger -> report reconcile exactly', () => {
  it('per-request costs, SQLite rows, SQL report and in-memory report agree to the nano-dollar', async () => {
    const ledger = new SqliteLedger({
      path: join(dir, 'reconcile.sqlite'),
      retentionDays: 100_000,
      batchSize: 2,
      flushMs: 50,
    });
    const records: UsageRecord[] = CASES.map((c) => buildUsageRecord(c.ev, DEFAULT));
    for (const r of records) ledger.append(r);
    await ledger.flush();

    const rows: UsageRecord[] = [];
    for await (const r of ledger.query()) rows.push(r);
    expect(rows).toEqual(records);

    const expectedCost = CASES.reduce((a, c) => a + c.cost, 0);
    expect(expectedCost).toBe(8_358_400);
    const sql = await ledger.report({ groupBy: 'model' });
    const mem = await aggregateRecords(records, { groupBy: 'model' });
    for (const d of [sql, mem]) {
      expect(d.totals.costNusd).toBe(expectedCost);
      expect(d.totals.savingsNusd).toBe(CASES.reduce((a, c) => a + c.savings, 0));
      expect(d.totals.promptTokens).toBe(12000 + 5000 + 2048 + 3000);
      expect(d.totals.cachedTokens).toBe(10240 + 4096 + 2048 + 2000);
      expect(d.totals.outputTokens).toBe(714);
      expect(d.totals.predictedUsage).toBe(1);
    }
    const j = toJsonReport(sql);
    expect(j.totals.cost_usd).toBe(0.0083584);
    expect(j.totals.cost_nusd).toBe(8_358_400);
    expect(j.totals.requests).toBe(4);
    expect(j.totals.hit_rate).toBeCloseTo(18384 / 22048, 6);
    expect(j.groups).toHaveLength(1);
    expect(j.groups[0].cost_nusd).toBe(8_358_400);
    await ledger.close();
  });
});
