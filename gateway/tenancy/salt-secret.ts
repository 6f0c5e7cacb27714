// Where the cache-salt secret comes from, so every replica derives the same salt for a tenant
// (a tenant's prefix cache then follows it across replicas, and salts survive restarts):
// 1. `tenancy.cache_salt_secret` or CTXGATE_CACHE_SALT_SECRET (at least 16 characters);
// 2. else, with `redis.url`, one secret created once in Redis (SET NX, so the first replica's wins
//    and every later one reads it); anyone who can read that Redis can then compute salts, which is
//    no more than they already see there (sessions, the routing index);
// 3. else a random one in this process's memory, with a warning: replicas and restarts then never
//    share a tenant's cache (isolation holds either way; only hits are lost).
// One Redis round trip at start, none per request.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { GatewayConfig } from '../config/schema.ts';
import { CACHE_SALT_SECRET_ENV } from './cache-salt.ts';

/** Redis key of the shared secret. */
export const SALT_SECRET_KEY = 'ctxgate:tenancy:cache-salt-secret';
/** How long start-up waits for Redis before falling back to a process secret. */
const REDIS_WAIT_MS = 3_000;

export type SecretSource = 'config' | 'redis' | 'process';

export interface SaltSecret {
  secret: string;
  source: SecretSource;
  /** Why the source is not shared, for the start-up warning. */
  warning?: string;
}

export function configuredSecret(
  tenancy: GatewayConfig['tenancy'],
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  const s = tenancy.cache_salt_secret ?? env[CACHE_SALT_SECRET_ENV];
  return s && s.length >= 16 ? s : undefined;
}

/** Reads (or creates once) the shared secret in Redis (`waitMs`: per connect and command). */
export async function redisSecret(url: string, key = SALT_SECRET_KEY, waitMs = REDIS_WAIT_MS): Promise<string> {
  const redis = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    connectTimeout: waitMs,
    commandTimeout: waitMs,
    retryStrategy: () => null,
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    await redis.set(key, randomBytes(32).toString('hex'), 'NX');
    const s = await redis.get(key);
    if (!s || s.length < 16) throw new Error(`${key} holds no usable secret`);
    return s;
  } finally {
    redis.disconnect();
  }
}

export async function resolveSaltSecret(
  config: GatewayConfig,
  env: NodeJS.ProcessEnv = process.env,
  redisWaitMs = REDIS_WAIT_MS,
): Promise<SaltSecret> {
  const configured = configuredSecret(config.tenancy, env);
  if (configured) return { secret: configured, source: 'config' };
  const url = config.redis?.url;
  if (url) {
    try {
      return { secret: await redisSecret(url, SALT_SECRET_KEY, redisWaitMs), source: 'redis' };
    } catch (err) {
      return {
        secret: randomBytes(32).toString('hex'),
        source: 'process',
        warning: `tenancy.cache_salt_secret is not set and Redis could not provide a shared one (${(err as Error).message}): this replica's tenant salts (and the reasoning it seals) are its own until restart`,
      };
    }
  }
  return {
    secret: randomBytes(32).toString('hex'),
    source: 'process',
    warning: `tenancy.cache_salt_secret (or ${CACHE_SALT_SECRET_ENV}) is not set: tenant cache salts come from a secret generated in this process, so replicas and restarts never share a tenant's prefix cache, and reasoning sealed by one (Responses encrypted_content) does not open on another (set it, or redis.url to share one)`,
  };
}
