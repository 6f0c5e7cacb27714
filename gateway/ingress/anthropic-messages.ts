// Anthropic Messages (POST /v1/messages, POST /v1/messages/count_tokens) for Claude Code and the
// Anthropic SDKs: translation in anthropic-request.ts / anthropic-answer.ts; `x-api-key` and
// `anthropic-version` are accepted (auth.ts reads the key; the version needs no branching: the
// shapes served are the current ones).
import { anthropicErrorBody, AnthropicStream, toAnthropicMessage } from './anthropic-answer.ts';
import { parseAnthropic } from './anthropic-request.ts';
import type { IngressAdapter } from './types.ts';

export const anthropicMessages: IngressAdapter = {
  api: 'anthropic-messages',
  path: '/v1/messages',
  upstreamPath: '/v1/chat/completions',
  pipeline: true,
  parse: parseAnthropic,
  toResponse: toAnthropicMessage,
  streamer: (ctx) => new AnthropicStream(ctx),
  errorBody: anthropicErrorBody,
};
