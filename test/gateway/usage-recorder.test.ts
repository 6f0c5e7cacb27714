// The recorder the gateway wires as deps.onUsage, load-time pricing validation, and the parsers
// of worker timing. The recorder must never throw into the gateway and must count what it loses.
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { SqliteLedger } from '../../gateway/accounting/stores/sqlite.ts';
import { createMetrics } from '../../gateway/metrics.ts';
import { parseSimTiming } from '../../gateway/accounting/record/extract.ts';
import {
  compilePricing,
  createPricingLookup,
  DEFAULT_PRICING_TABLE,
  loadPricingTable,
  PricingError,
  validatePricing,
} from '../../gateway/accounting/record/pricing.ts';
import { createUsageRecorder } from '../../gateway/accounting/record/recorder.ts';
import type { UsageRecord } from '../../gateway/accounting/types/usage.ts';
import { usageInput } from '../helpers/usage.ts';

const ev = usageInput;

async function counterValue(registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number> {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
  return (m?.values ?? [])
    .filter((v) => Object.entries(labels).every(([k, val]) => (v.labels as Record<string, unknown>)[k] === val))
    .reduce((a, v) => a + v.value, 0);
}

describe('createUsageRecorder', () => {
  it('prices, stores, remembers and counts each request', async () => {
    const registry = new Registry();
    const ledger = new SqliteLedger({ path: ':memory:', retentionDays: 30, batchSize: 10, flushMs: 20 });
    const pricing = compilePricing(DEFAULT_PRICING_TABLE.default!, 'd');
    const rec = createUsageRecorder({ ledger, pricingFor: () => pricing, metrics: createMetrics(registry) });
    for (let i = 0; i < 5; i++) rec.onUsage(ev(i));
    const r = rec.lastRecord('r3')!;
    expect(r.costNusd).toBe(200 * 1000 + 800 * 100 + 10 * 4000);
    await rec.close();
    const rows: UsageRecord[] = [];
    for await (const x of ledger.query()) rows.push(x);
    expect(rows).toHaveLength(5);
    expect(await counterValue(registry, 'ctxgate_cost_usd_total', { kind: 'cached_input' })).toBeCloseTo(
      (5 * 80_000) / 1e9,
      12,
    );
    expect(await counterValue(registry, 'ctxgate_cost_usd_total')).toBeCloseTo((5 * r.costNusd) / 1e9, 12);
    expect(await counterValue(registry, 'ctxgate_savings_usd_total')).toBeCloseTo((5 * r.savingsNusd) / 1e9, 12);
    // Token counters stay with the gateway core unless asked for.
    expect(await counterValue(registry, 'ctxgate_prompt_tokens_total')).toBe(0);
    await ledger.close();
  });

  it('never throws, and counts records lost by itself or by the ledger', async () => {
    const registry = new Registry();
    const ledger = new SqliteLedger({
      path: ':memory:',
      retentionDays: 30,
      batchSize: 100,
      flushMs: 60_000,
      maxQueue: 2,
    });
    let calls = 0;
    const rec = createUsageRecorder({
      ledger,
      pricingFor: () => {
        if (++calls === 1) throw new Error('pricing bug');
        return undefined; // unpriced: recorded at cost 0
      },
      metrics: createMetrics(registry),
      countTokens: true,
    });
    for (let i = 0; i < 5; i++) expect(() => rec.onUsage(ev(i))).not.toThrow();
    expect(rec.lastRecord('r0')).toBeUndefined();
    expect(rec.lastRecord('r4')?.pricingKind).toBe('none');
    await rec.close();
    expect(rec.dropped()).toBe(1 + 2);
    expect(await counterValue(registry, 'ctxgate_usage_records_dropped_total')).toBe(3);
    expect(await counterValue(registry, 'ctxgate_prompt_tokens_total')).toBe(4000);
    await ledger.close();
  });

  it('keeps only the last N records for headers', () => {
    const rec = createUsageRecorder({ pricingFor: () => undefined, lastRecords: 3 });
    for (let i = 0; i < 5; i++) rec.onUsage(ev(i));
    expect(rec.lastRecord('r1')).toBeUndefined();
    expect(rec.lastRecord('r2')?.requestId).toBe('r2');
    void rec.close();
  });
});

describe('validatePricing', () => {
  const models = [
    { name: 'priced', pricing: { input_per_mtok: 3, cached_input_per_mtok: 0.3, output_per_mtok: 15 } },
    { name: 'qwen-local', upstream_model: 'gpt-4o-mini' },
    { name: 'unpriced' },
  ];

  it('rejects a model with no price when cost reporting is on', () => {
    expect(() => validatePricing({ models }, { table: null })).toThrow(PricingError);
    try {
      validatePricing(
        { models },
        { table: { models: { 'gpt-4o-mini': { input_per_mtok: 1, cached_input_per_mtok: 0.1, output_per_mtok: 1 } } } },
      );
      expect.unreachable();
    } catch (err) {
      expect((err as PricingError).path).toBe('models[2].pricing');
      expect((err as Error).message).toMatch(/'unpriced' has no price/);
    }
    expect(validatePricing({ models }, { table: null, costReporting: false }).has('unpriced')).toBe(false);
  });

  it('resolves config price, then table by name, by upstream_model, then the default', () => {
    const table = loadPricingTable();
    const m = validatePricing({ models }, { table });
    expect(m.get('priced')).toMatchObject({
      kind: 'token',
      inputPico: 3_000_000,
      cachedPico: 300_000,
      source: 'config',
    });
    expect(m.get('qwen-local')).toMatchObject({ cachedPico: 75_000, source: 'table:gpt-4o-mini' });
    expect(m.get('unpriced')).toMatchObject({
      inputPico: 1_000_000,
      cachedPico: 100_000,
      outputPico: 4_000_000,
      source: 'table:default',
    });
    const lookup = createPricingLookup({ models }, { table });
    expect(lookup('deepseek-chat')).toMatchObject({ inputPico: 270_000, source: 'table:deepseek-chat' });
    expect(lookup('never-configured')).toMatchObject({ source: 'table:default' });
  });

  it('configs/pricing.yaml documents the same default as the built-in table', () => {
    expect(loadPricingTable().default).toEqual(DEFAULT_PRICING_TABLE.default);
  });

  it('rejects negative prices and cached prices above the input price', () => {
    expect(() =>
      validatePricing({
        models: [{ name: 'x', pricing: { input_per_mtok: -1, cached_input_per_mtok: 0, output_per_mtok: 1 } }],
      }),
    ).toThrow(/input_per_mtok/);
    expect(() =>
      validatePricing({
        models: [{ name: 'x', pricing: { input_per_mtok: 1, cached_input_per_mtok: 2, output_per_mtok: 1 } }],
      }),
    ).toThrow(/exceeds/);
    expect(validatePricing({ models: [{ name: 'g', pricing: { gpu_hour_usd: 2.5 } }] }).get('g')).toMatchObject({
      kind: 'gpu',
      gpuMicroPerHour: 2_500_000,
    });
  });
});

describe('parseSimTiming', () => {
  it('reads JSON and key=value forms, ignores junk', () => {
    expect(parseSimTiming('{"prefill_ms":12.5,"decode_ms":80}')).toEqual({ prefillMs: 12.5, decodeMs: 80 });
    expect(parseSimTiming('prefill_ms=3; decode_ms=4')).toEqual({ prefillMs: 3, decodeMs: 4 });
    expect(parseSimTiming('prefill_ms=abc')).toEqual({});
    expect(parseSimTiming('{bad')).toEqual({});
    expect(parseSimTiming(undefined)).toEqual({});
  });
});
