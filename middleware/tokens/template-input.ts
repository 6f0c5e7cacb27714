// Turns OpenAI chat messages into the variables a chat template sees, the way vLLM's chat path does
// (entrypoints/chat_utils.py, "string" content format): null content becomes "", text parts are
// joined with "\n", reasoning is exposed as both `reasoning_content` and `reasoning`, and tool-call
// `arguments` are parsed from JSON into a mapping when the template serialises them itself
// (`arguments | tojson`, vLLM's _postprocess_messages). Templates that concatenate the arguments
// string (DeepSeek-V3) keep the string, since a mapping would not render there.
// Cost: O(total message size); no I/O.
import type { ChatMessage, ContentPart, ToolDef } from '../types.ts';

export type TemplateMessage = Record<string, unknown> & { role: string; content: string };

/** vLLM joins the text parts of a content array with a newline in the "string" content format. */
export function flattenContent(content: ChatMessage['content']): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  const texts: string[] = [];
  for (const part of content as ContentPart[]) {
    if (part && typeof part.text === 'string') texts.push(part.text);
    else if (part && typeof part.refusal === 'string') texts.push(part.refusal as string);
  }
  return texts.join('\n');
}

/** True when the template renders tool-call arguments through `tojson` (so expects a mapping). */
export function templateParsesArguments(templateSource: string): boolean {
  return /arguments\s*\|\s*tojson/.test(templateSource);
}

function parseArguments(args: unknown): unknown {
  if (typeof args !== 'string') return args;
  try {
    const v: unknown = JSON.parse(args);
    // Only objects become mappings; vLLM would pass the parsed value, but a bare string/number
    // rendered through `tojson` and the raw string differ only in quoting, which the engine's own
    // json.loads would also produce. Keep scalars as parsed for fidelity.
    return v;
  } catch {
    return args;
  }
}

export function toTemplateMessages(messages: readonly ChatMessage[], parseArgs: boolean): TemplateMessage[] {
  const out: TemplateMessage[] = [];
  for (const m of messages) {
    const t: TemplateMessage = { role: m.role, content: flattenContent(m.content) };
    if (m.role === 'assistant') {
      if (Array.isArray(m.tool_calls)) {
        t.tool_calls = m.tool_calls.map((tc) => ({
          ...tc,
          function: {
            ...tc.function,
            arguments: parseArgs ? parseArguments(tc.function?.arguments) : tc.function?.arguments,
          },
        }));
      }
      const reasoning = (m.reasoning_content ?? m.reasoning) as string | undefined | null;
      if (reasoning != null) {
        t.reasoning_content = reasoning;
        t.reasoning = reasoning;
      }
    } else if (m.role === 'tool' && m.tool_call_id !== undefined) {
      t.tool_call_id = m.tool_call_id;
    }
    if (typeof m.name === 'string') t.name = m.name;
    out.push(t);
  }
  return out;
}

/** vLLM hands templates the request's tools as a list of `{type, function}` dicts, unchanged. */
export function toTemplateTools(tools: readonly ToolDef[] | undefined): ToolDef[] | undefined {
  return tools && tools.length > 0 ? (tools as ToolDef[]) : undefined;
}
