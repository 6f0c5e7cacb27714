// A worker's error (5xx after every attempt, or a 4xx) in the client's API shape: the engine
// adapter reads the engine's body (upstream/engine-shapes.ts), the ingress adapter writes its API's.
// A 5xx says only that the worker failed: its body may hold stack traces, paths or other tenants'
// data. A 4xx keeps the engine's message (the client needs "the prompt is too long"), clipped, and
// the parameter it names.
import type { FastifyReply } from 'fastify';
import type { IngressAdapter, ShapedError } from '../ingress/types.ts';
import type { EngineAdapter } from '../upstream/engines.ts';

/** Longest engine message passed on from a 4xx (a validation message, e.g. the context length). */
const MAX_UPSTREAM_MESSAGE = 500;

/** Engine error types passed on as they are (OpenAI's names, which every ingress API maps). */
const TYPE_BY_STATUS: Readonly<Record<number, string>> = {
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
};

export function shapeUpstreamError(engine: EngineAdapter, status: number, body: Buffer | string): ShapedError {
  const err: ShapedError = {
    status,
    type: status >= 500 ? 'upstream_error' : (TYPE_BY_STATUS[status] ?? 'invalid_request_error'),
    code: `upstream_${status}`,
    message: status >= 500 ? `the worker failed (HTTP ${status})` : `the worker rejected the request (HTTP ${status})`,
    param: null,
  };
  if (status >= 500) return err;
  const e = engine.error(body);
  if (e?.message) {
    err.message = e.message.length > MAX_UPSTREAM_MESSAGE ? `${e.message.slice(0, MAX_UPSTREAM_MESSAGE)}…` : e.message;
  }
  if (e?.param) err.param = e.param.slice(0, MAX_UPSTREAM_MESSAGE);
  return err;
}

export function upstreamErrorBody(
  adapter: IngressAdapter,
  engine: EngineAdapter,
  status: number,
  body: Buffer | string,
): { body: string; json: true } {
  return { body: JSON.stringify(adapter.errorBody(shapeUpstreamError(engine, status, body))), json: true };
}

export function sendUpstreamFailure(
  adapter: IngressAdapter,
  engine: EngineAdapter,
  reply: FastifyReply,
  failed: { status: number; body: Buffer },
): void {
  const e = upstreamErrorBody(adapter, engine, failed.status, failed.body);
  reply.code(failed.status).header('content-type', 'application/json').send(e.body);
}
