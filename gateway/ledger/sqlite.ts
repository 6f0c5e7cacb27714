// Embedded usage ledger: one SQLite file in WAL mode. Records are queued in memory and written
// in batches (one transaction per batch) off the request path; a timer deletes rows older than
// retention_days. Survives restarts (it is just a file). Reads use the same connection: SQLite
// calls are synchronous, so the report runs between batches, never inside one.
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { ReportData, ReportQuery } from '../report/types.ts';
import type { UsageRecord } from '../usage/types.ts';
import { BatchQueue } from './batch-queue.ts';
import {
  BACKFILL_SQL,
  DDL,
  INSERT_SQL,
  MIGRATIONS,
  SCHEMA_VERSION,
  fromRow,
  toRow,
  type Row,
} from './sqlite-schema.ts';
import { sqliteReport } from './sqlite-report.ts';
import type { DropListener, LedgerFilter, LedgerStats, UsageLedger } from './types.ts';

export const DEFAULT_RETENTION_SWEEP_MS = 3_600_000;
const DAY_MS = 86_400_000;

export interface SqliteLedgerOptions {
  path: string;
  retentionDays: number;
  batchSize: number;
  flushMs: number;
  maxQueue?: number;
  retentionSweepMs?: number;
  onDrop?: DropListener;
  onError?: (err: unknown) => void;
  /** Open without the writer machinery (reports, CLI). */
  readonly?: boolean;
}

export class SqliteLedger implements UsageLedger {
  readonly db: Database.Database;
  private readonly queue: BatchQueue<UsageRecord>;
  private readonly sweep: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(private readonly o: SqliteLedgerOptions) {
    if (o.path !== ':memory:' && !o.readonly) mkdirSync(dirname(o.path), { recursive: true });
    this.db = new Database(o.path, { readonly: o.readonly ?? false, fileMustExist: o.readonly ?? false });
    if (!o.readonly) {
      this.db.pragma('journal_mode = WAL');
      // WAL + NORMAL: a crash can lose the last batch, never corrupt the file.
      this.db.pragma('synchronous = NORMAL');
      this.db.exec(DDL);
      this.migrate();
    }
    const insert = o.readonly ? null : this.db.prepare(INSERT_SQL);
    const insertMany = this.db.transaction((batch: UsageRecord[]) => {
      for (const r of batch) insert!.run(toRow(r));
    });
    this.queue = new BatchQueue<UsageRecord>({
      batchSize: o.batchSize,
      flushMs: o.flushMs,
      maxQueue: o.maxQueue,
      write: (batch) => {
        if (o.readonly) throw new Error('ledger opened read-only');
        insertMany(batch);
      },
      onDrop: o.onDrop,
      onError: o.onError,
    });
    if (!o.readonly) {
      this.prune();
      this.sweep = setInterval(() => this.prune(), o.retentionSweepMs ?? DEFAULT_RETENTION_SWEEP_MS);
      this.sweep.unref();
    }
  }

  /** Adds the columns a version-1 file lacks (CREATE TABLE IF NOT EXISTS left it as it was). */
  private migrate(): void {
    const have = new Set((this.db.prepare('PRAGMA table_info(usage)').all() as { name: string }[]).map((c) => c.name));
    this.db.transaction(() => {
      const added = MIGRATIONS.filter((m) => !have.has(m.column));
      for (const m of added) this.db.exec(m.ddl);
      if (added.length) this.db.exec(BACKFILL_SQL);
      this.db.prepare('INSERT OR REPLACE INTO meta (k, v) VALUES (?, ?)').run('schema_version', String(SCHEMA_VERSION));
    })();
  }

  append(rec: UsageRecord): void {
    this.queue.push(rec);
  }

  flush(): Promise<void> {
    return this.queue.drain();
  }

  /** Deletes rows older than the retention window; returns how many. */
  prune(now = Date.now()): number {
    if (this.closed || this.o.readonly) return 0;
    try {
      return this.db.prepare('DELETE FROM usage WHERE time < ?').run(now - this.o.retentionDays * DAY_MS).changes;
    } catch (err) {
      this.o.onError?.(err);
      return 0;
    }
  }

  async *query(filter: LedgerFilter = {}): AsyncIterable<UsageRecord> {
    const parts: string[] = [];
    const params: Record<string, string | number> = {};
    const add = (sql: string, key: string, v: string | number | undefined): void => {
      if (v === undefined) return;
      parts.push(sql);
      params[key] = v;
    };
    add('time >= @since', 'since', filter.since);
    add('time < @until', 'until', filter.until);
    add('tenant = @tenant', 'tenant', filter.tenant);
    add('model = @model', 'model', filter.model);
    add('session_id = @session', 'session', filter.sessionId);
    const sql = `SELECT * FROM usage ${parts.length ? 'WHERE ' + parts.join(' AND ') : ''} ORDER BY time, id${filter.limit ? ` LIMIT ${Math.floor(filter.limit)}` : ''}`;
    for (const row of this.db.prepare(sql).iterate(params)) yield fromRow(row as Row);
  }

  async report(q: ReportQuery): Promise<ReportData> {
    return sqliteReport(this.db, q);
  }

  async spendNusd(tenant: string, sinceMs: number): Promise<number> {
    // Flush first so a burst of queued requests counts against the budget right away.
    await this.flush();
    const r = this.db
      .prepare('SELECT TOTAL(cost_nusd) AS n FROM usage WHERE tenant = ? AND time >= ?')
      .get(tenant, Math.floor(sinceMs)) as { n: number };
    return r.n;
  }

  count(): number {
    return (this.db.prepare('SELECT COUNT(*) AS n FROM usage').get() as { n: number }).n;
  }

  stats(): LedgerStats {
    return this.queue.stats();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    if (this.sweep) clearInterval(this.sweep);
    await this.queue.close();
    this.closed = true;
    this.db.close();
  }
}
