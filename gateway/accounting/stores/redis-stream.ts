// Shared usage ledger for several gateway replicas: one Redis Stream (`XADD ctxgate:usage
// MAXLEN ~ N * r <json>`), approximate trimming bounding memory, plus an hourly
// `XTRIM MINID ~` for retention_days. Replicas append in pipelined
// batches off the request path; the reporter reads with XRANGE pages and aggregates in memory.
// Stream ids are assigned by Redis at append time, a little after the record's own time, so a
// time-bounded read starts RANGE_SLACK_MS early and filters on the record time.
// With a spool path, batches Redis cannot take (down, or a write failing) go to a local spool
// file instead of being dropped, and are forwarded when Redis is ready again (on reconnect and
// every flush_ms). Records forwarded after an outage longer than RANGE_SLACK_MS are appended
// too late for a report whose range ends before the outage did (an unbounded report has them).
import { Redis } from 'ioredis';
import type { UsageRecord } from '../types/usage.ts';
import { BatchQueue } from './batch-queue.ts';
import { Spool } from './spool.ts';
import type { DropListener, LedgerFilter, LedgerStats, UsageLedger } from '../types/ledger.ts';

export const DEFAULT_STREAM_KEY = 'ctxgate:usage';
export const DEFAULT_STREAM_MAXLEN = 1_000_000;
export const XRANGE_PAGE = 1_000;
/** Longest request we expect: the record time is its arrival, the stream id its append. */
export const RANGE_SLACK_MS = 3_600_000;
export const READY_TIMEOUT_MS = 5_000;
export const WRITE_READY_WAIT_MS = 1_000;
export const RETENTION_SWEEP_MS = 3_600_000;

export interface RedisStreamLedgerOptions {
  url?: string;
  client?: Redis;
  key?: string;
  maxLen?: number;
  batchSize: number;
  flushMs: number;
  maxQueue?: number;
  /** Entries appended more than this many days ago are trimmed (XTRIM MINID) hourly. */
  retentionDays?: number;
  retentionSweepMs?: number;
  /** Local JSON-lines file for batches Redis cannot take (forwarded on recovery); none: dropped. */
  spoolPath?: string;
  onDrop?: DropListener;
  onError?: (err: unknown) => void;
}

export class RedisStreamLedger implements UsageLedger {
  readonly redis: Redis;
  readonly key: string;
  private readonly ownsClient: boolean;
  private readonly queue: BatchQueue<UsageRecord>;
  private down = false;
  private readonly sweep: NodeJS.Timeout | null = null;
  private readonly forwardTimer: NodeJS.Timeout | null = null;
  readonly spool: Spool<UsageRecord> | null;
  private readonly maxLen: string;

  constructor(private readonly o: RedisStreamLedgerOptions) {
    this.ownsClient = !o.client;
    // Fail fast instead of buffering commands forever when Redis is down: the batch is dropped
    // and counted, requests are unaffected.
    this.redis =
      o.client ??
      new Redis(o.url ?? 'redis://127.0.0.1:6379', {
        maxRetriesPerRequest: 1,
        enableOfflineQueue: false,
        lazyConnect: false,
      });
    this.redis.on('error', (err) => o.onError?.(err));
    this.key = o.key ?? DEFAULT_STREAM_KEY;
    this.maxLen = String(o.maxLen ?? DEFAULT_STREAM_MAXLEN);
    this.spool = o.spoolPath ? new Spool<UsageRecord>(o.spoolPath) : null;
    this.redis.on('ready', () => {
      this.down = false;
      this.forwardSpool();
    });
    this.queue = new BatchQueue<UsageRecord>({
      batchSize: o.batchSize,
      flushMs: o.flushMs,
      maxQueue: o.maxQueue,
      write: async (batch) => {
        try {
          await this.writeBatch(batch);
        } catch (err) {
          if (!this.spool) throw err;
          // Kept locally, forwarded on recovery: not a drop.
          this.spool.append(batch);
          o.onError?.(err);
        }
      },
      onDrop: o.onDrop,
      onError: o.onError,
    });
    if (this.spool) {
      this.forwardTimer = setInterval(() => this.forwardSpool(), o.flushMs);
      this.forwardTimer.unref();
    }
    if (o.retentionDays !== undefined) {
      const days = o.retentionDays;
      this.sweep = setInterval(
        () => void this.prune(days).catch((err: unknown) => o.onError?.(err)),
        o.retentionSweepMs ?? RETENTION_SWEEP_MS,
      );
      this.sweep.unref();
    }
  }

  private async writeBatch(batch: readonly UsageRecord[]): Promise<void> {
    if (this.redis.status !== 'ready') {
      // Wait once (start-up connect); while Redis stays down, batches fail at once so a
      // backlog drains into the spool (or the drop counter) instead of stalling shutdown.
      if (this.down) throw new Error('redis ledger: not connected');
      try {
        await this.ready(WRITE_READY_WAIT_MS);
      } catch (err) {
        this.down = true;
        throw err;
      }
    }
    const p = this.redis.pipeline();
    for (const r of batch) p.xadd(this.key, 'MAXLEN', '~', this.maxLen, '*', 'r', JSON.stringify(r));
    const res = await p.exec();
    const failed = res?.find(([err]) => err);
    if (failed) throw failed[0];
  }

  /** Sends spooled records once Redis is ready; a failure leaves them spooled for the next try. */
  private forwardSpool(): void {
    if (!this.spool || this.redis.status !== 'ready' || !this.spool.pending()) return;
    this.spool.forward((b) => this.writeBatch(b), this.o.batchSize).catch((err: unknown) => this.o.onError?.(err));
  }

  /** Forwards the spool now (tests, shutdown); resolves with how many records were sent. */
  async drainSpool(): Promise<number> {
    if (!this.spool || !this.spool.pending()) return 0;
    await this.ready();
    return this.spool.forward((b) => this.writeBatch(b), this.o.batchSize);
  }

  /** Trims entries appended before now − retentionDays (stream ids are append times). */
  async prune(retentionDays: number, now = Date.now()): Promise<number> {
    await this.ready();
    return this.redis.xtrim(this.key, 'MINID', '~', String(Math.max(0, Math.floor(now - retentionDays * 86_400_000))));
  }

  append(rec: UsageRecord): void {
    this.queue.push(rec);
  }

  flush(): Promise<void> {
    return this.queue.drain();
  }

  /** Resolves once connected (commands fail fast while offline, so readers wait here first). */
  async ready(timeoutMs = READY_TIMEOUT_MS): Promise<void> {
    if (this.redis.status === 'ready') return;
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => {
        this.redis.off('ready', ok);
        reject(new Error(`redis ledger: not connected after ${timeoutMs} ms`));
      }, timeoutMs);
      const ok = (): void => {
        clearTimeout(t);
        resolve();
      };
      this.redis.once('ready', ok);
    });
  }

  async *query(filter: LedgerFilter = {}): AsyncIterable<UsageRecord> {
    await this.ready();
    let start = filter.since === undefined ? '-' : String(Math.max(0, filter.since - RANGE_SLACK_MS));
    const end = filter.until === undefined ? '+' : String(filter.until + RANGE_SLACK_MS);
    let yielded = 0;
    for (;;) {
      const page = await this.redis.xrange(this.key, start, end, 'COUNT', XRANGE_PAGE);
      for (const [, fields] of page) {
        const i = fields.indexOf('r');
        if (i < 0) continue;
        let r: UsageRecord;
        try {
          r = JSON.parse(fields[i + 1]) as UsageRecord;
        } catch {
          continue;
        }
        if (filter.since !== undefined && r.time < filter.since) continue;
        if (filter.until !== undefined && r.time >= filter.until) continue;
        if (filter.tenant !== undefined && r.tenant !== filter.tenant) continue;
        if (filter.model !== undefined && r.model !== filter.model) continue;
        if (filter.sessionId !== undefined && r.sessionId !== filter.sessionId) continue;
        yield r;
        if (filter.limit !== undefined && ++yielded >= filter.limit) return;
      }
      if (page.length < XRANGE_PAGE) return;
      start = '(' + page[page.length - 1][0];
    }
  }

  stats(): LedgerStats {
    const s = this.queue.stats();
    return this.spool ? { ...s, spooled: this.spool.counts.spooled, forwarded: this.spool.counts.forwarded } : s;
  }

  async close(): Promise<void> {
    if (this.sweep) clearInterval(this.sweep);
    if (this.forwardTimer) clearInterval(this.forwardTimer);
    await this.queue.close();
    // Whatever is still spooled stays in the file for the next start to forward.
    if (this.spool && this.redis.status === 'ready' && this.spool.pending())
      await this.drainSpool().catch((err: unknown) => this.o.onError?.(err));
    if (this.ownsClient) this.redis.disconnect();
  }
}
