// The last N request records (LRU), served by GET /v1/gateway/requests/:id so an operator or the
// tenant itself can see why a call cost what it did: receipts, prefix diagnostics, worker, usage.
import { LRUCache } from 'lru-cache';
import type { PrefixDiagnostics, Receipt } from '../middleware/types.ts';
import type { UsageEvent } from './usage-event.ts';

export interface RequestRecord {
  id: string;
  tenant: string;
  model: string;
  sessionId: string;
  worker: string;
  attempts: number;
  status: number;
  receipts: Receipt[];
  prefix?: PrefixDiagnostics;
  routing?: { policy: string; branch: string; predictedCachedTokens?: number };
  usage: UsageEvent;
}

export class RequestRecords {
  private readonly cache: LRUCache<string, RequestRecord>;
  constructor(max: number) {
    this.cache = new LRUCache({ max });
  }
  add(r: RequestRecord): void {
    this.cache.set(r.id, r);
  }
  /** Tenant-scoped: another tenant's record reads as absent (admins see all). */
  get(id: string, tenant: string, admin: boolean): RequestRecord | undefined {
    const r = this.cache.get(id);
    return r && (admin || r.tenant === tenant) ? r : undefined;
  }
}
