// FOCUS 1.2 export (FinOps Open Cost and Usage Specification): the usage ledger as the CSV cost
// and usage rows finance tools ingest. One row per (hour, tenant, session, model, worker, SKU),
// where a SKU is one priced kind of work on one model: uncached input, cached input, cache write
// and output tokens (token pricing) or prefill and decode GPU-hours (GPU-time pricing). Costs are
// exact decimal USD from integer nano-dollars, so the rows of a range sum to the JSON report of
// the same range to the nano-dollar. Self-hosted: list, contracted, effective and billed cost are
// the same figure. Unbilled failures (no cost, no tokens) produce no row. Columns follow the FOCUS
// 1.2 specification (focus.finops.org); the ctxgate-specific ones carry the `x_` prefix it reserves.
// O(records) time, O(rows) memory.
import type { UsageLedger } from '../types/ledger.ts';
import { formatUsdExact, NANO_PER_USD } from '../types/money.ts';
import type { UsageRecord } from '../types/usage.ts';
import type { ReportQuery } from '../types/report.ts';

export const FOCUS_COLUMNS = [
  'BilledCost',
  'EffectiveCost',
  'ListCost',
  'ContractedCost',
  'BillingCurrency',
  'ChargeCategory',
  'ChargeClass',
  'ChargeDescription',
  'ChargeFrequency',
  'ChargePeriodStart',
  'ChargePeriodEnd',
  'BillingPeriodStart',
  'BillingPeriodEnd',
  'ServiceProviderName',
  'HostProviderName',
  'InvoiceIssuerName',
  'ServiceName',
  'ServiceCategory',
  'ServiceSubcategory',
  'ResourceId',
  'ResourceName',
  'ResourceType',
  'ConsumedQuantity',
  'ConsumedUnit',
  'PricingQuantity',
  'PricingUnit',
  'PricingCategory',
  'ListUnitPrice',
  'ContractedUnitPrice',
  'SkuId',
  'SkuPriceId',
  'Tags',
  'x_Requests',
  'x_SavingsUsd',
] as const;

export const FOCUS_SERVICE_NAME = 'ctxgate LLM inference';
export const FOCUS_PROVIDER = 'ctxgate (self-hosted)';
const HOUR_MS = 3_600_000;
const GPU_MS_PER_HOUR = HOUR_MS;

type Sku = 'input' | 'cached_input' | 'cache_write' | 'output' | 'prefill_gpu' | 'decode_gpu';
const SKU_TEXT: Record<Sku, string> = {
  input: 'uncached input tokens',
  cached_input: 'cached input tokens',
  cache_write: 'cache write tokens',
  output: 'output tokens',
  prefill_gpu: 'prefill GPU time',
  decode_gpu: 'decode GPU time',
};

interface Acc {
  hour: number;
  tenant: string;
  session: string;
  model: string;
  worker: string;
  sku: Sku;
  nusd: number;
  quantity: number;
  requests: number;
  savingsNusd: number;
}

function parts(r: UsageRecord): { sku: Sku; nusd: number; quantity: number }[] {
  if (r.pricingKind === 'gpu') {
    return [
      { sku: 'prefill_gpu', nusd: r.costUncachedInputNusd, quantity: (r.prefillMs ?? 0) / GPU_MS_PER_HOUR },
      { sku: 'decode_gpu', nusd: r.costOutputNusd, quantity: (r.decodeMs ?? 0) / GPU_MS_PER_HOUR },
    ];
  }
  return [
    { sku: 'input', nusd: r.costUncachedInputNusd, quantity: r.promptTokens - r.cachedTokens - r.cacheWriteTokens },
    { sku: 'cached_input', nusd: r.costCachedInputNusd, quantity: r.cachedTokens },
    { sku: 'cache_write', nusd: r.costCacheWriteNusd, quantity: r.cacheWriteTokens },
    { sku: 'output', nusd: r.costOutputNusd, quantity: r.outputTokens },
  ];
}

function csvCell(v: string | number): string {
  const s = String(v);
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

const iso = (t: number): string => new Date(t).toISOString();

function monthBounds(t: number): [string, string] {
  const d = new Date(t);
  return [
    iso(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)),
    iso(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)),
  ];
}

/** Unit price as a plain decimal (USD per unit), from the row's exact cost and quantity. */
function unitPrice(nusd: number, quantity: number): string {
  if (!(quantity > 0)) return '0';
  return String(Number((nusd / NANO_PER_USD / quantity).toPrecision(12)));
}

function row(a: Acc): string {
  const cost = formatUsdExact(a.nusd);
  const gpu = a.sku === 'prefill_gpu' || a.sku === 'decode_gpu';
  const unit = gpu ? 'GPU Hours' : 'Tokens';
  const qty = gpu ? String(Number(a.quantity.toPrecision(12))) : String(a.quantity);
  const [bpStart, bpEnd] = monthBounds(a.hour);
  const price = unitPrice(a.nusd, a.quantity);
  const tags = JSON.stringify({ tenant: a.tenant, session: a.session, model: a.model });
  const cells: (string | number)[] = [
    cost,
    cost,
    cost,
    cost,
    'USD',
    'Usage',
    '',
    `${a.model}: ${SKU_TEXT[a.sku]}`,
    'Usage-Based',
    iso(a.hour),
    iso(a.hour + HOUR_MS),
    bpStart,
    bpEnd,
    FOCUS_PROVIDER,
    FOCUS_PROVIDER,
    FOCUS_PROVIDER,
    FOCUS_SERVICE_NAME,
    'AI and Machine Learning',
    'Generative AI',
    a.worker,
    a.worker,
    'Inference worker',
    qty,
    unit,
    qty,
    unit,
    'Standard',
    price,
    price,
    `${a.model}/${a.sku}`,
    `${a.model}/${a.sku}`,
    tags,
    a.requests,
    formatUsdExact(a.savingsNusd),
  ];
  return cells.map(csvCell).join(',');
}

/** FOCUS rows aggregated from records (already filtered to the range and tenant). */
export async function focusRows(records: AsyncIterable<UsageRecord> | Iterable<UsageRecord>): Promise<Acc[]> {
  const acc = new Map<string, Acc>();
  for await (const r of records) {
    if (r.billing === 'unbilled_failure') continue;
    const hour = Math.floor(r.time / HOUR_MS) * HOUR_MS;
    let first = true;
    for (const p of parts(r)) {
      if (p.nusd === 0 && !(p.quantity > 0)) continue;
      const key = `${hour}\u0000${r.tenant}\u0000${r.sessionId}\u0000${r.model}\u0000${r.worker}\u0000${p.sku}`;
      let a = acc.get(key);
      if (!a)
        acc.set(
          key,
          (a = {
            hour,
            tenant: r.tenant,
            session: r.sessionId,
            model: r.model,
            worker: r.worker,
            sku: p.sku,
            nusd: 0,
            quantity: 0,
            requests: 0,
            savingsNusd: 0,
          }),
        );
      a.nusd += p.nusd;
      a.quantity += p.quantity;
      // A request and its saving are counted once, on its first SKU row.
      if (first) {
        a.requests++;
        a.savingsNusd += r.savingsNusd;
        first = false;
      }
    }
  }
  return [...acc.values()].sort(
    (x, y) =>
      x.hour - y.hour ||
      x.tenant.localeCompare(y.tenant) ||
      x.session.localeCompare(y.session) ||
      x.model.localeCompare(y.model) ||
      x.worker.localeCompare(y.worker) ||
      x.sku.localeCompare(y.sku),
  );
}

/** The FOCUS CSV of a report query's range and tenant (group_by does not apply: rows are leaf-level). */
export async function renderFocus(ledger: UsageLedger, q: ReportQuery): Promise<string> {
  await ledger.flush();
  const rows = await focusRows(ledger.query({ since: q.since, until: q.until, tenant: q.tenant }));
  return [FOCUS_COLUMNS.join(','), ...rows.map(row)].join('\n') + '\n';
}
