// Sends one request upstream with failover. A failure before the first byte (connection refused
// or reset, connect/headers timeout, HTTP 5xx) is retried on another healthy worker not yet tried,
// up to `attempts`; once 2xx/4xx headers are back the answer is final. Candidates are filtered to
// healthy, untried, not-full workers and the model's policy picks one. Ejection counts transport
// failures and timeouts at once, but a 5xx only once another worker served the same body: a body
// that makes every worker fail (a hostile tool schema) is that request's failure, so one tenant
// cannot eject the workers every tenant shares. (Active health checks still catch a worker that
// answers 5xx to everything.)
import type { Dispatcher } from 'undici';
import type { Choice, RouteInfo, WorkerView } from '../../kvplanner/types.ts';
import { GatewayError } from '../../middleware/errors.ts';
import { lap, tick } from '../../middleware/perf/stage-timers.ts';
import type { GatewayMetrics } from '../metrics.ts';
import type { ModelRoute } from '../upstream/fleet.ts';
import type { RequestTrace, SpanHandle } from '../telemetry/tracing.ts';
import type { Worker } from '../upstream/worker.ts';

export interface DispatchRequest {
  path: string;
  body: Buffer | string;
  headers: Record<string, string>;
  signal: AbortSignal;
  info: RouteInfo;
  prefillTokens: number;
  attempts: number;
  /** Workers already tried by an earlier dispatch of this request (skipped; tried ones are added). */
  tried?: Set<Worker>;
  /** The request's trace: a span per routing decision and per attempt, traceparent sent upstream. */
  trace?: RequestTrace;
}

export interface Dispatched {
  worker: Worker;
  choice: Choice;
  attempts: number;
  /** Live response (2xx/4xx): the caller reads the body and calls worker.end(). */
  res?: Dispatcher.ResponseData;
  /** Last 5xx, already read, when every attempt ended in one: passed through untouched. */
  failed?: { status: number; contentType: string; body: Buffer };
  /** ms spent waiting on upstreams before the final response's headers. */
  waitMs: number;
  /** Prefill tokens added to the worker's queue (released at the first byte via prefillDone). */
  queuedPrefill?: number;
  /** The final attempt's span (ended by the caller once the body is read). */
  span?: SpanHandle;
}

const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

function candidates(route: ModelRoute, tried: Set<Worker>): { views: WorkerView[]; full: boolean } {
  const views: WorkerView[] = [];
  let full = false;
  for (const w of route.workers) {
    if (!w.healthy || tried.has(w)) continue;
    if (!w.hasRoom()) {
      full = true;
      continue;
    }
    views.push(w.view());
  }
  return { views, full };
}

function routeAttributes(
  policy: string,
  choice: Choice,
  info: RouteInfo,
  attempt: number,
): Record<string, string | number> {
  const a: Record<string, string | number> = {
    'ctxgate.policy': policy,
    'ctxgate.branch': choice.branch,
    'ctxgate.worker': choice.worker.id,
    'ctxgate.attempt': attempt,
  };
  if (choice.predictedCachedTokens !== undefined) a['ctxgate.predicted_cached_tokens'] = choice.predictedCachedTokens;
  if (info.promptTokens !== undefined) a['ctxgate.prompt_tokens'] = info.promptTokens;
  return a;
}

export async function dispatch(route: ModelRoute, req: DispatchRequest, metrics: GatewayMetrics): Promise<Dispatched> {
  const model = route.config.name;
  const tried = req.tried ?? new Set<Worker>();
  const before = tried.size;
  let lastError: GatewayError | undefined;
  let failed: Dispatched['failed'];
  let failedOn: { worker: Worker; choice: Choice } | undefined;
  let waitMs = 0;
  const suspects: Worker[] = [];
  // replicas sharing Redis: this session's home as another replica may have placed it
  if (route.placement) await route.placement.beforeSelect(req.info);
  for (let attempt = 1; attempt <= req.attempts; attempt++) {
    const t0 = tick();
    const { views, full } = candidates(route, tried);
    const choice = views.length ? route.policy.select(views, req.info) : null;
    lap('routing', t0);
    const worker = choice ? route.byId.get(choice.worker.id) : undefined;
    if (!choice || !worker) {
      if (attempt === 1 && full)
        throw new GatewayError('worker_capacity_exhausted', `all workers of '${model}' are at max_in_flight`, null, {
          'retry-after': '1',
        });
      if (attempt === 1 || (!lastError && !failed))
        throw new GatewayError('no_healthy_worker', `no healthy worker for model '${model}'`, null, {
          'retry-after': '1',
        });
      break;
    }
    tried.add(worker);
    // the home is visible to every replica before this call's answer can reach the client
    if (route.placement) await route.placement.afterSelect(req.info);
    metrics.routingDecisions.inc({ model, policy: route.policy.name, branch: choice.branch });
    if (attempt > 1) metrics.retries.inc({ model });
    // Queued prefill is what the worker must compute: the prompt minus what the policy expects cached.
    const queued = Math.max(0, req.prefillTokens - (choice.predictedCachedTokens ?? 0));
    let span: SpanHandle | undefined;
    let headers = worker.apiKey ? { ...req.headers, authorization: `Bearer ${worker.apiKey}` } : req.headers;
    if (req.trace) {
      req.trace.child('ctxgate.route', routeAttributes(route.policy.name, choice, req.info, attempt)).end();
      span = req.trace.child(`upstream ${worker.id}`, {
        'ctxgate.worker': worker.id,
        'ctxgate.attempt': attempt,
        'server.address': worker.id,
      });
      headers = { ...headers, traceparent: span.traceparent() };
    }
    worker.begin(queued);
    const t = performance.now();
    try {
      const res = await worker.pool.request({
        method: 'POST',
        path: worker.basePath + req.path,
        headers,
        body: req.body,
        signal: req.signal,
      });
      waitMs += performance.now() - t;
      if (res.statusCode >= 500) {
        const body = Buffer.from(await res.body.arrayBuffer());
        worker.prefillDone(queued);
        worker.end();
        // Not yet the worker's fault: the body may be what fails (see the header comment).
        worker.noteError(`HTTP ${res.statusCode}`);
        suspects.push(worker);
        metrics.upstreamAttempts.inc({ model, worker: worker.id, outcome: '5xx' });
        failed = {
          status: res.statusCode,
          contentType: String(res.headers['content-type'] ?? 'application/json'),
          body,
        };
        failedOn = { worker, choice };
        span?.set({ 'http.response.status_code': res.statusCode });
        span?.end(`HTTP ${res.statusCode}`);
        lastError = undefined;
        continue;
      }
      metrics.upstreamAttempts.inc({ model, worker: worker.id, outcome: res.statusCode < 300 ? 'ok' : '4xx' });
      span?.set({ 'http.response.status_code': res.statusCode });
      // Another worker took the same body: the earlier 5xx were those workers' failures.
      for (const w of suspects) w.recordFailure(`HTTP 5xx on a body worker ${worker.id} served`);
      return { worker, choice, attempts: attempt, res, waitMs, queuedPrefill: queued, span };
    } catch (err) {
      waitMs += performance.now() - t;
      worker.prefillDone(queued);
      worker.end();
      if (req.signal.aborted) {
        span?.end('client_closed');
        throw err; // the client left; nothing to retry for
      }
      const code = (err as { code?: string }).code ?? '';
      const timeout = TIMEOUT_CODES.has(code);
      worker.recordFailure(`${code || 'error'}: ${(err as Error).message}`);
      span?.end(code || 'error');
      metrics.upstreamAttempts.inc({ model, worker: worker.id, outcome: timeout ? 'timeout' : 'error' });
      lastError = timeout
        ? new GatewayError('upstream_timeout', `worker did not answer in time (${code})`)
        : new GatewayError('upstream_unavailable', `worker unreachable: ${code || (err as Error).message}`);
      failed = undefined;
    }
  }
  if (failed && failedOn) return { ...failedOn, attempts: tried.size - before, failed, waitMs };
  const err = lastError ?? new GatewayError('no_healthy_worker', `no healthy worker for model '${model}'`);
  err.headers['x-ctxgate-attempts'] = String(tried.size);
  throw err;
}
