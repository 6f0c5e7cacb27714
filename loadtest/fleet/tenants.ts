// Tenants for the fleet simulator's calls (bench fleet --tenants K): the Mooncake traces carry
// none, so a call's tenant is a hash of what stays the same along a conversation: its session id
// when it has one (agent recordings), else the chain key of its first two blocks (every
// conversation-half prompt starts with one shared block; the second one tells conversations
// apart: 3,627 distinct among 5,606 requests), else (a prompt of one block or less, ~550 there)
// the call's own id: keyed on the shared first block they would all be one tenant's (K 4: 1,784
// calls against 1,243–1,322). FNV-1a, 32 bits, modulo K. A generated trace that names each call's
// tenant (two-kinds.ts) keeps its names. O(1) per call.
import type { FleetRequest } from './trace.ts';

export function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** The tenant of a call among k (t0 … t{k−1}, or the one its trace names); 'fleet' when k ≤ 1
 *  (one tenant, as before). */
export function tenantOf(req: FleetRequest, k: number): string {
  if (k <= 1) return 'fleet';
  if (req.tenant !== undefined) return req.tenant;
  // the second block's key spelt as the routing hashes were before they became canonical
  // (routeHash): the tenants every figure was measured with
  const key = req.sessionId ?? (req.keys.length > 1 ? `k${req.keys[1].toString(36)}` : `call ${req.id}`);
  return `t${fnv1a(key) % k}`;
}
