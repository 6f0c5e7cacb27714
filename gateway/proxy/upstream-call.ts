// One request's upstream call: the ONE retry / failover loop, over Attempts (attempt.ts).
// Each round filters the model's workers to healthy, untried, not-full ones, lets the routing
// policy pick, sends, and hands a live 2xx/4xx response to the consumer (the relay). Until the
// client has received a byte, any failure is retried on another worker, up to `attempts`:
// connection refused or reset, connect/headers timeout (on the real clock too: attempt-deadline.ts), HTTP 5xx, and a body that breaks or is
// not valid JSON before the answer was sent. After the client received bytes (a stream under
// way) a break ends the answer with the API's error event (consumer.failMidStream). A client that
// leaves, or the shutdown deadline, ends the call without blaming the worker.
// Ejection counts transport failures and timeouts at once, but a 5xx only once another worker
// served the same body: a body that makes every worker fail (a hostile tool schema) is that
// request's failure, so one tenant cannot eject the workers every tenant shares. (Active health
// checks still catch a worker that answers 5xx to everything.)
// Each attempt's end feeds the routing policy (routing-feedback.ts): a failed one is taken back
// from its worker before the next attempt is routed.
import type { Release } from '../admission/admission-gate.ts';
import { gateFor } from '../admission/gates.ts';
import type { RouteInfo, WorkerView } from '../../kvplanner/types.ts';
import { GatewayError, STREAM_ERROR_CODE } from '../../middleware/errors.ts';
import type { AbortLike } from '../../middleware/types.ts';
import { lap, tick } from '../../middleware/perf/stage-timers.ts';
import type { ShapedError } from '../ingress/types.ts';
import type { GatewayMetrics } from '../metrics.ts';
import type { RequestTrace } from '../telemetry/tracing.ts';
import type { ModelRoute } from '../upstream/fleet.ts';
import type { Worker } from '../upstream/worker.ts';
import { Attempt, type AttemptObserver, metricsObserver, spanObserver, workerObserver } from './attempt.ts';
import { AttemptDeadline } from './attempt-deadline.ts';
import { routingObserver } from './routing-feedback.ts';
import { requestUpstream, type UpstreamResponse } from './upstream-response.ts';

/** Errors of a broken answer body: retried on another worker while the client saw nothing. */
const BODY_ERRORS = new Set(['upstream_bad_response', 'upstream_timeout']);
const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

export interface UpstreamRequest {
  path: string;
  /** Pieces are sent one after the other (proxy/body.ts). */
  body: Buffer | string | readonly Buffer[];
  headers: Record<string, string>;
  /** Aborted when the client leaves or the shutdown deadline passes. */
  signal: AbortLike;
  /** True when the abort came from the shutdown deadline, not the client. */
  shuttingDown: () => boolean;
  info: RouteInfo;
  prefillTokens: number;
  attempts: number;
  /** A span per routing decision and per attempt; traceparent sent upstream. */
  trace?: RequestTrace;
  /** Called once, when the first request went out (upstream-response.ts onSent; send-gate.ts). */
  onSent?: () => void;
}

/** What reads a live response to the client: the relay. */
export interface ResponseConsumer {
  /**
   * Reads the response to its end and answers the client; calls `a.firstByte()` at the first
   * body byte. Returns 'cut' when it stopped because the signal fired. Throws on a broken body
   * (the raw transport error, or GatewayError('upstream_bad_response') for an unusable one).
   */
  consume(a: Attempt, res: UpstreamResponse): Promise<'complete' | 'cut'>;
  /** Whether the client has received bytes of this answer (no failover past this point). */
  committed(): boolean;
  /** Ends an answer under way with the API's error event. */
  failMidStream(err: ShapedError): void;
}

/** How the call ended when it did not throw. */
export type CallResult =
  | { kind: 'answered'; attempt: Attempt }
  /** Every attempt answered 5xx: the last one, body read, for the caller to reshape. */
  | { kind: 'failed'; attempt: Attempt; status: number; contentType: string; body: Buffer }
  | { kind: 'client_closed'; attempt?: Attempt }
  /** A stream under way was ended with an error event (worker broke, or shutdown). */
  | { kind: 'ended_mid_stream'; attempt: Attempt };

function shuttingDown(): GatewayError {
  return new GatewayError('shutting_down', 'the gateway is shutting down; request ended at the shutdown deadline');
}

export class UpstreamCall {
  readonly attempts: Attempt[] = [];
  private readonly tried = new Set<Worker>();
  /** Workers that answered 5xx to this body: blamed only if another worker serves it. */
  private readonly suspects: Worker[] = [];
  private readonly observers: AttemptObserver[];
  /** A call late binding held: the workers its first attempt is routed among (admission-gate.ts). */
  private only: Release;
  /** req.onSent, at most once (an attempt that failed before its body went out leaves it to the next). */
  private readonly sentOnce: () => void;
  private sent = false;

  constructor(
    private readonly route: ModelRoute,
    private readonly req: UpstreamRequest,
    private readonly metrics: GatewayMetrics,
    observers: readonly AttemptObserver[] = [],
  ) {
    this.observers = [
      workerObserver,
      metricsObserver(metrics, route.config.name),
      spanObserver,
      routingObserver(route, req.info),
      ...observers,
    ];
    // late binding: an attempt's end may let a worker admit a held call
    const gate = gateFor(route);
    if (gate) this.observers.push(gate.observer);
    this.sentOnce = this.markSent.bind(this);
  }

  private markSent(): void {
    if (this.sent) return;
    this.sent = true;
    this.req.onSent?.();
  }

  async run(consumer: ResponseConsumer): Promise<CallResult> {
    const { req } = this;
    const model = this.route.config.name;
    let lastError: GatewayError | undefined;
    let failed: Extract<CallResult, { kind: 'failed' }> | undefined;
    // replicas sharing Redis: this session's home as another replica may have placed it
    if (this.route.placement) await this.route.placement.beforeSelect(req.info);
    // late binding (models[].dispatch admission): held until a worker can admit the call
    const held = gateFor(this.route)?.admit(req.info, req.signal);
    if (held) this.only = await held;
    for (let n = 1; n <= req.attempts; n++) {
      const a = await this.next(n, lastError !== undefined || failed !== undefined);
      if (!a) break;
      if (n > 1) this.metrics.retries.inc({ model });
      let res: UpstreamResponse;
      // undici's own timeouts stretch when this process's timers run late (attempt-deadline.ts)
      a.deadline = new AttemptDeadline(req.signal, a.worker.deadlines);
      try {
        const sending = requestUpstream(a.worker.pool, {
          method: 'POST',
          path: a.worker.basePath + req.path,
          headers: this.headersFor(a),
          body: req.body,
          signal: a.deadline.signal,
          // Once undici wrote the body: the work left for after the send runs then, while the worker computes.
          onSent: this.sentOnce,
        });
        res = await sending;
      } catch (err) {
        const stop = this.stopped(a);
        if (stop) return stop;
        lastError = this.transportFailure(a, err, 'before the headers');
        failed = undefined;
        continue;
      }
      a.headers(res.statusCode, res.headers);
      if (res.statusCode >= 500) {
        let body: Buffer;
        try {
          // per chunk, so a long error body is not the worker's silence
          body = await res.body.readAll(a.progress.bind(a));
        } catch (err) {
          const stop = this.stopped(a);
          if (stop) return stop;
          lastError = this.transportFailure(a, err, 'in an error body');
          failed = undefined;
          continue;
        }
        a.end('5xx', `HTTP ${res.statusCode}`);
        this.suspects.push(a.worker);
        const contentType = String(res.headers['content-type'] ?? 'application/json');
        failed = { kind: 'failed', attempt: a, status: res.statusCode, contentType, body };
        lastError = undefined;
        continue;
      }
      // Another worker took the same body: the earlier 5xx were those workers' failures.
      for (const w of this.suspects.splice(0)) w.recordFailure(`HTTP 5xx on a body worker ${a.worker.id} served`);
      try {
        const how = await consumer.consume(a, res);
        if (how === 'cut') return this.cut(a, consumer);
        a.end(res.statusCode < 400 ? 'ok' : '4xx');
        return { kind: 'answered', attempt: a };
      } catch (err) {
        if (req.signal.aborted) return this.cut(a, consumer);
        if (err instanceof GatewayError && !BODY_ERRORS.has(err.code)) {
          // Not the worker's body: the gateway's own failure on a good answer.
          a.end(res.statusCode < 400 ? 'ok' : '4xx');
          throw err;
        }
        const ge = bodyFailure(a, err);
        if (consumer.committed()) {
          a.end('stream_failed', a.detail);
          consumer.failMidStream({
            status: 502,
            type: 'upstream_error',
            code: STREAM_ERROR_CODE,
            message: `worker stream failed after the first byte (${a.detail})`,
            param: null,
          });
          return { kind: 'ended_mid_stream', attempt: a };
        }
        a.end(ge.code === 'upstream_timeout' ? 'timeout' : 'bad_response', a.detail);
        lastError = ge;
        failed = undefined;
      }
    }
    if (failed) return failed;
    const err = lastError ?? new GatewayError('no_healthy_worker', `no healthy worker for model '${model}'`);
    err.headers['x-ctxgate-attempts'] = String(this.attempts.length);
    throw err;
  }

  /** Routes attempt n; null when no worker is left after an earlier failure (the loop ends). */
  private async next(n: number, failedBefore: boolean): Promise<Attempt | null> {
    const { route, req } = this;
    const model = route.config.name;
    const t0 = tick();
    const views: WorkerView[] = [];
    let full = false;
    for (const w of route.workers) {
      if (!w.healthy || this.tried.has(w)) continue;
      if (!w.hasRoom()) full = true;
      else views.push(w.view());
    }
    const only = n === 1 ? this.only : undefined;
    if (only) {
      // released by the gate: among the workers that could admit it then (its holder alone when it could)
      const able = views.filter((v) => only.includes(v.id));
      if (able.length) views.splice(0, views.length, ...able);
    }
    const choice = views.length ? route.policy.select(views, req.info) : null;
    lap('routing', t0);
    const worker = choice ? route.byId.get(choice.worker.id) : undefined;
    if (!choice || !worker) {
      if (n === 1 && full)
        throw new GatewayError('worker_capacity_exhausted', `all workers of '${model}' are at max_in_flight`, null, {
          'retry-after': '1',
        });
      if (!failedBefore)
        throw new GatewayError('no_healthy_worker', `no healthy worker for model '${model}'`, null, {
          'retry-after': '1',
        });
      return null;
    }
    this.tried.add(worker);
    // the home is visible to every replica before this call's answer can reach the client
    if (route.placement) await route.placement.afterSelect(req.info);
    this.metrics.perCall.routingDecisions.at(model, route.policy.name, choice.branch).inc();
    // Queued prefill is what the worker must compute: the prompt minus what the policy expects cached.
    const queued = Math.max(0, req.prefillTokens - (choice.predictedCachedTokens ?? 0));
    let span: ReturnType<RequestTrace['child']> | undefined;
    if (req.trace) {
      const attrs: Record<string, string | number> = {
        'ctxgate.policy': route.policy.name,
        'ctxgate.branch': choice.branch,
        'ctxgate.worker': choice.worker.id,
        'ctxgate.attempt': n,
      };
      if (choice.predictedCachedTokens !== undefined)
        attrs['ctxgate.predicted_cached_tokens'] = choice.predictedCachedTokens;
      if (req.info.promptTokens !== undefined) attrs['ctxgate.prompt_tokens'] = req.info.promptTokens;
      req.trace.child('ctxgate.route', attrs).end();
      span = req.trace.child(`upstream ${worker.id}`, {
        'ctxgate.worker': worker.id,
        'ctxgate.attempt': n,
        'server.address': worker.id,
      });
    }
    const a = new Attempt(n, worker, choice, queued, this.observers, span);
    this.attempts.push(a);
    return a;
  }

  private headersFor(a: Attempt): Record<string, string> {
    let h = this.req.headers;
    if (a.worker.apiKey) h = { ...h, authorization: `Bearer ${a.worker.apiKey}` };
    if (a.span) h = { ...h, traceparent: a.span.traceparent() };
    return h;
  }

  /** The signal fired before the answer completed: ended on our side. */
  private stopped(a: Attempt): CallResult | undefined {
    if (!this.req.signal.aborted) return undefined;
    if (this.req.shuttingDown()) {
      a.end('shutting_down');
      throw shuttingDown();
    }
    a.end('client_closed');
    return { kind: 'client_closed', attempt: a };
  }

  /** The consumer stopped for the signal (or the body threw after it fired). */
  private cut(a: Attempt, consumer: ResponseConsumer): CallResult {
    if (!this.req.shuttingDown()) {
      a.end('client_closed');
      return { kind: 'client_closed', attempt: a };
    }
    a.end('shutting_down');
    if (!consumer.committed()) throw shuttingDown();
    consumer.failMidStream({
      status: 503,
      type: 'server_error',
      code: 'shutting_down',
      message: 'the gateway is shutting down; stream ended at the shutdown deadline',
      param: null,
    });
    return { kind: 'ended_mid_stream', attempt: a };
  }

  private transportFailure(a: Attempt, err: unknown, where: string): GatewayError {
    const code = (err as { code?: string }).code ?? '';
    const detail = `${code || 'error'} ${where}: ${(err as Error).message}`;
    if (TIMEOUT_CODES.has(code)) {
      a.end('timeout', detail);
      return new GatewayError('upstream_timeout', `worker did not answer in time (${code})`);
    }
    a.end('error', detail);
    return new GatewayError('upstream_unavailable', `worker unreachable: ${code || (err as Error).message}`);
  }
}

/** A 2xx/4xx whose body broke or was unusable, as the client's error; the detail goes on the attempt. */
function bodyFailure(a: Attempt, err: unknown): GatewayError {
  if (err instanceof GatewayError) {
    a.detail = err.message;
    return err;
  }
  const code = (err as { code?: string }).code ?? '';
  a.detail = `body: ${code || (err as Error).message}`;
  return TIMEOUT_CODES.has(code)
    ? new GatewayError('upstream_timeout', 'worker stopped sending the response body')
    : new GatewayError('upstream_bad_response', `worker connection failed mid-response (${code || 'error'})`);
}
