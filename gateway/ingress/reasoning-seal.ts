// encrypted_content of reasoning items (OpenAI Responses). OpenAI hands a reasoning item's state
// back encrypted when a request includes `reasoning.encrypted_content`, so a client that keeps no
// server-side state (store: false, as Codex runs) can send it back next turn. OpenAI's own items
// carry no readable text, only a summary and that blob, and a client built for them may keep
// nothing else (Codex 0.171 resends the reasoning_text too). Without a blob such a client would
// lose the model's reasoning between turns: the engine would see a history it did not generate,
// and the prefix it cached would break at that turn.
// The gateway seals the reasoning it relays from an engine the same way: `ctxg1_` + base64url of
// (key id | iv | AES-256-GCM ciphertext | tag), with the tenant as additional data, under the tenant's own
// key (HKDF of the server-derived seal key with the tenant id, as thinking signatures derive theirs),
// so no IV is ever shared between two tenants' keys. The IV is an HMAC of the text under another
// key of the tenant, so a whole answer and its stream carry the same blob and one IV only ever
// seals one text under one key. The key id (4 bytes of a MAC of a fixed label under the server
// secret, the same for every tenant) tells a blob sealed under another server secret (another
// replica or a restart without a shared tenancy.cache_salt_secret) from an altered one. On the way back a blob that opens for this tenant restores the text; OpenAI's own
// blobs (foreign), blobs of another secret (other_key) and blobs that do not open (altered, another
// tenant's) are reported so the
// caller can drop them with a receipt. O(text).
import { createCipheriv, createDecipheriv } from 'node:crypto';
import { createHmac } from 'node:crypto';
import { type Mac, SIGNATURE_PREFIX, tenantKey } from './thinking-signature.ts';

const KID_BYTES = 4;
const IV_BYTES = 12;
const TAG_BYTES = 16;

export type Opened =
  | { kind: 'opened'; text: string }
  | { kind: 'foreign' }
  | { kind: 'other_key' }
  | { kind: 'altered' };

/** Names the server secret a blob was sealed under (not the tenant: any tenant's blob shows it). */
const keyId = (mac: Mac): Buffer => Buffer.from(mac('reasoning-seal-kid'), 'base64url').subarray(0, KID_BYTES);

/** The label the seal's tenant keys derive from. */
export const REASONING_SEAL_KEY_LABEL = 'reasoning-seal-key';

const key = (mac: Mac, tenant: string): Buffer => tenantKey(mac, REASONING_SEAL_KEY_LABEL, tenant);

/** The IV of (tenant, text): a MAC of the text under the tenant's IV key. */
export function sealIv(mac: Mac, tenant: string, text: string): Buffer {
  const ivKey = tenantKey(mac, 'reasoning-seal-iv', tenant);
  return createHmac('sha256', ivKey).update(text, 'utf8').digest().subarray(0, IV_BYTES);
}

export function sealReasoning(mac: Mac, tenant: string, text: string): string {
  const iv = sealIv(mac, tenant, text);
  const c = createCipheriv('aes-256-gcm', key(mac, tenant), iv);
  c.setAAD(Buffer.from(tenant, 'utf8'));
  const body = Buffer.concat([c.update(text, 'utf8'), c.final()]);
  return SIGNATURE_PREFIX + Buffer.concat([keyId(mac), iv, body, c.getAuthTag()]).toString('base64url');
}

export function openReasoning(mac: Mac, tenant: string, blob: string): Opened {
  if (!blob.startsWith(SIGNATURE_PREFIX)) return { kind: 'foreign' };
  const sealed = Buffer.from(blob.slice(SIGNATURE_PREFIX.length), 'base64url');
  if (sealed.length < KID_BYTES + IV_BYTES + TAG_BYTES) return { kind: 'altered' };
  if (!sealed.subarray(0, KID_BYTES).equals(keyId(mac))) return { kind: 'other_key' };
  const raw = sealed.subarray(KID_BYTES);
  try {
    const d = createDecipheriv('aes-256-gcm', key(mac, tenant), raw.subarray(0, IV_BYTES));
    d.setAAD(Buffer.from(tenant, 'utf8'));
    d.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
    const text = Buffer.concat([d.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)), d.final()]);
    return { kind: 'opened', text: text.toString('utf8') };
  } catch {
    return { kind: 'altered' };
  }
}
