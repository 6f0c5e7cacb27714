// Picks the ledger stores from the gateway config (`ledger.stores`): the embedded SQLite file at
// `ledger.path`, a Redis Stream at `redis.url` (several replicas share one ledger, spooled to
// `ledger.spool_path` while Redis is down), or both (records go to both, reads to the first).
// Default: SQLite alone, or Redis then SQLite when `redis.url` is set.
import type { GatewayConfig } from '../../config/schema.ts';
import { RedisStreamLedger } from './redis-stream.ts';
import { SqliteLedger } from './sqlite.ts';
import { TeeLedger } from './tee.ts';
import type { DropListener, UsageLedger } from '../types/ledger.ts';

export const SPOOL_SUFFIX = '.redis-spool';

export interface OpenLedgerOptions {
  onDrop?: DropListener;
  onError?: (err: unknown) => void;
  /** Force a store regardless of config (reports read one store). */
  store?: 'sqlite' | 'redis';
  /** Open read-only (reports): the SQLite file read-only, Redis without retention or spool. */
  readonly?: boolean;
}

type Store = 'sqlite' | 'redis';

export function ledgerStores(config: Pick<GatewayConfig, 'ledger' | 'redis'>): Store[] {
  const l = config.ledger;
  if (l.stores?.length) return [...l.stores];
  return config.redis?.url ? ['redis', 'sqlite'] : ['sqlite'];
}

export function openLedger(config: Pick<GatewayConfig, 'ledger' | 'redis'>, o: OpenLedgerOptions = {}): UsageLedger {
  const l = config.ledger;
  const stores = o.store ? [o.store] : o.readonly ? ledgerStores(config).slice(0, 1) : ledgerStores(config);
  const open = (store: Store): UsageLedger => {
    if (store === 'redis') {
      if (!config.redis?.url) throw new Error("ledger.stores names 'redis' but redis.url is not set");
      return new RedisStreamLedger({
        url: config.redis.url,
        batchSize: l.batch_size,
        flushMs: l.flush_ms,
        // Readers (reports) never trim or spool: retention and forwarding are the writers' job.
        retentionDays: o.readonly ? undefined : l.retention_days,
        spoolPath: o.readonly ? undefined : (l.spool_path ?? l.path + SPOOL_SUFFIX),
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
  };
  const opened = stores.map(open);
  return opened.length === 1 ? opened[0] : new TeeLedger(opened as [UsageLedger, ...UsageLedger[]]);
}
