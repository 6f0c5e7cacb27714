// The input and output shapes of usage accounting. `UsageInput` is the gateway's UsageEvent plus
// optional fields only this module reads (GPU-time pricing, provider cache writes).
import type { UsageEvent } from '../usage-event.ts';

export interface UsageInput extends UsageEvent {
  /** Worker-modeled or measured prefill / decode time (reference worker: `x-sim-timing`). */
  prefillMs?: number;
  decodeMs?: number;
  /** Uncached prompt tokens written to a provider cache at the cache-write price. */
  cacheWriteTokens?: number;
}

export type UsageSource = 'reported' | 'predicted';
export type PricingKind = 'token' | 'gpu' | 'none';

/** One finished request, priced. All money is integer nano-dollars (`*Nusd`). */
export interface UsageRecord {
  time: number;
  requestId: string;
  tenant: string;
  keyId: string;
  sessionId: string;
  model: string;
  worker: string;
  status: number;
  stream: boolean;
  usageSource: UsageSource;
  promptTokens: number;
  cachedTokens: number;
  predictedCachedTokens: number | null;
  outputTokens: number;
  cacheWriteTokens: number;
  ttftMs: number | null;
  totalMs: number;
  gatewayOverheadMs: number;
  attempts: number;
  errorCode: string | null;
  breakCause: string | null;
  prefillMs: number | null;
  decodeMs: number | null;
  pricingKind: PricingKind;
  costUncachedInputNusd: number;
  costCachedInputNusd: number;
  costCacheWriteNusd: number;
  costOutputNusd: number;
  /** Sum of the four parts above. */
  costNusd: number;
  /** Same tokens with no cache hit: every prompt token at the input price. */
  cfNoCacheNusd: number;
  /** Estimate for the agent's original layout; null when diagnostics gave no estimate. */
  cfOriginalNusd: number | null;
  /** cfNoCacheNusd − costNusd. */
  savingsNusd: number;
}

export const COST_KINDS = ['uncached_input', 'cached_input', 'cache_write', 'output'] as const;
export type CostKind = (typeof COST_KINDS)[number];
