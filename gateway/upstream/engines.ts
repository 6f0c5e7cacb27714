// Engine adapters, chosen by `models[].flavor`: what differs between vLLM, SGLang and any other
// OpenAI-compatible upstream (`openai`): the health path, the Prometheus names of the load signals
// the scraper reads, and the native endpoints the gateway may use (token counting). Usage and
// error shapes are read by the one usage extractor (usage/extract.ts) and the relay, which accept
// every engine's shape. No flavor set: vLLM (the most common engine, and its /health and /tokenize
// are also served by the reference worker in both flavors).
import { ENGINE_LOAD_METRICS, type LoadMetricNames } from '../../kvplanner/load-signals.ts';
import type { ModelConfig } from '../config/schema.ts';

export type Flavor = 'vllm' | 'sglang' | 'openai';

export interface EngineAdapter {
  flavor: Flavor;
  /** GET path answered 2xx while the engine can serve. */
  healthPath: string;
  /** POST {model, messages, tools} -> {count}: exact prompt tokens; absent: the gateway estimates. */
  tokenizePath?: string;
  /** Prometheus series of the load signals (kvplanner/load-signals.ts parses them). */
  metrics: LoadMetricNames;
}

export const ENGINES: Readonly<Record<Flavor, EngineAdapter>> = Object.freeze({
  vllm: {
    flavor: 'vllm',
    healthPath: '/health',
    tokenizePath: '/tokenize',
    metrics: ENGINE_LOAD_METRICS.vllm,
  },
  sglang: {
    flavor: 'sglang',
    healthPath: '/health',
    metrics: ENGINE_LOAD_METRICS.sglang,
  },
  // Hosted or third-party OpenAI-compatible servers: /v1/models is the one path they all serve.
  openai: { flavor: 'openai', healthPath: '/v1/models', metrics: { waiting: [], running: [], kvUsage: [] } },
});

export function engineOf(model: Pick<ModelConfig, 'flavor'>): EngineAdapter {
  return ENGINES[model.flavor ?? 'vllm'];
}
