// One upstream attempt: a request sent to one worker, as an explicit state machine
//   sent ─► headers ─► streaming ─► ended(outcome)
//     └──────┴───────────┴──────► ended(outcome)
// `sent`: the worker took the request (in-flight + queued prefill counted on it); `headers`: the
// status line is back; `streaming`: the first body byte arrived (the queued prefill leaves the
// worker's queue); `ended`: exactly once, with a bounded outcome. Whatever must happen at these
// points (in-flight and prefill bookkeeping, health and ejection, attempt metrics, the attempt's
// span, the request's accounting) subscribes as an AttemptObserver instead of being scattered
// over the proxy. Like undici's dispatch handler (onRequestStart / onResponseStart /
// onResponseData / onResponseEnd / onResponseError) and Envoy's UpstreamRequest.
import type { Dispatcher } from 'undici';
import type { Choice } from '../../kvplanner/types.ts';
import type { GatewayMetrics } from '../metrics.ts';
import type { SpanHandle } from '../telemetry/tracing.ts';
import type { Worker } from '../upstream/worker.ts';
import type { AttemptDeadline } from './attempt-deadline.ts';
import type { Usage } from './usage.ts';

export type AttemptState = 'sent' | 'headers' | 'streaming' | 'ended';

/**
 * How an attempt ended (also the `outcome` label of ctxgate_upstream_attempts_total):
 * ok / 4xx: the worker answered; 5xx: it answered a server error (a suspect until another worker
 * serves the same body); timeout / error: transport failure before or while reading the body;
 * bad_response: 2xx whose body is unusable; stream_failed: the body broke after the first byte;
 * client_closed / shutting_down: ended on our side, not the worker's fault.
 */
export type AttemptOutcome =
  | 'ok'
  | '4xx'
  | '5xx'
  | 'timeout'
  | 'error'
  | 'bad_response'
  | 'stream_failed'
  | 'client_closed'
  | 'shutting_down';

/** Outcomes that count toward the worker's ejection at once. */
const WORKER_FAULTS: ReadonlySet<AttemptOutcome> = new Set(['timeout', 'error', 'bad_response', 'stream_failed']);

export interface AttemptObserver {
  /** The request is about to leave for `a.worker`. */
  onBegin?(a: Attempt): void;
  /** The worker's status line is back. */
  onHeaders?(a: Attempt): void;
  /** The first body byte arrived. */
  onFirstByte?(a: Attempt): void;
  /** The attempt is over (called once). */
  onEnd?(a: Attempt): void;
}

export class Attempt {
  state: AttemptState = 'sent';
  statusCode = 0;
  responseHeaders: Dispatcher.ResponseData['headers'] = {};
  outcome: AttemptOutcome | undefined;
  /** Why it failed (worker error log, span status). */
  detail = '';
  readonly startedAt = performance.now();
  headersAt: number | undefined;
  firstByteAt: number | undefined;
  endedAt: number | undefined;
  /** What the worker reported for this attempt's answer (set by the consumer before the end). */
  usage: Usage | undefined;
  /** Cached tokens a uniformly chosen healthy worker would hold (routing feedback, after an ok end). */
  uniformCachedTokens: number | undefined;
  /** Runs the routing feedback still pending for this attempt's end now (the request's accounting
   *  calls it first: a drain can run that job before the feedback's setImmediate). */
  settleFeedback: (() => void) | undefined;
  /** Its time limits on the real clock (attempt-deadline.ts), told of headers, bytes and the end. */
  deadline: AttemptDeadline | undefined;

  constructor(
    /** 1-based number of this attempt within the request. */
    readonly n: number,
    readonly worker: Worker,
    readonly choice: Choice,
    /** Uncached prompt tokens queued on the worker until the first byte. */
    readonly queuedPrefill: number,
    private readonly observers: readonly AttemptObserver[],
    readonly span?: SpanHandle,
  ) {
    for (const o of observers) o.onBegin?.(this);
  }

  headers(statusCode: number, responseHeaders: Dispatcher.ResponseData['headers']): void {
    if (this.state !== 'sent') return;
    this.state = 'headers';
    this.statusCode = statusCode;
    this.responseHeaders = responseHeaders;
    this.headersAt = performance.now();
    this.deadline?.headers();
    for (const o of this.observers) o.onHeaders?.(this);
  }

  /** A body chunk arrived (the consumer calls it per chunk, after firstByte for the first). */
  progress(): void {
    this.deadline?.progress();
  }

  /** The consumer waits on the client or on stored state, not on the worker: no body limit meanwhile. */
  async waitOff<T>(p: Promise<T>): Promise<T> {
    this.deadline?.hold();
    try {
      return await p;
    } finally {
      this.deadline?.resume();
    }
  }

  firstByte(): void {
    this.deadline?.progress();
    if (this.state === 'streaming' || this.state === 'ended') return;
    this.state = 'streaming';
    this.firstByteAt = performance.now();
    for (const o of this.observers) o.onFirstByte?.(this);
  }

  end(outcome: AttemptOutcome, detail = ''): void {
    if (this.state === 'ended') return;
    this.state = 'ended';
    this.deadline?.done();
    this.outcome = outcome;
    this.detail = detail;
    this.endedAt = performance.now();
    for (const o of this.observers) o.onEnd?.(this);
  }

  get ended(): boolean {
    return this.state === 'ended';
  }

  /** ms the worker kept this attempt waiting: until the end, or until now while it runs. */
  waitMs(): number {
    return (this.endedAt ?? performance.now()) - this.startedAt;
  }
}

/**
 * The worker's bookkeeping and health: in flight from begin to end, queued prefill until the
 * first byte (or the end, when none came), success resets its failure count, transport faults
 * count toward ejection, a 5xx is only noted (failover decides later whether it was the worker's).
 */
export const workerObserver: AttemptObserver = {
  onBegin(a) {
    a.worker.begin(a.queuedPrefill);
  },
  onFirstByte(a) {
    a.worker.prefillDone(a.queuedPrefill);
  },
  onEnd(a) {
    if (a.firstByteAt === undefined) a.worker.prefillDone(a.queuedPrefill);
    a.worker.end();
    const o = a.outcome!;
    if (o === 'ok' || o === '4xx') a.worker.recordSuccess(false);
    else if (o === '5xx') a.worker.noteError(a.detail || `HTTP ${a.statusCode}`);
    else if (WORKER_FAULTS.has(o)) a.worker.recordFailure(a.detail || o);
  },
};

/** ctxgate_upstream_attempts_total and ctxgate_stream_errors_total. */
export function metricsObserver(metrics: GatewayMetrics, model: string): AttemptObserver {
  return {
    onEnd(a) {
      const o = a.outcome!;
      if (o === 'client_closed' || o === 'shutting_down') return;
      metrics.perCall.upstreamAttempts.at(model, a.worker.id, o).inc();
      if (o === 'stream_failed') metrics.streamErrors.inc({ model });
    },
  };
}

/** The attempt's span: status code at the headers, ended with the outcome. */
export const spanObserver: AttemptObserver = {
  onHeaders(a) {
    a.span?.set({ 'http.response.status_code': a.statusCode });
  },
  onEnd(a) {
    if (!a.span) return;
    a.span.set({ 'ctxgate.attempt.outcome': a.outcome! });
    a.span.end(a.outcome === 'ok' || a.outcome === '4xx' ? undefined : a.detail || a.outcome);
  },
};
