// Picks the ledger store from the gateway config: a Redis Stream when `redis.url` is set (several
// replicas share one ledger), otherwise the embedded SQLite file at `ledger.path`.
import type { GatewayConfig } from '../config/schema.ts';
import { RedisStreamLedger } from './redis-stream.ts';
import { SqliteLedger } from './sqlite.ts';
import type { DropListener, UsageLedger } from './types.ts';

export interface OpenLedgerOptions {
  onDrop?: DropListener;
  onError?: (err: unknown) => void;
  /** Force a store regardless of config.redis. */
  store?: 'sqlite' | 'redis';
  /** Open the SQLite file read-only (reports). */
  readonly?: boolean;
}

export function openLedger(config: Pick<GatewayConfig, 'ledger' | 'redis'>, o: OpenLedgerOptions = {}): UsageLedger {
  const l = config.ledger;
  const store = o.store ?? (config.redis?.url ? 'redis' : 'sqlite');
  if (store === 'redis') {
    return new RedisStreamLedger({
      url: config.redis?.url,
      batchSize: l.batch_size,
      flushMs: l.flush_ms,
      // Readers (reports) never trim: retention is the writers' job.
      retentionDays: o.readonly ? undefined : l.retention_days,
      onDrop: o.onDrop,
      onError: o.onError,
    });
  }
  return new SqliteLedger({
    path: l.path,
    retentionDays: l.retention_days,
    batchSize: l.batch_size,
    flushMs: l.flush_ms,
    onDrop: o.onDrop,
    onError: o.onError,
    readonly: o.readonly,
  });
}
