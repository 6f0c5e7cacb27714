// limits.max_concurrent_per_tenant across replicas: with redis.url, a tenant's requests in flight
// are counted in one Redis sorted set per tenant (member = replica:slot, score = lease expiry in
// Redis time), so N replicas together admit at most the cap. Acquire is one Lua script (drop
// expired leases, count, add when under the cap); release is one ZREM. Leases expire after
// LEASE_MS unless this replica renews them (every LEASE_MS / 3, one pipeline for all it holds),
// so a replica that dies frees its slots within LEASE_MS.
// Redis trouble never stalls a request: a command that fails or times out falls back to this
// process's own count (TenantConcurrency, the per-process cap) until Redis answers again.
// A timed-out command is still on the socket and runs when Redis wakes up, so an ACQUIRE that
// timed out may yet add its lease, and a release that failed leaves one: nobody would renew or
// release those, and they would hold the tenant's slots on every replica until LEASE_MS. Their
// members are kept as orphans and removed (ZREM, queued right behind the failed call, then
// retried every ORPHAN_RETRY_MS until Redis answers).
// Cost: one Redis round trip per request when the cap is on (it is off by default).
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { GatewayError } from '../../middleware/errors.ts';
import { TenantConcurrency, type TenantSlots } from './tenant-concurrency.ts';

/** Redis key prefix of the per-tenant lease sets. */
export const INFLIGHT_KEY_PREFIX = 'ctxgate:inflight:';
/** A lease not renewed for this long is dropped (a dead replica's slots come back). */
export const DEFAULT_LEASE_MS = 30_000;
/** How often members whose acquire or release failed are removed again until Redis answers. */
export const ORPHAN_RETRY_MS = 1_000;
/** Orphans remembered at most (beyond this the oldest are left to expire with their lease). */
const MAX_ORPHANS = 10_000;

// KEYS[1] set; ARGV: cap, member, lease ms. Redis time, so replicas' clocks need not agree.
const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]) * 2)
return 1`;

// KEYS: sets; ARGV[1] lease ms, then one member per key.
const RENEW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i, k in ipairs(KEYS) do
  redis.call('ZADD', k, 'XX', now + tonumber(ARGV[1]), ARGV[i + 1])
  redis.call('PEXPIRE', k, tonumber(ARGV[1]) * 2)
end
return 1`;

type RedisWithScripts = Redis & {
  ctxgateAcquire(key: string, cap: number, member: string, lease: number): Promise<number>;
  ctxgateRenew(n: number, ...args: (string | number)[]): Promise<number>;
};

export interface SharedConcurrencyOptions {
  leaseMs?: number;
  /** Called when Redis fails and the local count takes over (rate-limited by the caller). */
  onFallback?: (err: Error) => void;
}

export class SharedTenantConcurrency implements TenantSlots {
  private readonly redis: RedisWithScripts;
  private readonly local: TenantConcurrency;
  private readonly replica = randomUUID();
  private readonly held = new Map<string, string>(); // member → key
  /** members Redis may hold that no request owns (failed acquire or release) → key */
  private readonly orphans = new Map<string, string>();
  private readonly sweeper: NodeJS.Timeout;
  private readonly leaseMs: number;
  private readonly timer: NodeJS.Timeout;
  private seq = 0;

  constructor(
    redis: Redis,
    private readonly max: number,
    private readonly opts: SharedConcurrencyOptions = {},
  ) {
    this.leaseMs = opts.leaseMs ?? DEFAULT_LEASE_MS;
    this.local = new TenantConcurrency(max);
    redis.defineCommand('ctxgateAcquire', { numberOfKeys: 1, lua: ACQUIRE });
    redis.defineCommand('ctxgateRenew', { lua: RENEW });
    this.redis = redis as RedisWithScripts;
    this.timer = setInterval(() => void this.renew(), Math.max(100, Math.floor(this.leaseMs / 3)));
    this.timer.unref();
    this.sweeper = setInterval(() => void this.sweep(), ORPHAN_RETRY_MS);
    this.sweeper.unref();
  }

  async acquire(tenant: string): Promise<() => void> {
    if (this.max <= 0) return () => undefined;
    const key = INFLIGHT_KEY_PREFIX + tenant;
    const member = `${this.replica}:${++this.seq}`;
    let ok: number;
    try {
      ok = await this.redis.ctxgateAcquire(key, this.max, member, this.leaseMs);
    } catch (err) {
      // the script may still run when Redis answers again: its lease must not outlive this call
      this.orphan(member, key);
      this.opts.onFallback?.(err as Error);
      return this.local.acquire(tenant);
    }
    if (!ok)
      throw new GatewayError(
        'tenant_concurrency_exceeded',
        `this tenant already has ${this.max} requests in flight across the gateway's replicas (limits.max_concurrent_per_tenant)`,
        null,
        { 'retry-after': '1' },
      );
    this.held.set(member, key);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.held.delete(member);
      this.redis.zrem(key, member).catch(() => this.orphan(member, key));
    };
  }

  /** Removes a member no request owns now (queued behind the failed call) and until Redis answers. */
  private orphan(member: string, key: string): void {
    this.orphans.delete(member);
    this.orphans.set(member, key);
    if (this.orphans.size > MAX_ORPHANS) this.orphans.delete(this.orphans.keys().next().value!);
    this.remove(member, key);
  }

  private remove(member: string, key: string): void {
    this.redis.zrem(key, member).then(
      () => {
        if (this.orphans.get(member) === key) this.orphans.delete(member);
      },
      () => undefined, // still an orphan: the sweep retries
    );
  }

  private sweep(): void {
    for (const [member, key] of this.orphans) this.remove(member, key);
  }

  /** members whose removal Redis has not confirmed yet (for tests and diagnostics) */
  get pendingOrphans(): number {
    return this.orphans.size;
  }

  private async renew(): Promise<void> {
    if (this.held.size === 0) return;
    const keys = [...this.held.values()];
    try {
      await this.redis.ctxgateRenew(keys.length, ...keys, this.leaseMs, ...this.held.keys());
    } catch {
      // leases run out; the next renew (or release) retries
    }
  }

  close(): void {
    clearInterval(this.timer);
    clearInterval(this.sweeper);
  }
}
