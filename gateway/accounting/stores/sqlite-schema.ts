// Table layout of the SQLite usage ledger and the record <-> row mapping. Money columns are
// INTEGER nano-dollars, so SUM() in SQL is exact. The index on time serves --since/--until
// and retention; (tenant, time) serves tenant-scoped reports.
import type { UsageRecord } from '../types/usage.ts';

export const SCHEMA_VERSION = 2;

export const COLUMNS = [
  'time',
  'request_id',
  'tenant',
  'key_id',
  'session_id',
  'model',
  'worker',
  'status',
  'stream',
  'usage_source',
  'prompt_tokens',
  'cached_tokens',
  'predicted_cached_tokens',
  'output_tokens',
  'cache_write_tokens',
  'ttft_ms',
  'total_ms',
  'overhead_ms',
  'attempts',
  'error_code',
  'break_cause',
  'prefill_ms',
  'decode_ms',
  'pricing_kind',
  'cost_uncached_nusd',
  'cost_cached_nusd',
  'cost_write_nusd',
  'cost_output_nusd',
  'cost_nusd',
  'cf_nocache_nusd',
  'cf_original_nusd',
  'savings_nusd',
  'savings_layout_nusd',
  'savings_routing_nusd',
  'savings_engine_nusd',
  'billing',
  'timing_source',
] as const;

/** Columns added after version 1, with the DDL that adds them to an older file (old rows: all
 *  savings credited to the engine, billed, no timing source). */
export const MIGRATIONS: readonly { column: string; ddl: string }[] = [
  { column: 'savings_layout_nusd', ddl: 'ALTER TABLE usage ADD COLUMN savings_layout_nusd INTEGER NOT NULL DEFAULT 0' },
  {
    column: 'savings_routing_nusd',
    ddl: 'ALTER TABLE usage ADD COLUMN savings_routing_nusd INTEGER NOT NULL DEFAULT 0',
  },
  { column: 'savings_engine_nusd', ddl: 'ALTER TABLE usage ADD COLUMN savings_engine_nusd INTEGER' },
  { column: 'billing', ddl: "ALTER TABLE usage ADD COLUMN billing TEXT NOT NULL DEFAULT 'billed'" },
  { column: 'timing_source', ddl: 'ALTER TABLE usage ADD COLUMN timing_source TEXT' },
];
/** Runs after MIGRATIONS: rows from version 1 credit their whole saving to the engine. */
export const BACKFILL_SQL = 'UPDATE usage SET savings_engine_nusd = savings_nusd WHERE savings_engine_nusd IS NULL';

export const DDL = `
CREATE TABLE IF NOT EXISTS usage (
  id INTEGER PRIMARY KEY,
  time INTEGER NOT NULL, request_id TEXT NOT NULL, tenant TEXT NOT NULL, key_id TEXT NOT NULL,
  session_id TEXT NOT NULL, model TEXT NOT NULL, worker TEXT NOT NULL, status INTEGER NOT NULL,
  stream INTEGER NOT NULL, usage_source TEXT NOT NULL,
  prompt_tokens INTEGER NOT NULL, cached_tokens INTEGER NOT NULL, predicted_cached_tokens INTEGER,
  output_tokens INTEGER NOT NULL, cache_write_tokens INTEGER NOT NULL,
  ttft_ms REAL, total_ms REAL NOT NULL, overhead_ms REAL NOT NULL, attempts INTEGER NOT NULL,
  error_code TEXT, break_cause TEXT, prefill_ms REAL, decode_ms REAL, pricing_kind TEXT NOT NULL,
  cost_uncached_nusd INTEGER NOT NULL, cost_cached_nusd INTEGER NOT NULL, cost_write_nusd INTEGER NOT NULL,
  cost_output_nusd INTEGER NOT NULL, cost_nusd INTEGER NOT NULL,
  cf_nocache_nusd INTEGER NOT NULL, cf_original_nusd INTEGER, savings_nusd INTEGER NOT NULL,
  savings_layout_nusd INTEGER NOT NULL DEFAULT 0, savings_routing_nusd INTEGER NOT NULL DEFAULT 0,
  savings_engine_nusd INTEGER, billing TEXT NOT NULL DEFAULT 'billed', timing_source TEXT
);
CREATE INDEX IF NOT EXISTS usage_time ON usage(time);
CREATE INDEX IF NOT EXISTS usage_tenant_time ON usage(tenant, time);
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
`;

export const INSERT_SQL = `INSERT INTO usage (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map((c) => '@' + c).join(', ')})`;

export type Row = Record<(typeof COLUMNS)[number], string | number | null>;

/**
 * One record's column values in COLUMNS order: what the ledger inserts (positional) and journals.
 * An array literal in column order, not an object read back column by column (40 keyed loads of
 * one object, megamorphic, on every request's accounting). toRow is derived from it.
 */
export function rowValues(r: UsageRecord): (string | number | null)[] {
  return [
    r.time, // time
    r.requestId, // request_id
    r.tenant, // tenant
    r.keyId, // key_id
    r.sessionId, // session_id
    r.model, // model
    r.worker, // worker
    r.status, // status
    r.stream ? 1 : 0, // stream
    r.usageSource, // usage_source
    r.promptTokens, // prompt_tokens
    r.cachedTokens, // cached_tokens
    r.predictedCachedTokens, // predicted_cached_tokens
    r.outputTokens, // output_tokens
    r.cacheWriteTokens, // cache_write_tokens
    r.ttftMs, // ttft_ms
    r.totalMs, // total_ms
    r.gatewayOverheadMs, // overhead_ms
    r.attempts, // attempts
    r.errorCode, // error_code
    r.breakCause, // break_cause
    r.prefillMs, // prefill_ms
    r.decodeMs, // decode_ms
    r.pricingKind, // pricing_kind
    r.costUncachedInputNusd, // cost_uncached_nusd
    r.costCachedInputNusd, // cost_cached_nusd
    r.costCacheWriteNusd, // cost_write_nusd
    r.costOutputNusd, // cost_output_nusd
    r.costNusd, // cost_nusd
    r.cfNoCacheNusd, // cf_nocache_nusd
    r.cfOriginalNusd, // cf_original_nusd
    r.savingsNusd, // savings_nusd
    r.savingsLayoutNusd, // savings_layout_nusd
    r.savingsRoutingNusd, // savings_routing_nusd
    r.savingsEngineNusd, // savings_engine_nusd
    r.billing, // billing
    r.timingSource, // timing_source
  ];
}

export function toRow(r: UsageRecord): Row {
  const v = rowValues(r);
  const row: Partial<Row> = {};
  for (let i = 0; i < COLUMNS.length; i++) row[COLUMNS[i]] = v[i];
  return row as Row;
}

export function fromRow(w: Row): UsageRecord {
  const n = (v: string | number | null): number => Number(v);
  const on = (v: string | number | null): number | null => (v === null ? null : Number(v));
  const os = (v: string | number | null): string | null => (v === null ? null : String(v));
  return {
    time: n(w.time),
    requestId: String(w.request_id),
    tenant: String(w.tenant),
    keyId: String(w.key_id),
    sessionId: String(w.session_id),
    model: String(w.model),
    worker: String(w.worker),
    status: n(w.status),
    stream: w.stream === 1,
    usageSource: w.usage_source === 'predicted' ? 'predicted' : 'reported',
    promptTokens: n(w.prompt_tokens),
    cachedTokens: n(w.cached_tokens),
    predictedCachedTokens: on(w.predicted_cached_tokens),
    outputTokens: n(w.output_tokens),
    cacheWriteTokens: n(w.cache_write_tokens),
    ttftMs: on(w.ttft_ms),
    totalMs: n(w.total_ms),
    gatewayOverheadMs: n(w.overhead_ms),
    attempts: n(w.attempts),
    errorCode: os(w.error_code),
    breakCause: os(w.break_cause),
    prefillMs: on(w.prefill_ms),
    decodeMs: on(w.decode_ms),
    pricingKind: w.pricing_kind === 'gpu' ? 'gpu' : w.pricing_kind === 'token' ? 'token' : 'none',
    costUncachedInputNusd: n(w.cost_uncached_nusd),
    costCachedInputNusd: n(w.cost_cached_nusd),
    costCacheWriteNusd: n(w.cost_write_nusd),
    costOutputNusd: n(w.cost_output_nusd),
    costNusd: n(w.cost_nusd),
    cfNoCacheNusd: n(w.cf_nocache_nusd),
    cfOriginalNusd: on(w.cf_original_nusd),
    savingsNusd: n(w.savings_nusd),
    savingsLayoutNusd: n(w.savings_layout_nusd),
    savingsRoutingNusd: n(w.savings_routing_nusd),
    savingsEngineNusd: w.savings_engine_nusd === null ? n(w.savings_nusd) : n(w.savings_engine_nusd),
    billing: w.billing === 'billed_failure' || w.billing === 'unbilled_failure' ? w.billing : 'billed',
    timingSource: w.timing_source === 'reported' || w.timing_source === 'modelled' ? w.timing_source : null,
  };
}
