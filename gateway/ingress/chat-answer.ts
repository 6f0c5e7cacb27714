// Reading the canonical answer: a chat completion's first choice (whole) and the streaming deltas,
// with the shapes engines use for reasoning (`reasoning_content`, vLLM's newer `reasoning`).
// Shared by the translating adapters; pure functions.
import type { ToolCall } from '../../middleware/types.ts';

export interface ChoiceView {
  content: string;
  reasoning: string;
  toolCalls: ToolCall[];
  /** OpenAI finish_reason: stop, length, tool_calls, content_filter (null while streaming). */
  finish: string | null;
  /** vLLM's `stop_reason`: the stop string that ended generation, when one did. */
  stopString: string | null;
}

export interface DeltaToolCall {
  index?: number;
  id?: string;
  function?: { name?: string; arguments?: string };
}

export interface ChunkDelta {
  content?: string | null;
  reasoning_content?: string | null;
  reasoning?: string | null;
  tool_calls?: DeltaToolCall[];
}

type Obj = Record<string, unknown>;

export function firstChoice(obj: Obj): Obj | undefined {
  const c = Array.isArray(obj.choices) ? (obj.choices[0] as Obj | undefined) : undefined;
  return c && typeof c === 'object' ? c : undefined;
}

export function reasoningOf(m: { reasoning_content?: unknown; reasoning?: unknown } | undefined): string {
  if (!m) return '';
  if (typeof m.reasoning_content === 'string') return m.reasoning_content;
  return typeof m.reasoning === 'string' ? m.reasoning : '';
}

export function choiceView(obj: Obj): ChoiceView {
  const c = firstChoice(obj);
  const m = (c?.message ?? {}) as {
    content?: unknown;
    tool_calls?: unknown;
    reasoning_content?: unknown;
    reasoning?: unknown;
  };
  const calls = Array.isArray(m.tool_calls)
    ? (m.tool_calls as ToolCall[]).filter((t) => t && typeof t === 'object' && t.function)
    : [];
  return {
    content: typeof m.content === 'string' ? m.content : typeof c?.text === 'string' ? c.text : '',
    reasoning: reasoningOf(m),
    toolCalls: calls,
    finish: typeof c?.finish_reason === 'string' ? c.finish_reason : null,
    stopString: typeof c?.stop_reason === 'string' ? c.stop_reason : null,
  };
}

/** Tool arguments as an object; text that is not a JSON object is kept whole under `arguments`. */
export function argumentsObject(args: string): Record<string, unknown> {
  if (!args) return {};
  try {
    const v = JSON.parse(args) as unknown;
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // fall through: an unparseable argument string still reaches the client
  }
  return { arguments: args };
}

/** One named server-sent event. */
export function sseEvent(name: string, data: unknown): string {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
}
