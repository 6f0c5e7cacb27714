// Session ids that agent harnesses send as headers, mapped to the gateway's own `x-session-id` so
// the context pipeline keys its state by the agent's real session (tenant-namespaced like every
// session id). Sources: Claude Code sends `x-claude-code-session-id`; Codex sends `session_id`
// (codex-rs/codex-api/src/requests/headers.rs, the conversation id; older releases also sent
// `conversation_id`); OpenCode sends `x-opencode-session` (packages/opencode/src/session/llm.ts).
// An explicit `x-session-id` always wins. O(1): the headers object is copied only when mapped.

/** Harness headers in order of preference. */
export const HARNESS_SESSION_HEADERS = [
  'x-claude-code-session-id',
  'session_id',
  'conversation_id',
  'x-opencode-session',
] as const;

export type Headers = Record<string, string | undefined>;

export function harnessSessionId(headers: Headers): string | undefined {
  for (const h of HARNESS_SESSION_HEADERS) {
    const v = headers[h];
    if (typeof v === 'string' && v) return v;
  }
  return undefined;
}

/** The headers the pipeline sees: `x-session-id` filled from a harness header when absent. */
export function harnessHeaders(headers: Headers): Headers {
  if (headers['x-session-id']) return headers;
  const id = harnessSessionId(headers);
  return id ? { ...headers, 'x-session-id': id } : headers;
}

/** The session id a call without a context pipeline reports: the one reading of the session
 * headers when nothing derives an id (`x-ctxgate-session`, then `x-session-id`, as mapped above). */
export function headerSessionId(headers: Headers): string {
  return headers['x-ctxgate-session'] ?? headers['x-session-id'] ?? '';
}
