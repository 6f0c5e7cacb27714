// API keys for tests with auth mode `keys`: the config holds each key's sha256, never the key.
import { createHash } from 'node:crypto';

/** The `sha256:<hex>` form the config holds for a key. */
export const keyHash = (key: string): string => `sha256:${createHash('sha256').update(key).digest('hex')}`;

/** `auth` for a config with one key per tenant, from `{ tenant: key }` (in that order). */
export function keysAuth(keys: Record<string, string>): { mode: 'keys'; keys: { key: string; tenant: string }[] } {
  return { mode: 'keys', keys: Object.entries(keys).map(([tenant, key]) => ({ key: keyHash(key), tenant })) };
}
