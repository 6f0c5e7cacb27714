// The one registry of errors ctxgate answers with (gateway routes and the middleware admin routes alike; it sits
// in middleware/ so both layers import it downward). Every code is stable (clients and tests match on it) and every
// body is OpenAI-shaped: {"error":{"message","type","code","param"}}.

export interface ErrorSpec {
  status: number;
  type: string;
}

export const ERRORS = {
  invalid_json: { status: 400, type: 'invalid_request_error' },
  invalid_model: { status: 400, type: 'invalid_request_error' },
  invalid_messages: { status: 400, type: 'invalid_request_error' },
  invalid_prompt: { status: 400, type: 'invalid_request_error' },
  invalid_request: { status: 400, type: 'invalid_request_error' },
  unauthenticated: { status: 401, type: 'authentication_error' },
  admin_required: { status: 403, type: 'permission_error' },
  model_not_found: { status: 404, type: 'invalid_request_error' },
  not_found: { status: 404, type: 'invalid_request_error' },
  body_too_large: { status: 413, type: 'invalid_request_error' },
  prompt_too_large: { status: 413, type: 'invalid_request_error' },
  unsupported_media_type: { status: 415, type: 'invalid_request_error' },
  render_failed: { status: 422, type: 'invalid_request_error' },
  render_failed_before: { status: 422, type: 'invalid_request_error' },
  rate_limited: { status: 429, type: 'rate_limit_error' },
  budget_exceeded: { status: 429, type: 'rate_limit_error' },
  tenant_concurrency_exceeded: { status: 429, type: 'rate_limit_error' },
  tenant_render_queue_full: { status: 429, type: 'rate_limit_error' },
  tenant_render_failures: { status: 429, type: 'rate_limit_error' },
  session_busy: { status: 429, type: 'rate_limit_error' },
  tenant_admission_queue_full: { status: 429, type: 'rate_limit_error' },
  internal_error: { status: 500, type: 'server_error' },
  upstream_bad_response: { status: 502, type: 'upstream_error' },
  upstream_unavailable: { status: 502, type: 'upstream_error' },
  no_healthy_worker: { status: 503, type: 'server_error' },
  worker_capacity_exhausted: { status: 503, type: 'server_error' },
  shutting_down: { status: 503, type: 'server_error' },
  render_queue_full: { status: 503, type: 'server_error' },
  admission_queue_full: { status: 503, type: 'server_error' },
  upstream_timeout: { status: 504, type: 'upstream_error' },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERRORS;

/** Code of the SSE error event that ends a stream whose upstream failed after the first byte. */
export const STREAM_ERROR_CODE = 'upstream_stream_failed';

export interface OpenAIErrorBody {
  error: { message: string; type: string; code: string; param: string | null };
}

export class GatewayError extends Error {
  readonly status: number;
  readonly type: string;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly param: string | null = null,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.status = ERRORS[code].status;
    this.type = ERRORS[code].type;
  }

  toBody(): OpenAIErrorBody {
    return { error: { message: this.message, type: this.type, code: this.code, param: this.param } };
  }
}

export function errorBody(code: ErrorCode, message: string, param: string | null = null): OpenAIErrorBody {
  return { error: { message, type: ERRORS[code].type, code, param } };
}

/** The SSE frames that end a client stream when the upstream fails mid-stream (README documents it). */
export function streamErrorFrames(message: string): string {
  const ev = { error: { message, type: 'upstream_error', code: STREAM_ERROR_CODE } };
  return `data: ${JSON.stringify(ev)}\n\ndata: [DONE]\n\n`;
}

/** Maps anything thrown inside a route to a GatewayError; unknown errors become a 500 without internals. */
export function toGatewayError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  const e = err as { code?: string; statusCode?: number; message?: string };
  if (e?.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || e?.statusCode === 413) {
    return new GatewayError('body_too_large', 'request body exceeds the configured limit (limits.max_body_bytes)');
  }
  if (e?.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || e?.statusCode === 415) {
    return new GatewayError('unsupported_media_type', 'content-type must be application/json');
  }
  if (
    e?.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' ||
    e?.code === 'FST_ERR_CTP_INVALID_JSON_BODY' ||
    e instanceof SyntaxError
  ) {
    return new GatewayError('invalid_json', 'request body is not valid JSON');
  }
  return new GatewayError('internal_error', 'internal error');
}
