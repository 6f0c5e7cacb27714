// Hard eviction vs appended tombstone (docs/architecture.md, "Invalidation"). Evicting a stale observation in place
// re-prefills every token after it once; a tombstone keeps the prefix cached but carries the
// stale tokens (at the cached-token rate) on every remaining call. O(1).

export interface EvictionCostModel {
  /** Relative cost of one uncached (prefilled) prompt token. */
  prefillCostPerToken: number;
  /** Relative cost of one cached prompt token (provider discount or residual GPU time). */
  cachedCostPerToken: number;
  /** Cap on the expected remaining calls (the estimate is the calls made so far). */
  maxExpectedRemainingCalls: number;
  /** Never evict when this many tokens or more follow the observation (past ~32k tokens a tombstone is cheaper). */
  maxTokensAfter: number;
}

export const DEFAULT_EVICTION_COST_MODEL: EvictionCostModel = {
  prefillCostPerToken: 1,
  cachedCostPerToken: 0.1,
  maxExpectedRemainingCalls: 50,
  maxTokensAfter: 32_768,
};

export interface EvictionInput {
  tokensAfter: number;
  staleTokens: number;
  tombstoneTokens: number;
  callsSoFar: number;
}

export interface EvictionDecision {
  evict: boolean;
  evictCost: number;
  carryCost: number;
  remainingCalls: number;
}

export function decideEviction(x: EvictionInput, m: EvictionCostModel = DEFAULT_EVICTION_COST_MODEL): EvictionDecision {
  // Lindy estimate: a session that ran k calls is expected to run about k more.
  const remainingCalls = Math.max(1, Math.min(m.maxExpectedRemainingCalls, x.callsSoFar));
  const evictCost = x.tokensAfter * m.prefillCostPerToken;
  const carryCost = x.tombstoneTokens * m.prefillCostPerToken + x.staleTokens * m.cachedCostPerToken * remainingCalls;
  const evict = x.tokensAfter < m.maxTokensAfter && evictCost < carryCost;
  return { evict, evictCost, carryCost, remainingCalls };
}
