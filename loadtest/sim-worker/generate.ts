// Deterministic completions: the same seed + prompt always yields the same text, length and
// tool calls. Text is made of real tokens of the served tokenizer (encode a seeded word
// stream, keep exactly N ids, decode them). Tool calls carry JSON arguments holding every
// key the tool's schema requires, with values of the declared type.
import { mulberry32 } from '../profiles/rng.ts';
import type { WorkerTokenizer } from './tokenize.ts';

export const DEFAULT_MIN_OUTPUT = 20;
export const DEFAULT_MAX_OUTPUT = 200;
/** Share of `tool_choice: auto` calls answered with a tool call. */
export const DEFAULT_TOOL_CALL_RATE = 0.5;

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
interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  enum?: unknown[];
  items?: JsonSchema;
}

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export function sampleValue(schema: JsonSchema | undefined, rand: () => number): unknown {
  if (schema?.enum && schema.enum.length) return schema.enum[Math.floor(rand() * schema.enum.length)];
  const type = Array.isArray(schema?.type) ? schema?.type[0] : schema?.type;
  switch (type) {
    case 'integer':
      return Math.floor(rand() * 100);
    case 'number':
      return Math.round(rand() * 1000) / 10;
    case 'boolean':
      return rand() < 0.5;
    case 'array':
      return [sampleValue(schema?.items, rand)];
    case 'object':
      return sampleArguments(schema, rand);
    case 'null':
      return null;
    default:
      return Array.from({ length: 1 + Math.floor(rand() * 4) }, () => WORDS[Math.floor(rand() * WORDS.length)]).join(' ');
  }
}

export function sampleArguments(schema: JsonSchema | undefined, rand: () => number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of schema?.required ?? []) out[key] = sampleValue(schema?.properties?.[key], rand);
  return out;
}

export interface GenerateRequest {
  promptIds: ArrayLike<number>;
  seed: number;
  maxTokens?: number;
  tools?: ToolSpec[];
  toolChoice?: unknown;
  toolCallRate?: number;
}

export interface Generated {
  content: string | null;
  toolCalls: ToolCall[];
  /** Output ids for content-only answers (tool-call ids come from the template). */
  contentIds: number[];
  finishReason: 'stop' | 'length' | 'tool_calls';
}

/** Picks the tool to call, or undefined for a plain text answer. */
export function chooseTool(req: GenerateRequest, rand: () => number): ToolSpec | undefined {
  const tools = req.tools ?? [];
  if (!tools.length || req.toolChoice === 'none') return undefined;
  const choice = req.toolChoice as { function?: { name?: string } } | string | undefined;
  if (choice && typeof choice === 'object' && choice.function?.name) {
    return tools.find((t) => t.function.name === choice.function!.name);
  }
  const forced = choice === 'required';
  if (!forced && rand() >= (req.toolCallRate ?? DEFAULT_TOOL_CALL_RATE)) return undefined;
  return tools[Math.floor(rand() * tools.length)];
}

export function generate(tok: WorkerTokenizer, req: GenerateRequest): Generated {
  const rand = rng(hashIds(req.promptIds, req.seed));
  const tool = chooseTool(req, rand);
  if (tool) {
    const args = sampleArguments(tool.function.parameters, rand);
    const id = 'call_' + Math.floor(rand() * 2 ** 48).toString(16).padStart(12, '0');
    return { content: null, toolCalls: [{ id, type: 'function', function: { name: tool.function.name, arguments: JSON.stringify(args) } }], contentIds: [], finishReason: 'tool_calls' };
  }
  const capped = req.maxTokens !== undefined;
  const n = capped ? Math.max(0, req.maxTokens!) : DEFAULT_MIN_OUTPUT + Math.floor(rand() * (DEFAULT_MAX_OUTPUT - DEFAULT_MIN_OUTPUT + 1));
  const ids: number[] = [];
  while (ids.length < n) {
    const words = Array.from({ length: 64 }, () => WORDS[Math.floor(rand() * WORDS.length)]).join(' ');
    ids.push(...tok.encode((ids.length ? ' ' : '') + words + '.'));
  }
  ids.length = n;
  return { content: tok.decode(ids), toolCalls: [], contentIds: ids, finishReason: capped ? 'length' : 'stop' };
}
