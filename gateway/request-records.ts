// The last N request records per tenant (LRU), served by GET /v1/gateway/requests/:id so an operator or the
// tenant itself can see why a call cost what it did: receipts, prefix diagnostics, worker, usage.
import { LRUCache } from 'lru-cache';
import type { PrefixDiagnostics, Receipt } from '../middleware/types.ts';
import type { UsageEvent } from './usage-event.ts';

/** One upstream attempt of a request (failed ones included), in the order they were made. */
export interface AttemptRecord {
  worker: string;
  /** The routing policy's branch for this pick. */
  branch: string;
  predictedCachedTokens?: number;
  /** ok, 4xx, 5xx, timeout, error, bad_response, stream_failed, client_closed, shutting_down. */
  outcome: string;
  /** The worker's HTTP status; 0 when no status line came back. */
  status: number;
  /** Why it failed (clipped). */
  detail?: string;
  /** ms from the request's start to this attempt's start. */
  startMs: number;
  /** ms from this attempt's start to its status line, first body byte, and end. */
  headersMs?: number;
  firstByteMs?: number;
  endMs?: number;
}

export interface RequestRecord {
  id: string;
  /** Ingress API the request came in by (openai-chat, anthropic-messages...). */
  api: string;
  tenant: string;
  model: string;
  sessionId: string;
  worker: string;
  attempts: number;
  /** Every attempt: worker, outcome, status, timing. */
  attemptLog: AttemptRecord[];
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
  /** One LRU per tenant (tenants come from the configured keys): one tenant's traffic can only
   *  evict its own records. Each keeps the configured number. */
  private readonly byTenant = new Map<string, LRUCache<string, RequestRecord>>();
  constructor(private readonly max: number) {}

  private of(tenant: string): LRUCache<string, RequestRecord> {
    let c = this.byTenant.get(tenant);
    if (!c) this.byTenant.set(tenant, (c = new LRUCache({ max: this.max })));
    return c;
  }

  // Keyed by tenant and id: request ids may come from the client (x-request-id), so one tenant
  // reusing another's id must not overwrite (or read) that tenant's record.
  add(r: RequestRecord): void {
    this.of(r.tenant).set(r.id, r);
  }
  /** Tenant-scoped: another tenant's record reads as absent (admins see all, own tenant first). */
  get(id: string, tenant: string, admin: boolean): RequestRecord | undefined {
    const own = this.byTenant.get(tenant)?.get(id);
    if (own || !admin) return own;
    // Admin lookups across tenants: one map lookup per tenant; they are rare.
    for (const c of this.byTenant.values()) {
      const r = c.get(id);
      if (r) return r;
    }
    return undefined;
  }
}
