// bench chaos's warm-up rule: warm-up rounds of full-concurrency load, each followed by a settled
// reading (a full GC), until the gateway's heap after GC grew by less than
// CHAOS_WARMUP_SETTLED_GROWTH over the last CHAOS_WARMUP_SETTLED_ROUNDS rounds together: its
// bounded caches (token-id cache, piece memos, session store, routing index, request records, body
// memo) are then as full as this traffic fills them, so RSS growth after the warm-up reading is not
// cache fill. Over two rounds, not one: a cache that still fills by 1-2 MB a round stayed under 3 %
// of a ~55 MB heap for one round (a run quoted +16 % heap after such a warm-up). Bounded by
// CHAOS_WARMUP_MAX_ROUNDS (then reported as not settled: a leak never settles, and still shows as
// growth from the start reading to the end one). O(rounds).
/** One warm-up round's load, ms. */
export const CHAOS_WARMUP_ROUND_MS = 4_000;
/** Rounds over which the heap's growth is measured (the first round's reading is the base of the second's). */
export const CHAOS_WARMUP_SETTLED_ROUNDS = 2;
export const CHAOS_WARMUP_MIN_ROUNDS = CHAOS_WARMUP_SETTLED_ROUNDS + 1;
export const CHAOS_WARMUP_MAX_ROUNDS = 8;
/** Warm once the heap after GC grew by less than this fraction over the last CHAOS_WARMUP_SETTLED_ROUNDS rounds. */
export const CHAOS_WARMUP_SETTLED_GROWTH = 0.03;

/** true: warm; false: a bound stopped it; undefined: another round. `heapMb`: heap used after
 *  each round's GC, in order. */
export function chaosWarmUpDone(heapMb: readonly number[]): boolean | undefined {
  const n = heapMb.length;
  if (
    n >= CHAOS_WARMUP_MIN_ROUNDS &&
    heapMb[n - 1] < heapMb[n - 1 - CHAOS_WARMUP_SETTLED_ROUNDS] * (1 + CHAOS_WARMUP_SETTLED_GROWTH)
  )
    return true;
  if (n >= CHAOS_WARMUP_MAX_ROUNDS) return false;
  return undefined;
}
