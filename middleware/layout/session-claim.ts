// One derived session per conversation (layout step 1, after session-id.ts). A derived id is the
// base id (root + task) until the conversation takes its first assistant turn; from then on the
// first conversation to continue the base CLAIMS it (its fork id, which hashes its first turn, is
// recorded in the base's state, TURN_SLOT) and keeps the base id for the rest of its run, so an agent that
// sends no session header sees one session id from its first call to its last. A conversation
// whose first turn differs from the claim (a parallel agent on the same task: a true fork) gets
// the fork id session-id.ts derives, seeded with call 1's state.
//
// Call 1's state is kept under the base's seed id (`<base>~1`): written once, when the base is
// claimed, and updated by any later request that has no assistant turn yet (another run starting
// the same task), so a claimed base is never rewound to a call 1 and forks always seed from one.
// A seed is only taken when it led with the same non-root messages as the request (`lead`).
// Races: two conversations claiming one base at once both continue it until the next call, where
// the one whose turn is not recorded moves to its fork (one break). Store cost per call: one get;
// two on a fork's calls and on call 1 of a claimed base; one more put, once, when a base is
// claimed. Claims are per tenant, as every session key.
import { defineSlot, readSlot } from '../session/stage-state.ts';
import type { SessionState, SessionStore } from '../session/store.ts';
import type { SessionIdentity } from './session-id.ts';

/** The session's parts of the state: the non-root messages its call 1 led with (a seed is only
 * taken by a request that led with the same), and the fork id of the conversation that claimed it. */
export const LEAD_SLOT = defineSlot<string>('fork_lead', 1);
export const TURN_SLOT = defineSlot<string>('claimed_turn', 1);

/** Suffix of the state id that keeps a claimed base's call-1 state. */
export const SEED_SUFFIX = '~1';

export interface ResolvedSession {
  /** The session id clients, routing and records see. */
  id: string;
  /** The store id the state is read from and written to (the id, or the base's seed). */
  stateId: string;
  loaded?: SessionState;
  /** State id whose in-process call (token ids, render memo) this request continues. */
  localFrom: string;
  /** Set when this request claims the base: record it in the state (TURN_SLOT). */
  claim?: string;
  /** Set with `claim` when the base's call-1 state was kept under this seed id. */
  seedId?: string;
}

const turnOf = (s: SessionState | undefined): string | undefined => (s ? readSlot(s, TURN_SLOT) : undefined);
const leadOf = (s: SessionState | undefined): string | undefined => (s ? readSlot(s, LEAD_SLOT) : undefined);

/**
 * Which session a request belongs to. `hasLocal(stateId)`: whether this process served that
 * state's last call (a fork whose state is gone was not new: it gets no stale seed).
 */
export async function resolveSession(
  store: SessionStore,
  tenant: string,
  ident: SessionIdentity,
  hasLocal: (stateId: string) => boolean,
): Promise<ResolvedSession> {
  if (ident.source !== 'hash') return plainSession(store, tenant, ident.id);
  if (ident.parent === undefined) {
    // No assistant turn yet: call 1 of a run. A claimed base keeps its conversation's state.
    const base = await store.get(tenant, ident.id);
    if (turnOf(base) === undefined) return { id: ident.id, stateId: ident.id, loaded: base, localFrom: ident.id };
    const seedId = ident.id + SEED_SUFFIX;
    return { id: ident.id, stateId: seedId, loaded: await store.get(tenant, seedId), localFrom: seedId };
  }
  const baseId = ident.parent;
  const base = await store.get(tenant, baseId);
  const claimed = turnOf(base);
  if (claimed === ident.id) return { id: baseId, stateId: baseId, loaded: base, localFrom: baseId };
  if (claimed === undefined && (base === undefined || leadOf(base) === ident.lead)) {
    const claim: ResolvedSession = { id: baseId, stateId: baseId, loaded: base, localFrom: baseId, claim: ident.id };
    if (!base) return claim;
    const seedId = baseId + SEED_SUFFIX;
    await store.put(seedCopy(base, seedId));
    return { ...claim, seedId };
  }
  // A fork: its own id, seeded with call 1's state the first time.
  const fork = await store.get(tenant, ident.id);
  if (fork || hasLocal(ident.id)) return { id: ident.id, stateId: ident.id, loaded: fork, localFrom: ident.id };
  const seedId = baseId + SEED_SUFFIX;
  const seed = claimed === undefined ? base : await store.get(tenant, seedId);
  if (!seed || ident.lead === undefined || leadOf(seed) !== ident.lead)
    return { id: ident.id, stateId: ident.id, localFrom: ident.id };
  const copy = structuredClone(seed);
  copy.sessionId = ident.id;
  delete copy.checksum;
  return { id: ident.id, stateId: ident.id, loaded: copy, localFrom: claimed === undefined ? baseId : seedId };
}

/** The base's call-1 state, kept under its seed id when the base is claimed. */
// A top-level function, not a per-call closure: tsx names each `const f = () =>` (~1 µs a call).
async function plainSession(store: SessionStore, tenant: string, id: string): Promise<ResolvedSession> {
  return { id, stateId: id, loaded: await store.get(tenant, id), localFrom: id };
}

function seedCopy(base: SessionState, seedId: string): SessionState {
  const copy = structuredClone(base);
  copy.sessionId = seedId;
  delete copy.checksum;
  return copy;
}
