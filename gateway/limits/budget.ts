// Per-tenant daily spend caps: once a tenant's spend since the start of the UTC day reaches its
// `usd_per_day`, its calls get 429 budget_exceeded until midnight UTC. Spend comes from a lookup
// the usage ledger provides (an aggregate query), cached per tenant for `cacheMs` so the ledger
// sees at most one query per tenant per window; concurrent checks share one lookup. A failing
// lookup lets calls through (a ledger outage must not take the gateway down) and is reported.
// Settings: budgets: [{tenant, usd_per_day}].
import type { GatewayConfig } from '../config/schema.ts';
import { GatewayError } from '../../middleware/errors.ts';

/** How long a tenant's looked-up spend is trusted. */
export const DEFAULT_BUDGET_CACHE_MS = 5_000;
const DAY_MS = 86_400_000;

/** USD spent by `tenant` since `sinceMs` (epoch ms). */
export type SpendLookup = (tenant: string, sinceMs: number) => number | Promise<number>;

interface Cached {
  at: number;
  usd?: number;
  pending?: Promise<number>;
}

export interface BudgetGuardOptions {
  budgets: GatewayConfig['budgets'];
  spend: SpendLookup;
  cacheMs?: number;
  now?: () => number;
  onLookupError?: (err: unknown) => void;
}

export function utcDayStart(ms: number): number {
  return Math.floor(ms / DAY_MS) * DAY_MS;
}

export class BudgetGuard {
  private readonly limits = new Map<string, number>();
  private readonly cache = new Map<string, Cached>();
  private readonly cacheMs: number;
  private readonly now: () => number;

  constructor(private readonly o: BudgetGuardOptions) {
    for (const b of o.budgets) this.limits.set(b.tenant, b.usd_per_day);
    this.cacheMs = o.cacheMs ?? DEFAULT_BUDGET_CACHE_MS;
    this.now = o.now ?? Date.now;
  }

  get active(): boolean {
    return this.limits.size > 0;
  }

  /** Resolves when `tenant` may spend; throws GatewayError('budget_exceeded') otherwise. */
  async check(tenant: string): Promise<void> {
    const limit = this.limits.get(tenant);
    if (limit === undefined) return;
    const spent = await this.spent(tenant);
    if (spent === undefined || spent < limit) return;
    const now = this.now();
    const retry = Math.max(1, Math.ceil((utcDayStart(now) + DAY_MS - now) / 1000));
    throw new GatewayError(
      'budget_exceeded',
      `tenant '${tenant}' has spent $${spent.toFixed(4)} of its $${limit} daily budget; it resets at 00:00 UTC`,
      null,
      { 'retry-after': String(retry) },
    );
  }

  /** Forget cached spend (tests; after a manual ledger correction). */
  invalidate(tenant?: string): void {
    if (tenant === undefined) this.cache.clear();
    else this.cache.delete(tenant);
  }

  private async spent(tenant: string): Promise<number | undefined> {
    const now = this.now();
    const c = this.cache.get(tenant);
    // A cached figure from before midnight belongs to yesterday's budget.
    if (c?.usd !== undefined && now - c.at < this.cacheMs && utcDayStart(c.at) === utcDayStart(now)) return c.usd;
    if (c?.pending) return c.pending.catch(() => undefined);
    const entry: Cached = { at: now };
    entry.pending = Promise.resolve()
      .then(() => this.o.spend(tenant, utcDayStart(now)))
      .then((usd) => {
        entry.usd = Number.isFinite(usd) ? usd : 0;
        entry.pending = undefined;
        return entry.usd;
      });
    this.cache.set(tenant, entry);
    try {
      return await entry.pending;
    } catch (err) {
      this.cache.delete(tenant);
      this.o.onLookupError?.(err);
      return undefined;
    }
  }
}
