// session_hash: consistent hashing on the session key with bounded loads (Mirrokni, Thorup,
// Zadimoghaddam 2018): the session's home is its ring successor; if that worker already has
// ceil((1+ε)·mean) in flight, walk clockwise to the first with room. O(log(n·v)) + O(n) walk.
// Settings: epsilon (default 0.25), vnodes (160). Requests without a session key hash the tenant
// plus the first 256 characters of the text, so anonymous traffic still spreads deterministically.
import { boundedCapacity, hash32, hasRoom, HashRing } from '../hash-ring.ts';
import { num } from '../policy-options.ts';
import type { Choice, Policy, PolicyOptions, RouteInfo, WorkerView } from '../types.ts';

export const DEFAULT_EPSILON = 0.25;
export const SESSION_HASH_BRANCHES = ['home', 'overflow', 'saturated'] as const;
const ANON_KEY_CHARS = 256;

export function sessionKey(info: RouteInfo): string {
  if (info.sessionId) return `${info.tenant}\u0000${info.sessionId}`;
  return `${info.tenant}\u0000text:${(info.text ?? '').slice(0, ANON_KEY_CHARS)}`;
}

export class SessionHashPolicy implements Policy {
  readonly name = 'session_hash';
  private readonly epsilon: number;
  private readonly ring: HashRing;

  constructor(opts: PolicyOptions = {}) {
    this.epsilon = num(opts, 'epsilon', DEFAULT_EPSILON, 0);
    this.ring = new HashRing(num(opts, 'vnodes', 160, 1, 10_000));
  }

  select(workers: readonly WorkerView[], info: RouteInfo): Choice | null {
    if (workers.length === 0) return null;
    const cap = boundedCapacity(workers, this.epsilon);
    let first: WorkerView | undefined;
    for (const w of this.ring.walk(workers, hash32(sessionKey(info)))) {
      if (!first) first = w;
      if (hasRoom(w, cap)) return { worker: w, branch: w === first ? 'home' : 'overflow' };
    }
    // every worker at its own maxInFlight: the least loaded one queues it
    let best = workers[0];
    for (const w of workers) if (w.inFlight < best.inFlight) best = w;
    return { worker: best, branch: 'saturated' };
  }
}
