// Each worker's cached tokens of one prompt, by the routing policy's own index: what the admission
// gate (the holder of a call, its release order) and the fleet simulator read per held call.
// Why one call: asked one worker at a time, a policy reads the prompt's chain once per worker —
// for a text-only prompt (a model without a tokenizer) that is a SHA-256 pass over the whole text
// per worker, O(workers × prompt) of event-loop time per held call. A policy that offers
// `cachedTokensEach` reads the chain once and matches it against every worker: O(prompt + workers·depth).
// Policies without it are asked per worker (same values either way: a test compares them).
import type { Policy, RouteInfo, WorkerView } from '../types.ts';

/** Fills `out` (aligned with `views`) with each worker's cached tokens of the prompt; false (and
 *  `out` all 0) when the policy keeps no index. */
export function cachedTokensEach(
  policy: Pick<Policy, 'expectedCachedTokens' | 'cachedTokensEach'>,
  views: readonly WorkerView[],
  info: RouteInfo,
  out: number[],
): boolean {
  out.length = views.length;
  if (policy.cachedTokensEach) {
    policy.cachedTokensEach(views, info, out);
    return true;
  }
  if (!policy.expectedCachedTokens) {
    out.fill(0);
    return false;
  }
  for (let i = 0; i < views.length; i++) out[i] = policy.expectedCachedTokens([views[i]], info);
  return true;
}

/** The worker holding most of the prompt (its position, -1 when none holds any) and how many
 *  tokens more it holds than the runner-up (what only it holds: a root every worker holds is no
 *  reason to wait for one). */
export function leader(each: readonly number[]): { index: number; lead: number } {
  let best = -1;
  let top = 0;
  let second = 0;
  for (let i = 0; i < each.length; i++) {
    const c = each[i];
    if (c > top) {
      second = top;
      top = c;
      best = i;
    } else if (c > second) second = c;
  }
  return { index: best, lead: top - second };
}
