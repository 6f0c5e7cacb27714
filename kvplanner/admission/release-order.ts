// The order in which late binding releases a tenant's held calls (the gateway's gate and the
// fleet simulator both compute it here; fair-queue.ts keeps each tenant's calls in this order).
// A call is released as if it had arrived `slack` later: slack = min(release_max_slack_ms,
// uncached tokens × release_ms_per_token), where the uncached tokens are its prompt less the most
// any worker's cache holds of it (the policy's own estimate). Cheap calls overtake expensive ones
// that arrived up to release_max_slack_ms before them (shortest-job-first on a sliding window);
// none is overtaken by a call that arrived more than release_max_slack_ms after it, so what the
// order costs a call is bounded by the work of the calls that arrive in that window. The queue
// (fair-queue.ts) caps the slack further at each release, at release_ms_per_held × the calls the
// tenant holds then: while the gate holds few calls it releases close to arrival order (a call
// waits about as long as FCFS makes it), and the full slack applies only under a backlog. It also
// caps it, at each release, at release_slack_per_drain × the tenant's drain time (its held calls
// × the tenants in the round × the running mean interval between releases: about what arrival
// order, tenants taking turns, would make its newcomer wait now; its own share, so a neighbour's
// backlog never loosens it): no call is overtaken by one that arrived more than k drain times
// after it, so a call waits at most about (k + 1) × what arrival order would make it wait, whatever its cache state (a call
// whose worker lost its cache has a large uncached prompt, hence a large slack, and calls that hit
// the cache would otherwise overtake it for as long as they keep coming). The bound is in time,
// not calls: a fleet that releases a call every few ms stays near arrival order whatever it holds.
// Why: under overload a FIFO gate makes every call wait the whole backlog; releasing the short
// prefills first lets most calls through quickly while the long ones wait a bounded time more.
// Cost: releaseCost one chain read and O(workers) index matches (held calls only); releaseSlackMs O(1).
// Settings: release_ms_per_token, release_max_slack_ms, release_ms_per_held, release_slack_per_drain (ADMISSION_DEFAULTS,
// where the sweeps they were chosen from are stated).
import type { Policy, RouteInfo, WorkerView } from '../types.ts';
import type { AdmissionSettings } from './admission-defaults.ts';
import { cachedTokensEach } from './cached-each.ts';

const scratch: number[] = [];

/** The prompt tokens no worker's cache holds, by the policy's estimate (the whole prompt when the
 *  policy keeps no index). */
export function releaseCost(
  policy: Pick<Policy, 'expectedCachedTokens' | 'cachedTokensEach'>,
  views: readonly WorkerView[],
  info: RouteInfo,
): number {
  let top = 0;
  // one read of the prompt's chain for every worker (cached-each.ts)
  cachedTokensEach(policy, views, info, scratch);
  for (const c of scratch) if (c > top) top = c;
  return Math.max(0, (info.promptTokens ?? 0) - top);
}

/** How much later than its arrival a call with `uncachedTokens` to prefill is released, ms. */
export function releaseSlackMs(
  uncachedTokens: number,
  s: Pick<AdmissionSettings, 'release_ms_per_token' | 'release_max_slack_ms'>,
): number {
  const slack = uncachedTokens * s.release_ms_per_token;
  return Math.min(s.release_max_slack_ms, Math.max(0, slack));
}
