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
// The uncached tokens are rounded down to a power of two first (sizeClassTokens): calls in one class
// (between two powers of two) keep arrival order among themselves; a boundary still splits some
// near-equal pairs (1,023 vs 1,024 tokens). Reordering near-equal prefills gains nothing
// and lengthens the tail: on two-kinds (cold 12k–24k-token prompts) the prefill tenant's ×2 p90
// rose with every looser cap tried, on all five seeds. Rounding only lowers a slack, so every
// bound here still holds. Fleet simulator, conversation half, default flags, before → after
// (2026-12-02): one tenant ×1 / ×2 / ×0.9 p90 122.9 / 401.3 / 23.0 → 103.4 / 348.7 / 22.9 s
// (×1 p99 192.4 → 198.4); 4 tenants ×1 / ×2 162.0 / 654.0 → 136.4 / 523.4 s, 16 tenants 215.2 /
// 940.6 → 202.1 / 897.1 s; two-kinds seeds 1–5, median p90 ×1 109.2 → 108.9 s, ×2 372.9 →
// 362.1 s; each tenant's p90 against its arrival-order-gate p90 at most 1.09× (was 1.20×: one
// of 4 alike tenants, review s36 F1).
// A held call's prompt is work the engines will do before the calls after it (review s35 F2):
// a conversation's next turn, arriving while its previous turn is still held, holds in its
// prompt the previous one's, which no cache holds yet. Charged as uncached it got several turns'
// slack, fixed at push, and waited behind later turns of other conversations long after its
// previous turn had been prefilled (two-kinds, 2 workers: tenant decode's p90 TTFT 193 s against
// 132 s in arrival order). So a call's uncached tokens are also less the prompt of the held call
// of its tenant whose prompt its own extends furthest (releasePlacement; by block hash chain,
// when the call has one), and it is never released before that call (its key is at least that
// call's): each prompt's work is charged once, to the first turn that has to do it.
// Cost: releaseCost one chain read and O(workers) index matches (held calls only); releaseSlackMs
// O(1); releasePlacement O(min(uncached blocks, distinct held chain lengths)) map reads.
// Settings: release_ms_per_token, release_max_slack_ms, release_ms_per_held, release_slack_per_drain (ADMISSION_DEFAULTS,
// where the sweeps they were chosen from are stated).
import type { Policy, RouteInfo, WorkerView } from '../types.ts';
import type { AdmissionSettings } from './admission-defaults.ts';
import { cachedTokensEach } from './cached-each.ts';
import type { FairQueue, HeldChain } from './fair-queue.ts';

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

/** The uncached tokens a call is priced at: rounded down to a power of two (its size class), so
 *  calls in the same class keep arrival order and a call overtakes only calls of a higher class (the gain is a short prefill passing a long one; reordering near-equal ones
 *  only lengthens the tail: the header). 0 below one token. */
export function sizeClassTokens(uncachedTokens: number): number {
  return uncachedTokens >= 1 ? 2 ** Math.floor(Math.log2(uncachedTokens)) : 0;
}

/** How much later than its arrival a call with `uncachedTokens` to prefill is released, ms. */
export function releaseSlackMs(
  uncachedTokens: number,
  s: Pick<AdmissionSettings, 'release_ms_per_token' | 'release_max_slack_ms'>,
): number {
  const slack = sizeClassTokens(uncachedTokens) * s.release_ms_per_token;
  return Math.min(s.release_max_slack_ms, Math.max(0, slack));
}

/** Where a call to be held goes in its tenant's release order: its slack and its chain (what the
 *  calls after it look up). `cachedTokens`: the most any worker's cache holds of its prompt
 *  (arrival.ts readHolders). The held call of the tenant whose prompt this one's extends furthest
 *  (a conversation's previous turn, still held) will prefill that prefix first: it is not charged
 *  again here, and this call's key is at least that call's. A call without block hashes (a
 *  text-only prompt) looks at no held call and offers none. */
export function releasePlacement(
  queue: Pick<FairQueue<unknown>, 'heldBasis'>,
  info: RouteInfo,
  cachedTokens: number,
  s: Pick<AdmissionSettings, 'release_ms_per_token' | 'release_max_slack_ms'>,
): { slackMs: number; chain: HeldChain | undefined } {
  const prompt = info.promptTokens ?? 0;
  const hashes = info.blockHashes;
  if (!hashes || hashes.length === 0)
    return { slackMs: releaseSlackMs(Math.max(0, prompt - cachedTokens), s), chain: undefined };
  // a held prompt within what a cache holds saves nothing more: look above the cached blocks
  // (a lower bound on them: a full block has at least prompt ÷ blocks tokens)
  const fromBlock = prompt > 0 ? Math.floor((cachedTokens * hashes.length) / prompt) : 0;
  const found = queue.heldBasis(info.tenant, hashes, fromBlock);
  // one whose prompt a cache already holds is no reason to wait for it
  const basis = found && found.tokens > cachedTokens ? found : undefined;
  const covered = Math.max(cachedTokens, Math.min(prompt, basis?.tokens ?? 0));
  return {
    slackMs: releaseSlackMs(Math.max(0, prompt - covered), s),
    chain: {
      end: hashes[hashes.length - 1],
      blocks: hashes.length,
      tokens: prompt,
      notBeforeKey: basis?.key ?? Number.NEGATIVE_INFINITY,
    },
  };
}
