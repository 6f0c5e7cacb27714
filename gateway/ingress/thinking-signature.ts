// Signatures of thinking blocks (Anthropic Messages). Anthropic signs each thinking block so that a
// client sending it back in a later turn (Claude Code keeps them across turns) proves the text is
// what the model produced. The gateway does the same for thinking it relays from an engine:
// `ctxg1_` + base64url HMAC-SHA256 of the text under the tenant's own key: HKDF-SHA256 of a key
// derived from the server secret (tenancy's cache-salt secret, under its own label), with the
// tenant id, length-prefixed, as the context. So it is deterministic, bound to the tenant (no
// joining of tenant and text can make two tenants' inputs equal), and verifiable without storing
// anything. On the way back in every signature is accepted and the
// block kept (a client may carry Anthropic's own signatures, which only Anthropic can check); the
// receipt says how many were the gateway's and verified, foreign, or not matching their text.
// O(text) per block.

import { createHash, createHmac, hkdfSync } from 'node:crypto';

export const SIGNATURE_PREFIX = 'ctxg1_';

/** HMAC of `data` under the gateway's signing key (base64url). */
export type Mac = (data: string) => string;

export type SignatureCheck = 'verified' | 'foreign' | 'altered' | 'missing';

/** Parts joined unambiguously: each one's UTF-8 byte length (8 bytes, big-endian), then its bytes. */
export function framed(parts: readonly string[]): Buffer {
  const out: Buffer[] = [];
  for (const p of parts) {
    const b = Buffer.from(p, 'utf8');
    const len = Buffer.alloc(8);
    len.writeBigUInt64BE(BigInt(b.length));
    out.push(len, b);
  }
  return Buffer.concat(out);
}

/** A 32-byte key of one tenant for one use: HKDF-SHA256 of the server-derived key for `label`,
 *  the context a hash of (label, tenant) framed (HKDF's context is bounded in length, ids are not). */
export function tenantKey(mac: Mac, label: string, tenant: string): Buffer {
  const ikm = Buffer.from(mac(label), 'base64url');
  const info = createHash('sha256')
    .update(framed([label, tenant]))
    .digest();
  return Buffer.from(hkdfSync('sha256', ikm, Buffer.alloc(0), info, 32));
}

export function signThinking(mac: Mac, tenant: string, text: string): string {
  const key = tenantKey(mac, 'thinking-key', tenant);
  return SIGNATURE_PREFIX + createHmac('sha256', key).update(text, 'utf8').digest('base64url');
}

export function checkThinking(mac: Mac, tenant: string, text: string, signature: unknown): SignatureCheck {
  if (typeof signature !== 'string' || signature === '') return 'missing';
  if (!signature.startsWith(SIGNATURE_PREFIX)) return 'foreign';
  return signature === signThinking(mac, tenant, text) ? 'verified' : 'altered';
}
