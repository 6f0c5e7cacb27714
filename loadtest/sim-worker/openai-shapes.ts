// Response bodies shaped as vLLM/SGLang return them on their OpenAI-compatible endpoints.
import type { ToolCall } from './generate.ts';

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
}

export function usage(prompt: number, completion: number, cached: number): Usage {
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: cached },
  };
}

/** vLLM's ErrorResponse (SGLang mirrors it): `{object:"error", message, type, param, code}`. */
export function errorBody(status: number, message: string, param: string | null = null): Record<string, unknown> {
  const type =
    status === 404
      ? 'NotFoundError'
      : status === 400
        ? 'BadRequestError'
        : status === 429
          ? 'RateLimitError'
          : status >= 500
            ? 'InternalServerError'
            : 'Error';
  return { object: 'error', message, type, param, code: status };
}

export function chatCompletion(
  id: string,
  created: number,
  model: string,
  message: { content: string | null; toolCalls: ToolCall[]; reasoning?: string },
  finish: string,
  u: Usage,
): Record<string, unknown> {
  const msg: Record<string, unknown> = { role: 'assistant', content: message.content, tool_calls: message.toolCalls };
  if (message.reasoning !== undefined) msg.reasoning_content = message.reasoning;
  return {
    id,
    object: 'chat.completion',
    created,
    model,
    choices: [{ index: 0, message: msg, logprobs: null, finish_reason: finish, stop_reason: null }],
    usage: u,
  };
}

export function chatChunk(
  id: string,
  created: number,
  model: string,
  delta: Record<string, unknown>,
  finish: string | null = null,
): Record<string, unknown> {
  return {
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  };
}

export function usageChunk(
  id: string,
  created: number,
  model: string,
  u: Usage,
  object = 'chat.completion.chunk',
): Record<string, unknown> {
  return { id, object, created, model, choices: [], usage: u };
}

export function textCompletion(
  id: string,
  created: number,
  model: string,
  text: string,
  finish: string,
  u: Usage,
): Record<string, unknown> {
  return {
    id,
    object: 'text_completion',
    created,
    model,
    choices: [{ index: 0, text, logprobs: null, finish_reason: finish, stop_reason: null }],
    usage: u,
  };
}

export function textChunk(
  id: string,
  created: number,
  model: string,
  text: string,
  finish: string | null = null,
): Record<string, unknown> {
  return {
    id,
    object: 'text_completion',
    created,
    model,
    choices: [{ index: 0, text, logprobs: null, finish_reason: finish }],
  };
}

/** Splits token ids into text deltas whose concatenation is exactly `full`. */
export function textDeltas(decode: (ids: number[]) => string, ids: number[], full: string): string[] {
  const out: string[] = [];
  let emitted = 0;
  const WINDOW = 6;
  for (let i = 0; i < ids.length; i++) {
    const from = Math.max(0, i - WINDOW);
    const prev = decode(ids.slice(from, i));
    const cur = decode(ids.slice(from, i + 1));
    if (!cur.startsWith(prev) || cur.endsWith('\ufffd')) continue;
    const piece = cur.slice(prev.length);
    if (piece && full.startsWith(piece, emitted)) {
      out.push(piece);
      emitted += piece.length;
    }
  }
  if (emitted < full.length) out.push(full.slice(emitted));
  return out;
}
