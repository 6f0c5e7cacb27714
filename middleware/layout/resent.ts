// Resent history keeps its identity. An agent resends its whole history every call as new JSON;
// each message of a request that is JSON-equal to the message at the same index of the session's
// previous call is replaced by that earlier object, so per-object memos downstream (escaping,
// message hashes, stabilise identities, segment hashes) hit for the resent prefix and only
// messages not seen before are escaped and hashed. Exact: a message is replaced only by one whose
// JSON is identical (sameJson), and no one mutates a message (stages copy on write).
// The previous call is found by a hint (tenant plus session header, prompt_cache_key, user or the
// first user message): any hint is safe, a wrong one only finds fewer equal messages.
// The tool definitions are interned the same way (internTools).
// O(messages + tools) structural compares, which are native string compares for the content.
import type { ChatMessage, ChatRequest } from '../types.ts';
import { sameJson } from './segmentation.ts';

/** Characters of the first user message a hint keys on: it only needs to tell sessions apart, and
 * the hints kept (DEFAULT_MAX_HINTS) stay small. */
export const HINT_TASK_CHARS = 256;

/** `messages` with each message JSON-equal to prev[i] replaced by prev[i]; the same array when none is. */
export function internResent(messages: ChatMessage[], prev: readonly ChatMessage[] | undefined): ChatMessage[] {
  if (!prev || !Array.isArray(messages)) return messages;
  let out: ChatMessage[] | undefined;
  const n = Math.min(messages.length, prev.length);
  for (let i = 0; i < n; i++) {
    const m = messages[i];
    const p = prev[i];
    if (m === p || !sameJson(m, p)) continue;
    out ??= messages.slice();
    out[i] = p;
  }
  return out ?? messages;
}

/** `tools` replaced by `prev` when JSON-equal (the same array, so per-object memos hit). */
export function internTools<T>(tools: T, prev: unknown): T {
  return prev !== undefined && tools !== prev && Array.isArray(tools) && sameJson(tools, prev) ? (prev as T) : tools;
}

/** Which earlier call a request most likely continues (see above: a hint, never trusted). */
export function resendHint(tenant: string, body: ChatRequest, headers: Record<string, string | undefined>): string {
  const client = headers['x-session-id'] ?? body.prompt_cache_key ?? body.user;
  if (typeof client === 'string' && client.length > 0) return `${tenant}\u0000c\u0000${client.slice(0, 256)}`;
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const first = messages.find((m) => m?.role === 'user');
  const c = first?.content;
  const task = typeof c === 'string' ? c : c == null ? '' : JSON.stringify(c);
  return `${tenant}\u0000u\u0000${task.slice(0, HINT_TASK_CHARS)}`;
}
