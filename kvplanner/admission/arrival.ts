// What late binding decides about a call when it arrives, written once for the gateway's gate
// (gateway/admission/admission-gate.ts) and the fleet simulator (loadtest/fleet/simulator.ts), so
// the two cannot drift apart (review s35 F1: the simulator once bound calls the gate held).
//  - readHolders: each worker's cached tokens of the prompt, read once (cached-each.ts): the worker
//    holding most of it, what it holds beyond the runner-up (a root every worker holds is no
//    reason to wait for one), and the most any worker holds (the release order's cached part).
//  - bindsAtArrival: the call goes now, to that worker, when it holds ≥ locality_min_tokens beyond
//    the runner-up (its cache is there now and may be evicted while the call waits) and no other
//    tenant has calls held (they go first, by turns: one tenant's flood of continuations cannot
//    keep the workers busy while another tenant's calls wait).
// Cost: one chain read and O(workers) index matches per call read; bindsAtArrival O(1).
// Settings: locality_min_tokens (ADMISSION_DEFAULTS).
import type { Policy, RouteInfo, WorkerView } from '../types.ts';
import type { AdmissionSettings } from './admission-defaults.ts';
import { cachedTokensEach, leader } from './cached-each.ts';
import type { FairQueue } from './fair-queue.ts';

export interface HolderRead {
  /** position in the views of the worker holding most of the prompt (-1: none holds any) */
  home: number;
  /** what it holds beyond the runner-up, tokens */
  lead: number;
  /** the most any worker holds, tokens */
  top: number;
}

/** The policy's estimate of who holds the prompt (`scratch` is filled with each worker's cached
 *  tokens, aligned with `views`); all -1 / 0 when the policy keeps no index. */
export function readHolders(
  policy: Pick<Policy, 'expectedCachedTokens' | 'cachedTokensEach'>,
  views: readonly WorkerView[],
  info: RouteInfo,
  scratch: number[],
): HolderRead {
  if (!cachedTokensEach(policy, views, info, scratch)) return { home: -1, lead: 0, top: 0 };
  const l = leader(scratch);
  return { home: l.index, lead: l.lead, top: l.index >= 0 ? scratch[l.index] : 0 };
}

/** The worker a held call waits for (delay scheduling), or -1: the home when its lead is at least
 *  locality_min_tokens. */
export function localityHome(r: HolderRead, s: Pick<AdmissionSettings, 'locality_min_tokens'>): number {
  return r.lead >= s.locality_min_tokens ? r.home : -1;
}

/** Whether the call goes at arrival to its home (`localityHome`) instead of being held. */
export function bindsAtArrival(
  r: HolderRead,
  tenant: string,
  queue: Pick<FairQueue<unknown>, 'othersWaiting'>,
  s: Pick<AdmissionSettings, 'locality_min_tokens'>,
): boolean {
  return localityHome(r, s) >= 0 && !queue.othersWaiting(tenant);
}
