// OpenAI Responses (POST /v1/responses; GET and DELETE /v1/responses/{id}) for Codex and the
// OpenAI SDKs' Responses API: translation in responses-request.ts / responses-answer.ts, stored
// responses in responses-store.ts (per tenant, TTL and byte caps).
import { newId, responsesErrorBody, ResponsesStream, toResponseObject } from './responses-answer.ts';
import { parseResponses } from './responses-request.ts';
import type { ResponseStore } from './responses-store.ts';
import type { IngressAdapter } from './types.ts';

export function openaiResponses(store: ResponseStore): IngressAdapter {
  return {
    api: 'openai-responses',
    path: '/v1/responses',
    upstreamPath: '/v1/chat/completions',
    pipeline: true,
    parse: (body, ctx) => parseResponses(body, ctx, store, () => newId('resp')),
    toResponse: (obj, usage, ctx) => toResponseObject(store, obj, usage, ctx),
    streamer: (ctx) => new ResponsesStream(ctx, store),
    errorBody: responsesErrorBody,
  };
}
