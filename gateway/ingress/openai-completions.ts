// OpenAI legacy Completions (POST /v1/completions): a prompt, not messages, so the context pipeline
// does not run; body and answer pass through (the SSE relay only hides the unrequested usage chunk).
import type { ChatRequest } from '../../middleware/types.ts';
import { GatewayError } from '../../middleware/errors.ts';
import { openaiErrorBody, requireModel, requireObject } from './openai-chat.ts';
import type { IngressAdapter, IngressRequest } from './types.ts';

function parseCompletions(body: unknown): IngressRequest {
  const b = requireObject(body);
  const model = requireModel(b);
  if (typeof b.prompt !== 'string' && !Array.isArray(b.prompt))
    throw new GatewayError('invalid_prompt', "'prompt' is required (string or array)", 'prompt');
  return { model, stream: b.stream === true, body: b as unknown as ChatRequest };
}

export const openaiCompletions: IngressAdapter = {
  api: 'openai-completions',
  path: '/v1/completions',
  upstreamPath: '/v1/completions',
  pipeline: false,
  parse: parseCompletions,
  errorBody: openaiErrorBody,
};
