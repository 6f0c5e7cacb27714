// Accounting once a request is over: the UsageEvent (its figures taken when the request ends),
// then, from the after-answer queue (after-answer.ts: after the next call was read and sent
// upstream), metrics, feedback to the pipeline, and the request record with every attempt (the
// routing policy's feedback is per attempt: routing-feedback.ts). Everything here is guarded: it
// never throws into the request path, and the user hooks (onUsage, observe) run off the hot path.
import type { FastifyReply } from 'fastify';
import type { Choice, RouteInfo } from '../../kvplanner/types.ts';
import type { ChatMessage, ContextPipeline, PipelineContext, PipelineResult } from '../../middleware/types.ts';
import type { Principal } from '../auth.ts';
import type { GatewayContext } from '../context.ts';
import type { ApiName } from '../ingress/types.ts';
import { lap, tick } from '../../middleware/perf/stage-timers.ts';
import { countReceipts, statusClass } from '../metrics.ts';
import type { ModelRoute } from '../upstream/fleet.ts';
import type { Worker } from '../upstream/worker.ts';
import type { UsageEvent } from '../usage-event.ts';
import type { RequestTrace } from '../telemetry/tracing.ts';
import { endRequestSpan } from '../telemetry/request-span.ts';
import type { AttemptRecord } from '../request-records.ts';
import type { Attempt } from './attempt.ts';
import type { Usage } from './usage.ts';

export interface Exchange {
  t0: number;
  time: number;
  requestId: string;
  principal: Principal;
  /** Ingress API (bounded metrics label). */
  api: ApiName;
  model: string;
  stream: boolean;
  status: number;
  attempts: number;
  /** Every upstream attempt of the request, in order (the last one answered, if any did). */
  attemptList: Attempt[];
  upstreamWaitMs: number;
  route?: ModelRoute;
  pctx?: PipelineContext;
  pipeline?: ContextPipeline;
  result?: PipelineResult;
  info?: RouteInfo;
  clientWantsUsage?: boolean;
  estimatedPromptTokens?: number;
  worker?: Worker;
  choice?: Choice;
  ttftAt?: number;
  usage?: Usage;
  /** finish_reason of each choice (traces). */
  finishReasons?: string[];
  /** The request's trace span, when tracing is configured. */
  trace?: RequestTrace;
  /** Prefill / decode time the engine reported for the answer (reference worker: x-sim-timing). */
  timing?: { prefillMs?: number; decodeMs?: number };
  assistant?: ChatMessage;
  errorCode?: string;
  /** Set when the shutdown deadline ended this request (not the client). */
  stoppedByShutdown?: boolean;
}

/** Longest failure detail kept in a request record. */
const RECORD_DETAIL_MAX = 200;
const ms = (x: number): number => Math.round(x * 100) / 100;

/** One attempt as the request record shows it: where it went, how it ended, when. */
export function attemptRecord(a: Attempt, t0: number): AttemptRecord {
  const r: AttemptRecord = {
    worker: a.worker.id,
    branch: a.choice.branch,
    outcome: a.outcome ?? 'unfinished',
    status: a.statusCode,
    startMs: ms(a.startedAt - t0),
  };
  if (a.choice.predictedCachedTokens !== undefined) r.predictedCachedTokens = a.choice.predictedCachedTokens;
  if (a.detail) r.detail = a.detail.slice(0, RECORD_DETAIL_MAX);
  if (a.headersAt !== undefined) r.headersMs = ms(a.headersAt - a.startedAt);
  if (a.firstByteAt !== undefined) r.firstByteMs = ms(a.firstByteAt - a.startedAt);
  if (a.endedAt !== undefined) r.endMs = ms(a.endedAt - a.startedAt);
  return r;
}

/** The client left: nothing to send; tell Fastify the reply is handled. */
export function clientGone(reply: FastifyReply, ex: Exchange): void {
  ex.status = 499;
  ex.errorCode = 'client_closed';
  if (!reply.sent) reply.hijack();
  if (!reply.raw.destroyed) reply.raw.destroy();
}

export function usageEvent(ex: Exchange): UsageEvent {
  const totalMs = performance.now() - ex.t0;
  const prefix = ex.result?.prefix;
  const ev: UsageEvent = {
    time: ex.time,
    requestId: ex.requestId,
    tenant: ex.principal.tenant,
    keyId: ex.principal.keyId,
    sessionId: ex.result?.sessionId ?? '',
    model: ex.model,
    api: ex.api,
    worker: ex.worker?.id ?? '',
    status: ex.status,
    stream: ex.stream,
    // No usage from the worker: the pipeline's engine-exact count, else the estimate (flagged by usageReported).
    promptTokens: ex.usage?.promptTokens ?? ex.result?.promptTokenIds?.length ?? ex.estimatedPromptTokens ?? 0,
    cachedTokens: ex.usage?.cachedTokens ?? 0,
    outputTokens: ex.usage?.outputTokens ?? 0,
    usageReported: ex.usage !== undefined,
    totalMs,
    gatewayOverheadMs: Math.max(0, totalMs - ex.upstreamWaitMs),
    attempts: ex.attempts,
  };
  const predicted = ex.choice?.predictedCachedTokens ?? prefix?.predicted_cached_tokens;
  if (predicted !== undefined) ev.predictedCachedTokens = predicted;
  if (ex.ttftAt !== undefined) ev.ttftMs = ex.ttftAt - ex.t0;
  if (ex.errorCode) ev.errorCode = ex.errorCode;
  if (prefix) ev.breakCause = prefix.break_cause;
  if (prefix?.original_cached_tokens !== undefined) ev.counterfactualPromptTokensCached = prefix.original_cached_tokens;
  if (ex.usage?.cacheWriteTokens) ev.cacheWriteTokens = ex.usage.cacheWriteTokens;
  if (ex.timing?.prefillMs !== undefined || ex.timing?.decodeMs !== undefined) {
    ev.prefillMs = ex.timing.prefillMs;
    ev.decodeMs = ex.timing.decodeMs;
    ev.timingSource = 'reported';
  }
  return ev;
}

function safe(what: string, f: () => void): void {
  try {
    f();
  } catch (err) {
    // Hooks belong to other parts; their failure must not fail the request or the gateway.
    process.emitWarning(`ctxgate: ${what} threw: ${(err as Error).message}`);
  }
}

/**
 * Drops the exchange's links to the request body once nothing needs them. Request-scoped objects
 * that a young-generation GC happened to promote stay in old space, dead, until the next full GC,
 * and V8 treats what they point to as live meanwhile: each kept ~64 KB body, promoted in turn, made
 * full GCs (5-14 ms pauses, the p99) several times a second under load.
 */
function release(ex: Exchange): void {
  ex.result = undefined;
  ex.info = undefined;
  ex.pctx = undefined;
  ex.assistant = undefined;
}

/**
 * A later call of a session whose reusable prefix (what it shares with the previous call, cut to
 * whole KV blocks) is empty: nothing of it can come from cache, whatever the routing does.
 */
function subBlockPrefix(ex: Exchange): boolean {
  const p = ex.result?.prefix;
  return p !== undefined && p.break_cause !== 'new_session' && p.prompt_tokens > 0 && p.predicted_cached_tokens === 0;
}

export function finish(gw: GatewayContext, ex: Exchange): void {
  if (ex.status === 0) ex.status = 500;
  // The figures are taken now (total time, status); the work that files them waits in the queue.
  const ev = usageEvent(ex);
  if (ex.trace) safe('trace', () => endRequestSpan(ex.trace!, ev, ex.finishReasons));
  gw.afterAnswer.push(accounting(gw, ex, ev));
  release(ex);
}

/**
 * The request's metrics, record, pipeline observe and usage ledger entry, as a job of the
 * after-answer queue (after-answer.ts). It keeps what it files, not the exchange: the request
 * body and its token ids stay collectable while the job waits.
 */
function accounting(gw: GatewayContext, ex: Exchange, ev: UsageEvent): () => void {
  const model = ex.model || 'unknown';
  const { status, api, requestId, worker, choice, route, usage } = ex;
  // Every attempt has ended: their records are final now.
  const attemptLog = ex.attemptList.map((a) => attemptRecord(a, ex.t0));
  const last = ex.attemptList.at(-1);
  const result = ex.result;
  const prefix = result?.prefix;
  const receipts = result?.receipts ?? [];
  const subBlock = subBlockPrefix(ex);
  const pipeline = ex.pipeline;
  // Only a pipeline that observes (capture) keeps the result, the context and the assistant message.
  const observe =
    pipeline?.observe && result && ex.pctx
      ? {
          pipeline,
          result,
          pctx: ex.pctx,
          outcome: {
            status,
            assistant: ex.assistant,
            promptTokens: usage?.promptTokens,
            cachedTokens: usage?.cachedTokens,
            completionTokens: usage?.outputTokens,
            worker: worker?.id,
          },
        }
      : undefined;
  return () => {
    let t = tick();
    const m = gw.metrics;
    safe('metrics', () => {
      // Bound children (metrics-children.ts): the same series and values as inc/observe/set with
      // the label objects, without hashing a label set per call.
      const c = m.perCall;
      const tenant = ev.tenant;
      c.requests.at(model, tenant, status === 499 ? '499' : statusClass(status), api).inc();
      c.requestDuration.at(model).observe(ev.totalMs / 1000);
      c.gatewayOverhead.at(model).observe(ev.gatewayOverheadMs / 1000);
      if (ev.ttftMs !== undefined) c.ttft.at(model).observe(ev.ttftMs / 1000);
      if (ev.usageReported) {
        c.promptTokens.at(model, tenant).inc(ev.promptTokens);
        c.cachedTokens.at(model, tenant).inc(ev.cachedTokens);
        c.outputTokens.at(model, tenant).inc(ev.outputTokens);
        if (worker && ev.promptTokens > 0)
          c.workerCacheHitRatio.at(model, worker.id).set(ev.cachedTokens / ev.promptTokens);
      }
      if (ev.predictedCachedTokens) c.predictedCachedTokens.at(model, tenant).inc(ev.predictedCachedTokens);
      if (choice && route && choice.predictedCachedTokens !== undefined && ev.usageReported) {
        const policy = route.policy.name;
        c.routingCachedTokens.at(model, policy, 'predicted').inc(choice.predictedCachedTokens);
        c.routingCachedTokens.at(model, policy, 'reported').inc(ev.cachedTokens);
      }
      if (subBlock) c.subBlockPrefix.at(model).inc();
      const cause = prefix?.break_cause;
      if (cause && cause !== 'none') c.cacheBreaks.at(model, cause).inc();
      countReceipts(m, model, receipts);
    });
    t = lap('metrics', t);
    // The routing policy was fed by each attempt's end (routing-feedback.ts); its ok attempt's
    // uniform-choice figure is read in a setImmediate, which a drain (a scrape, a budget lookup in
    // the same I/O batch) can run this job before: settle it first.
    last?.settleFeedback?.();
    if (last?.uniformCachedTokens !== undefined) ev.uniformCachedTokens = last.uniformCachedTokens;
    if (observe)
      safe('pipeline.observe', () => observe.pipeline.observe!(observe.result, observe.outcome, observe.pctx));
    t = lap('pipeline_observe', t);
    gw.records.add({
      id: requestId,
      api,
      tenant: ev.tenant,
      model,
      sessionId: ev.sessionId,
      worker: ev.worker,
      attempts: ev.attempts,
      attemptLog,
      status: ev.status,
      receipts,
      prefix,
      routing:
        choice && route
          ? {
              policy: route.policy.name,
              branch: choice.branch,
              predictedCachedTokens: choice.predictedCachedTokens,
              reportedCachedTokens: ev.usageReported ? ev.cachedTokens : undefined,
              subBlockPrefix: subBlock,
            }
          : undefined,
      usage: ev,
    });
    if (gw.onUsage) safe('onUsage', () => gw.onUsage!(ev));
    lap('usage_ledger', t);
  };
}
