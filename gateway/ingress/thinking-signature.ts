// Signatures of thinking blocks (Anthropic Messages). Anthropic signs each thinking block so that a
// client sending it back in a later turn (Claude Code keeps them across turns) proves the text is
// what the model produced. The gateway does the same for thinking it relays from an engine:
// `ctxg1_` + base64url HMAC-SHA256 over (tenant, text) under a key derived from the server secret
// (tenancy's cache-salt secret, under its own label), so it is deterministic, bound to the tenant,
// and verifiable without storing anything. On the way back in every signature is accepted and the
// block kept (a client may carry Anthropic's own signatures, which only Anthropic can check); the
// receipt says how many were the gateway's and verified, foreign, or not matching their text.
// O(text) per block.

export const SIGNATURE_PREFIX = 'ctxg1_';

/** HMAC of `data` under the gateway's signing key (base64url). */
export type Mac = (data: string) => string;

export type SignatureCheck = 'verified' | 'foreign' | 'altered' | 'missing';

export function signThinking(mac: Mac, tenant: string, text: string): string {
  return SIGNATURE_PREFIX + mac(`thinking\u0000${tenant}\u0000${text}`);
}

export function checkThinking(mac: Mac, tenant: string, text: string, signature: unknown): SignatureCheck {
  if (typeof signature !== 'string' || signature === '') return 'missing';
  if (!signature.startsWith(SIGNATURE_PREFIX)) return 'foreign';
  return signature === signThinking(mac, tenant, text) ? 'verified' : 'altered';
}
