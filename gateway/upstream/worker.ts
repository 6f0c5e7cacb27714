// One upstream worker: its keep-alive undici Pool, what the gateway has in flight on it, and its
// health state. Ejection: `ejectAfter` consecutive failures (active checks and requests alike);
// re-admission: `readmitAfter` consecutive successful health checks.
import { Pool } from 'undici';
import type { WorkerView } from '../../kvplanner/types.ts';
import type { GatewayConfig, WorkerConfig } from '../config/schema.ts';
import type { GatewayMetrics } from '../metrics.ts';
import type { GaugeChild } from '../metrics-children.ts';

/** How many recent errors a worker remembers for the admin route. */
export const LAST_ERRORS_KEPT = 10;
/** Idle keep-alive sockets are closed after this long. */
export const KEEP_ALIVE_TIMEOUT_MS = 30_000;

export interface WorkerError {
  time: string;
  message: string;
}

export class Worker {
  readonly id: string;
  readonly url: string;
  readonly pool: Pool;
  /** An attempt's limits on the real clock (gateway/proxy/attempt-deadline.ts): connect + headers,
   *  and between body bytes. */
  readonly deadlines: { readonly headersMs: number; readonly bodyMs: number };
  readonly maxInFlight: number;
  readonly apiKey?: string;
  /** From config, or filled in by the engine-metrics scraper (vLLM cache_config_info). */
  kvTokens?: number;
  /** Engine-reported load (scraped /metrics), when scraping is on. */
  engine?: WorkerView['engine'];
  /** Path prefix of the worker URL (a worker may live under e.g. /vllm). */
  readonly basePath: string;
  /** GET path of the active health check (the engine adapter's). */
  healthPath = '/health';
  /** Routable (optimistic from the start: requests may try a worker before its first check). */
  healthy = true;
  /** Answered at least once (a health check, or a request): /ready waits for this, not for `healthy`. */
  verified = false;
  inFlight = 0;
  /** Attempts begun here that have not answered a first byte (nor ended without one). */
  awaitingFirstByte = 0;
  /** Requests sent to this worker since start (KV-event staleness compares it across batches). */
  requestsStarted = 0;
  queuedPrefillTokens = 0;
  consecutiveFailures = 0;
  /** Called when the worker is ejected (the fleet clears its guessed routing entry: a worker that
   *  went down, or restarted, holds none of the blocks routing guessed for it). */
  onEject?: () => void;
  private consecutiveSuccesses = 0;
  readonly lastErrors: WorkerError[] = [];
  private readonly routingView: WorkerView;
  /** ctxgate_worker_in_flight{model, worker}, bound once (metrics-children.ts): set twice per attempt. */
  private readonly inFlightGauge: GaugeChild;

  constructor(
    readonly model: string,
    cfg: WorkerConfig,
    upstream: GatewayConfig['upstream'],
    private readonly health: GatewayConfig['health'],
    private readonly metrics: GatewayMetrics,
  ) {
    this.id = cfg.id ?? cfg.url;
    this.url = cfg.url.replace(/\/+$/, '');
    this.maxInFlight = cfg.max_in_flight ?? upstream.max_in_flight;
    this.apiKey = cfg.api_key;
    this.kvTokens = cfg.kv_tokens;
    this.basePath = new URL(this.url).pathname.replace(/\/+$/, '');
    this.deadlines = {
      headersMs: upstream.connect_timeout_ms + upstream.headers_timeout_ms,
      bodyMs: upstream.body_timeout_ms,
    };
    this.pool = new Pool(new URL(this.url).origin, {
      connections: this.maxInFlight > 0 ? this.maxInFlight : null,
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
      connect: { timeout: upstream.connect_timeout_ms },
      headersTimeout: upstream.headers_timeout_ms,
      bodyTimeout: upstream.body_timeout_ms,
    });
    this.routingView = {
      id: this.id,
      url: this.url,
      healthy: true,
      inFlight: 0,
      awaitingFirstByte: 0,
      queuedPrefillTokens: 0,
      maxInFlight: this.maxInFlight,
      kvTokens: this.kvTokens,
      engine: undefined,
    };
    metrics.workerHealthy.set({ model, worker: this.id }, 1);
    metrics.workerInFlight.set({ model, worker: this.id }, 0);
    this.inFlightGauge = metrics.perCall.workerInFlight.at(model, this.id);
  }

  hasRoom(): boolean {
    return this.maxInFlight === 0 || this.inFlight < this.maxInFlight;
  }

  /**
   * What routing reads of this worker, as of now: one object per worker, refreshed in place by each
   * call (routing builds views for every worker on every attempt: a new object each time was ~64
   * allocations per request at 64 workers, garbage collected inside later decisions). Read it
   * before the next call; its id never changes (a Choice's view is mapped back by id).
   */
  view(): WorkerView {
    const v = this.routingView;
    v.healthy = this.healthy;
    v.inFlight = this.inFlight;
    v.awaitingFirstByte = this.awaitingFirstByte;
    v.queuedPrefillTokens = this.queuedPrefillTokens;
    v.kvTokens = this.kvTokens;
    v.engine = this.engine;
    return v;
  }

  begin(prefillTokens: number): void {
    this.requestsStarted++;
    this.inFlight++;
    this.awaitingFirstByte++;
    this.queuedPrefillTokens += prefillTokens;
    this.inFlightGauge.set(this.inFlight);
  }

  /** Prefill is done once the first byte came back; the tokens leave the queue then. */
  prefillDone(prefillTokens: number): void {
    this.queuedPrefillTokens = Math.max(0, this.queuedPrefillTokens - prefillTokens);
    // once per attempt: at its first byte, or at its end when none came (attempt.ts workerObserver)
    this.awaitingFirstByte = Math.max(0, this.awaitingFirstByte - 1);
  }

  end(): void {
    this.inFlight = Math.max(0, this.inFlight - 1);
    this.inFlightGauge.set(this.inFlight);
  }

  recordSuccess(fromHealthCheck: boolean): void {
    this.consecutiveFailures = 0;
    this.verified = true;
    if (this.healthy) return;
    // Requests never reach an ejected worker; only health checks re-admit it.
    if (!fromHealthCheck) return;
    if (++this.consecutiveSuccesses >= this.health.readmit_after) this.setHealthy(true);
  }

  recordFailure(message: string): void {
    this.consecutiveSuccesses = 0;
    this.consecutiveFailures++;
    this.noteError(message);
    if (this.healthy && this.consecutiveFailures >= this.health.eject_after) this.setHealthy(false);
  }

  /** Remembers an error for the admin route without counting it toward ejection. */
  noteError(message: string): void {
    this.lastErrors.push({ time: new Date().toISOString(), message: message.slice(0, 300) });
    if (this.lastErrors.length > LAST_ERRORS_KEPT) this.lastErrors.shift();
  }

  private setHealthy(h: boolean): void {
    this.healthy = h;
    this.consecutiveSuccesses = 0;
    this.metrics.workerHealthy.set({ model: this.model, worker: this.id }, h ? 1 : 0);
    if (!h) this.onEject?.();
  }

  snapshot() {
    return { ...this.view(), consecutiveFailures: this.consecutiveFailures, lastErrors: [...this.lastErrors] };
  }

  async close(): Promise<void> {
    await this.pool.close().catch(() => this.pool.destroy());
  }
}
