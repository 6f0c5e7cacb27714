// Bounded in-memory queue in front of a ledger store. push() is O(1) and never blocks: when the
// queue is full the record is dropped and counted. By default (`eager`) what was pushed by one
// synchronous job is written right after it (one microtask, one batch of up to batch_size per
// write), so a process killed with -9 loses at most the records of the job it died in, not up to
// flush_ms of them; flush_ms remains as a retry timer. A store that makes records durable itself
// on push (the SQLite ledger's journal) passes `eager: false`: batches are then written every
// flush_ms, or as soon as batch_size records wait. Writes never overlap. With `keepFailed` a batch
// whose write throws goes back to the front of the queue and is retried at the next flush (in
// order, up to keepFailed writes; the queue then holds at most maxQueue + batch_size): a store whose commit fails (SQLite
// busy past its timeout, disk full) loses nothing it could commit later.
import { DEFAULT_MAX_QUEUE, type DropListener, type LedgerStats } from '../types/ledger.ts';

export interface BatchQueueOptions<T> {
  batchSize: number;
  flushMs: number;
  maxQueue?: number;
  /** Writes one batch; a throw or rejection drops the batch (counted), or keeps it (`keepFailed`). */
  write(batch: T[]): void | Promise<void>;
  onDrop?: DropListener;
  onError?: (err: unknown) => void;
  /** Write after every synchronous job (default), or only at batch_size / flush_ms. */
  eager?: boolean;
  /** A batch whose write fails is kept at the front and retried at the next flush, up to this many
   *  writes in all; then it is dropped (counted) and handed to `discarded`. */
  keepFailed?: number;
  /** A batch given up after `keepFailed` writes (the store forgets what it tracked for it). */
  discarded?(batch: T[]): void;
}

export class BatchQueue<T> {
  private buf: T[] = [];
  private writing: Promise<void> | null = null;
  private scheduled = false;
  private timer: NodeJS.Timeout | null;
  private closed = false;
  /** failed writes in a row of the batch at the front */
  private failures = 0;
  private readonly max: number;
  readonly counts = { appended: 0, written: 0, dropped: 0 };

  constructor(private readonly o: BatchQueueOptions<T>) {
    this.max = o.maxQueue ?? DEFAULT_MAX_QUEUE;
    this.timer = setInterval(() => void this.drain(), o.flushMs);
    this.timer.unref();
  }

  push(item: T): void {
    this.counts.appended++;
    if (this.closed || this.buf.length >= this.max) {
      this.drop(1);
      return;
    }
    this.buf.push(item);
    // after a failed write only the flush_ms timer retries (a locked SQLite file blocks each try
    // for its busy timeout: not once per request)
    if (!this.scheduled && this.failures === 0 && (this.o.eager !== false || this.buf.length >= this.o.batchSize)) {
      this.scheduled = true;
      // a microtask, not setImmediate: the record is written before the loop polls again, so a
      // kill -9 right after the answers went out finds it on disk (records pushed by the same
      // synchronous job still share one batch)
      queueMicrotask(() => {
        this.scheduled = false;
        void this.drain();
      });
    }
  }

  private drop(n: number): void {
    this.counts.dropped += n;
    try {
      this.o.onDrop?.(n);
    } catch {
      /* a metrics failure must not escalate */
    }
  }

  /** Writes everything queued, one batch_size batch at a time. */
  async drain(): Promise<void> {
    while (this.writing) await this.writing;
    if (this.buf.length === 0) return;
    this.writing = (async () => {
      while (this.buf.length > 0) {
        const batch = this.buf.splice(0, this.o.batchSize);
        try {
          await this.o.write(batch);
          this.failures = 0;
          this.counts.written += batch.length;
        } catch (err) {
          this.o.onError?.(err);
          if (++this.failures < (this.o.keepFailed ?? 0) && !this.closed) {
            this.buf.unshift(...batch);
            break; // retried at the next flush, not in a tight loop
          }
          this.failures = 0;
          this.drop(batch.length);
          try {
            this.o.discarded?.(batch);
          } catch (e) {
            this.o.onError?.(e);
          }
        }
      }
    })();
    try {
      await this.writing;
    } finally {
      this.writing = null;
    }
  }

  stats(): LedgerStats {
    return { ...this.counts, queued: this.buf.length };
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.drain();
    this.closed = true;
  }
}
