// OpenAI Chat Completions (POST /v1/chat/completions): the canonical form itself. Validation only;
// the body goes upstream as the client's bytes when nothing changed (proxy/body.ts) and the answer
// comes back as the worker's bytes (the SSE relay only hides the usage chunk nobody asked for).
import type { ChatRequest } from '../../middleware/types.ts';
import { GatewayError } from '../../middleware/errors.ts';
import type { IngressAdapter, IngressRequest, ParseContext, ShapedError } from './types.ts';

export const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/** The OpenAI error shape: {"error":{"message","type","code","param"}}. */
export function openaiErrorBody(err: ShapedError): unknown {
  return { error: { message: err.message, type: err.type, code: err.code, param: err.param } };
}

export function requireModel(b: Record<string, unknown>): string {
  if (typeof b.model !== 'string' || !b.model)
    throw new GatewayError('invalid_model', "'model' is required and must be a non-empty string", 'model');
  return b.model;
}

export function requireObject(body: unknown): Record<string, unknown> {
  if (!isObject(body)) throw new GatewayError('invalid_request', 'request body must be a JSON object');
  return body;
}

export function parseChat(body: unknown, ctx: ParseContext): IngressRequest {
  const b = requireObject(body);
  const model = requireModel(b);
  const m = b.messages;
  if (!Array.isArray(m) || m.length === 0)
    throw new GatewayError('invalid_messages', "'messages' must be a non-empty array", 'messages');
  if (m.length > ctx.maxMessages)
    throw new GatewayError('invalid_messages', `'messages' has more than ${ctx.maxMessages} entries`, 'messages');
  for (let i = 0; i < m.length; i++) {
    const x = m[i] as { role?: unknown; content?: unknown; tool_calls?: unknown } | null;
    if (!x || typeof x !== 'object' || typeof x.role !== 'string')
      throw new GatewayError(
        'invalid_messages',
        `messages[${i}] must be an object with a string 'role'`,
        `messages[${i}].role`,
      );
    const c = x.content;
    if (c !== undefined && c !== null && typeof c !== 'string' && !(Array.isArray(c) && c.every(isObject))) {
      throw new GatewayError(
        'invalid_messages',
        `messages[${i}].content must be a string, null or an array of content parts`,
        `messages[${i}].content`,
      );
    }
    if (
      x.tool_calls !== undefined &&
      x.tool_calls !== null &&
      !(Array.isArray(x.tool_calls) && x.tool_calls.every(isObject))
    ) {
      throw new GatewayError(
        'invalid_messages',
        `messages[${i}].tool_calls must be an array of objects`,
        `messages[${i}].tool_calls`,
      );
    }
  }
  if (b.tools !== undefined && b.tools !== null && !(Array.isArray(b.tools) && b.tools.every(isObject))) {
    throw new GatewayError('invalid_request', "'tools' must be an array of tool objects", 'tools');
  }
  return { model, stream: b.stream === true, body: b as ChatRequest };
}

export const openaiChat: IngressAdapter = {
  api: 'openai-chat',
  path: '/v1/chat/completions',
  upstreamPath: '/v1/chat/completions',
  pipeline: true,
  parse: parseChat,
  errorBody: openaiErrorBody,
};
