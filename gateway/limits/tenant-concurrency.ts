// Per-tenant cap on requests in flight (limits.max_concurrent_per_tenant): one tenant's flood
// queues on its own budget, not on the workers every tenant shares. O(1) per request.
import { GatewayError } from '../../middleware/errors.ts';

/** Takes a tenant's slot (429 when at its cap); the returned function gives it back once. */
export interface TenantSlots {
  acquire(tenant: string): (() => void) | Promise<() => void>;
  close?(): void;
  /** Counted across replicas: whether the Redis link is up now (absent: counted per process). */
  linkUp?(): boolean;
}

/** The per-process count (shared across replicas: tenant-concurrency-redis.ts). */
export class TenantConcurrency implements TenantSlots {
  private readonly inFlight = new Map<string, number>();
  constructor(private readonly max: number) {}

  /** Takes a slot (429 when the tenant is at its cap); the returned function gives it back once. */
  acquire(tenant: string): () => void {
    if (this.max <= 0) return () => undefined;
    const n = this.inFlight.get(tenant) ?? 0;
    if (n >= this.max)
      throw new GatewayError(
        'tenant_concurrency_exceeded',
        `this tenant already has ${this.max} requests in flight (limits.max_concurrent_per_tenant)`,
        null,
        { 'retry-after': '1' },
      );
    this.inFlight.set(tenant, n + 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const left = (this.inFlight.get(tenant) ?? 1) - 1;
      if (left <= 0) this.inFlight.delete(tenant);
      else this.inFlight.set(tenant, left);
    };
  }
}
