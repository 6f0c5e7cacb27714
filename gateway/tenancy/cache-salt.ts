// Per-tenant prefix-cache salts. Engines share KV blocks between any two requests with the same
// prefix, so without a salt tenant B learns from `cached_tokens` (and from routing) whether tenant
// A sent a prompt B guessed. vLLM's defence is `cache_salt`: mixed into the first block's hash, it
// makes equal prompts under different salts share nothing. The gateway derives one salt per tenant
// (HMAC-SHA256 of the tenant id under a server secret, so a tenant can neither guess nor choose
// another's), replaces any client-supplied salt with it, and seeds its own block hashes with it, so
// the routing index, predictions and diagnostics are per tenant too. Tenants named in one
// `tenancy.cache_groups` entry share one salt on purpose. O(1) per request (memoised per tenant).
// Where the secret comes from when none is configured (Redis, or this process): salt-secret.ts.
import { createHmac, randomBytes } from 'node:crypto';
import type { GatewayConfig } from '../config/schema.ts';

/** Environment variable read when `tenancy.cache_salt_secret` is not set. */
export const CACHE_SALT_SECRET_ENV = 'CTXGATE_CACHE_SALT_SECRET';
/** Hex characters of a salt (128 bits). */
const SALT_HEX = 32;

export interface CacheSalts {
  /** The salt of a tenant's requests. */
  saltOf(tenant: string): string;
  /** Whether the secret was generated in this process (salts then change on restart). */
  readonly generated: boolean;
  /** HMAC-SHA256 (base64url) of `data` under a key derived from the secret for `label`. */
  mac(label: string, data: string): string;
}

/**
 * `shared`: a secret every replica agrees on (salt-secret.ts: from Redis); without it and without a
 * configured one, a secret generated in this process's memory.
 */
export function createCacheSalts(
  tenancy: GatewayConfig['tenancy'],
  env: NodeJS.ProcessEnv = process.env,
  shared?: string,
): CacheSalts {
  const configured = tenancy.cache_salt_secret ?? env[CACHE_SALT_SECRET_ENV];
  const secret = configured && configured.length >= 16 ? configured : (shared ?? randomBytes(32).toString('hex'));
  const groupOf = new Map<string, string>();
  for (const g of tenancy.cache_groups) for (const t of g.tenants) groupOf.set(t, g.name);
  const memo = new Map<string, string>();
  const keys = new Map<string, Buffer>();
  return {
    generated: secret !== configured && secret !== shared,
    mac(label, data) {
      let k = keys.get(label);
      if (k === undefined) {
        // One key per purpose: a signature can never pass for a salt, nor the reverse.
        k = createHmac('sha256', secret).update(`key\u0000${label}`).digest();
        keys.set(label, k);
      }
      return createHmac('sha256', k).update(data).digest('base64url');
    },
    saltOf(tenant) {
      let s = memo.get(tenant);
      if (s === undefined) {
        const group = groupOf.get(tenant);
        const subject = group !== undefined ? `group\u0000${group}` : `tenant\u0000${tenant}`;
        s = createHmac('sha256', secret).update(subject).digest('hex').slice(0, SALT_HEX);
        // Tenants come from configured keys (or the one open tenant): the memo stays that small.
        memo.set(tenant, s);
      }
      return s;
    },
  };
}
