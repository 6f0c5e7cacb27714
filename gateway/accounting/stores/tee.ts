// Two ledgers on at once (`ledger.stores: [redis, sqlite]`): every record goes to both, reads come
// from the first (the shared Redis Stream sees every replica; the local SQLite file only this one).
// Appends never block or throw (each store queues on its own); stats add up the writers.
import type { ReportData, ReportQuery } from '../types/report.ts';
import type { UsageRecord } from '../types/usage.ts';
import type { LedgerFilter, LedgerStats, UsageLedger } from '../types/ledger.ts';

export class TeeLedger implements UsageLedger {
  readonly report?: (q: ReportQuery) => Promise<ReportData>;
  readonly spendNusd?: (tenant: string, sinceMs: number) => Promise<number>;

  constructor(readonly stores: readonly [UsageLedger, ...UsageLedger[]]) {
    const [primary] = stores;
    if (primary.report) this.report = async (q) => (await this.flush(), primary.report!(q));
    if (primary.spendNusd) this.spendNusd = (t, s) => primary.spendNusd!(t, s);
  }

  append(rec: UsageRecord): void {
    for (const s of this.stores) s.append(rec);
  }

  async flush(): Promise<void> {
    await Promise.all(this.stores.map((s) => s.flush()));
  }

  query(filter?: LedgerFilter): AsyncIterable<UsageRecord> {
    return this.stores[0].query(filter);
  }

  /** The primary store's counts, plus drops anywhere (a record missing from either is lost there). */
  stats(): LedgerStats {
    const all = this.stores.map((s) => s.stats());
    return { ...all[0], dropped: all.reduce((n, s) => n + s.dropped, 0) };
  }

  async close(): Promise<void> {
    await Promise.all(this.stores.map((s) => s.close()));
  }
}
