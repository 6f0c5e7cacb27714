// The durable usage ledger contract. append() is called on the request path and must never
// block or throw; persistence happens in batches off that path. Losing the ledger loses
// records (counted in `dropped`), never requests.
import type { ReportData, ReportQuery } from './report.ts';
import type { UsageRecord } from './usage.ts';

export interface LedgerFilter {
  /** Inclusive lower bound, epoch ms. */
  since?: number;
  /** Exclusive upper bound, epoch ms. */
  until?: number;
  tenant?: string;
  model?: string;
  sessionId?: string;
  limit?: number;
}

export interface LedgerStats {
  appended: number;
  written: number;
  dropped: number;
  queued: number;
  /** Remote stores with a local spool: records spooled during outages, and forwarded since. */
  spooled?: number;
  forwarded?: number;
}

export interface UsageLedger {
  /** Queues one record; never blocks, never throws. */
  append(rec: UsageRecord): void;
  /** Writes everything queued so far. */
  flush(): Promise<void>;
  /** Records matching the filter, oldest first. */
  query(filter?: LedgerFilter): AsyncIterable<UsageRecord>;
  /** Aggregated report computed by the store itself (SQL); absent -> aggregate query() rows. */
  report?(q: ReportQuery): Promise<ReportData>;
  /** Nano-dollars spent by a tenant with time >= sinceMs, queued records included (budgets). */
  spendNusd?(tenant: string, sinceMs: number): Promise<number>;
  stats(): LedgerStats;
  /** Flushes and releases the store. */
  close(): Promise<void>;
}

/** Called with the number of records lost each time some are dropped (wire to the prom counter). */
export type DropListener = (count: number) => void;

export const DEFAULT_MAX_QUEUE = 100_000;
