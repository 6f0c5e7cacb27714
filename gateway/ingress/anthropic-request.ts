// Anthropic Messages request -> canonical chat request. O(body). Every text reaches the canonical
// form verbatim: system blocks become one system message (blocks joined by a newline, as engines
// render content parts), thinking becomes reasoning_content, tool_use becomes tool_calls (input as
// JSON), tool_result blocks become tool messages placed before the rest of their user turn (the
// order the chat templates expect). cache_control is accepted and not forwarded: the engines cache
// by prefix, and ctxgate's layout is what keeps the prefix stable. Server tools (web search, code
// execution...) have no engine equivalent: they are left out with a receipt, so an agent that
// offers one keeps working without it.
import type { ChatMessage, ChatRequest, ContentPart, Receipt, ToolCall, ToolDef } from '../../middleware/types.ts';
import { GatewayError } from '../../middleware/errors.ts';
import { ToolNames } from './tool-names.ts';
import { isObject, requireModel, requireObject } from './openai-chat.ts';
import { checkThinking, type SignatureCheck, THINKING_KEY_LABEL } from './thinking-signature.ts';
import { KeyRead } from './key-read.ts';
import type { IngressRequest, ParseContext } from './types.ts';

type Block = Record<string, unknown>;

export interface AnthropicState {
  /** The model name the client asked for (answers echo it). */
  model: string;
}

const bad = (message: string, param: string): GatewayError => new GatewayError('invalid_request', message, param);

function blocksOf(content: unknown, where: string): Block[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  if (!Array.isArray(content) || !content.every(isObject))
    throw bad(`${where} must be a string or an array of content blocks`, where);
  return content;
}

function text(b: Block, where: string): string {
  if (typeof b.text !== 'string') throw bad(`${where}.text must be a string`, `${where}.text`);
  return b.text;
}

function image(b: Block, where: string): ContentPart {
  const s = b.source as Block | undefined;
  if (isObject(s) && s.type === 'base64' && typeof s.media_type === 'string' && typeof s.data === 'string') {
    return { type: 'image_url', image_url: { url: `data:${s.media_type};base64,${s.data}` } };
  }
  if (isObject(s) && s.type === 'url' && typeof s.url === 'string')
    return { type: 'image_url', image_url: { url: s.url } };
  throw bad(`${where}.source must be a base64 or url image source`, `${where}.source`);
}

/** Text-only parts collapse to one string (what engines render anyway); images keep the parts array. */
function collapse(parts: ContentPart[]): string | ContentPart[] {
  if (parts.every((p) => p.type === 'text')) return parts.map((p) => p.text as string).join('\n');
  return parts;
}

function toolResult(b: Block, where: string): ChatMessage {
  if (typeof b.tool_use_id !== 'string') throw bad(`${where}.tool_use_id must be a string`, `${where}.tool_use_id`);
  // The common case (a string result) takes no detour through content parts.
  if (typeof b.content === 'string')
    return {
      role: 'tool',
      tool_call_id: b.tool_use_id,
      content: b.is_error === true ? `[tool error] ${b.content}` : b.content,
    };
  const parts: ContentPart[] = [];
  if (b.content !== undefined && b.content !== null) {
    const inner = blocksOf(b.content, `${where}.content`);
    inner.forEach((x, j) => {
      const w = `${where}.content[${j}]`;
      if (x.type === 'image') parts.push(image(x, w));
      // Tool search answers with references that load deferred tools; every tool is already in the
      // engine's prompt, so the reference stays as a line naming the tool.
      else if (x.type === 'tool_reference' && typeof x.tool_name === 'string')
        parts.push({ type: 'text', text: `tool_reference: ${x.tool_name}` });
      else parts.push({ type: 'text', text: text(x, w) });
    });
  }
  const m: ChatMessage = { role: 'tool', tool_call_id: b.tool_use_id, content: parts.length ? collapse(parts) : '' };
  // The chat form has no error flag; a failed tool keeps its text and says so in the content.
  if (b.is_error === true)
    m.content =
      typeof m.content === 'string'
        ? `[tool error] ${m.content}`
        : [{ type: 'text', text: '[tool error]' }, ...(m.content as ContentPart[])];
  return m;
}

function userTurn(content: unknown, where: string, out: ChatMessage[]): void {
  if (typeof content === 'string') {
    out.push({ role: 'user', content });
    return;
  }
  const parts: ContentPart[] = [];
  blocksOf(content, where).forEach((b, j) => {
    const w = `${where}[${j}]`;
    if (b.type === 'text') parts.push({ type: 'text', text: text(b, w) });
    else if (b.type === 'image') parts.push(image(b, w));
    else if (b.type === 'tool_result') out.push(toolResult(b, w));
    else if (b.type === 'document') throw bad(`${w}: document blocks are not supported by the engines`, w);
    else throw bad(`${w}.type '${String(b.type)}' is not a user content block`, `${w}.type`);
  });
  if (parts.length) out.push({ role: 'user', content: collapse(parts) });
}

/** What the thinking blocks sent back carried: see thinking-signature.ts. */
type SignatureCounts = Record<SignatureCheck, number>;

function assistantTurn(content: unknown, where: string, into: Translation, checks: SignatureChecks): void {
  const texts: string[] = [];
  let reasoning = '';
  const calls: ToolCall[] = [];
  blocksOf(content, where).forEach((b, j) => {
    const w = `${where}[${j}]`;
    if (b.type === 'text') texts.push(text(b, w));
    else if (b.type === 'thinking') {
      const t = typeof b.thinking === 'string' ? b.thinking : '';
      checks.check(into, t, b.signature);
      reasoning += t;
    } else if (b.type === 'redacted_thinking')
      return; // opaque to engines: nothing to render
    else if (b.type === 'tool_use') {
      if (typeof b.id !== 'string' || typeof b.name !== 'string') throw bad(`${w} needs a string id and name`, w);
      calls.push({ id: b.id, type: 'function', function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) } });
    } else throw bad(`${w}.type '${String(b.type)}' is not an assistant content block`, `${w}.type`);
  });
  const m: ChatMessage = { role: 'assistant', content: texts.length ? texts.join('\n') : calls.length ? null : '' };
  if (reasoning) m.reasoning_content = reasoning;
  if (calls.length) m.tool_calls = calls;
  into.out.push(m);
}

function tools(list: unknown, receipts: Receipt[]): ToolDef[] {
  if (!Array.isArray(list) || !list.every(isObject)) throw bad("'tools' must be an array of tool objects", 'tools');
  const out: ToolDef[] = [];
  const names = new ToolNames();
  list.forEach((t, i) => {
    if (t.type !== undefined && t.type !== null && t.type !== 'custom') {
      receipts.push({
        stage: 'ingress',
        action: 'tool_dropped',
        target: `tools[${i}]`,
        reason: `server tool '${String(t.type)}' has no equivalent on self-hosted engines`,
      });
      return;
    }
    if (typeof t.name !== 'string' || !t.name)
      throw bad(`tools[${i}].name must be a non-empty string`, `tools[${i}].name`);
    names.check(t.name, i, 'name');
    const fn: ToolDef['function'] = { name: t.name, parameters: t.input_schema ?? { type: 'object', properties: {} } };
    if (typeof t.description === 'string') fn.description = t.description;
    out.push({ type: 'function', function: fn });
  });
  return out;
}

/** The tool list's translation, kept per list object like the messages' (see Translation). */
const toolLists = new WeakMap<object, { list: ToolDef[]; receipts: Receipt[] }>();

function toolsOf(list: unknown, receipts: Receipt[]): ToolDef[] {
  let t = Array.isArray(list) ? toolLists.get(list) : undefined;
  if (t === undefined) {
    t = { list: [], receipts: [] };
    t.list = tools(list, t.receipts);
    if (Array.isArray(list)) toolLists.set(list, t);
  }
  for (const r of t.receipts) receipts.push({ ...r });
  return t.list;
}

function toolChoice(tc: Block, out: ChatRequest): void {
  if (tc.type === 'auto') out.tool_choice = 'auto';
  else if (tc.type === 'any') out.tool_choice = 'required';
  else if (tc.type === 'none') out.tool_choice = 'none';
  else if (tc.type === 'tool' && typeof tc.name === 'string')
    out.tool_choice = { type: 'function', function: { name: tc.name } };
  else throw bad("'tool_choice' must be {type: auto|any|none} or {type: tool, name}", 'tool_choice');
  if (tc.disable_parallel_tool_use === true) out.parallel_tool_calls = false;
}

/**
 * A client message's translation. The body parser hands out the same object for a message an
 * earlier body of the session held byte for byte (gateway/body/), so the translation is kept per
 * message object (a WeakMap: it lives as long as the message) and the same chat objects come out
 * again: the pipeline's intern then finds the resent history identical by reference instead of
 * comparing it in full, and its per-object memos hit. Nothing mutates a translated message (the
 * stages copy on write). Exact: a translation depends on the message alone, except the signature
 * checks of thinking blocks, which read the tenant and the gateway's key: those are recorded and
 * a translation made under others is made again.
 */
interface Translation {
  out: ChatMessage[];
  checks: SignatureCheck[];
  /** Set when a check read the tenant and the gateway's key: which (see parseAnthropic). */
  keyedBy?: string;
}

const translations = new WeakMap<object, Translation>();

/** Checks thinking signatures for one request; the tenant and key they read derived once, when needed. */
class SignatureChecks extends KeyRead {
  constructor(ctx: ParseContext) {
    super(ctx, THINKING_KEY_LABEL);
  }

  check(into: Translation, text: string, sig: unknown): void {
    const { ctx } = this;
    if (typeof sig === 'string' && sig) into.keyedBy = this.keyedBy();
    into.checks.push(
      ctx.mac ? checkThinking(ctx.mac, ctx.tenant, text, sig) : typeof sig === 'string' && sig ? 'foreign' : 'missing',
    );
  }
}

function translate(m: Block, w: string, checks: SignatureChecks): Translation {
  const t: Translation = { out: [], checks: [] };
  if (m.role === 'user') userTurn(m.content, `${w}.content`, t.out);
  else if (m.role === 'assistant') assistantTurn(m.content, `${w}.content`, t, checks);
  // Claude Code sends environment notes as a system turn between user turns: a system message in place.
  else if (m.role === 'system')
    t.out.push({
      role: 'system',
      content: blocksOf(m.content, `${w}.content`)
        .map((x, j) => text(x, `${w}.content[${j}]`))
        .join('\n'),
    });
  else throw new GatewayError('invalid_messages', `${w}.role must be 'user', 'assistant' or 'system'`, `${w}.role`);
  return t;
}

export function parseAnthropic(body: unknown, ctx: ParseContext): IngressRequest {
  const b = requireObject(body);
  const model = requireModel(b);
  if (typeof b.max_tokens !== 'number' || !Number.isInteger(b.max_tokens) || b.max_tokens < 1)
    throw bad("'max_tokens' is required and must be a positive integer", 'max_tokens');
  const msgs = b.messages;
  if (!Array.isArray(msgs) || msgs.length === 0)
    throw new GatewayError('invalid_messages', "'messages' must be a non-empty array", 'messages');
  if (msgs.length > ctx.maxMessages)
    throw new GatewayError('invalid_messages', `'messages' has more than ${ctx.maxMessages} entries`, 'messages');
  const messages: ChatMessage[] = [];
  const signatures: SignatureCounts = { verified: 0, foreign: 0, altered: 0, missing: 0 };
  if (b.system !== undefined && b.system !== null) {
    // A block list is kept like a message (a string system prompt compares as one string anyway).
    let t = Array.isArray(b.system) ? translations.get(b.system) : undefined;
    if (t === undefined) {
      const sys = blocksOf(b.system, 'system').map((x, j) => text(x, `system[${j}]`));
      t = { out: [{ role: 'system', content: sys.join('\n') }], checks: [] };
      if (Array.isArray(b.system)) translations.set(b.system, t);
    }
    messages.push(t.out[0]);
  }
  const checks = new SignatureChecks(ctx);
  msgs.forEach((m, i) => {
    const w = `messages[${i}]`;
    if (!isObject(m)) throw new GatewayError('invalid_messages', `${w} must be an object`, w);
    let t = translations.get(m);
    if (t === undefined || (t.keyedBy !== undefined && t.keyedBy !== checks.keyedBy())) {
      t = translate(m, w, checks);
      translations.set(m, t);
    }
    for (const x of t.out) messages.push(x);
    for (const c of t.checks) signatures[c]++;
  });
  const out: ChatRequest = { model, messages, max_tokens: b.max_tokens };
  const receipts: Receipt[] = [];
  if (signatures.verified + signatures.foreign + signatures.altered + signatures.missing > 0)
    receipts.push({
      stage: 'ingress',
      action: 'thinking_signatures',
      // Every block is kept whatever its signature: the engines cannot check Anthropic's, and the text is the client's.
      reason: `thinking blocks kept: ${signatures.verified} signed by this gateway and verified, ${signatures.foreign} signed elsewhere, ${signatures.altered} not matching their text, ${signatures.missing} unsigned`,
    });
  if (b.tools !== undefined && b.tools !== null) {
    const list = toolsOf(b.tools, receipts);
    if (list.length) out.tools = list;
  }
  if (isObject(b.tool_choice) && out.tools) toolChoice(b.tool_choice, out);
  if (b.stop_sequences !== undefined) {
    if (!Array.isArray(b.stop_sequences) || !b.stop_sequences.every((s) => typeof s === 'string'))
      throw bad("'stop_sequences' must be an array of strings", 'stop_sequences');
    if (b.stop_sequences.length) out.stop = b.stop_sequences;
  }
  for (const k of ['temperature', 'top_p', 'top_k'] as const) {
    if (b[k] === undefined) continue;
    if (typeof b[k] !== 'number') throw bad(`'${k}' must be a number`, k);
    out[k] = b[k];
  }
  // Extended thinking maps to the templates' switch (Qwen3, DeepSeek, GLM read enable_thinking).
  if (isObject(b.thinking) && (b.thinking.type === 'enabled' || b.thinking.type === 'disabled')) {
    out.chat_template_kwargs = { enable_thinking: b.thinking.type === 'enabled' };
  }
  const stream = b.stream === true;
  if (stream) out.stream = true;
  const state: AnthropicState = { model };
  return { model, stream, body: out, receipts, state };
}
