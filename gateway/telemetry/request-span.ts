// What the request span says when the request is over: the GenAI semantic-convention attributes
// (token usage, cached input tokens under gen_ai.usage.cache_read.input_tokens, finish reasons)
// plus the gateway's own (worker, attempts, session, break cause) under `ctxgate.*`.
import type { FastifyRequest } from 'fastify';
import type { PipelineResult } from '../../middleware/types.ts';
import type { UsageEvent } from '../usage-event.ts';
import type { RequestTrace, TraceAttributes, Tracing } from './tracing.ts';

/** `chat MODEL` (the GenAI span name), continuing the client's traceparent. */
export function startRequestSpan(
  tracing: Tracing,
  req: FastifyRequest,
  ex: { model: string; requestId: string; stream: boolean; route?: { config: { upstream_model?: string } } },
  api: string,
): RequestTrace {
  const tp = req.headers.traceparent;
  return tracing.startRequest(
    `chat ${ex.model}`,
    {
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': ex.model,
      'gen_ai.provider.name': 'ctxgate',
      'ctxgate.request_id': ex.requestId,
      'ctxgate.api': api,
      'ctxgate.stream': ex.stream,
      ...(ex.route?.config.upstream_model ? { 'ctxgate.upstream_model': ex.route.config.upstream_model } : {}),
    },
    Array.isArray(tp) ? tp[0] : tp,
  );
}

/** The context pipeline's span: what it predicts and what it changed. */
export function pipelineAttributes(r: PipelineResult): TraceAttributes {
  const a: TraceAttributes = { 'ctxgate.receipts': r.receipts.length };
  if (r.prefix) {
    a['ctxgate.predicted_cached_tokens'] = r.prefix.predicted_cached_tokens;
    a['ctxgate.prompt_tokens'] = r.prefix.prompt_tokens;
    a['ctxgate.break_cause'] = r.prefix.break_cause;
    if (r.prefix.original_cached_tokens !== undefined)
      a['ctxgate.original_layout_cached_tokens'] = r.prefix.original_cached_tokens;
  }
  return a;
}

export function endRequestSpan(trace: RequestTrace, ev: UsageEvent, finishReasons: string[] | undefined): void {
  const a: TraceAttributes = {
    'http.response.status_code': ev.status,
    'ctxgate.worker': ev.worker,
    'ctxgate.attempts': ev.attempts,
    'ctxgate.tenant': ev.tenant,
    'ctxgate.usage_reported': ev.usageReported,
  };
  if (ev.sessionId) a['gen_ai.conversation.id'] = ev.sessionId;
  if (ev.usageReported) {
    a['gen_ai.usage.input_tokens'] = ev.promptTokens;
    a['gen_ai.usage.output_tokens'] = ev.outputTokens;
    a['gen_ai.usage.cache_read.input_tokens'] = ev.cachedTokens;
    if (ev.cacheWriteTokens) a['gen_ai.usage.cache_creation.input_tokens'] = ev.cacheWriteTokens;
  }
  if (finishReasons?.length) a['gen_ai.response.finish_reasons'] = finishReasons;
  if (ev.ttftMs !== undefined) a['ctxgate.ttft_ms'] = ev.ttftMs;
  if (ev.breakCause && ev.breakCause !== 'none') a['ctxgate.cache_break'] = ev.breakCause;
  trace.set(a);
  trace.end(ev.status >= 400 || ev.errorCode ? (ev.errorCode ?? `HTTP ${ev.status}`) : undefined);
}
