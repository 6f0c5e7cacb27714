// Engine adapters, chosen by `models[].flavor`: what differs between vLLM, SGLang and any other
// OpenAI-compatible upstream (`openai`): the health path, the Prometheus names of the load signals
// the scraper reads, how usage and errors come back (engine-shapes.ts; the ingress adapter then
// reshapes an error into its API), and the native endpoints the gateway may use: token counting,
// (de)tokenising, cache flush and server info on the admin routes. No flavor set: vLLM (the most
// common engine). The reference worker serves each flavor's endpoints (loadtest/sim-worker/).
import { ENGINE_LOAD_METRICS, type LoadMetricNames } from '../../kvplanner/load-signals.ts';
import type { ModelConfig } from '../config/schema.ts';
import type { ExtractedUsage } from '../accounting/record/extract.ts';
import {
  type EngineError,
  openaiError,
  openaiUsage,
  sglangError,
  sglangUsage,
  vllmError,
  vllmUsage,
} from './engine-shapes.ts';

export type Flavor = 'vllm' | 'sglang' | 'openai';

export interface EngineAdapter {
  flavor: Flavor;
  /** GET path answered 2xx while the engine can serve. */
  healthPath: string;
  /** POST {model, messages, tools} -> {count}: exact prompt tokens; absent: the gateway estimates. */
  tokenizePath?: string;
  /** POST {model, tokens} -> {prompt} (vLLM) or {text} (SGLang). */
  detokenizePath?: string;
  /** POST: drops the engine's prefix cache (admin route). */
  flushCachePath?: string;
  /** GET: the engine's serving settings (admin route). */
  serverInfoPath?: string;
  /** Prometheus series of the load signals (kvplanner/load-signals.ts parses them). */
  metrics: LoadMetricNames;
  /** Usage of a whole answer or of one stream chunk, in the engine's shape. */
  usage(payload: unknown): ExtractedUsage | undefined;
  /** The engine's error body, read; undefined when it is not one the engine sends. */
  error(body: Buffer | string): EngineError | undefined;
}

export const ENGINES: Readonly<Record<Flavor, EngineAdapter>> = Object.freeze({
  vllm: {
    flavor: 'vllm',
    healthPath: '/health',
    tokenizePath: '/tokenize',
    detokenizePath: '/detokenize',
    flushCachePath: '/reset_prefix_cache',
    metrics: ENGINE_LOAD_METRICS.vllm,
    usage: vllmUsage,
    error: vllmError,
  },
  // SGLang's /tokenize takes a prompt, not chat messages: token counting stays the gateway's.
  sglang: {
    flavor: 'sglang',
    healthPath: '/health',
    detokenizePath: '/detokenize',
    flushCachePath: '/flush_cache',
    serverInfoPath: '/get_server_info',
    metrics: ENGINE_LOAD_METRICS.sglang,
    usage: sglangUsage,
    error: sglangError,
  },
  // Hosted or third-party OpenAI-compatible servers: /v1/models is the one path they all serve.
  openai: {
    flavor: 'openai',
    healthPath: '/v1/models',
    metrics: { waiting: [], running: [], kvUsage: [] },
    usage: openaiUsage,
    error: openaiError,
  },
});

export function engineOf(model: Pick<ModelConfig, 'flavor'>): EngineAdapter {
  return ENGINES[model.flavor ?? 'vllm'];
}
