// Modeled engine time. Prefill: FLOPs for the uncached tokens = 2·P per token (projections)
// + attention of the n new tokens over c cached and the new keys, 4·L·d·n·(c + n/2),
// divided by MFU × peak (docs/architecture.md, "Cost arithmetic"). Decode: one step moves the weights once for the
// whole batch plus every running sequence's KV, so per-token time = (W + Σ kv) ÷ bandwidth.
// Continuous batching is a virtual clock: `maxRunning` slots, each free at a modeled time;
// a request starts on the earliest-free slot, so queue wait exists even when nothing sleeps.
// Cost: O(maxRunning) per request.

export interface ModelShape {
  params: number;
  layers: number;
  hidden: number;
  kvHeads: number;
  headDim: number;
  /** Bytes per weight (2 = bf16, 1 = fp8). */
  weightBytes: number;
  /** Bytes per cached K or V value. */
  kvBytes: number;
}

export interface Hardware {
  /** Dense peak of the whole serving group (TP ranks × per-GPU), FLOP/s. */
  peakFlops: number;
  mfu: number;
  /** Aggregate HBM bandwidth, bytes/s. */
  bandwidth: number;
}

export interface TimingModel extends ModelShape, Hardware {
  name: string;
}

const H100_SXM_BF16 = 989e12; // NVIDIA H100 SXM datasheet, dense BF16 (1,979 with sparsity)
const H100_SXM_FP8 = 1979e12; // NVIDIA H100 SXM datasheet, dense FP8
const H100_SXM_BW = 3.35e12; // HBM3, 3.35 TB/s
const H200_BF16 = 989e12; // H200 shares H100's compute die
const H200_BW = 4.8e12; // HBM3e, 4.8 TB/s
export const DEFAULT_MFU = 0.5;

export const PRESETS: Record<string, TimingModel> = {
  // Llama-3.1-8B config.json: 32 layers, hidden 4096, 8 KV heads × 128; 8.03e9 params. 1× H100.
  'llama-3.1-8b-h100': {
    name: 'llama-3.1-8b-h100',
    params: 8.03e9,
    layers: 32,
    hidden: 4096,
    kvHeads: 8,
    headDim: 128,
    weightBytes: 2,
    kvBytes: 2,
    peakFlops: H100_SXM_BF16,
    mfu: DEFAULT_MFU,
    bandwidth: H100_SXM_BW,
  },
  // Llama-3.1-70B: 80 layers, hidden 8192, 8 KV heads × 128; 70.6e9 params; FP8 weights, TP=2.
  'llama-3.1-70b-h100': {
    name: 'llama-3.1-70b-h100',
    params: 70.6e9,
    layers: 80,
    hidden: 8192,
    kvHeads: 8,
    headDim: 128,
    weightBytes: 1,
    kvBytes: 2,
    peakFlops: 2 * H100_SXM_FP8,
    mfu: DEFAULT_MFU,
    bandwidth: 2 * H100_SXM_BW,
  },
  // Qwen3-32B config.json: 64 layers, hidden 5120, 8 KV heads × 128; 32.8e9 params; bf16, TP=2.
  'qwen3-32b-h100': {
    name: 'qwen3-32b-h100',
    params: 32.8e9,
    layers: 64,
    hidden: 5120,
    kvHeads: 8,
    headDim: 128,
    weightBytes: 2,
    kvBytes: 2,
    peakFlops: 2 * H100_SXM_BF16,
    mfu: DEFAULT_MFU,
    bandwidth: 2 * H100_SXM_BW,
  },
  // Same model on one H200 (141 GB holds the 65.6 GB of weights plus ~60 GB of KV).
  'qwen3-32b-h200': {
    name: 'qwen3-32b-h200',
    params: 32.8e9,
    layers: 64,
    hidden: 5120,
    kvHeads: 8,
    headDim: 128,
    weightBytes: 2,
    kvBytes: 2,
    peakFlops: H200_BF16,
    mfu: DEFAULT_MFU,
    bandwidth: H200_BW,
  },
};
export const DEFAULT_PRESET = 'llama-3.1-8b-h100';

export function kvBytesPerToken(m: ModelShape): number {
  return 2 * m.layers * m.kvHeads * m.headDim * m.kvBytes;
}

export function prefillFlops(m: ModelShape, newTokens: number, cachedTokens: number): number {
  const n = Math.max(0, newTokens);
  return 2 * m.params * n + 4 * m.layers * m.hidden * n * (cachedTokens + n / 2);
}

export function prefillSeconds(t: TimingModel, newTokens: number, cachedTokens: number): number {
  return prefillFlops(t, newTokens, cachedTokens) / (t.mfu * t.peakFlops);
}

/** Seconds per decode step for one sequence of `context` tokens in a batch of `batch`. */
export function decodeStepSeconds(t: TimingModel, context: number, batch = 1): number {
  const bytes = t.params * t.weightBytes + kvBytesPerToken(t) * context * Math.max(1, batch);
  return bytes / t.bandwidth;
}

export interface Schedule {
  queueS: number;
  prefillS: number;
  decodeS: number;
  ttftS: number;
}

/** Virtual-clock continuous-batching scheduler: `slots` sequences run at once. */
export class BatchClock {
  private readonly freeAt: number[];

  constructor(
    readonly model: TimingModel,
    slots: number,
  ) {
    this.freeAt = new Array(Math.max(1, slots)).fill(0);
  }

  /** Books a request arriving at modeled time `now` (seconds). */
  schedule(now: number, promptTokens: number, cachedTokens: number, outputTokens: number): Schedule {
    let best = 0;
    for (let i = 1; i < this.freeAt.length; i++) if (this.freeAt[i] < this.freeAt[best]) best = i;
    const start = Math.max(now, this.freeAt[best]);
    const batch = this.freeAt.filter((f) => f > start).length + 1;
    const queueS = start - now;
    const prefillS = prefillSeconds(this.model, promptTokens - cachedTokens, cachedTokens);
    const ctx = promptTokens + outputTokens / 2;
    const decodeS = outputTokens * decodeStepSeconds(this.model, ctx, batch);
    this.freeAt[best] = start + prefillS + decodeS;
    return { queueS, prefillS, decodeS, ttftS: queueS + prefillS };
  }

  /** Slots busy at modeled time `now`. */
  running(now: number): number {
    return this.freeAt.filter((f) => f > now).length;
  }
}

export function timingHeader(s: Schedule): string {
  const ms = (x: number): string => (x * 1000).toFixed(3);
  return `queue_ms=${ms(s.queueS)};prefill_ms=${ms(s.prefillS)};decode_ms=${ms(s.decodeS)};ttft_ms=${ms(s.ttftS)}`;
}
