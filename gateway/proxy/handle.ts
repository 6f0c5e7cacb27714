// One proxied request for any ingress API: the adapter validates and translates to the canonical
// chat form, the context pipeline runs, the upstream call routes it with failover (upstream-call.ts,
// attempts observed here for the request's accounting), the answer is relayed (and translated back
// by the adapter), then accounted for (finish.ts). Nothing here is API-shaped.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { lap, tick } from '../../middleware/perf/stage-timers.ts';
import { DEFAULT_SLICE_MIN_CHARS, yieldToLoop } from '../../middleware/perf/time-slices.ts';
import type { PipelineContext, PipelineResult } from '../../middleware/types.ts';
import type { Principal } from '../auth.ts';
import type { GatewayContext } from '../context.ts';
import { checkRequestShape } from '../limits/request-shape.ts';
import { GatewayError, STREAM_ERROR_CODE } from '../../middleware/errors.ts';
import { harnessHeaders, headerSessionId } from '../ingress/harness-session.ts';
import type { AnswerContext, IngressAdapter } from '../ingress/types.ts';
import { engineOf } from '../upstream/engines.ts';
import { pipelineAttributes, startRequestSpan } from '../telemetry/request-span.ts';
import type { RequestTrace } from '../telemetry/tracing.ts';
import type { BodyMemo, PendingBody } from '../body/body-memo.ts';
import { upstreamBody } from './body.ts';
import { ExchangeObserver } from './exchange-observer.ts';
import { clientGone, finish, type Exchange } from './finish.ts';
import { Relay } from './relay.ts';
import { GatewayRouteInfo } from './route-info.ts';
import { RequestSignal } from './request-signal.ts';
import { afterRouted } from './routed-after-send.ts';
import { SendGate } from './send-gate.ts';
import { sendUpstreamFailure } from './upstream-error.ts';
import { type CallResult, UpstreamCall } from './upstream-call.ts';
/** The signing key's purpose label (see ingress/thinking-signature.ts). */
const THINKING_SIGNATURE_LABEL = 'thinking-signature';
/** Prompt tokens are estimated as bytes / 4 when the pipeline rendered no token ids. */
const BYTES_PER_TOKEN = 4;

/**
 * RouteInfo.defer: the policy's long index work (a 240k-token prompt's routing blocks) runs one
 * step per turn of the event loop (setImmediate), so other requests, /health included, get the
 * loop between steps. A step that throws is logged and dropped (the next one goes on).
 */
function stepOnLoop(log: FastifyRequest['log']): (step: () => boolean) => void {
  return (step) => {
    const go = (): void => {
      let done = false;
      try {
        done = step();
      } catch (err) {
        log.error({ err }, 'routing: deferred index work failed');
      }
      if (!done) setImmediate(go);
    };
    setImmediate(go);
  };
}

// Per-request callbacks are bound module functions, not arrows: tsx compiles with esbuild's
// keepNames, which names every arrow assigned to a name with Object.defineProperty (~0.5-1 µs
// each, and it turns the function's map into a dictionary); bind does not.
function abortUnlessAnswered(res: FastifyReply['raw'], signal: RequestSignal): void {
  if (!res.writableFinished) signal.abort();
}

function stoppedByShutdown(ex: Exchange): boolean {
  return ex.stoppedByShutdown === true;
}

/** PipelineContext.onInterned: the memo adopts the pipeline's interned objects for the body. */
function adoptInto(
  memo: BodyMemo,
  pending: PendingBody,
  key: 'messages' | 'tools',
  received: readonly unknown[],
  interned: readonly unknown[],
): void {
  memo.adopt(pending, key, received, interned);
}

export async function handleProxy(
  gw: GatewayContext,
  adapter: IngressAdapter,
  req: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  const t0 = performance.now();
  const principal = req.principal as Principal;
  // Every field the request sets later is in the literal (undefined until then): properties added
  // after creation each move the object to a new hidden class and go to a separate property array,
  // regrown as it fills (a new array per growth, per request).
  const ex: Exchange = {
    t0,
    time: Date.now(),
    requestId: req.id,
    principal,
    api: adapter.api,
    model: '',
    stream: false,
    status: 0,
    attempts: 0,
    attemptList: [],
    upstreamWaitMs: 0,
    route: undefined,
    pctx: undefined,
    pipeline: undefined,
    result: undefined,
    info: undefined,
    clientWantsUsage: undefined,
    estimatedPromptTokens: undefined,
    worker: undefined,
    choice: undefined,
    ttftAt: undefined,
    usage: undefined,
    finishReasons: undefined,
    trace: undefined,
    timing: undefined,
    assistant: undefined,
    errorCode: undefined,
    stoppedByShutdown: undefined,
  };
  let untrack: (() => void) | undefined;
  let releaseSlot: (() => void) | undefined;
  let ac: RequestSignal | undefined;
  let onClose: (() => void) | undefined;
  let gate: SendGate | undefined;
  let pspan: ReturnType<RequestTrace['child']> | undefined;
  try {
    if (gw.draining) throw new GatewayError('shutting_down', 'gateway is shutting down');
    let t = tick();
    const mac: (data: string) => string = gw.salts.mac.bind(gw.salts, THINKING_SIGNATURE_LABEL);
    // Adapters and the per-process slot count answer synchronously (awaited only when not): an
    // `await` of a plain value still suspends the handler for a microtask.
    const parsing = adapter.parse(req.body, {
      tenant: principal.tenant,
      mac,
      maxMessages: gw.config.limits.max_messages,
    });
    const parsed = parsing instanceof Promise ? await parsing : parsing;
    const route = gw.fleet.get(parsed.model);
    if (!route)
      throw new GatewayError('model_not_found', `model '${parsed.model}' does not exist (see GET /v1/models)`, 'model');
    checkRequestShape(parsed.body as unknown as Record<string, unknown>, gw.config.limits.max_prompt_chars);
    const slot = gw.tenantSlots.acquire(principal.tenant);
    releaseSlot = slot instanceof Promise ? await slot : slot;
    t = lap('validate', t);
    ex.model = route.config.name;
    ex.route = route;
    ex.stream = parsed.stream;
    if (gw.tracing) ex.trace = startRequestSpan(gw.tracing, req, ex, adapter.api);
    const cacheSalt = gw.salts.saltOf(principal.tenant);
    const headers = harnessHeaders(req.headers as Record<string, string | undefined>);
    // The session state is written while the upstream computes (once the send gate opens); the
    // relay waits for it before answering.
    gate = new SendGate();
    const pipeline = adapter.pipeline ? gw.pipelines.get(ex.model) : undefined;
    // Accepted by the adapter and the shape check, and a pipeline that rewrites runs: the memo may
    // keep the body. Under `layout: passthrough` nothing reuses the kept objects (no intern), and
    // keeping every body promoted them to the old generation: +0.1-0.2 ms of CPU per 16k body and
    // major GCs in bench overhead's fixed-body rows (same-run A/B).
    const pending = pipeline && route.config.layout !== 'passthrough' ? req.pendingBody : undefined;
    // One signal for the whole request: a client that goes away takes a call waiting for its
    // session's lock out of the queue, and ends the upstream call.
    ac = new RequestSignal();
    const signal = ac;
    // Whole in the literal (as `ex` above): no property added after creation.
    const pctx: PipelineContext = {
      tenant: principal.tenant,
      requestId: req.id,
      headers,
      model: ex.model,
      cacheSalt,
      // Translated APIs: the client's own body rides along for capture (chat's is the canonical one).
      clientBody: adapter.toResponse ? { api: adapter.api, body: req.body } : undefined,
      signal: pipeline ? signal : undefined,
      deferStore: true,
      sent: gate.when.bind(gate),
      onInterned: pending ? adoptInto.bind(undefined, gw.bodies, pending) : undefined,
    };
    ex.pctx = pctx;
    // The raw bytes' room may take the upstream body's splice: the memo holds at most the bytes
    // before the body's last `}`, which the splice never writes (body-memo.ts).
    gw.bodies.keep(pending);
    const room = req.rawRoom;
    req.pendingBody = undefined;
    req.rawRoom = undefined;
    pspan = pipeline ? ex.trace?.child('ctxgate.pipeline', { 'ctxgate.layout': route.config.layout }) : undefined;
    onClose = abortUnlessAnswered.bind(undefined, reply.raw, ac);
    reply.raw.once('close', onClose);
    let result: PipelineResult;
    if (pipeline) {
      // try/finally, not .finally(arrow): no second promise, closure and microtask per call.
      try {
        result = await pipeline.process(parsed.body, pctx);
      } finally {
        pspan?.end();
      }
    } else result = { body: parsed.body, sessionId: headerSessionId(headers), receipts: [] };
    if (parsed.receipts?.length) result.receipts = [...parsed.receipts, ...result.receipts];
    ex.result = result;
    ex.pipeline = pipeline;
    const raw = req.rawBody as Buffer;
    // A big body yields the event loop between its O(prompt) sections (middleware/perf/time-slices.ts):
    // the pipeline's last one, the upstream body, routing.
    const big = raw.length >= DEFAULT_SLICE_MIN_CHARS;
    if (big) await yieldToLoop();
    t = tick();
    // Translating adapters built a new body: the client's bytes are not the upstream's.
    const up = upstreamBody(
      adapter.toResponse ? undefined : raw,
      parsed.body,
      result.body,
      ex.stream,
      route.config.upstream_model,
      cacheSalt,
      adapter.toResponse ? undefined : room,
    );
    ex.clientWantsUsage = up.clientWantsUsage;
    const promptTokens =
      result.promptTokenIds?.length ?? result.prefix?.prompt_tokens ?? Math.ceil(raw.length / BYTES_PER_TOKEN);
    ex.estimatedPromptTokens = promptTokens;
    ex.info = new GatewayRouteInfo(
      ex.model,
      principal.tenant,
      cacheSalt,
      result,
      promptTokens,
      stepOnLoop(req.log),
      afterRouted.bind(undefined, gw.metrics, gate, req.log, ex.model),
    );
    const engine = engineOf(route.config);
    const answer: AnswerContext = {
      requestId: req.id,
      tenant: principal.tenant,
      promptTokens,
      state: parsed.state,
      readUsage: engine.usage,
      mac,
    };
    lap('upstream_body', t);
    if (big) await yieldToLoop();

    untrack = gw.lifecycle.track(() => {
      ex.stoppedByShutdown = true;
      ac?.abort();
    });
    const upHeaders: Record<string, string> = { 'content-type': 'application/json', 'x-request-id': req.id };
    if (ex.stream) upHeaders.accept = 'text/event-stream';
    const call = new UpstreamCall(
      route,
      {
        path: adapter.upstreamPath,
        body: up.bytes,
        headers: upHeaders,
        signal,
        shuttingDown: stoppedByShutdown.bind(undefined, ex),
        info: ex.info,
        prefillTokens: promptTokens,
        attempts: gw.config.upstream.attempts,
        trace: ex.trace,
        onSent: gate.open.bind(gate),
      },
      gw.metrics,
      [new ExchangeObserver(gw, ex, reply)],
    );
    const r: CallResult = await call.run(new Relay(gw, ex, reply, signal, adapter, answer, engine));
    // Nothing was sent (no worker answered the dispatch, client gone before it): the state is still written.
    gate.open();
    // The diagnostics are made once the gate opened (PipelineResult.prefix).
    if (pspan) pspan.set(pipelineAttributes(result));
    // Mostly settled by now (the relay waits for it before answering); absent without deferStore.
    if (result.stored) await result.stored;
    if (r.kind === 'failed') {
      ex.status = r.status;
      ex.errorCode = `upstream_${r.status}`;
      sendUpstreamFailure(adapter, engine, reply, r);
    } else if (r.kind === 'client_closed') clientGone(reply, ex);
    else if (r.kind === 'ended_mid_stream')
      ex.errorCode = r.attempt.outcome === 'shutting_down' ? 'shutting_down' : STREAM_ERROR_CODE;
  } catch (err) {
    const ge = err instanceof GatewayError ? err : undefined;
    ex.status = ge?.status ?? 500;
    ex.errorCode = ge?.code ?? 'internal_error';
    // Even a failed call's state is stored before the client hears of it (a throw before the send
    // opens the gate here).
    gate?.open();
    if (pspan && ex.result) pspan.set(pipelineAttributes(ex.result));
    if (ex.result?.stored) await ex.result.stored;
    throw err;
  } finally {
    if (onClose) reply.raw.off('close', onClose);
    untrack?.();
    releaseSlot?.();
    if (ex.errorCode === 'client_closed')
      req.log.info(
        { model: ex.model, worker: ex.worker?.id, ms: Math.round(performance.now() - t0) },
        'client closed the connection before the answer finished',
      );
    finish(gw, ex);
    // See release() in finish.ts: a promoted, dead request must not hold the body.
    req.body = undefined;
    req.rawBody = undefined;
  }
}
