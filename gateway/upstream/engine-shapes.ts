// What each engine sends back, read into one form: usage and error bodies.
// Usage (see accounting/record/extract.ts for the normalised triple):
//  - vLLM: OpenAI `usage` with `prompt_tokens_details.cached_tokens` (null unless the server runs
//    with --enable-prompt-tokens-details);
//  - SGLang: the same `usage` (`prompt_tokens_details` filled with --enable-cache-report), some
//    builds put `cached_tokens` at the top of `usage`; native /generate answers carry
//    `meta_info: {prompt_tokens, completion_tokens, cached_tokens}` instead;
//  - OpenAI-compatible servers: OpenAI's `usage` only.
// Errors:
//  - vLLM: `{"object": "error", message, type, param, code}` (protocol.ErrorResponse); newer
//    releases nest it as `{"error": {message, type, param, code}}`;
//  - SGLang: the same flat `{"object": "error", ...}` from its OpenAI routes, and
//    `{"error": {"message"}}` from native routes (http_server._create_error_response);
//  - OpenAI: `{"error": {message, type, param, code}}`;
//  - anything FastAPI rejects before the handler: `{"detail": ...}`.
import { type ExtractedUsage, extractUsage, fromUsageObject } from '../accounting/record/extract.ts';

/** An engine's error, as much of it as the body carried. */
export interface EngineError {
  message?: string;
  type?: string;
  param?: string;
  code?: string | number;
}

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

function fields(o: Obj): EngineError {
  const e: EngineError = {};
  const m = o.message;
  if (typeof m === 'string') e.message = m;
  else if (m !== undefined) e.message = JSON.stringify(m);
  if (str(o.type)) e.type = o.type as string;
  if (str(o.param)) e.param = o.param as string;
  if (typeof o.code === 'string' || typeof o.code === 'number') e.code = o.code;
  return e;
}

function parse(body: Buffer | string): Obj | undefined {
  try {
    const o: unknown = JSON.parse(typeof body === 'string' ? body : body.toString('utf8'));
    return isObj(o) ? o : undefined;
  } catch {
    return undefined;
  }
}

/** `{"error": {...}}` (OpenAI, newer vLLM, SGLang native) or `{"error": "text"}`. */
function nested(o: Obj): EngineError | undefined {
  if (isObj(o.error)) return fields(o.error);
  if (typeof o.error === 'string') return { message: o.error };
  return undefined;
}

/** Validation entries passed on: each one's `loc: msg`. */
const MAX_DETAIL_ENTRIES = 5;

/**
 * FastAPI's validation body: `{"detail": "text" | [{loc, msg, type, input, ctx, url}]}`. Only each
 * entry's location and message are passed on: pydantic's `input` echoes the request the worker got
 * (the tenant's cache_salt, the gateway's leaf note), `ctx` and `url` are the engine's internals.
 */
function detail(o: Obj): EngineError | undefined {
  if (o.detail === undefined) return undefined;
  if (typeof o.detail === 'string') return { message: o.detail };
  const entries = Array.isArray(o.detail) ? o.detail : [o.detail];
  const parts: string[] = [];
  let param: string | undefined;
  for (const d of entries.slice(0, MAX_DETAIL_ENTRIES)) {
    if (!isObj(d)) continue;
    const loc = Array.isArray(d.loc)
      ? d.loc.filter((x) => typeof x === 'string' || typeof x === 'number').join('.')
      : '';
    const msg = typeof d.msg === 'string' ? d.msg : '';
    if (!loc && !msg) continue;
    param ??= loc || undefined;
    parts.push(loc && msg ? `${loc}: ${msg}` : loc || msg);
  }
  return { message: parts.length > 0 ? parts.join('; ') : 'the request failed validation', param };
}

/** vLLM and SGLang's OpenAI routes: flat `object: "error"`. */
function flat(o: Obj): EngineError | undefined {
  return o.object === 'error' || typeof o.message === 'string' ? fields(o) : undefined;
}

export function vllmError(body: Buffer | string): EngineError | undefined {
  const o = parse(body);
  return o && (flat(o) ?? nested(o) ?? detail(o));
}

export function sglangError(body: Buffer | string): EngineError | undefined {
  const o = parse(body);
  return o && (flat(o) ?? nested(o) ?? detail(o));
}

export function openaiError(body: Buffer | string): EngineError | undefined {
  const o = parse(body);
  return o && (nested(o) ?? flat(o) ?? detail(o));
}

export function vllmUsage(payload: unknown): ExtractedUsage | undefined {
  return isObj(payload) ? fromUsageObject(payload.usage) : undefined;
}

/** `usage` (details or top-level cached_tokens) or native `meta_info`. */
export const sglangUsage: (payload: unknown) => ExtractedUsage | undefined = extractUsage;

export const openaiUsage = vllmUsage;
