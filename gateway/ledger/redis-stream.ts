// Shared usage ledger for several gateway replicas: one Redis Stream (`XADD ctxgate:usage
// MAXLEN ~ N * r <json>`), approximate trimming bounding memory, plus an hourly
// `XTRIM MINID ~` for retention_days. Replicas append in pipelined
// batches off the request path; the reporter reads with XRANGE pages and aggregates in memory.
// Stream ids are assigned by Redis at append time, a little after the record's own time, so a
// time-bounded read starts RANGE_SLACK_MS early and filters on the record time.
import { Redis } from 'ioredis';
import type { UsageRecord } from '../usage/types.ts';
import { BatchQueue } from './batch-queue.ts';
import type { DropListener, LedgerFilter, LedgerStats, UsageLedger } from './types.ts';

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

  constructor(o: RedisStreamLedgerOptions) {
    this.ownsClient = !o.client;
    // Fail fast instead of buffering commands forever when Redis is down: the batch is dropped
    // and counted, requests are unaffected.
    this.redis = o.client ?? new Redis(o.url ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: false });
    this.redis.on('error', (err) => o.onError?.(err));
    this.redis.on('ready', () => (this.down = false));
    this.key = o.key ?? DEFAULT_STREAM_KEY;
    const maxLen = String(o.maxLen ?? DEFAULT_STREAM_MAXLEN);
    this.queue = new BatchQueue<UsageRecord>({
      batchSize: o.batchSize,
      flushMs: o.flushMs,
      maxQueue: o.maxQueue,
      write: async (batch) => {
        if (this.redis.status !== 'ready') {
          // Wait once (start-up connect); while Redis stays down, batches fail at once so a
          // backlog drains into the drop counter instead of stalling shutdown.
          if (this.down) throw new Error('redis ledger: not connected');
          try {
            await this.ready(WRITE_READY_WAIT_MS);
          } catch (err) {
            this.down = true;
            throw err;
          }
        }
        const p = this.redis.pipeline();
        for (const r of batch) p.xadd(this.key, 'MAXLEN', '~', maxLen, '*', 'r', JSON.stringify(r));
        const res = await p.exec();
        const failed = res?.find(([err]) => err);
        if (failed) throw failed[0];
      },
      onDrop: o.onDrop,
      onError: o.onError,
    });
    if (o.retentionDays !== undefined) {
      const days = o.retentionDays;
      this.sweep = setInterval(() => void this.prune(days).catch((err: unknown) => o.onError?.(err)), o.retentionSweepMs ?? RETENTION_SWEEP_MS);
      this.sweep.unref();
    }
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
    return this.queue.stats();
  }

  async close(): Promise<void> {
    if (this.sweep) clearInterval(this.sweep);
    await this.queue.close();
    if (this.ownsClient) this.redis.disconnect();
  }
}
