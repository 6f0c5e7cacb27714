// OpenAI Responses request -> canonical chat request. O(body + stored conversation).
// `instructions` become the system message (never carried over from a previous response, as the
// API documents); `previous_response_id` prepends the stored conversation of that response (same
// tenant only); input items map one to one: messages, function_call (assistant tool_calls, merged
// into the preceding assistant turn), function_call_output (tool messages), reasoning (kept as the
// next assistant turn's reasoning_content when it carries text, or when its encrypted_content is
// one the gateway sealed for this tenant (reasoning-seal.ts); dropped with a receipt otherwise).
// Freeform `custom` tools (Codex's apply_patch) become functions taking one
// string `input`, and their calls come back as custom_tool_call items. Hosted tools (web search,
// file search, code interpreter...) have no engine equivalent: they are left out with a receipt
// (an agent keeps working without them) rather than failing the whole request.
import { type Opened, openReasoning, REASONING_SEAL_KEY_LABEL } from './reasoning-seal.ts';
import { KeyRead } from './key-read.ts';
import type { ChatMessage, ChatRequest, ContentPart, Receipt, ToolDef } from '../../middleware/types.ts';
import { GatewayError } from '../../middleware/errors.ts';
import { ToolNames } from './tool-names.ts';
import { isObject, requireModel, requireObject } from './openai-chat.ts';
import type { ResponseStore } from './responses-store.ts';
import type { IngressRequest, ParseContext } from './types.ts';

type Obj = Record<string, unknown>;

/** Request fields a Response object echoes back. */
const ECHOED = [
  'instructions',
  'tools',
  'tool_choice',
  'temperature',
  'top_p',
  'max_output_tokens',
  'previous_response_id',
  'metadata',
  'parallel_tool_calls',
  'text',
  'reasoning',
  'prompt_cache_key',
  'user',
] as const;

export interface ResponsesState {
  model: string;
  id: string;
  createdAt: number;
  store: boolean;
  echo: Obj;
  /** The conversation without instructions (stored for previous_response_id). */
  conversation: ChatMessage[];
  /** Names of freeform (`custom`) tools: their calls are answered as custom_tool_call items. */
  customTools: string[];
  /** `include: ["reasoning.encrypted_content"]`: reasoning items carry the sealed text (reasoning-seal.ts). */
  sealReasoning: boolean;
}

/** The one parameter a freeform tool's function form takes. */
export const CUSTOM_TOOL_INPUT = 'input';

const bad = (message: string, param: string): GatewayError => new GatewayError('invalid_request', message, param);

function partsOf(content: unknown, where: string): ContentPart[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  if (!Array.isArray(content) || !content.every(isObject))
    throw bad(`${where} must be a string or an array of content parts`, where);
  return content.map((p, j) => {
    const w = `${where}[${j}]`;
    if (p.type === 'input_text' || p.type === 'output_text' || p.type === 'text') {
      if (typeof p.text !== 'string') throw bad(`${w}.text must be a string`, `${w}.text`);
      return { type: 'text', text: p.text };
    }
    if (p.type === 'refusal' && typeof p.refusal === 'string') return { type: 'text', text: p.refusal };
    if (p.type === 'input_image' && typeof p.image_url === 'string') {
      const image_url: Obj = { url: p.image_url };
      if (typeof p.detail === 'string') image_url.detail = p.detail;
      return { type: 'image_url', image_url };
    }
    throw bad(
      `${w}.type '${String(p.type)}' is not supported (input_text, output_text, input_image with image_url)`,
      `${w}.type`,
    );
  });
}

function collapse(parts: ContentPart[]): string | ContentPart[] {
  return parts.every((p) => p.type === 'text') ? parts.map((p) => p.text as string).join('') : parts;
}

function reasoningText(item: Obj): string {
  const pick = (v: unknown): string =>
    Array.isArray(v) ? v.map((x) => (isObject(x) && typeof x.text === 'string' ? x.text : '')).join('\n') : '';
  return pick(item.content) || pick(item.summary);
}

/**
 * A run of input items translated together: from a boundary (no reasoning pending, and the item
 * does not merge into the assistant turn before it) to the next. A run's messages depend on its
 * items alone, so its translation is kept per first item object (a WeakMap: the body parser hands
 * out the same objects for an unchanged history, gateway/body/) and the same chat objects come out
 * again: the pipeline's intern finds the resent history by reference instead of comparing it in
 * full. Kept only when the run starts at the same index (receipts name it) and ends at a boundary
 * in the new input too (else the next item would have to change its last message); a run that
 * opened a sealed reasoning item records the tenant and key it read, and is made again under
 * others. Nothing mutates a message once made: a run only writes messages it created itself, and
 * one that joins the turn before it (a call or reasoning at input[0] after a stored
 * previous_response_id turn) writes a copy that replaces that message in the output, and is not kept.
 */
interface Run {
  at: number;
  items: unknown[];
  out: ChatMessage[];
  receipts: Receipt[];
  restored: number;
  keyedBy?: string;
  /** out[0] is a copy of the message before the run, with this run's call joined (not kept). */
  replacesLast?: boolean;
}

const runs = new WeakMap<object, Run>();

/** Reasoning-seal openings of one request; the tenant and key they read derived once, when needed. */
class Opener extends KeyRead {
  constructor(ctx: ParseContext) {
    super(ctx, REASONING_SEAL_KEY_LABEL);
  }

  open(run: Run, blob: string): Opened {
    run.keyedBy = this.keyedBy();
    const { mac, tenant } = this.ctx;
    return mac ? openReasoning(mac, tenant, blob) : { kind: 'foreign' };
  }
}

/**
 * Whether `it` may join the turn `out` ends with, so that no run starts at it: a call joining an
 * assistant turn, or a reasoning item (the call after it may join the turn before it, e.g.
 * [call, reasoning, call] or [message, reasoning, call]; a run starting at the reasoning item would
 * have to change the previous run's kept message).
 */
function merges(it: unknown, out: readonly ChatMessage[]): boolean {
  if (isObject(it) && it.type === 'reasoning') return true;
  return (
    isObject(it) && (it.type === 'function_call' || it.type === 'custom_tool_call') && out.at(-1)?.role === 'assistant'
  );
}

function inputItems(items: unknown[], out: ChatMessage[], receipts: Receipt[], opener: Opener): number {
  let restored = 0;
  let i = 0;
  while (i < items.length) {
    const first = items[i];
    let run = isObject(first) && !merges(first, out) ? runs.get(first) : undefined;
    if (run !== undefined && !reusable(run, items, i, out, opener)) run = undefined;
    let pending = '';
    if (run === undefined) {
      const made = translateRun(items, i, out, opener);
      run = made.run;
      pending = made.pending;
      if (made.cacheable && isObject(first)) runs.set(first, run);
    }
    // a run that joined the turn before it carries its own copy of that message (never kept)
    if (run.replacesLast) out.pop();
    for (const m of run.out) out.push(m);
    for (const r of run.receipts) receipts.push({ ...r });
    restored += run.restored;
    i += run.items.length;
    if (pending)
      receipts.push({
        stage: 'ingress',
        action: 'reasoning_dropped',
        target: 'input',
        reason: 'reasoning item not followed by an assistant turn',
      });
  }
  return restored;
}

/** A kept run fits here: same index, same item objects, the same key read, a boundary after it. */
function reusable(run: Run, items: unknown[], i: number, out: readonly ChatMessage[], opener: Opener): boolean {
  const n = run.items.length;
  if (run.at !== i || i + n > items.length) return false;
  for (let k = 0; k < n; k++) if (items[i + k] !== run.items[k]) return false;
  if (run.keyedBy !== undefined && run.keyedBy !== opener.keyedBy()) return false;
  return i + n === items.length || !merges(items[i + n], run.out.length ? run.out : out);
}

function translateRun(
  items: unknown[],
  from: number,
  before: readonly ChatMessage[],
  opener: Opener,
): { run: Run; pending: string; cacheable: boolean } {
  const run: Run = { at: from, items: [], out: [], receipts: [], restored: 0 };
  const out = run.out;
  // A first item that joins an assistant turn from before the run (one stored under
  // previous_response_id) changes a message the run did not make: such a run is not kept.
  let external = false;
  let reasoning = '';
  const takeReasoning = (m: ChatMessage): void => {
    if (reasoning) m.reasoning_content = (m.reasoning_content ?? '') + reasoning;
    reasoning = '';
  };
  let i = from;
  do {
    const it = items[i];
    run.items.push(it);
    const w = `input[${i}]`;
    if (!isObject(it)) throw bad(`${w} must be an object`, w);
    const type = it.type ?? (typeof it.role === 'string' ? 'message' : undefined);
    if (type === 'message') {
      const role = it.role;
      if (role !== 'user' && role !== 'assistant' && role !== 'system' && role !== 'developer')
        throw bad(`${w}.role must be user, assistant, system or developer`, `${w}.role`);
      const m: ChatMessage = { role, content: collapse(partsOf(it.content, `${w}.content`)) };
      if (role === 'assistant') takeReasoning(m);
      out.push(m);
    } else if (type === 'function_call' || type === 'custom_tool_call') {
      if (typeof it.call_id !== 'string' || typeof it.name !== 'string')
        throw bad(`${w} needs a string call_id and name`, w);
      // a freeform (custom) tool's raw input travels as one JSON field the answer side unwraps
      const args =
        type === 'custom_tool_call'
          ? JSON.stringify({ [CUSTOM_TOOL_INPUT]: typeof it.input === 'string' ? it.input : '' })
          : typeof it.arguments === 'string'
            ? it.arguments
            : JSON.stringify(it.arguments ?? {});
      let m = out.length ? out.at(-1) : before.at(-1);
      if (m?.role !== 'assistant') {
        m = { role: 'assistant', content: null };
        out.push(m);
      } else if (!out.length) {
        // the turn before the run (a stored one, or a kept run's): joined on a copy, never in place
        m = { ...m, ...(m.tool_calls ? { tool_calls: m.tool_calls.slice() } : {}) };
        out.push(m);
        run.replacesLast = true;
        external = true;
      }
      takeReasoning(m);
      (m.tool_calls ??= []).push({ id: it.call_id, type: 'function', function: { name: it.name, arguments: args } });
    } else if (type === 'function_call_output' || type === 'custom_tool_call_output') {
      if (typeof it.call_id !== 'string') throw bad(`${w}.call_id must be a string`, `${w}.call_id`);
      const content = typeof it.output === 'string' ? it.output : collapse(partsOf(it.output, `${w}.output`));
      out.push({ role: 'tool', tool_call_id: it.call_id, content });
    } else if (type === 'reasoning') {
      let text = reasoningText(it);
      let why = 'reasoning item carries no readable text; engines cannot use it';
      const blob = it.encrypted_content;
      if (!text && typeof blob === 'string' && blob) {
        const o = opener.open(run, blob);
        if (o.kind === 'opened') {
          text = o.text;
          run.restored++;
        } else
          why =
            o.kind === 'foreign'
              ? 'reasoning item carries only encrypted_content sealed by another service; engines cannot use it'
              : o.kind === 'other_key'
                ? "reasoning item's encrypted_content was sealed by another gateway key (another replica, or before a restart): set tenancy.cache_salt_secret shared across replicas"
                : "reasoning item's encrypted_content does not open for this tenant (altered, or another tenant's)";
      }
      if (text) reasoning += text;
      else run.receipts.push({ stage: 'ingress', action: 'reasoning_dropped', target: w, reason: why });
    } else {
      throw bad(
        `${w}.type '${String(type)}' is not supported (message, function_call, function_call_output, custom_tool_call, custom_tool_call_output, reasoning)`,
        `${w}.type`,
      );
    }
    i++;
  } while (i < items.length && (reasoning !== '' || merges(items[i], out.length ? out : before)));
  return { run, pending: reasoning, cacheable: !external && reasoning === '' };
}

function tools(list: unknown, custom: string[], receipts: Receipt[]): ToolDef[] {
  if (!Array.isArray(list) || !list.every(isObject)) throw bad("'tools' must be an array of tool objects", 'tools');
  const out: ToolDef[] = [];
  const names = new ToolNames();
  list.forEach((t, i) => {
    if (t.type !== 'function' && t.type !== 'custom') {
      receipts.push({
        stage: 'ingress',
        action: 'tool_dropped',
        target: `tools[${i}]`,
        reason: `hosted tool '${String(t.type)}' has no equivalent on self-hosted engines`,
      });
      return;
    }
    if (typeof t.name !== 'string' || !t.name)
      throw bad(`tools[${i}].name must be a non-empty string`, `tools[${i}].name`);
    names.check(t.name, i, 'name');
    let parameters = t.parameters ?? { type: 'object', properties: {} };
    if (t.type === 'custom') {
      custom.push(t.name);
      parameters = {
        type: 'object',
        properties: { [CUSTOM_TOOL_INPUT]: { type: 'string', description: 'The raw input of the tool.' } },
        required: [CUSTOM_TOOL_INPUT],
      };
    }
    const fn: ToolDef['function'] = { name: t.name, parameters };
    if (typeof t.description === 'string') fn.description = t.description;
    if (typeof t.strict === 'boolean') fn.strict = t.strict;
    out.push({ type: 'function', function: fn });
  });
  return out;
}

function toolChoice(tc: unknown): unknown {
  if (tc === 'auto' || tc === 'none' || tc === 'required') return tc;
  if (isObject(tc) && (tc.type === 'function' || tc.type === 'custom') && typeof tc.name === 'string')
    return { type: 'function', function: { name: tc.name } };
  throw bad("'tool_choice' must be auto, none, required or {type: function, name}", 'tool_choice');
}

function responseFormat(text: unknown): unknown {
  const f = isObject(text) ? text.format : undefined;
  if (!isObject(f) || f.type === 'text') return undefined;
  if (f.type === 'json_object') return { type: 'json_object' };
  if (f.type === 'json_schema')
    return {
      type: 'json_schema',
      json_schema: { name: f.name, schema: f.schema, ...(typeof f.strict === 'boolean' ? { strict: f.strict } : {}) },
    };
  throw bad(`text.format.type '${String(f.type)}' is not supported`, 'text.format.type');
}

export async function parseResponses(
  body: unknown,
  ctx: ParseContext,
  store: ResponseStore,
  newId: () => string,
): Promise<IngressRequest> {
  const b = requireObject(body);
  const model = requireModel(b);
  const receipts: Receipt[] = [];
  const conversation: ChatMessage[] = [];
  if (b.previous_response_id !== undefined && b.previous_response_id !== null) {
    if (typeof b.previous_response_id !== 'string')
      throw bad("'previous_response_id' must be a string", 'previous_response_id');
    const prev = await store.get(ctx.tenant, b.previous_response_id);
    if (!prev)
      throw new GatewayError(
        'not_found',
        `previous response '${b.previous_response_id}' not found (expired, deleted, stored with store: false, or another tenant's)`,
        'previous_response_id',
      );
    conversation.push(...prev.messages);
  }
  if (typeof b.input === 'string') conversation.push({ role: 'user', content: b.input });
  else if (Array.isArray(b.input)) {
    const restored = inputItems(b.input, conversation, receipts, new Opener(ctx));
    if (restored)
      receipts.push({
        stage: 'ingress',
        action: 'reasoning_restored',
        reason: `${restored} reasoning item(s) restored from the gateway's encrypted_content`,
      });
  } else throw bad("'input' is required: a string or an array of input items", 'input');
  if (conversation.length === 0) throw bad("'input' must not be empty", 'input');
  if (conversation.length > ctx.maxMessages)
    throw new GatewayError('invalid_messages', `the conversation has more than ${ctx.maxMessages} messages`, 'input');
  if (b.instructions !== undefined && b.instructions !== null && typeof b.instructions !== 'string')
    throw bad("'instructions' must be a string", 'instructions');
  const messages = b.instructions
    ? [{ role: 'system', content: b.instructions } as ChatMessage, ...conversation]
    : conversation.slice();
  const out: ChatRequest = { model, messages };
  const customTools: string[] = [];
  if (b.tools !== undefined && b.tools !== null) {
    const list = tools(b.tools, customTools, receipts);
    if (list.length) out.tools = list;
  }
  if (b.tool_choice !== undefined && b.tool_choice !== null && out.tools) out.tool_choice = toolChoice(b.tool_choice);
  if (b.max_output_tokens !== undefined && b.max_output_tokens !== null) {
    if (typeof b.max_output_tokens !== 'number' || !Number.isInteger(b.max_output_tokens) || b.max_output_tokens < 1)
      throw bad("'max_output_tokens' must be a positive integer", 'max_output_tokens');
    out.max_tokens = b.max_output_tokens;
  }
  for (const k of ['temperature', 'top_p'] as const) {
    if (b[k] === undefined || b[k] === null) continue;
    if (typeof b[k] !== 'number') throw bad(`'${k}' must be a number`, k);
    out[k] = b[k];
  }
  if (typeof b.parallel_tool_calls === 'boolean') out.parallel_tool_calls = b.parallel_tool_calls;
  if (isObject(b.reasoning) && typeof b.reasoning.effort === 'string') out.reasoning_effort = b.reasoning.effort;
  const rf = responseFormat(b.text);
  if (rf) out.response_format = rf;
  // The session key of the context pipeline (session-id.ts reads prompt_cache_key).
  if (typeof b.prompt_cache_key === 'string' && b.prompt_cache_key) out.prompt_cache_key = b.prompt_cache_key;
  const stream = b.stream === true;
  if (stream) out.stream = true;
  const echo: Obj = {};
  for (const k of ECHOED) echo[k] = b[k] ?? null;
  const state: ResponsesState = {
    model,
    id: newId(),
    createdAt: Math.floor(Date.now() / 1000),
    store: b.store !== false,
    echo,
    conversation,
    customTools,
    sealReasoning: Array.isArray(b.include) && b.include.includes('reasoning.encrypted_content'),
  };
  return { model, stream, body: out, receipts, state };
}
