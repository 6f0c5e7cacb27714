// The last N request records (LRU), served by GET /v1/gateway/requests/:id so an operator or the
// tenant itself can see why a call cost what it did: receipts, prefix diagnostics, worker, usage.
import { LRUCache } from 'lru-cache';
import type { PrefixDiagnostics, Receipt } from '../middleware/types.ts';
import type { UsageEvent } from './usage-event.ts';

export interface RequestRecord {
  id: string;
  /** Ingress API the request came in by (openai-chat, anthropic-messages...). */
  api: string;
  tenant: string;
  model: string;
  sessionId: string;
  worker: string;
  attempts: number;
  status: number;
  receipts: Receipt[];
  prefix?: PrefixDiagnostics;
  routing?: {
    policy: string;
    branch: string;
    /** Prompt tokens the policy expected the chosen worker to serve from cache. */
    predictedCachedTokens?: number;
    /** What that worker reported (usage cached_tokens), when it reported usage. */
    reportedCachedTokens?: number;
    /** The prompt shares less than one KV block with the session's previous call: a 0 % hit is
     *  the prompt's doing (e.g. a changing line at the top), not the routing's. */
    subBlockPrefix?: boolean;
  };
  usage: UsageEvent;
}

export class RequestRecords {
  private readonly cache: LRUCache<string, RequestRecord>;
  constructor(max: number) {
    this.cache = new LRUCache({ max });
  }
  // Keyed by tenant and id: request ids may come from the client (x-request-id), so one tenant
  // reusing another's id must not overwrite (or read) that tenant's record.
  add(r: RequestRecord): void {
    this.cache.set(`${r.tenant}\u0000${r.id}`, r);
  }
  /** Tenant-scoped: another tenant's record reads as absent (admins see all, own tenant first). */
  get(id: string, tenant: string, admin: boolean): RequestRecord | undefined {
    const own = this.cache.get(`${tenant}\u0000${id}`);
    if (own || !admin) return own;
    // Admin lookups across tenants scan the bounded cache (max entries); they are rare.
    for (const r of this.cache.values()) if (r.id === id) return r;
    return undefined;
  }
}
