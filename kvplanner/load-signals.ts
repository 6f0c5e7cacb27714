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

const WAITING = new Set(['vllm:num_requests_waiting', 'sglang:num_queue_reqs']);
const RUNNING = new Set(['vllm:num_requests_running', 'sglang:num_running_reqs']);
const USAGE = new Set(['vllm:kv_cache_usage_perc', 'vllm:gpu_cache_usage_perc', 'sglang:token_usage']);
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)/;

function labelValue(labels: string, name: string): string | undefined {
  const m = new RegExp(`[{,]\\s*${name}="([^"]*)"`).exec(labels);
  return m?.[1];
}

export function parseEngineMetrics(text: string): EngineSignals {
  const out: EngineSignals = {};
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) continue;
    const [, name, labels = '', valueText] = m;
    const value = Number(valueText);
    if (!Number.isFinite(value)) continue;
    if (WAITING.has(name)) out.waiting = (out.waiting ?? 0) + value;
    else if (RUNNING.has(name)) out.running = (out.running ?? 0) + value;
    else if (USAGE.has(name)) out.kvUsage = Math.max(out.kvUsage ?? 0, value);
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
  timeoutMs?: number;
  onError?: (worker: WorkerView, err: Error) => void;
}

export interface Scraper {
  /** One round over all workers; never rejects. */
  scrapeOnce(): Promise<void>;
  stop(): void;
}

export const DEFAULT_SCRAPE_TIMEOUT_MS = 2000;

/** Polls each worker's metrics every `intervalMs`; `workers` may be a live getter. */
export function startScraper(workers: readonly WorkerView[] | (() => readonly WorkerView[]), intervalMs: number, o: ScraperOptions = {}): Scraper {
  const list = typeof workers === 'function' ? workers : () => workers;
  const path = o.path ?? '/metrics';
  const timeout = o.timeoutMs ?? DEFAULT_SCRAPE_TIMEOUT_MS;
  const configuredKv = new Map<string, boolean>();
  const one = async (w: WorkerView): Promise<void> => {
    try {
      const res = await request(new URL(path, w.url), { method: 'GET', headersTimeout: timeout, bodyTimeout: timeout });
      const body = await res.body.text();
      if (res.statusCode !== 200) throw new Error(`GET ${path}: HTTP ${res.statusCode}`);
      const s = parseEngineMetrics(body);
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
