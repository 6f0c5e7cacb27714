// The input and output shapes of usage accounting. `UsageInput` is the gateway's UsageEvent.
import type { UsageEvent } from '../../usage-event.ts';

export type UsageInput = UsageEvent;

export type UsageSource = 'reported' | 'predicted';
/** What a record was billed on: a success, or a failed request the worker still reported work for. */
export type Billing = 'billed' | 'billed_failure' | 'unbilled_failure';
export const SAVINGS_CAUSES = ['layout', 'routing', 'engine'] as const;
export type SavingsCause = (typeof SAVINGS_CAUSES)[number];
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
  /** savingsNusd split by cause; the three always sum to savingsNusd exactly. */
  savingsLayoutNusd: number;
  savingsRoutingNusd: number;
  savingsEngineNusd: number;
  /** Failed requests cost nothing unless the worker reported usage for work it did. */
  billing: Billing;
  /** Where prefillMs / decodeMs come from (null: none known). */
  timingSource: 'reported' | 'modelled' | null;
}

export const COST_KINDS = ['uncached_input', 'cached_input', 'cache_write', 'output'] as const;
export type CostKind = (typeof COST_KINDS)[number];
