// The answer the provider gave to a recorded call: the assistant message the session's next call
// repeats right after the call's own messages. Replays hand it to the reference worker
// (`sim_output`) so the engine caches what the agent actually got back, as vLLM and SGLang do.
import type { Session } from './types.ts';

export interface RecordedAnswer {
  content: unknown;
  tool_calls: unknown[];
  reasoning_content?: unknown;
}

/** The answer to call k, or undefined for the last call or when call k+1 does not extend call k. */
export function recordedAnswer(s: Session, k: number): RecordedAnswer | undefined {
  const next = s.calls[k + 1];
  if (!next) return undefined;
  const m = next.body.messages[s.calls[k].body.messages.length] as unknown as Record<string, unknown> | undefined;
  if (m?.role !== 'assistant') return undefined;
  const out: RecordedAnswer = {
    content: m.content ?? null,
    tool_calls: Array.isArray(m.tool_calls) ? m.tool_calls : [],
  };
  if (m.reasoning_content !== undefined) out.reasoning_content = m.reasoning_content;
  return out;
}
