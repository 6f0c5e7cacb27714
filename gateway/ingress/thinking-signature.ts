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
// O(text) per block. The tenant keys are memoised (TENANT_KEY_MEMO entries, oldest dropped first),
// keyed by the server-derived key itself, so a new secret derives new keys: deriving one (a hash
// and an HKDF) cost ~0.1 ms, paid on every answer and on every signed block sent back.

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

/** Tenant keys memoised (labels × tenants; a few dozen bytes each). */
export const TENANT_KEY_MEMO = 4096;
const keys = new Map<string, Buffer>();

/** A 32-byte key of one tenant for one use: HKDF-SHA256 of the server-derived key for `label`,
 *  the context a hash of (label, tenant) framed (HKDF's context is bounded in length, ids are not). */
export function tenantKey(mac: Mac, label: string, tenant: string): Buffer {
  const base = mac(label);
  // base64url has no NUL: the memo key cannot be joined two ways.
  const memoKey = `${base}\u0000${label}\u0000${tenant}`;
  const hit = keys.get(memoKey);
  if (hit !== undefined) return hit;
  const ikm = Buffer.from(base, 'base64url');
  const info = createHash('sha256')
    .update(framed([label, tenant]))
    .digest();
  const key = Buffer.from(hkdfSync('sha256', ikm, Buffer.alloc(0), info, 32));
  if (keys.size >= TENANT_KEY_MEMO) keys.delete(keys.keys().next().value as string);
  keys.set(memoKey, key);
  return key;
}

/** The label the thinking signatures' tenant keys derive from. */
export const THINKING_KEY_LABEL = 'thinking-key';

export function signThinking(mac: Mac, tenant: string, text: string): string {
  const key = tenantKey(mac, THINKING_KEY_LABEL, tenant);
  return SIGNATURE_PREFIX + createHmac('sha256', key).update(text, 'utf8').digest('base64url');
}

export function checkThinking(mac: Mac, tenant: string, text: string, signature: unknown): SignatureCheck {
  if (typeof signature !== 'string' || signature === '') return 'missing';
  if (!signature.startsWith(SIGNATURE_PREFIX)) return 'foreign';
  return signature === signThinking(mac, tenant, text) ? 'verified' : 'altered';
}
