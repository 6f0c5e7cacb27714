// SessionStore decorator enforcing per-tenant quotas (TenantQuota) in front of any store: at most
// `maxSessions` sessions and `maxBytes` bytes of state per tenant. When a put would exceed a
// tenant's quota, that tenant's least recently used sessions are deleted from the inner store, so
// one tenant (or an attacker minting session ids) can never push out another tenant's sessions.
// A state alone over the byte quota is not kept (the session starts afresh next call).
// Size of a session = stateSize of the state as put (shared-parts.ts: its JSON length, escapes not
// counted, once per part) plus its key (tenant and id): never less than what MemorySessionStore
// charges for it, so an inner memory store sized at quota × tenants never evicts before a
// tenant's own quota does. O(parts not sized before) per put, O(1) per get/delete plus O(evicted).
// The accounting is per process: replicas sharing Redis each enforce it over the sessions they
// wrote; sessions the inner store dropped on its own (TTL) are forgotten when LRU'd out here.
import { freezeParts, stateSize } from './shared-parts.ts';
import { TenantQuota, type TenantQuotaOptions } from './tenant-quota.ts';
import type { SessionState, SessionStore } from './store.ts';

export interface TenantQuotaStoreOptions extends TenantQuotaOptions {
  /** Called once per session the quota deletes (metrics, logs). */
  onEvict?: (tenant: string, sessionId: string, reason: 'quota') => void;
}

/** Bytes a put of `state` counts against its tenant. */
export function quotaSize(state: SessionState): number {
  return stateSize(freezeParts(state)) + state.tenant.length + state.sessionId.length + 1;
}

export class TenantQuotaStore implements SessionStore {
  readonly quota: TenantQuota;
  private readonly onEvict?: TenantQuotaStoreOptions['onEvict'];

  constructor(
    private readonly inner: SessionStore,
    opts: TenantQuotaStoreOptions = {},
  ) {
    this.quota = new TenantQuota(opts);
    this.onEvict = opts.onEvict;
  }

  async get(tenant: string, sessionId: string): Promise<SessionState | undefined> {
    const state = await this.inner.get(tenant, sessionId);
    // A read counts as use; sessions this process never wrote are not charged until written.
    if (state) this.quota.bump(tenant, sessionId);
    return state;
  }

  async put(state: SessionState): Promise<void> {
    // Charge before any await so concurrent puts see each other's usage.
    const evicted = this.quota.touch(state.tenant, state.sessionId, quotaSize(state));
    let self = false;
    for (const e of evicted) {
      if (e.tenant === state.tenant && e.sessionId === state.sessionId) self = true;
      this.onEvict?.(e.tenant, e.sessionId, 'quota');
    }
    // Nothing evicted (every call but a quota's overflow): no Promise.all of nothing to wait on.
    if (evicted.length) await Promise.all(evicted.map((e) => this.inner.delete(e.tenant, e.sessionId)));
    if (!self) await this.inner.put(state);
  }

  async delete(tenant: string, sessionId: string): Promise<void> {
    this.quota.remove(tenant, sessionId);
    await this.inner.delete(tenant, sessionId);
  }

  list(tenant: string, limit?: number): Promise<string[]> {
    return this.inner.list(tenant, limit);
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  /** Sessions and bytes charged to `tenant` (for metrics and tests). */
  usage(tenant: string): { sessions: number; bytes: number } {
    return this.quota.usage(tenant);
  }
}
