// Fluid estimate of the best p90 TTFT any router could reach on a trace: the fleet as one pooled
// server of N engines (perfect balance, no fragmentation), requests served FCFS in arrival order;
// request i waits for the work ahead of it ÷ N, then its own prefill on one engine. Work per
// request: prefill of its uncached tokens (hit rate h of its prompt, same FLOPs model as the
// engine model), plus, with decode counted, its output tokens' share of decode-only steps run
// with the KV cache full — a step costs (weights + KV read)/bandwidth and a request of context c
// takes c/KV of it, the cheapest a KV-bounded batch gets — less the share of decode tokens that
// ride along in prefill steps (RIDING_SHARE; 5.1 % measured in a ×1 ctxgate run, KV-weighted).
// Prefill only, it is a lower bound for FCFS engines at that hit rate; with decode it is an
// estimate (riding is assumed, not bounded). O(n log n).
import { percentile } from '../replay/metrics.ts';
import { kvBytesPerToken, prefillSeconds, type TimingModel } from '../sim-worker/timing.ts';
import type { FleetRequest } from './trace.ts';

/** Share of decode tokens assumed to ride in prefill steps (measured 5.1 %; rounded up). */
export const RIDING_SHARE = 0.07;

export interface FluidOptions {
  workers: number;
  kvTokens: number;
  timing: TimingModel;
  /** share of each prompt served from cache */
  hitRate: number;
  /** count decode-only steps (an estimate) or prefill alone (a lower bound) */
  decode: boolean;
  /** share of decode tokens riding in prefill steps (default RIDING_SHARE) */
  ridingShare?: number;
}

export interface FluidResult {
  /** p90 TTFT, ms */
  p90Ms: number;
  /** engine-seconds of prefill, and of decode-only steps, ÷ (N × the arrival span) */
  prefillLoad: number;
  decodeLoad: number;
}

export function fluidBound(reqs: readonly FleetRequest[], o: FluidOptions): FluidResult {
  const t = o.timing;
  const riding = o.ridingShare ?? RIDING_SHARE;
  const fullStepS = (t.params * t.weightBytes + kvBytesPerToken(t) * o.kvTokens) / t.bandwidth;
  let backlog = 0;
  let lastS = reqs.length ? reqs[0].arrivalMs / 1000 : 0;
  let pre = 0;
  let dec = 0;
  const ttft: number[] = [];
  for (const r of reqs) {
    const now = r.arrivalMs / 1000;
    backlog = Math.max(0, backlog - (now - lastS) * o.workers);
    lastS = now;
    const cached = Math.floor(r.inputTokens * o.hitRate);
    const p = prefillSeconds(t, r.inputTokens - cached, cached);
    const context = r.inputTokens + r.outputTokens / 2;
    const d = o.decode ? (1 - riding) * r.outputTokens * (context / o.kvTokens) * fullStepS : 0;
    ttft.push((backlog / o.workers + p) * 1000);
    backlog += p + d;
    pre += p;
    dec += d;
  }
  ttft.sort((a, b) => a - b);
  const spanS = reqs.length > 1 ? (reqs[reqs.length - 1].arrivalMs - reqs[0].arrivalMs) / 1000 : 0;
  const load = (x: number): number => (spanS > 0 ? x / (o.workers * spanS) : 0);
  return { p90Ms: ttft.length ? percentile(ttft, 0.9) : 0, prefillLoad: load(pre), decodeLoad: load(dec) };
}
