// Time slices for big requests: the request path of a big prompt (escape, session, message hashes,
// each stage, the render pool's reply, diagnostics, routing, the upstream body) is a run of
// sections that each cost O(prompt) on the event loop, a few ms apiece at 400k characters. Awaiting
// a macrotask (setImmediate) between them lets other requests (another tenant's small calls,
// /health) run in between, so the longest stall is one section, not their sum. Small requests
// never yield: a hop costs more than their whole pipeline.
// Cost: promptChars O(messages + content parts); one macrotask per section of a big request.
import { setImmediate as nextMacrotask } from 'node:timers/promises';
import type { ChatMessage } from '../types.ts';

/** Characters of message text from which a request yields between its sections. */
export const DEFAULT_SLICE_MIN_CHARS = 65_536;

/** Characters of text in one message (content, reasoning, tool-call arguments). */
export function messageChars(m: ChatMessage): number {
  let chars = 0;
  const c = m.content;
  if (typeof c === 'string') chars += c.length;
  else if (Array.isArray(c)) for (const p of c) chars += typeof p.text === 'string' ? p.text.length : 0;
  if (typeof m.reasoning_content === 'string') chars += m.reasoning_content.length;
  if (m.tool_calls) for (const tc of m.tool_calls) chars += tc.function?.arguments?.length ?? 0;
  return chars;
}

/** Characters of text in the messages. */
export function promptChars(messages: readonly ChatMessage[]): number {
  let chars = 0;
  for (const m of messages) chars += messageChars(m);
  return chars;
}

/** Lets the event loop run other callbacks (I/O, timers, other requests) before going on. */
export function yieldToLoop(): Promise<void> {
  return nextMacrotask();
}
