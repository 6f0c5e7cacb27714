// Per-tenant request rate limit over @fastify/rate-limit's stores: a fixed one-minute window per
// tenant (the key is the authenticated tenant, never the client IP, so many keys of one tenant
// share its quota and NAT'd tenants do not share each other's). Redis-backed when redis.url is
// configured, so every replica counts against one window; in-process (an LRU of keys) otherwise.
// Redis trouble lets requests through (skipOnError) and never stalls them: no offline queue,
// short command timeout. Settings: limits.rate_limit.per_minute (0 = off), redis.url.
import fastifyRateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Redis } from 'ioredis';
import type { Principal } from '../auth.ts';
import type { GatewayContext } from '../context.ts';
import { GatewayError } from '../../middleware/errors.ts';

export const RATE_WINDOW_MS = 60_000;
/** Redis key namespace of the per-tenant windows. */
export const RATE_KEY_PREFIX = 'ctxgate:rl:';
/** A Redis command slower than this counts as a Redis failure (and the request passes). */
export const REDIS_COMMAND_TIMEOUT_MS = 250;
/** Tenants the in-process store remembers (LRU); tenants come from configured keys. */
const LOCAL_CACHE_KEYS = 10_000;

export type TenantLimiter = (req: FastifyRequest) => Promise<void>;

/** A Redis client that fails fast instead of queueing while the server is away. */
export function createLimiterRedis(
  url: string,
  onError: (err: Error) => void,
  commandTimeoutMs = REDIS_COMMAND_TIMEOUT_MS,
): Redis {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: commandTimeoutMs,
    connectTimeout: 1_000,
    // Keep reconnecting (capped backoff) so the limiter recovers when Redis comes back.
    retryStrategy: (times) => Math.min(1_000, 50 * times),
  });
  redis.on('error', onError);
  return redis;
}

/**
 * Registers the plugin (not globally: the gateway decides where it applies) and returns the
 * check the proxy routes run once the caller is authenticated.
 */
export function registerTenantRateLimit(app: FastifyInstance, gw: GatewayContext, redis?: Redis): TenantLimiter {
  const perMinute = gw.config.limits.rate_limit.per_minute;
  app.register(fastifyRateLimit, {
    global: false,
    max: perMinute,
    timeWindow: RATE_WINDOW_MS,
    skipOnError: true,
    cache: LOCAL_CACHE_KEYS,
    ...(redis ? { redis, nameSpace: RATE_KEY_PREFIX } : {}),
  });
  let check: ReturnType<FastifyInstance['createRateLimit']> | undefined;
  return async (req) => {
    const tenant = (req.principal as Principal | undefined)?.tenant ?? 'anonymous';
    // Created on first use: the decorator exists only once the plugin has loaded.
    check ??= app.createRateLimit({
      keyGenerator: (r) => (r.principal as Principal | undefined)?.tenant ?? 'anonymous',
    });
    const r = await check(req);
    if (r.isAllowed || !r.isExceeded) return;
    throw new GatewayError(
      'rate_limited',
      `tenant '${tenant}' is over its rate limit of ${r.max} requests per minute`,
      null,
      {
        'retry-after': String(Math.max(1, r.ttlInSeconds)),
        'x-ratelimit-limit': String(r.max),
        'x-ratelimit-remaining': '0',
        'x-ratelimit-reset': String(Math.max(1, r.ttlInSeconds)),
      },
    );
  };
}
