// Shapes of a replay run: what a fleet is asked for, what it hands back, and the per-config
// summary `bench replay --json` prints (documented keys; see command.ts help).
export type Layout = 'passthrough' | 'ctxgate';
export type Flavor = 'vllm' | 'sglang';

export interface FleetSpec {
  workers: number;
  flavor: Flavor;
  kvTokens: number;
  blockSize: number;
  tokenizer: string;
  /** Jinja chat template file used by workers and gateway alike; undefined = the tokenizer's own. */
  chatTemplate?: string;
  /** 0 = no sleeping, latency modeled and reported in x-sim-timing. */
  timeScale: number;
  seed: number;
  layout: Layout;
  policy: string;
  /** M*, the middleware's working-set budget; undefined = the middleware default. */
  budget?: number;
  /** Model name the fleet serves; requests are rewritten to it. */
  model: string;
}

export interface WorkerReport {
  worker: string;
  requests: number;
  prompt_tokens: number;
  cached_tokens: number;
}

export interface FleetHandle {
  /** Base URL of the gateway (OpenAI-compatible, `/v1/chat/completions`). */
  url: string;
  model: string;
  perWorker(): Promise<WorkerReport[]>;
  close(): Promise<void>;
}

export type FleetFactory = (spec: FleetSpec) => Promise<FleetHandle>;

export interface Pricing {
  input_per_mtok: number;
  cached_input_per_mtok: number;
  output_per_mtok: number;
}

export interface CallRecord {
  session: string;
  turn: number;
  ok: boolean;
  status: number;
  prompt_tokens: number;
  cached_tokens: number;
  completion_tokens: number;
  ttft_ms?: number;
  worker?: string;
  error?: string;
}

export interface Percentiles {
  p50: number;
  p95: number;
  p99: number;
}

export interface SessionSummary {
  session: string;
  requests: number;
  hit_rate: number;
  recorded_hit_rate?: number;
}

export interface RunSummary {
  config: { label: string; layout: Layout; policy: string; budget?: number; workers: number; flavor: Flavor; kv_tokens: number; block_size: number; tokenizer: string; chat_template?: string; profile: string };
  requests: number;
  sessions: number;
  prompt_tokens: number;
  cached_tokens: number;
  hit_rate: number;
  prefill_tokens: number;
  completion_tokens: number;
  cost_usd: number;
  /** Prompt side of cost_usd: uncached × input price + cached × cached-input price. */
  input_cost_usd: number;
  ttft_ms: Percentiles;
  ttft_source: 'modeled' | 'measured';
  imbalance: number;
  per_worker: WorkerReport[];
  per_session: SessionSummary[];
  errors: number;
  error_samples: string[];
  wall_ms: number;
}
