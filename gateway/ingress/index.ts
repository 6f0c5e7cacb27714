// The ingress adapter list: server.ts registers one POST route per adapter, limits apply to their
// paths, errors on their routes take their shape, metrics and records carry their `api` name.
// A new API is one adapter file (plus its tests) added here.
import { anthropicMessages } from './anthropic-messages.ts';
import { openaiChat } from './openai-chat.ts';
import { openaiCompletions } from './openai-completions.ts';
import { openaiResponses } from './openai-responses.ts';
import type { ResponseStore } from './responses-store.ts';
import type { IngressAdapter } from './types.ts';

export type { ApiName, IngressAdapter } from './types.ts';

export function createAdapters(responses: ResponseStore): IngressAdapter[] {
  return [openaiChat, openaiCompletions, anthropicMessages, openaiResponses(responses)];
}
