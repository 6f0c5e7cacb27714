// Engine load signals from each worker's Prometheus /metrics: queue depth, running requests, KV
// usage (vLLM: vllm:num_requests_waiting / _running, vllm:kv_cache_usage_perc (gpu_cache_usage_perc
// before v0.10), vllm:cache_config_info{num_gpu_blocks,block_size}; SGLang: sglang:num_queue_reqs,
// sglang:num_running_reqs, sglang:token_usage). parseEngineMetrics is pure; startScraper does the
// I/O and writes into WorkerView.engine (and kvTokens when not configured), outside the policies.
// Parse: O(text); counts are summed across label sets (several engines / models behind one port),
// usage takes the maximum.
// Idle cost: a round runs only while `active()` says the model has calls in flight or held (an idle
// gateway sends no GETs; the last busy round's counts are replaced then by what this gateway knows:
// none of its calls waits or runs). A worker whose /metrics answers anything but 200 (404, 401/403, 405, 501, 5xx) or carries none of the engine's series (an
// OpenAI-compatible server, a proxy) is asked again after a doubling pause, intervalMs × 2^misses up
// to SCRAPE_BACKOFF_MAX_MS; meanwhile it has no signals (late binding treats it as able, as at
// arrival), reported once per episode through onNoSignals. Nothing is scraped at start (an idle
// gateway stays idle): until the first round lands, `scraped` is false (late binding holds its
// calls until then and asks for the round at once: gateway/assemble.ts).
import { Agent, request } from 'undici';
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
  /** Whether the model has work now (calls in flight or held); rounds are skipped while it has
   *  none. Default: always. */
  active?: () => boolean;
  /** A worker's /metrics answered other than 200 or had none of the engine's series: once per episode. */
  onNoSignals?: (worker: WorkerView, reason: string) => void;
  /** The worker reports the engine's series again after onNoSignals. */
  onSignals?: (worker: WorkerView) => void;
  now?: () => number;
}

export interface Scraper {
  /** One round over all workers; never rejects. */
  scrapeOnce(): Promise<void>;
  stop(): void;
  /** Whether a round has landed since start (before it, no worker's signals are known). */
  readonly scraped: boolean;
}

export const DEFAULT_SCRAPE_TIMEOUT_MS = 2000;
/** Longest pause before asking a worker without engine signals again, ms. */
export const SCRAPE_BACKOFF_MAX_MS = 60_000;

/** Not a load-signal source (an answer other than 200, or none of the engine's series): backed off,
 *  not a failure (a transport error is: onError, asked again next round). */
class NoSignals extends Error {}

/** Polls each worker's metrics every `intervalMs`; `workers` may be a live getter. */
export function startScraper(
  workers: readonly WorkerView[] | (() => readonly WorkerView[]),
  intervalMs: number,
  o: ScraperOptions = {},
): Scraper {
  const list = typeof workers === 'function' ? workers : () => workers;
  const path = o.path ?? '/metrics';
  const timeout = o.timeoutMs ?? DEFAULT_SCRAPE_TIMEOUT_MS;
  const now = o.now ?? Date.now;
  const configuredKv = new Map<string, boolean>();
  /** Workers without engine signals: misses in a row, and when to ask again. */
  const backoff = new Map<string, { misses: number; untilMs: number }>();
  // its own connections, with a connect timeout no longer than the scrape's: a blackholed worker
  // (SYN dropped) ends its part of a round after `timeout`, not undici's default 10 s connect
  // timeout (late binding's first calls wait for the first round)
  // (made on first use; closed by stop() once no round runs, and after any round asked for later)
  let agent: Agent | undefined;
  let stopped = false;
  const closeAgent = (): void => {
    const a = agent;
    agent = undefined;
    void a?.close();
  };
  const one = async (w: WorkerView): Promise<void> => {
    // an unhealthy worker is out of routing and of the gate (health checks bring it back): not
    // asked, so it cannot hold a round up
    if (!w.healthy) {
      w.engine = undefined; // stale signals are worse than none when it comes back
      return;
    }
    const b = backoff.get(w.id);
    if (b && now() < b.untilMs) return;
    try {
      const res = await request(new URL(path, w.url), {
        method: 'GET',
        dispatcher: (agent ??= new Agent({ connect: { timeout } })),
        headersTimeout: timeout,
        bodyTimeout: timeout,
      });
      const body = await res.body.text();
      // any answer but 200 (404, 401/403 behind an auth proxy, 405, 501 from a server without
      // metrics, a 5xx) says this worker gives no signals now: backed off like a 404, reported once
      if (res.statusCode !== 200) throw new NoSignals(`GET ${path}: HTTP ${res.statusCode}`);
      const s = parseEngineMetrics(body, o.names);
      if (s.waiting === undefined && s.running === undefined && s.kvUsage === undefined)
        throw new NoSignals(`GET ${path}: none of the engine's load series`);
      w.engine = { waiting: s.waiting, running: s.running, kvUsage: s.kvUsage };
      if (!configuredKv.has(w.id)) configuredKv.set(w.id, w.kvTokens !== undefined);
      if (s.kvTokens !== undefined && !configuredKv.get(w.id)) w.kvTokens = s.kvTokens;
      if (b) {
        backoff.delete(w.id);
        o.onSignals?.(w);
      }
    } catch (err) {
      w.engine = undefined; // stale signals are worse than none
      if (err instanceof NoSignals) {
        const misses = (b?.misses ?? 0) + 1;
        backoff.set(w.id, { misses, untilMs: now() + Math.min(intervalMs * 2 ** misses, SCRAPE_BACKOFF_MAX_MS) });
        if (!b) o.onNoSignals?.(w, err.message);
      } else o.onError?.(w, err as Error);
    }
  };
  let running: Promise<void> | undefined;
  /** A round landed since the signals were last dropped for idleness. */
  let fresh = false;
  /** A round has landed since start. */
  let landed = false;
  const scrapeOnce = (): Promise<void> => {
    running ??= Promise.all(list().map(one)).then(
      () => {
        running = undefined;
        if (stopped) closeAgent();
        fresh = true;
        landed = true;
        o.onScrape?.();
      },
      () => {
        running = undefined;
        if (stopped) closeAgent();
      },
    );
    return running;
  };
  const tick = (): void => {
    if (o.active && !o.active()) {
      // nothing in flight or held: no GETs. The last busy round's counts would be stale by the next
      // call: as this gateway left them, none of its calls waits or runs (the calls it sends from
      // now on count as waiting until a round says otherwise); KV usage is unknown until then.
      if (fresh) for (const w of list()) if (w.engine) w.engine = { waiting: 0, running: 0 };
      fresh = false;
      return;
    }
    void scrapeOnce();
  };
  const timer = setInterval(tick, intervalMs);
  timer.unref();
  return {
    scrapeOnce,
    // the agent's sockets close now, or when the running round ends (a round asked for after stop
    // still runs, on a new agent closed as it ends)
    stop: () => {
      stopped = true;
      clearInterval(timer);
      if (!running) closeAgent();
    },
    get scraped() {
      return landed;
    },
  };
}
