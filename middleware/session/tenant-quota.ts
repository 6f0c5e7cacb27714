// Per-tenant caps on session state, for the session stores: at most `maxSessions` sessions and
// `maxBytes` bytes per tenant, least recently used evicted first, so one tenant (or an attacker
// minting session ids) can fill neither memory nor another tenant's share. A Map's insertion
// order is the LRU order (delete + set on touch): O(1) per touch plus O(evicted).
// Settings: limits.max_sessions, limits.max_session_bytes (per tenant; see TenantQuotaStore).
// Lives beside the session stores so middleware never imports the gateway; gateway/limits
// re-exports it.

/** Sessions per tenant (same value as the config default of limits.max_sessions). */
export const DEFAULT_TENANT_MAX_SESSIONS = 10_000;
/** Bytes of session state per tenant (same value as the config default of limits.max_session_bytes). */
export const DEFAULT_TENANT_MAX_BYTES = 64 * 1024 * 1024;
/** Tenants tracked at once; tenants come from configured keys, so this is a backstop. */
export const DEFAULT_MAX_TENANTS = 10_000;

export interface TenantQuotaOptions {
  maxSessions?: number;
  maxBytes?: number;
  maxTenants?: number;
}

interface TenantUsage {
  sessions: Map<string, number>;
  bytes: number;
}

export interface Evicted {
  tenant: string;
  sessionId: string;
}

export class TenantQuota {
  readonly maxSessions: number;
  readonly maxBytes: number;
  readonly maxTenants: number;
  private readonly tenants = new Map<string, TenantUsage>();

  constructor(o: TenantQuotaOptions = {}) {
    this.maxSessions = o.maxSessions ?? DEFAULT_TENANT_MAX_SESSIONS;
    this.maxBytes = o.maxBytes ?? DEFAULT_TENANT_MAX_BYTES;
    this.maxTenants = o.maxTenants ?? DEFAULT_MAX_TENANTS;
  }

  /**
   * Records that `sessionId` of `tenant` now holds `bytes` and is the most recently used.
   * Returns the sessions the caller must drop, oldest first; it includes `sessionId` itself
   * only when that one session alone is over the tenant's byte cap.
   */
  touch(tenant: string, sessionId: string, bytes: number): Evicted[] {
    const evicted: Evicted[] = [];
    let t = this.tenants.get(tenant);
    if (t) {
      this.tenants.delete(tenant); // most recent tenant last
    } else {
      t = { sessions: new Map(), bytes: 0 };
      while (this.tenants.size >= this.maxTenants) {
        const [oldest, u] = this.tenants.entries().next().value as [string, TenantUsage];
        this.tenants.delete(oldest);
        for (const id of u.sessions.keys()) evicted.push({ tenant: oldest, sessionId: id });
      }
    }
    this.tenants.set(tenant, t);
    const size = Math.max(0, bytes);
    const prev = t.sessions.get(sessionId);
    if (prev !== undefined) {
      t.sessions.delete(sessionId);
      t.bytes -= prev;
    }
    t.sessions.set(sessionId, size);
    t.bytes += size;
    while (t.sessions.size > this.maxSessions || (t.bytes > this.maxBytes && t.sessions.size > 0)) {
      const [id, b] = t.sessions.entries().next().value as [string, number];
      t.sessions.delete(id);
      t.bytes -= b;
      evicted.push({ tenant, sessionId: id });
    }
    if (t.sessions.size === 0) this.tenants.delete(tenant);
    return evicted;
  }

  remove(tenant: string, sessionId: string): void {
    const t = this.tenants.get(tenant);
    const b = t?.sessions.get(sessionId);
    if (!t || b === undefined) return;
    t.sessions.delete(sessionId);
    t.bytes -= b;
    if (t.sessions.size === 0) this.tenants.delete(tenant);
  }

  /** Marks a tracked session most recently used without changing its size (a read); false if untracked. */
  bump(tenant: string, sessionId: string): boolean {
    const t = this.tenants.get(tenant);
    const b = t?.sessions.get(sessionId);
    if (!t || b === undefined) return false;
    t.sessions.delete(sessionId);
    t.sessions.set(sessionId, b);
    return true;
  }

  has(tenant: string, sessionId: string): boolean {
    return this.tenants.get(tenant)?.sessions.has(sessionId) ?? false;
  }

  usage(tenant: string): { sessions: number; bytes: number } {
    const t = this.tenants.get(tenant);
    return { sessions: t?.sessions.size ?? 0, bytes: t?.bytes ?? 0 };
  }

  get tenantCount(): number {
    return this.tenants.size;
  }
}
