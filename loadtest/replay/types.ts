// Shapes of a replay run: what a fleet is asked for, what it hands back, and the per-config
// summary `bench replay --json` prints (documented keys; see command.ts help).
import type { ChatRequest, Receipt } from '../../middleware/types.ts';
export type Layout = 'passthrough' | 'ctxgate';
export type Flavor = 'vllm' | 'sglang';
export type PolicyOptionValue = string | number | boolean;

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
  /** The model's `policy_options` (e.g. ctxgate's sticky_slack); undefined = the policy's defaults. */
  policyOptions?: Record<string, PolicyOptionValue>;
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
  /** The gateway's policy counters (`GET /v1/gateway/workers` → models[].policy_stats), read before close. */
  policyStats?(): Promise<Record<string, unknown> | undefined>;
  /** What the pipeline got and sent upstream for a request id (taken once), for the lossless check. */
  takeExchange?(requestId: string): Exchange | undefined;
  /** The workers take the reference worker's `sim_output` extension: replay sends each call's recorded answer. */
  recordedAnswers?: boolean;
  close(): Promise<void>;
}

export interface Exchange {
  client: ChatRequest;
  upstream: ChatRequest;
  receipts: Receipt[];
}

/** Lossless check totals (middleware/lossless/check.ts): lines missing or altered, sessions whose first call changed. */
export interface LosslessTotals {
  missing: number;
  altered: number;
  first_call_changed: number;
  /** Calls checked (those whose exchange the fleet exposed). */
  checked: number;
  /** A few of the findings, for a first look. */
  samples: string[];
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
  request_id?: string;
  /** This call's lossless check, when the fleet exposed its exchange. */
  lossless?: { missing: number; altered: number; first_call_changed: number; samples: string[] };
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
  config: {
    label: string;
    layout: Layout;
    policy: string;
    policy_options?: Record<string, PolicyOptionValue>;
    budget?: number;
    workers: number;
    flavor: Flavor;
    kv_tokens: number;
    block_size: number;
    tokenizer: string;
    chat_template?: string;
    profile: string;
  };
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
  /** The routing policy's own counters at the end of the run, when the fleet exposes them. */
  policy_stats?: Record<string, unknown>;
  errors: number;
  error_samples: string[];
  wall_ms: number;
  lossless?: LosslessTotals;
}
