// Engine load signals from each worker's Prometheus /metrics: queue depth, running requests, KV
// usage (vLLM: vllm:num_requests_waiting / _running, vllm:kv_cache_usage_perc (gpu_cache_usage_perc
// before v0.10), vllm:cache_config_info{num_gpu_blocks,block_size}; SGLang: sglang:num_queue_reqs,
// sglang:num_running_reqs, sglang:token_usage). parseEngineMetrics is pure; startScraper does the
// I/O and writes into WorkerView.engine (and kvTokens when not configured), outside the policies.
// Parse: O(text); counts are summed across label sets (several engines / models behind one port),
// usage takes the maximum.
import { request } from 'undici';
import type { WorkerView } from './types.ts';

export interface EngineSignals {
  waiting?: number;
  running?: number;
  /** 0..1 */
  kvUsage?: number;
  /** KV capacity in tokens (vLLM cache_config_info: num_gpu_blocks × block_size) */
  kvTokens?: number;
}

export interface LoadMetricNames {
  waiting: readonly string[];
  running: readonly string[];
  kvUsage: readonly string[];
}

/** Per engine; the gateway's engine adapters (gateway/upstream/engines.ts) pick one by flavor. */
export const ENGINE_LOAD_METRICS: Readonly<Record<'vllm' | 'sglang', LoadMetricNames>> = Object.freeze({
  vllm: {
    waiting: ['vllm:num_requests_waiting'],
    running: ['vllm:num_requests_running'],
    kvUsage: ['vllm:kv_cache_usage_perc', 'vllm:gpu_cache_usage_perc'],
  },
  sglang: { waiting: ['sglang:num_queue_reqs'], running: ['sglang:num_running_reqs'], kvUsage: ['sglang:token_usage'] },
});

const all = (k: keyof LoadMetricNames): Set<string> => new Set(Object.values(ENGINE_LOAD_METRICS).flatMap((n) => n[k]));
/** Without a flavor, any engine's names are read (one port serves one engine, so they never mix). */
const WAITING = all('waiting');
const RUNNING = all('running');
const USAGE = all('kvUsage');
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)/;

function labelValue(labels: string, name: string): string | undefined {
  const m = new RegExp(`[{,]\\s*${name}="([^"]*)"`).exec(labels);
  return m?.[1];
}

/** `names`: one engine's series (its adapter's); default: any engine's. */
export function parseEngineMetrics(text: string, names?: LoadMetricNames): EngineSignals {
  const waiting = names ? new Set(names.waiting) : WAITING;
  const running = names ? new Set(names.running) : RUNNING;
  const usage = names ? new Set(names.kvUsage) : USAGE;
  const out: EngineSignals = {};
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) continue;
    const [, name, labels = '', valueText] = m;
    const value = Number(valueText);
    if (!Number.isFinite(value)) continue;
    if (waiting.has(name)) out.waiting = (out.waiting ?? 0) + value;
    else if (running.has(name)) out.running = (out.running ?? 0) + value;
    else if (usage.has(name)) out.kvUsage = Math.max(out.kvUsage ?? 0, value);
    else if (name === 'vllm:cache_config_info') {
      const blocks = Number(labelValue(labels, 'num_gpu_blocks'));
      const size = Number(labelValue(labels, 'block_size'));
      if (blocks > 0 && size > 0) out.kvTokens = (out.kvTokens ?? 0) + blocks * size;
    }
  }
  return out;
}

export interface ScraperOptions {
  path?: string;
  /** The engine's load-signal series (default: any engine's). */
  names?: LoadMetricNames;
  timeoutMs?: number;
  onError?: (worker: WorkerView, err: Error) => void;
  /** After each round over all workers (late binding looks at its held calls then). */
  onScrape?: () => void;
}

export interface Scraper {
  /** One round over all workers; never rejects. */
  scrapeOnce(): Promise<void>;
  stop(): void;
}

export const DEFAULT_SCRAPE_TIMEOUT_MS = 2000;

/** Polls each worker's metrics every `intervalMs`; `workers` may be a live getter. */
export function startScraper(
  workers: readonly WorkerView[] | (() => readonly WorkerView[]),
  intervalMs: number,
  o: ScraperOptions = {},
): Scraper {
  const list = typeof workers === 'function' ? workers : () => workers;
  const path = o.path ?? '/metrics';
  const timeout = o.timeoutMs ?? DEFAULT_SCRAPE_TIMEOUT_MS;
  const configuredKv = new Map<string, boolean>();
  const one = async (w: WorkerView): Promise<void> => {
    try {
      const res = await request(new URL(path, w.url), { method: 'GET', headersTimeout: timeout, bodyTimeout: timeout });
      const body = await res.body.text();
      if (res.statusCode !== 200) throw new Error(`GET ${path}: HTTP ${res.statusCode}`);
      const s = parseEngineMetrics(body, o.names);
      w.engine = { waiting: s.waiting, running: s.running, kvUsage: s.kvUsage };
      if (!configuredKv.has(w.id)) configuredKv.set(w.id, w.kvTokens !== undefined);
      if (s.kvTokens !== undefined && !configuredKv.get(w.id)) w.kvTokens = s.kvTokens;
    } catch (err) {
      w.engine = undefined; // stale signals are worse than none
      o.onError?.(w, err as Error);
    }
  };
  let running: Promise<void> | undefined;
  const scrapeOnce = (): Promise<void> => {
    running ??= Promise.all(list().map(one)).then(
      () => {
        running = undefined;
        o.onScrape?.();
      },
      () => {
        running = undefined;
      },
    );
    return running;
  };
  const timer = setInterval(() => void scrapeOnce(), intervalMs);
  timer.unref();
  return { scrapeOnce, stop: () => clearInterval(timer) };
}
