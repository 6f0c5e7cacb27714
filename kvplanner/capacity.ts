// KV capacity and prefill cost arithmetic (docs/architecture.md, "Cost arithmetic"). Pure functions, reused by
// `ctxgate plan` and the reference worker's timing model.
//  - KV bytes/token = 2 (K and V) · layers · kv_heads · head_dim · bytes   (GQA/MHA)
//    MLA caches one latent + the rotary key per layer: (kv_lora_rank + rope_dim) · bytes
//    (DeepSeek-V2 paper §2.1.2, "Multi-head Latent Attention"; 512 + 64 → 1,152 B in bf16).
//  - Prefill FLOPs for M tokens = 24·M·L·d² (projections + MLP, Kaplan et al. 2020 / the usual
//    "≈ 2·P·M") + 4·M²·L·d (QKᵀ and AV). With c tokens already cached, only the M−c new tokens
//    pay the linear term and the attention term becomes 4·L·d·(M² − c²) (each new token attends to
//    everything before it). MoE models use 2·P_active per token for the linear part.
//  - TTFT ≈ FLOPs / (MFU · peak).
// Worked examples (tests): 70B GQA 320 KiB/token, 128k tokens ≈ 40 GiB; L=32, d=4096: 8k → 141
// TFLOP, 285 ms; 64k → 3.1 PFLOP, 6.26 s at 989 TFLOP/s × 0.5.
import type { GpuSpec, ModelSpec } from './presets.ts';

/** vLLM's default gpu_memory_utilization. */
export const DEFAULT_MEMORY_FRACTION = 0.9;
/** Model FLOP utilisation typical for long prefill on H100-class parts. */
export const DEFAULT_MFU = 0.5;
export const GIB = 1024 ** 3;

export function kvBytesPerToken(
  m: Pick<ModelSpec, 'layers' | 'kvHeads' | 'headDim' | 'kvBytes' | 'attention' | 'mlaLatent' | 'mlaRope'>,
): number {
  if (m.attention === 'mla') return m.layers * ((m.mlaLatent ?? 512) + (m.mlaRope ?? 64)) * m.kvBytes;
  return 2 * m.layers * m.kvHeads * m.headDim * m.kvBytes;
}

/** Prefill FLOPs for a prompt of `tokens`, of which the first `cachedTokens` are already cached. */
export function prefillFlops(tokens: number, m: ModelSpec, cachedTokens = 0): number {
  const c = Math.min(Math.max(0, cachedTokens), tokens);
  const miss = tokens - c;
  const linear = m.flopsFromParams ? 2 * m.activeParams * miss : 24 * miss * m.layers * m.hidden * m.hidden;
  const attention = 4 * m.layers * (m.attnDim ?? m.hidden) * (tokens * tokens - c * c);
  return linear + attention;
}

export interface PrefillOptions {
  mfu?: number;
  cachedTokens?: number;
  /** GPUs per worker (tensor parallel): peak scales, MFU assumed unchanged */
  gpus?: number;
}

/** Seconds of prefill for `tokens` on `gpu`: FLOPs / (MFU · peak). */
export function prefillSeconds(
  tokens: number,
  m: ModelSpec,
  gpu: Pick<GpuSpec, 'tflops'>,
  o: PrefillOptions = {},
): number {
  const peak = gpu.tflops * 1e12 * (o.gpus ?? 1);
  return prefillFlops(tokens, m, o.cachedTokens ?? 0) / ((o.mfu ?? DEFAULT_MFU) * peak);
}

/** Seconds for one decode step of a batch: weights + KV read once from HBM (bandwidth bound). */
export function decodeStepSeconds(
  m: ModelSpec,
  gpu: Pick<GpuSpec, 'bandwidthTBs'>,
  contextTokens: number,
  gpus = 1,
): number {
  const bytes = m.activeParams * m.weightBytes + contextTokens * kvBytesPerToken(m);
  return bytes / (gpu.bandwidthTBs * 1e12 * gpus);
}

export interface CapacityInput {
  model: ModelSpec;
  gpu: GpuSpec;
  gpus?: number;
  memoryFraction?: number;
  /** GiB per GPU kept for activations and the CUDA graph pool */
  reserveGiB?: number;
}

export interface Capacity {
  kvBytesPerToken: number;
  weightsGiB: number;
  usableGiB: number;
  kvGiB: number;
  kvTokens: number;
}

/** KV tokens that fit on one worker (gpus × gpu) after weights, at a memory fraction like vLLM's. */
export function capacity(i: CapacityInput): Capacity {
  const gpus = i.gpus ?? 1;
  const usable = i.gpu.memGiB * GIB * gpus * (i.memoryFraction ?? DEFAULT_MEMORY_FRACTION);
  const weights = i.model.params * i.model.weightBytes;
  const reserve = (i.reserveGiB ?? 0) * GIB * gpus;
  const kvBytes = Math.max(0, usable - weights - reserve);
  const per = kvBytesPerToken(i.model);
  return {
    kvBytesPerToken: per,
    weightsGiB: weights / GIB,
    usableGiB: usable / GIB,
    kvGiB: kvBytes / GIB,
    kvTokens: Math.floor(kvBytes / per),
  };
}

/** Largest prompt M whose prefill at cache hit rate `hitRate` stays within `targetS`. */
export function maxPromptForTtft(
  targetS: number,
  m: ModelSpec,
  gpu: GpuSpec,
  hitRate: number,
  o: PrefillOptions = {},
  limit = 10_000_000,
): number {
  const fits = (tokens: number): boolean =>
    prefillSeconds(tokens, m, gpu, { ...o, cachedTokens: Math.floor(tokens * hitRate) }) <= targetS;
  if (!fits(1)) return 0;
  let lo = 1;
  let hi = limit;
  if (fits(hi)) return hi;
  while (lo < hi) {
    const mid = Math.floor((lo + hi + 1) / 2);
    if (fits(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

export interface PlanInput extends CapacityInput {
  mfu?: number;
  promptLengths?: number[];
  hitRates?: number[];
  sessionTokens?: number;
  targetTtftMs?: number;
  sessions?: number;
  /** hit rate assumed for M* (agent calls reuse most of the previous prompt) */
  planHitRate?: number;
}

export interface Plan {
  model: string;
  gpu: string;
  gpus: number;
  capacity: Capacity;
  ttft: Array<{ tokens: number; hitRate: number; tflop: number; ms: number }>;
  sessionTokens: number;
  sessionsPerWorker: number;
  mStar?: { targetTtftMs: number; hitRate: number; tokensCold: number; tokens: number };
  fleet?: { sessions: number; workers: number; gpus: number };
}

export const DEFAULT_PROMPT_LENGTHS = [1024, 8192, 32768, 65536];
export const DEFAULT_HIT_RATES = [0, 0.5, 0.9];
export const DEFAULT_SESSION_TOKENS = 32768;
export const DEFAULT_PLAN_HIT_RATE = 0.9;

export function plan(i: PlanInput): Plan {
  const gpus = i.gpus ?? 1;
  const cap = capacity(i);
  const o = { mfu: i.mfu ?? DEFAULT_MFU, gpus };
  const ttft = [];
  for (const tokens of i.promptLengths ?? DEFAULT_PROMPT_LENGTHS) {
    for (const hitRate of i.hitRates ?? DEFAULT_HIT_RATES) {
      const cached = Math.floor(tokens * hitRate);
      ttft.push({
        tokens,
        hitRate,
        tflop: prefillFlops(tokens, i.model, cached) / 1e12,
        ms: prefillSeconds(tokens, i.model, i.gpu, { ...o, cachedTokens: cached }) * 1000,
      });
    }
  }
  let sessionTokens = i.sessionTokens ?? DEFAULT_SESSION_TOKENS;
  const out: Plan = {
    model: i.model.name,
    gpu: i.gpu.name,
    gpus,
    capacity: cap,
    ttft,
    sessionTokens,
    sessionsPerWorker: 0,
  };
  if (i.targetTtftMs !== undefined) {
    const hitRate = i.planHitRate ?? DEFAULT_PLAN_HIT_RATE;
    const t = i.targetTtftMs / 1000;
    const tokens = Math.min(maxPromptForTtft(t, i.model, i.gpu, hitRate, o), Math.max(0, cap.kvTokens));
    out.mStar = {
      targetTtftMs: i.targetTtftMs,
      hitRate,
      tokensCold: maxPromptForTtft(t, i.model, i.gpu, 0, o),
      tokens,
    };
    if (i.sessionTokens === undefined) sessionTokens = tokens;
  }
  out.sessionTokens = sessionTokens;
  out.sessionsPerWorker = sessionTokens > 0 ? Math.floor(cap.kvTokens / sessionTokens) : 0;
  if (i.sessions !== undefined) {
    const workers = out.sessionsPerWorker > 0 ? Math.ceil(i.sessions / out.sessionsPerWorker) : Infinity;
    out.fleet = { sessions: i.sessions, workers, gpus: workers * gpus };
  }
  return out;
}
