// Text renderers of a ReportData: JSON (machine), CSV (spreadsheets), Markdown (humans, CI logs).
// Money leaves nano-dollars only here. JSON carries both `cost_usd` and the exact `cost_nusd`.
import { formatUsd, nusdToUsd } from '../types/money.ts';
import { hitRate, type ReportData, type Sums } from '../types/report.ts';

export interface JsonSums {
  requests: number;
  prompt_tokens: number;
  cached_tokens: number;
  output_tokens: number;
  cost_usd: number;
  savings_usd: number;
  hit_rate: number;
  predicted_cached_tokens: number;
  cost_nusd: number;
  savings_nusd: number;
  savings_by_cause_usd: { layout: number; routing: number; engine: number };
  savings_by_cause_nusd: { layout: number; routing: number; engine: number };
  cost_by_kind_usd: { uncached_input: number; cached_input: number; cache_write: number; output: number };
  no_cache_cost_usd: number;
  original_layout_cost_usd: number;
  errors: number;
  billed_failures: number;
  predicted_usage_requests: number;
}

export interface JsonReport {
  group_by: string;
  since: string | null;
  until: string | null;
  tenant: string | null;
  totals: JsonSums;
  groups: (JsonSums & { key: string })[];
}

function round(x: number, digits = 6): number {
  return Number(x.toFixed(digits));
}

export function jsonSums(s: Sums): JsonSums {
  return {
    requests: s.requests,
    prompt_tokens: s.promptTokens,
    cached_tokens: s.cachedTokens,
    output_tokens: s.outputTokens,
    cost_usd: nusdToUsd(s.costNusd),
    savings_usd: nusdToUsd(s.savingsNusd),
    hit_rate: round(hitRate(s)),
    predicted_cached_tokens: s.predictedCachedTokens,
    cost_nusd: s.costNusd,
    savings_nusd: s.savingsNusd,
    savings_by_cause_usd: {
      layout: nusdToUsd(s.savingsLayoutNusd),
      routing: nusdToUsd(s.savingsRoutingNusd),
      engine: nusdToUsd(s.savingsEngineNusd),
    },
    savings_by_cause_nusd: { layout: s.savingsLayoutNusd, routing: s.savingsRoutingNusd, engine: s.savingsEngineNusd },
    cost_by_kind_usd: {
      uncached_input: nusdToUsd(s.costUncachedNusd),
      cached_input: nusdToUsd(s.costCachedNusd),
      cache_write: nusdToUsd(s.costWriteNusd),
      output: nusdToUsd(s.costOutputNusd),
    },
    no_cache_cost_usd: nusdToUsd(s.cfNoCacheNusd),
    original_layout_cost_usd: nusdToUsd(s.cfOriginalNusd),
    errors: s.errors,
    billed_failures: s.billedFailures,
    predicted_usage_requests: s.predictedUsage,
  };
}

const iso = (t: number | undefined): string | null => (t === undefined ? null : new Date(t).toISOString());

export function toJsonReport(d: ReportData): JsonReport {
  return {
    group_by: d.query.groupBy,
    since: iso(d.query.since),
    until: iso(d.query.until),
    tenant: d.query.tenant ?? null,
    totals: jsonSums(d.totals),
    groups: d.groups.map((g) => ({ key: g.key, ...jsonSums(g) })),
  };
}

export function renderJson(d: ReportData): string {
  return JSON.stringify(toJsonReport(d), null, 2) + '\n';
}

const CSV_HEADER = [
  'key',
  'requests',
  'prompt_tokens',
  'cached_tokens',
  'output_tokens',
  'hit_rate',
  'cost_usd',
  'uncached_input_usd',
  'cached_input_usd',
  'cache_write_usd',
  'output_usd',
  'no_cache_cost_usd',
  'savings_usd',
  'savings_layout_usd',
  'savings_routing_usd',
  'savings_engine_usd',
  'errors',
  'billed_failures',
];

function csvCell(v: string | number): string {
  const s = String(v);
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

function csvRow(key: string, s: Sums): string {
  const j = jsonSums(s);
  return [
    key,
    j.requests,
    j.prompt_tokens,
    j.cached_tokens,
    j.output_tokens,
    j.hit_rate,
    j.cost_usd,
    j.cost_by_kind_usd.uncached_input,
    j.cost_by_kind_usd.cached_input,
    j.cost_by_kind_usd.cache_write,
    j.cost_by_kind_usd.output,
    j.no_cache_cost_usd,
    j.savings_usd,
    j.savings_by_cause_usd.layout,
    j.savings_by_cause_usd.routing,
    j.savings_by_cause_usd.engine,
    j.errors,
    j.billed_failures,
  ]
    .map(csvCell)
    .join(',');
}

/** One row per group, then a `TOTAL` row. */
export function renderCsv(d: ReportData): string {
  const lines = [CSV_HEADER.join(','), ...d.groups.map((g) => csvRow(g.key, g)), csvRow('TOTAL', d.totals)];
  return lines.join('\n') + '\n';
}

const pct = (x: number): string => `${(x * 100).toFixed(1)}%`;
const int = (x: number): string => x.toLocaleString('en-US');
const mdCell = (s: string): string => s.replace(/\|/g, '\\|') || '(none)';

export function renderMarkdown(d: ReportData): string {
  const t = d.totals;
  const range = `${iso(d.query.since) ?? (d.firstTime === null ? '-' : new Date(d.firstTime).toISOString())} .. ${iso(d.query.until) ?? (d.lastTime === null ? '-' : new Date(d.lastTime).toISOString())}`;
  const out = [
    '# ctxgate usage report',
    '',
    `Range: ${range}${d.query.tenant ? ` · tenant: ${d.query.tenant}` : ''} · grouped by ${d.query.groupBy}`,
    '',
    `- Requests: ${int(t.requests)} (${int(t.errors)} errors, ${int(t.billedFailures)} of them billed on the worker's usage; ${int(t.predictedUsage)} priced on predicted usage)`,
    `- Prompt tokens: ${int(t.promptTokens)}, cached: ${int(t.cachedTokens)} (hit rate ${pct(hitRate(t))}), output: ${int(t.outputTokens)}`,
    `- Cost: ${formatUsd(t.costNusd)} (uncached input ${formatUsd(t.costUncachedNusd)}, cached input ${formatUsd(t.costCachedNusd)}, cache write ${formatUsd(t.costWriteNusd)}, output ${formatUsd(t.costOutputNusd)})`,
    `- Without prefix caching: ${formatUsd(t.cfNoCacheNusd)} · saved ${formatUsd(t.savingsNusd)} (layout ${formatUsd(t.savingsLayoutNusd)}, routing ${formatUsd(t.savingsRoutingNusd)}, engine ${formatUsd(t.savingsEngineNusd)}) · with the agents' original prompt layout (estimate): ${formatUsd(t.cfOriginalNusd)}`,
    '',
    `## By ${d.query.groupBy}`,
    '',
    `| ${d.query.groupBy} | requests | prompt | cached | hit rate | output | cost | saved |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...d.groups.map(
      (g) =>
        `| ${mdCell(g.key)} | ${int(g.requests)} | ${int(g.promptTokens)} | ${int(g.cachedTokens)} | ${pct(hitRate(g))} | ${int(g.outputTokens)} | ${formatUsd(g.costNusd)} | ${formatUsd(g.savingsNusd)} |`,
    ),
  ];
  if (d.topSessions.length) {
    out.push('', '## Top sessions by cost', '', '| session | requests | hit rate | cost |', '|---|---:|---:|---:|');
    for (const s of d.topSessions)
      out.push(`| ${mdCell(s.key)} | ${int(s.requests)} | ${pct(hitRate(s))} | ${formatUsd(s.costNusd)} |`);
  }
  if (d.breaks.length) {
    out.push('', '## Cache breaks by cause', '', '| cause | count |', '|---|---:|');
    for (const b of d.breaks) out.push(`| ${mdCell(b.cause)} | ${int(b.count)} |`);
  }
  return out.join('\n') + '\n';
}
