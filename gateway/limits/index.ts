// Request limits the gateway enforces on the proxy routes once the caller is authenticated:
// per-tenant rate limit, then per-tenant daily budget. Body size, JSON depth and message count
// are checked earlier (body parser, validation). Everything here is bounded by config.
import type { FastifyInstance } from 'fastify';
import { GatewayError } from '../../middleware/errors.ts';
import type { Redis } from 'ioredis';
import type { Principal } from '../auth.ts';
import type { GatewayContext } from '../context.ts';
import { BudgetGuard, type SpendLookup } from './budget.ts';
import { createLimiterRedis, registerTenantRateLimit, type TenantLimiter } from './rate-limit.ts';
import type { TenantSlots } from './tenant-concurrency.ts';

/** What the limits refuse with (429s); each refusal counts in ctxgate_rate_limited_total{tenant}. */
const REFUSALS = new Set(['rate_limited', 'budget_exceeded', 'tenant_concurrency_exceeded']);

/** Counts a limit's refusal (and rethrows it): the limits own ctxgate_rate_limited_total. */
function counted(gw: Pick<GatewayContext, 'metrics'>, tenant: string, err: unknown): never {
  if (err instanceof GatewayError && REFUSALS.has(err.code)) gw.metrics.rateLimited.inc({ tenant });
  throw err;
}

/** The per-tenant in-flight cap, its refusals counted. */
export function countedSlots(slots: TenantSlots, gw: Pick<GatewayContext, 'metrics'>): TenantSlots {
  return {
    acquire: (tenant) => {
      try {
        const r = slots.acquire(tenant);
        // The per-process cap answers synchronously: no promise on its path.
        return r instanceof Promise ? r.catch((err: unknown) => counted(gw, tenant, err)) : r;
      } catch (err) {
        return counted(gw, tenant, err);
      }
    },
    close: slots.close ? () => slots.close!() : undefined,
    linkUp: slots.linkUp ? () => slots.linkUp!() : undefined,
  };
}

export { BudgetGuard, utcDayStart, type SpendLookup } from './budget.ts';
export { jsonDepth } from './json-depth.ts';
export { TenantQuota, type Evicted, type TenantQuotaOptions } from './tenant-quota.ts';

/** How long startup waits for the limiter's Redis before serving (unlimited until it connects). */
export const REDIS_READY_WAIT_MS = 1_000;

function waitReady(redis: Redis, ms: number): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      redis.off('ready', done);
      resolve();
    }
    redis.once('ready', done);
  });
}

export interface InstalledLimits {
  rateLimit?: TenantLimiter;
  budget?: BudgetGuard;
}

/** `paths`: the routes limits apply to, the ones that cost GPU time (the ingress adapters' routes). */
export function installLimits(
  app: FastifyInstance,
  gw: GatewayContext,
  paths: readonly string[],
  spend?: SpendLookup,
): InstalledLimits {
  const limited = new Set(paths);
  const out: InstalledLimits = {};
  if (gw.config.limits.rate_limit.per_minute > 0) {
    const url = gw.config.redis?.url;
    let lastLog = 0;
    const redis = url
      ? createLimiterRedis(
          url,
          (err) => {
            // Redis down is expected during failover; say so at most every 10 s.
            if (Date.now() - lastLog > 10_000) {
              lastLog = Date.now();
              app.log.warn({ err: err.message }, 'rate limit redis unavailable; requests pass unlimited');
            }
          },
          gw.redisTimeoutMs,
        )
      : undefined;
    if (redis) {
      gw.onShutdown(() => redis.quit().catch(() => redis.disconnect()), 'rate-limit-redis');
      // Start counting from the first request when Redis is up; do not hold startup when it is not.
      app.addHook('onReady', () => waitReady(redis, gw.redisTimeoutMs ?? REDIS_READY_WAIT_MS));
    }
    out.rateLimit = registerTenantRateLimit(app, gw, redis);
  }
  if (gw.config.budgets.length > 0) {
    if (spend) {
      out.budget = new BudgetGuard({
        budgets: gw.config.budgets,
        spend,
        onLookupError: (err) =>
          app.log.warn({ err: (err as Error).message }, 'budget spend lookup failed; request allowed'),
      });
    } else {
      app.log.warn('budgets are configured but no usage ledger provides spend; budgets are not enforced');
    }
  }
  if (!out.rateLimit && !out.budget) return out;
  app.addHook('preHandler', async (req) => {
    if (!limited.has(req.routeOptions.url ?? '')) return;
    const p = req.principal as Principal | undefined;
    try {
      await out.rateLimit?.(req);
      if (p) await out.budget?.check(p.tenant);
    } catch (err) {
      counted(gw, p?.tenant ?? 'anonymous', err);
    }
  });
  return out;
}
