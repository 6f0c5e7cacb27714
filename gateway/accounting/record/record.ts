// One priced usage record per finished request. Pure and O(1): a handful of integer multiplies.
// Cached tokens are a subset of prompt tokens: uncached input = prompt − cached (− cache writes),
// each token is billed exactly once, at the price of the bucket it falls in.
// Upstreams that report no usage are priced on the gateway's own counts (usageSource 'predicted':
// prompt = gateway-counted tokens, cached = the router's predicted cached prefix).
import { formatUsdExact, gpuCostNusd, tokenCostNusd } from '../types/money.ts';
import type { Pricing } from './pricing.ts';
import type { UsageInput, UsageRecord } from '../types/usage.ts';

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
  writeTokens: number;
}

function tokenCosts(
  p: Extract<Pricing, { kind: 'token' }>,
  prompt: number,
  cached: number,
  output: number,
  writeReq: number,
): Costs {
  const writeTokens = p.cacheWritePico === null ? 0 : Math.min(writeReq, prompt - cached);
  const out = tokenCostNusd(output, p.outputPico);
  return {
    uncached: tokenCostNusd(prompt - cached - writeTokens, p.inputPico),
    cached: tokenCostNusd(cached, p.cachedPico),
    write: p.cacheWritePico === null ? 0 : tokenCostNusd(writeTokens, p.cacheWritePico),
    output: out,
    cfNoCache: tokenCostNusd(prompt, p.inputPico) + out,
    writeTokens,
  };
}

// GPU time: prefill seconds bill the input, decode seconds the output; cached tokens cost no
// compute. Counterfactuals scale prefill time linearly by the tokens that would be prefilled
// (attention's quadratic term is ignored, so long-context savings are under-, not over-stated).
function gpuCosts(p: Extract<Pricing, { kind: 'gpu' }>, t: Timing, prompt: number, cached: number): Costs {
  const { prefillMs, decodeMs } = t;
  const uncachedTokens = prompt - cached;
  const scale = (tokens: number): number => (uncachedTokens > 0 ? (prefillMs * tokens) / uncachedTokens : prefillMs);
  const out = gpuCostNusd(decodeMs, p.gpuMicroPerHour);
  return {
    uncached: gpuCostNusd(prefillMs, p.gpuMicroPerHour),
    cached: 0,
    write: 0,
    output: out,
    cfNoCache: Math.max(gpuCostNusd(scale(prompt), p.gpuMicroPerHour), gpuCostNusd(prefillMs, p.gpuMicroPerHour)) + out,
    writeTokens: 0,
  };
}

/** Engine throughputs for modelling GPU time when neither the engine nor a first byte says how long
 *  prefill took: only the split of the measured total between prefill and decode uses them. */
export const MODEL_PREFILL_TOKENS_PER_S = 10_000;
export const MODEL_DECODE_TOKENS_PER_S = 50;

interface Timing {
  prefillMs: number;
  decodeMs: number;
  source: 'reported' | 'modelled' | null;
}

/** Prefill/decode ms as the engine reported them, else modelled from the measured TTFT and total,
 *  else the total split by the token work each phase did. */
export function resolveTiming(ev: UsageInput, uncachedTokens: number, outputTokens: number): Timing {
  const pre = optMs(ev.prefillMs);
  const dec = optMs(ev.decodeMs);
  if (pre !== null || dec !== null)
    return { prefillMs: pre ?? 0, decodeMs: dec ?? 0, source: ev.timingSource ?? 'reported' };
  const ttft = optMs(ev.ttftMs);
  const total = optMs(ev.totalMs) ?? 0;
  if (ttft !== null) return { prefillMs: ttft, decodeMs: Math.max(0, total - ttft), source: 'modelled' };
  if (total <= 0) return { prefillMs: 0, decodeMs: 0, source: null };
  const wPre = uncachedTokens / MODEL_PREFILL_TOKENS_PER_S;
  const wDec = outputTokens / MODEL_DECODE_TOKENS_PER_S;
  const share = wPre + wDec > 0 ? wPre / (wPre + wDec) : 1;
  return { prefillMs: total * share, decodeMs: total * (1 - share), source: 'modelled' };
}

const ZERO: Costs = { uncached: 0, cached: 0, write: 0, output: 0, cfNoCache: 0, writeTokens: 0 };

/**
 * Splits a saving by cause in proportion to the cached tokens each cause accounts for:
 *   layout  = cached tokens beyond what the agent's original layout would have had cached,
 *   routing = of the rest, tokens beyond the expected overlap of a uniformly chosen healthy worker,
 *   engine  = the remainder (what the engine's cache would have given anyway).
 * Integer parts; engine takes the rounding, so the three sum to `savings` exactly.
 */
export function splitSavings(
  savings: number,
  cached: number,
  originalCached: number | null,
  uniformCached: number | null,
): { layout: number; routing: number; engine: number } {
  if (cached <= 0 || savings <= 0) return { layout: 0, routing: 0, engine: savings };
  const layoutTok = originalCached === null ? 0 : Math.max(0, cached - originalCached);
  const rest = cached - layoutTok;
  const routingTok = uniformCached === null ? 0 : Math.min(rest, Math.max(0, rest - uniformCached));
  const layout = Math.floor((savings * layoutTok) / cached);
  const routing = Math.floor((savings * routingTok) / cached);
  return { layout, routing, engine: savings - layout - routing };
}

function isFailure(ev: UsageInput): boolean {
  return ev.status >= 400 || ev.status < 200 || ev.errorCode !== undefined;
}

export function buildUsageRecord(ev: UsageInput, pricing: Pricing | undefined): UsageRecord {
  const reported = ev.usageReported;
  // A failed request costs nothing unless the worker reported usage for the work it did; then it
  // is billed as reported (never on the gateway's prediction) and flagged.
  const failed = isFailure(ev);
  const unbilled = failed && !reported;
  const prompt = unbilled ? 0 : nn(ev.promptTokens);
  const predicted =
    ev.predictedCachedTokens === undefined ? null : Math.min(nn(ev.predictedCachedTokens), nn(ev.promptTokens));
  const cached = Math.min(reported ? nn(ev.cachedTokens) : unbilled ? 0 : (predicted ?? 0), prompt);
  const output = unbilled ? 0 : nn(ev.outputTokens);
  const cfCached =
    ev.counterfactualPromptTokensCached === undefined
      ? null
      : Math.min(nn(ev.counterfactualPromptTokensCached), prompt);
  const timing = resolveTiming(ev, prompt - cached, output);
  const c =
    !pricing || unbilled
      ? ZERO
      : pricing.kind === 'token'
        ? tokenCosts(pricing, prompt, cached, output, nn(ev.cacheWriteTokens))
        : gpuCosts(pricing, timing, prompt, cached);
  const cost = c.uncached + c.cached + c.write + c.output;
  const savings = c.cfNoCache - cost;
  const uniform = ev.uniformCachedTokens === undefined ? null : nn(ev.uniformCachedTokens);
  const split = splitSavings(savings, cached, cfCached, uniform);
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
    prefillMs: timing.source === null ? null : timing.prefillMs,
    decodeMs: timing.source === null ? null : timing.decodeMs,
    timingSource: timing.source,
    pricingKind: pricing ? pricing.kind : 'none',
    costUncachedInputNusd: c.uncached,
    costCachedInputNusd: c.cached,
    costCacheWriteNusd: c.write,
    costOutputNusd: c.output,
    costNusd: cost,
    cfNoCacheNusd: c.cfNoCache,
    // Cost had the agent's original layout been sent: this cost plus what the layout saved.
    cfOriginalNusd: cfCached === null ? null : cost + split.layout,
    savingsNusd: savings,
    savingsLayoutNusd: split.layout,
    savingsRoutingNusd: split.routing,
    savingsEngineNusd: split.engine,
    billing: !failed ? 'billed' : unbilled ? 'unbilled_failure' : 'billed_failure',
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
