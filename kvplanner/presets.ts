// Model and GPU presets for capacity planning. Model shapes from each model's published
// config.json (Hugging Face); GPU figures from NVIDIA datasheets (dense BF16 tensor TFLOP/s,
// no sparsity; HBM bandwidth; memory as the driver reports it, in GiB).

export type Attention = 'mha' | 'gqa' | 'mla';

export interface ModelSpec {
  name: string;
  layers: number;
  /** model width d (hidden_size) */
  hidden: number;
  /** KV heads (= attention heads for MHA); unused for MLA */
  kvHeads: number;
  headDim: number;
  attention: Attention;
  /** total parameters (weights resident in memory) */
  params: number;
  /** parameters active per token (MoE); = params for dense models */
  activeParams: number;
  /** bytes per weight as served */
  weightBytes: number;
  /** bytes per cached K/V value */
  kvBytes: number;
  /** MLA: compressed latent width (kv_lora_rank) and decoupled rotary key width */
  mlaLatent?: number;
  mlaRope?: number;
  /** attention width (heads × head dim) for the M² term; = hidden unless set */
  attnDim?: number;
  /** true: FLOPs from 2·activeParams per token (MoE); false: 24·L·d² (docs/architecture.md, "Cost arithmetic") */
  flopsFromParams?: boolean;
}

export interface GpuSpec {
  name: string;
  memGiB: number;
  /** dense BF16 peak, TFLOP/s */
  tflops: number;
  /** HBM bandwidth, TB/s */
  bandwidthTBs: number;
}

export const DTYPE_BYTES: Record<string, number> = { fp32: 4, bf16: 2, fp16: 2, fp8: 1, int8: 1, int4: 0.5 };

export const MODEL_PRESETS: Record<string, ModelSpec> = {
  // meta-llama/Llama-3.1-8B-Instruct config.json: 32 layers, hidden 4096, 8 KV heads × 128
  'llama-3.1-8b': {
    name: 'llama-3.1-8b',
    layers: 32,
    hidden: 4096,
    kvHeads: 8,
    headDim: 128,
    attention: 'gqa',
    params: 8.03e9,
    activeParams: 8.03e9,
    weightBytes: 2,
    kvBytes: 2,
  },
  // meta-llama/Llama-3.1-70B-Instruct: 80 layers, hidden 8192, 8 KV heads × 128 (320 KiB/token, docs/architecture.md "Cost arithmetic")
  'llama-3.1-70b': {
    name: 'llama-3.1-70b',
    layers: 80,
    hidden: 8192,
    kvHeads: 8,
    headDim: 128,
    attention: 'gqa',
    params: 70.6e9,
    activeParams: 70.6e9,
    weightBytes: 2,
    kvBytes: 2,
  },
  // Qwen/Qwen3-32B: 64 layers, hidden 5120, 64 query heads / 8 KV heads × 128 (attention width 8192)
  'qwen3-32b': {
    name: 'qwen3-32b',
    layers: 64,
    hidden: 5120,
    kvHeads: 8,
    headDim: 128,
    attention: 'gqa',
    params: 32.8e9,
    activeParams: 32.8e9,
    weightBytes: 2,
    kvBytes: 2,
    attnDim: 8192,
  },
  // deepseek-ai/DeepSeek-V3: 61 layers, hidden 7168, MLA kv_lora_rank 512 + qk_rope_head_dim 64,
  // 671B total / 37B active (MoE), FP8 weights; 128 heads × (128 nope + 64 rope) query width
  'deepseek-v3': {
    name: 'deepseek-v3',
    layers: 61,
    hidden: 7168,
    kvHeads: 1,
    headDim: 576,
    attention: 'mla',
    params: 671e9,
    activeParams: 37e9,
    weightBytes: 1,
    kvBytes: 2,
    mlaLatent: 512,
    mlaRope: 64,
    attnDim: 128 * 192,
    flopsFromParams: true,
  },
};

export const GPU_PRESETS: Record<string, GpuSpec> = {
  'A100-80G': { name: 'A100-80G', memGiB: 80, tflops: 312, bandwidthTBs: 2.039 },
  'H100-80G': { name: 'H100-80G', memGiB: 80, tflops: 989, bandwidthTBs: 3.35 },
  // 141 GB marketed = 143,771 MiB reported
  'H200-141G': { name: 'H200-141G', memGiB: 140.4, tflops: 989, bandwidthTBs: 4.8 },
  L40S: { name: 'L40S', memGiB: 45, tflops: 362, bandwidthTBs: 0.864 },
};

function lookup<T>(table: Record<string, T>, name: string, what: string): T {
  const hit = Object.entries(table).find(([k]) => k.toLowerCase() === name.toLowerCase());
  if (!hit) throw new Error(`unknown ${what} '${name}' (known: ${Object.keys(table).join(', ')})`);
  return hit[1];
}

export const modelPreset = (name: string): ModelSpec => lookup(MODEL_PRESETS, name, 'model');
export const gpuPreset = (name: string): GpuSpec => lookup(GPU_PRESETS, name, 'GPU');
