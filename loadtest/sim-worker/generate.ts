// Deterministic completions: the same seed + prompt always yields the same text, length and
// tool calls. Text is made of real tokens of the served tokenizer (encode a seeded word
// stream, keep exactly N ids, decode them). The answer's length is drawn from a log-normal
// (median DEFAULT_OUTPUT_MEDIAN tokens) as a model's answers are, and `max_tokens` only caps
// it: `finish_reason: length` only when the cap cuts. vLLM's `ignore_eos` (generate exactly
// the cap) and `min_tokens` are honoured. With tools offered and `tool_choice` allowing, a
// share of answers are tool calls whose arguments validate against the offered schema
// (tool-args.ts), preferring read-only tools on files of the agent's workspace; after
// `maxToolTurns` tool calls since the last user message the answer is plain text, so an
// agent loop finishes. O(prompt + output) per call.
import { mulberry32 } from '../profiles/rng.ts';
import { argumentsFor, toolKind, type JsonSchema, type ToolKind } from './tool-args.ts';
import type { WorkerTokenizer } from './tokenize.ts';
import type { Workspace } from './workspace.ts';

export const DEFAULT_MIN_OUTPUT = 20;
export const DEFAULT_MAX_OUTPUT = 2048;
/** Median answer length in tokens; log-normal spread DEFAULT_OUTPUT_SIGMA. */
export const DEFAULT_OUTPUT_MEDIAN = 96;
export const DEFAULT_OUTPUT_SIGMA = 0.8;
/** Share of `tool_choice: auto` calls answered with a tool call. */
export const DEFAULT_TOOL_CALL_RATE = 0.5;
/** Tool calls in a row (since the last user message) after which an `auto` answer is text. */
export const DEFAULT_MAX_TOOL_TURNS = 4;

const WORDS = (
  'the cache prefix block token worker request model batch prefill decode queue latency ' +
  'layout session agent context tool result file line test patch build router gateway ' +
  'value state check merge path hit miss count time first next plan run step output'
).split(' ');

/** Seeded choices: the same mulberry32 the profiles and the synthetic generator use. */
export const rng = mulberry32;

export function hashIds(ids: ArrayLike<number>, seed = 0): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < ids.length; i++) h = Math.imul(h ^ (ids[i] + 1), 0x01000193);
  return h >>> 0;
}

export interface ToolSpec {
  type?: string;
  function: { name: string; description?: string; parameters?: JsonSchema };
}

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface GenerateRequest {
  promptIds: ArrayLike<number>;
  seed: number;
  /** The cap (`max_tokens`); undefined = no cap but the context left (`contextLeft`). */
  maxTokens?: number;
  /** Tokens left in the context window; caps an uncapped answer as the engines do. */
  contextLeft?: number;
  /** vLLM `ignore_eos`: generate exactly the cap. */
  ignoreEos?: boolean;
  /** vLLM `min_tokens` / SGLang `min_new_tokens`. */
  minTokens?: number;
  tools?: ToolSpec[];
  toolChoice?: unknown;
  toolCallRate?: number;
  /** Tool calls since the last user message (see toolTurnsOf). */
  toolTurns?: number;
  maxToolTurns?: number;
  workspace?: Workspace;
}

export interface Generated {
  content: string | null;
  toolCalls: ToolCall[];
  /** Output ids for content-only answers (tool-call ids come from the template). */
  contentIds: number[];
  finishReason: 'stop' | 'length' | 'tool_calls';
}

/**
 * Assistant tool-call turns since the user last asked something. A user message right after a
 * tool result (harness reminders, Anthropic text blocks riding along with tool_result) continues
 * the same task; one after an assistant text answer, or at the start, opens a new one.
 */
export function toolTurnsOf(
  messages: readonly { role?: unknown; tool_calls?: unknown; [k: string]: unknown }[],
): number {
  let n = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role === 'assistant' && Array.isArray(m.tool_calls) && m.tool_calls.length) n++;
    else if (m.role === 'user') {
      let j = i - 1;
      while (j >= 0 && (messages[j].role === 'user' || messages[j].role === 'system')) j--;
      if (j < 0 || messages[j].role !== 'tool') break;
    } else if (m.role === 'assistant') break;
  }
  return n;
}

const SAFE_KINDS: readonly ToolKind[] = ['read', 'list', 'glob', 'grep', 'shell'];

/** Picks the tool to call, or undefined for a plain text answer. */
export function chooseTool(req: GenerateRequest, rand: () => number): ToolSpec | undefined {
  const tools = (req.tools ?? []).filter((t) => t && typeof t.function?.name === 'string');
  if (!tools.length || req.toolChoice === 'none') return undefined;
  const choice = req.toolChoice as { function?: { name?: string } } | string | undefined;
  if (choice && typeof choice === 'object' && choice.function?.name) {
    return tools.find((t) => t.function.name === choice.function!.name);
  }
  const forced = choice === 'required';
  if (!forced && (req.toolTurns ?? 0) >= (req.maxToolTurns ?? DEFAULT_MAX_TOOL_TURNS)) return undefined;
  if (!forced && rand() >= (req.toolCallRate ?? DEFAULT_TOOL_CALL_RATE)) return undefined;
  // Read-only tools on the workspace first: a simulated model must not make the agent write,
  // delete or reach the network. Without any, any offered tool (synthetic benchmarks).
  const safe = tools.filter((t) => SAFE_KINDS.includes(toolKind(t.function.name, t.function.parameters)));
  const pool = safe.length ? safe : tools;
  return pool[Math.floor(rand() * pool.length)];
}

/** Answer length: log-normal around the median, clamped, then capped by max_tokens / context. */
export function answerLength(req: GenerateRequest, rand: () => number): { n: number; cut: boolean } {
  const cap = Math.max(0, Math.min(req.maxTokens ?? Infinity, req.contextLeft ?? Infinity));
  if (req.ignoreEos && Number.isFinite(cap)) return { n: cap, cut: true };
  // Box-Muller from two seeded uniforms (1 - u keeps log() finite).
  const z = Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
  let want = Math.round(DEFAULT_OUTPUT_MEDIAN * Math.exp(DEFAULT_OUTPUT_SIGMA * z));
  want = Math.min(DEFAULT_MAX_OUTPUT, Math.max(DEFAULT_MIN_OUTPUT, want, req.minTokens ?? 0));
  return want > cap ? { n: cap, cut: true } : { n: want, cut: false };
}

export function generate(tok: WorkerTokenizer, req: GenerateRequest): Generated {
  const rand = rng(hashIds(req.promptIds, req.seed));
  const tool = chooseTool(req, rand);
  if (tool) {
    const kind = toolKind(tool.function.name, tool.function.parameters);
    const args = argumentsFor(tool.function.parameters, kind, req.workspace ?? { files: [] }, rand);
    const id =
      'call_' +
      Math.floor(rand() * 2 ** 48)
        .toString(16)
        .padStart(12, '0');
    return {
      content: null,
      toolCalls: [{ id, type: 'function', function: { name: tool.function.name, arguments: JSON.stringify(args) } }],
      contentIds: [],
      finishReason: 'tool_calls',
    };
  }
  const { n, cut } = answerLength(req, rand);
  const ids: number[] = [];
  while (ids.length < n) {
    const words = Array.from({ length: 64 }, () => WORDS[Math.floor(rand() * WORDS.length)]).join(' ');
    ids.push(...tok.encode((ids.length ? ' ' : '') + words + '.'));
  }
  ids.length = n;
  return { content: tok.decode(ids), toolCalls: [], contentIds: ids, finishReason: cut ? 'length' : 'stop' };
}
