// Benchmark: cost of writing the usage record on the request path.
//   npx tsx gateway/accounting/report/bench-usage.ts [--events 100000] [--store sqlite|none]
// Times recorder.onUsage (price + ledger append + metric increments) per event with a real
// SQLite ledger and a real prom-client registry, yielding to the event loop every 100 events so
// batched ledger writes happen as they would between requests. Prints p50 / p99 / max in µs.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { setImmediate as tick } from 'node:timers/promises';
import { Registry } from 'prom-client';
import { SqliteLedger } from '../stores/sqlite.ts';
import { createMetrics } from '../../metrics.ts';
import { createPricingLookup } from '../record/pricing.ts';
import { createUsageRecorder } from '../record/recorder.ts';
import type { UsageInput } from '../types/usage.ts';

const DEFAULT_EVENTS = 100_000;
const YIELD_EVERY = 100;
const TARGET_P50_US = 50;

function pct(sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { events: { type: 'string' }, store: { type: 'string' } } });
  const n = values.events ? Number(values.events) : DEFAULT_EVENTS;
  const dir = mkdtempSync(join(tmpdir(), 'ctxgate-bench-usage-'));
  const ledger =
    values.store === 'none'
      ? undefined
      : new SqliteLedger({ path: join(dir, 'u.sqlite'), retentionDays: 30, batchSize: 256, flushMs: 1000 });
  const registry = new Registry();
  const models = ['qwen3-8b', 'llama3-70b'].map((name) => ({ name }));
  const rec = createUsageRecorder({
    ledger,
    pricingFor: createPricingLookup({ models }),
    metrics: createMetrics(registry),
  });
  const events: UsageInput[] = Array.from({ length: 1000 }, (_, i) => ({
    time: Date.now(),
    requestId: `r${i}`,
    tenant: `team-${i % 10}`,
    keyId: 'k',
    sessionId: `s${i % 50}`,
    model: models[i % 2].name,
    worker: `w${i % 4}`,
    status: 200,
    stream: i % 2 === 0,
    promptTokens: 20_000 + i,
    cachedTokens: 18_000,
    predictedCachedTokens: 18_500,
    outputTokens: 300,
    usageReported: i % 20 !== 0,
    ttftMs: 120,
    totalMs: 2500,
    gatewayOverheadMs: 0.4,
    attempts: 1,
    counterfactualPromptTokensCached: 4_000,
  }));
  // Warm up JIT and label maps.
  for (let i = 0; i < 5000; i++) rec.onUsage({ ...events[i % events.length], requestId: `w${i}` });
  const us = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const e = events[i % events.length];
    e.requestId = `q${i}`;
    const t = process.hrtime.bigint();
    rec.onUsage(e);
    us[i] = Number(process.hrtime.bigint() - t) / 1000;
    if (i % YIELD_EVERY === YIELD_EVERY - 1) await tick();
  }
  await rec.close();
  const stats = ledger?.stats();
  await ledger?.close();
  rmSync(dir, { recursive: true, force: true });
  us.sort();
  console.log(`onUsage over ${n.toLocaleString('en-US')} events (store: ${ledger ? 'sqlite' : 'none'}):`);
  console.log(
    `  p50 ${pct(us, 0.5).toFixed(2)} µs   p99 ${pct(us, 0.99).toFixed(2)} µs   max ${us[us.length - 1].toFixed(1)} µs   (target p50 <= ${TARGET_P50_US} µs)`,
  );
  if (stats) console.log(`  ledger: written ${stats.written.toLocaleString('en-US')}, dropped ${stats.dropped}`);
}

await main();
