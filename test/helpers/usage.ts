// Usage of one finished request, as the gateway reports it (deps.onUsage) and as the ledgers
// store it (priced), for the accounting tests: call `r<i>` of tenant t, key k, session s, model m,
// worker w, 200, non-stream, 1000 prompt tokens of which 800 cached, 10 out; `over` changes any.
import { compilePricing, DEFAULT_PRICING_TABLE } from '../../gateway/accounting/record/pricing.ts';
import { buildUsageRecord } from '../../gateway/accounting/record/record.ts';
import type { UsageInput, UsageRecord } from '../../gateway/accounting/types/usage.ts';

export function usageInput(i: number, over: Partial<UsageInput> = {}): UsageInput {
  return {
    time: Date.now(),
    requestId: `r${i}`,
    tenant: 't',
    keyId: 'k',
    sessionId: 's',
    model: 'm',
    worker: 'w',
    status: 200,
    stream: false,
    promptTokens: 1000,
    cachedTokens: 800,
    outputTokens: 10,
    usageReported: true,
    totalMs: 5,
    gatewayOverheadMs: 0.1,
    attempts: 1,
    ...over,
  };
}

/** usageInput priced at the built-in default table (`source`: the pricing's name). */
export function usageRecord(i: number, over: Partial<UsageInput> = {}, source = 'default'): UsageRecord {
  return buildUsageRecord(usageInput(i, over), compilePricing(DEFAULT_PRICING_TABLE.default!, source));
}
