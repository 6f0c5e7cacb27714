// Bearer-key authentication. Keys are configured as sha256 hashes only; a presented key is hashed
// and compared against every configured hash in constant time (no early exit on a match), so
// the time taken does not depend on which key matched or how close a wrong key came.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { GatewayConfig } from './config/schema.ts';
import { GatewayError } from '../middleware/errors.ts';

export interface Principal {
  tenant: string;
  keyId: string;
  admin: boolean;
}

export const OPEN_PRINCIPAL: Principal = Object.freeze({ tenant: 'default', keyId: 'none', admin: true });

interface KeyEntry {
  hash: Buffer;
  principal: Principal;
}

export type Authenticator = (authorization: string | undefined) => Principal;

export function createAuthenticator(auth: GatewayConfig['auth']): Authenticator {
  if (auth.mode === 'none') return () => OPEN_PRINCIPAL;
  const entries: KeyEntry[] = auth.keys.map((k) => ({
    hash: Buffer.from(k.key.slice('sha256:'.length), 'hex'),
    principal: Object.freeze({ tenant: k.tenant, keyId: k.id ?? k.key.slice(7, 19), admin: k.admin }),
  }));
  return (authorization) => {
    const m = authorization ? /^Bearer\s+(\S+)\s*$/i.exec(authorization) : null;
    if (!m) throw new GatewayError('unauthenticated', 'missing bearer token (Authorization: Bearer KEY)');
    const presented = createHash('sha256').update(m[1], 'utf8').digest();
    let found: Principal | undefined;
    for (const e of entries) {
      if (timingSafeEqual(presented, e.hash) && !found) found = e.principal;
    }
    if (!found) throw new GatewayError('unauthenticated', 'invalid API key');
    return found;
  };
}

export function requireAdmin(p: Principal): void {
  if (!p.admin) throw new GatewayError('admin_required', 'this route needs an admin key');
}
