// Embedded usage ledger: one SQLite file in WAL mode. Records are appended to a journal file (one
// synchronous write each, see journal.ts: kill -9 safe) and written to SQLite in batches (one
// transaction per batch_size records or flush_ms) off the request path; a timer deletes rows older
// than retention_days. Survives restarts (it is just a file). Reads flush first and use the same
// connection: SQLite calls are synchronous, so the report runs between batches, never inside one.
import Database from 'better-sqlite3';
import { mkdirSync, renameSync } from 'node:fs';
import { dirname } from 'node:path';
import type { ReportData, ReportQuery } from '../types/report.ts';
import type { UsageRecord } from '../types/usage.ts';
import { BatchQueue } from './batch-queue.ts';
import { JOURNAL_META_KEY, JOURNAL_SUFFIX, Journal, lockJournal, pendingLines } from './journal.ts';
import {
  BACKFILL_SQL,
  COLUMNS,
  DDL,
  MIGRATIONS,
  SCHEMA_VERSION,
  fromRow,
  rowValues,
  type Row,
} from './sqlite-schema.ts';
import { sqliteReport } from './sqlite-report.ts';
import type { DropListener, LedgerFilter, LedgerStats, UsageLedger } from '../types/ledger.ts';

export const DEFAULT_RETENTION_SWEEP_MS = 3_600_000;
const DAY_MS = 86_400_000;
/** Commits of one batch tried (one per flush_ms) before it is dropped: a lock held by a backup or
 *  a shell, or a full disk, usually clears within that; a batch SQLite never takes does not block
 *  the ledger for good. */
export const COMMIT_ATTEMPTS = 30;

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

type Values = (string | number | null)[];
const INSERT_POSITIONAL = `INSERT INTO usage (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map(() => '?').join(', ')})`;

export class SqliteLedger implements UsageLedger {
  readonly db: Database.Database;
  private readonly queue: BatchQueue<Values>;
  private readonly sweep: NodeJS.Timeout | null = null;
  private readonly journal: Journal | null = null;
  /** Sequence number of the oldest journaled record not yet committed. */
  private nextSeq = 1;
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
    const insert = o.readonly ? null : this.db.prepare(INSERT_POSITIONAL);
    const setMark = o.readonly ? null : this.db.prepare('INSERT OR REPLACE INTO meta (k, v) VALUES (?, ?)');
    const insertMany = this.db.transaction((batch: readonly Values[], mark: string | null) => {
      for (const v of batch) insert!.run(v);
      if (mark !== null) setMark!.run(JOURNAL_META_KEY, mark);
    });
    const jpath = o.path + JOURNAL_SUFFIX;
    const lock = !o.readonly && o.path !== ':memory:' ? lockJournal(jpath) : null;
    if (lock) {
      // What a crash left journaled but uncommitted goes in before anything new.
      const committed = this.db.prepare('SELECT v FROM meta WHERE k = ?').get(JOURNAL_META_KEY) as
        | { v: string }
        | undefined;
      const left = pendingLines(Journal.read(jpath), committed?.v);
      if (left.length) {
        const last = left[left.length - 1];
        try {
          // A line of another column count comes from another version's journal: not replayable here.
          const rows = left.filter((l) => l.values.length === COLUMNS.length).map((l) => l.values);
          if (rows.length < left.length)
            throw new Error(`${left.length - rows.length} journal lines of another schema`);
          insertMany(rows, `${last.boot}:${last.seq}`);
        } catch (err) {
          // Start anyway; the lines are kept beside the ledger for an operator, never dropped silently.
          renameSync(jpath, `${jpath}.unreplayed-${Date.now()}`);
          o.onError?.(err);
        }
      }
      this.journal = new Journal(jpath, lock);
      this.journal.settled(0);
    } else if (!o.readonly && o.path !== ':memory:')
      o.onError?.(
        new Error(
          `ledger ${o.path}: another writer holds its journal; this one runs without it (each record committed right away, a kill -9 can lose the last batch)`,
        ),
      );
    const journal = this.journal;
    this.queue = new BatchQueue<Values>({
      batchSize: o.batchSize,
      flushMs: o.flushMs,
      maxQueue: o.maxQueue,
      // Journaled records are durable already; without a journal, write after each job.
      eager: journal === null,
      write: (batch) => {
        if (o.readonly) throw new Error('ledger opened read-only');
        const end = this.nextSeq + batch.length - 1;
        // A failed commit (rolled back) keeps its batch queued and its journal lines: the retry,
        // or the next start's replay, commits them once.
        insertMany(batch, journal ? journal.mark(end) : null);
        this.nextSeq = end + 1;
        journal?.settled(batch.length);
      },
      keepFailed: o.readonly ? 0 : COMMIT_ATTEMPTS,
      // given up: those records are lost (counted); their journal lines are settled like committed ones
      discarded: (batch) => {
        this.nextSeq += batch.length;
        journal?.settled(batch.length);
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
    const values = rowValues(rec);
    const dropped = this.queue.counts.dropped;
    this.queue.push(values);
    if (!this.journal || this.queue.counts.dropped !== dropped) return;
    try {
      this.journal.append(values);
    } catch (err) {
      this.o.onError?.(err); // still queued: only kill -9 durability is lost for this record
    }
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
    await this.flush();
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
    await this.flush();
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
    this.journal?.close();
    this.db.close();
  }
}
