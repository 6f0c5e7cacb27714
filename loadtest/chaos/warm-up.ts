// bench chaos's warm-up rule: warm-up rounds of full-concurrency load, each followed by a settled
// reading (a full GC), until the gateway's heap after GC grew by less than
// CHAOS_WARMUP_SETTLED_GROWTH over the last round: its bounded caches (token-id cache, piece
// memos, session store, routing index, request records, body memo) are then as full as this
// traffic fills them, so RSS growth after the warm-up reading is not cache fill. Bounded by
// CHAOS_WARMUP_MAX_ROUNDS (then reported as not settled: a leak never settles, and still shows as
// growth from the start reading to the end one). O(rounds).

/** One warm-up round's load, ms. */
export const CHAOS_WARMUP_ROUND_MS = 4_000;
export const CHAOS_WARMUP_MIN_ROUNDS = 2;
export const CHAOS_WARMUP_MAX_ROUNDS = 6;
/** Warm once the heap after GC grew by less than this fraction over one round. */
export const CHAOS_WARMUP_SETTLED_GROWTH = 0.03;

/** true: warm; false: a bound stopped it; undefined: another round. `heapMb`: heap used after
 *  each round's GC, in order. */
export function chaosWarmUpDone(heapMb: readonly number[]): boolean | undefined {
  const n = heapMb.length;
  if (n >= CHAOS_WARMUP_MIN_ROUNDS && heapMb[n - 1] < heapMb[n - 2] * (1 + CHAOS_WARMUP_SETTLED_GROWTH)) return true;
  if (n >= CHAOS_WARMUP_MAX_ROUNDS) return false;
  return undefined;
}
