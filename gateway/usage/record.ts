// One priced usage record per finished request. Pure and O(1): a handful of integer multiplies.
// Cached tokens are a subset of prompt tokens: uncached input = prompt − cached (− cache writes),
// each token is billed exactly once, at the price of the bucket it falls in.
// Upstreams that report no usage are priced on the gateway's own counts (usageSource 'predicted':
// prompt = gateway-counted tokens, cached = the router's predicted cached prefix).
import { formatUsdExact, gpuCostNusd, tokenCostNusd } from './money.ts';
import type { Pricing } from './pricing.ts';
import type { UsageInput, UsageRecord } from './types.ts';

const NO_BREAK = 'none';

function nn(v: number | undefined): number {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0;
}

function optMs(v: number | undefined): number | null {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : null;
}

interface Costs {
  uncached: number;
  cached: number;
  write: number;
  output: number;
  cfNoCache: number;
  cfOriginal: number | null;
  writeTokens: number;
}

function tokenCosts(p: Extract<Pricing, { kind: 'token' }>, prompt: number, cached: number, output: number, writeReq: number, cfCached: number | null): Costs {
  const writeTokens = p.cacheWritePico === null ? 0 : Math.min(writeReq, prompt - cached);
  const out = tokenCostNusd(output, p.outputPico);
  const cfOriginal =
    cfCached === null ? null : tokenCostNusd(prompt - cfCached, p.inputPico) + tokenCostNusd(cfCached, p.cachedPico) + out;
  return {
    uncached: tokenCostNusd(prompt - cached - writeTokens, p.inputPico),
    cached: tokenCostNusd(cached, p.cachedPico),
    write: p.cacheWritePico === null ? 0 : tokenCostNusd(writeTokens, p.cacheWritePico),
    output: out,
    cfNoCache: tokenCostNusd(prompt, p.inputPico) + out,
    cfOriginal,
    writeTokens,
  };
}

// GPU time: prefill seconds bill the input, decode seconds the output; cached tokens cost no
// compute. Counterfactuals scale prefill time linearly by the tokens that would be prefilled
// (attention's quadratic term is ignored, so long-context savings are under-, not over-stated).
function gpuCosts(p: Extract<Pricing, { kind: 'gpu' }>, ev: UsageInput, prompt: number, cached: number, cfCached: number | null): Costs {
  const ttft = optMs(ev.ttftMs);
  const prefillMs = optMs(ev.prefillMs) ?? ttft ?? 0;
  const decodeMs = optMs(ev.decodeMs) ?? (ttft === null ? 0 : Math.max(0, ev.totalMs - ttft));
  const uncachedTokens = prompt - cached;
  const scale = (tokens: number): number => (uncachedTokens > 0 ? (prefillMs * tokens) / uncachedTokens : prefillMs);
  const out = gpuCostNusd(decodeMs, p.gpuMicroPerHour);
  return {
    uncached: gpuCostNusd(prefillMs, p.gpuMicroPerHour),
    cached: 0,
    write: 0,
    output: out,
    cfNoCache: Math.max(gpuCostNusd(scale(prompt), p.gpuMicroPerHour), gpuCostNusd(prefillMs, p.gpuMicroPerHour)) + out,
    cfOriginal: cfCached === null ? null : gpuCostNusd(scale(prompt - cfCached), p.gpuMicroPerHour) + out,
    writeTokens: 0,
  };
}

const ZERO: Costs = { uncached: 0, cached: 0, write: 0, output: 0, cfNoCache: 0, cfOriginal: null, writeTokens: 0 };

export function buildUsageRecord(ev: UsageInput, pricing: Pricing | undefined): UsageRecord {
  const reported = ev.usageReported;
  const prompt = nn(ev.promptTokens);
  const predicted = ev.predictedCachedTokens === undefined ? null : Math.min(nn(ev.predictedCachedTokens), prompt);
  const cached = Math.min(reported ? nn(ev.cachedTokens) : (predicted ?? 0), prompt);
  const output = nn(ev.outputTokens);
  const cfCached = ev.counterfactualPromptTokensCached === undefined ? null : Math.min(nn(ev.counterfactualPromptTokensCached), prompt);
  const c = !pricing
    ? ZERO
    : pricing.kind === 'token'
      ? tokenCosts(pricing, prompt, cached, output, nn(ev.cacheWriteTokens), cfCached)
      : gpuCosts(pricing, ev, prompt, cached, cfCached);
  const cost = c.uncached + c.cached + c.write + c.output;
  return {
    time: ev.time,
    requestId: ev.requestId,
    tenant: ev.tenant,
    keyId: ev.keyId,
    sessionId: ev.sessionId,
    model: ev.model,
    worker: ev.worker,
    status: ev.status,
    stream: ev.stream,
    usageSource: reported ? 'reported' : 'predicted',
    promptTokens: prompt,
    cachedTokens: cached,
    predictedCachedTokens: predicted,
    outputTokens: output,
    cacheWriteTokens: c.writeTokens,
    ttftMs: optMs(ev.ttftMs),
    totalMs: ev.totalMs,
    gatewayOverheadMs: ev.gatewayOverheadMs,
    attempts: ev.attempts,
    errorCode: ev.errorCode ?? null,
    // The core reports 'none' for an intact prefix; only real breaks are counted by cause.
    breakCause: ev.breakCause && ev.breakCause !== NO_BREAK ? ev.breakCause : null,
    prefillMs: optMs(ev.prefillMs),
    decodeMs: optMs(ev.decodeMs),
    pricingKind: pricing ? pricing.kind : 'none',
    costUncachedInputNusd: c.uncached,
    costCachedInputNusd: c.cached,
    costCacheWriteNusd: c.write,
    costOutputNusd: c.output,
    costNusd: cost,
    cfNoCacheNusd: c.cfNoCache,
    cfOriginalNusd: c.cfOriginal,
    savingsNusd: c.cfNoCache - cost,
  };
}

/** Value of the `x-ctxgate-cost-usd` response header: exact USD ("0.0001234"). */
export function formatCostHeader(record: UsageRecord): string {
  return formatUsdExact(record.costNusd);
}

/** Both response headers the gateway sets on non-stream responses. */
export function usageHeaders(record: UsageRecord): Record<string, string> {
  return { 'x-ctxgate-cached-tokens': String(record.cachedTokens), 'x-ctxgate-cost-usd': formatCostHeader(record) };
}
