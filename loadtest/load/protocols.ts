// The three client APIs `ctxgate loadtest` speaks, as a load generator sees them: turn a chat-form
// agent body into the API's request, and read the API's answer (JSON or an SSE stream, complete)
// back into chat form plus usage. Client-side only: the gateway's ingress adapters are the server
// side of the same translation. O(body) per call.
import type { ChatMessage, ChatRequest, ContentPart, ToolCall } from '../../middleware/types.ts';
import type { ReceivedAnswer } from './traffic.ts';

export type ApiName = 'chat' | 'anthropic' | 'responses';
export const API_NAMES: readonly ApiName[] = ['chat', 'anthropic', 'responses'];
export const ANTHROPIC_VERSION = '2023-06-01';

export interface BuildOptions {
  model: string;
  stream: boolean;
  maxTokens: number;
  /** Bearer key (chat, responses) or x-api-key (anthropic); never logged. */
  key?: string;
  sessionId: string;
}

export interface BuiltRequest {
  path: string;
  headers: Record<string, string>;
  /** UTF-8 JSON; the chat body is built as bytes from cached message JSON. */
  body: string | Buffer;
}

export interface UsageCounts {
  prompt: number;
  cached: number;
  completion: number;
}

export interface ParsedAnswer {
  answer?: ReceivedAnswer;
  usage?: UsageCounts;
  finish?: string;
  /** The API's error message when the body carried one. */
  error?: string;
}

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

export function textOf(content: ChatMessage['content']): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((p: ContentPart) => (typeof p.text === 'string' ? p.text : '')).join('');
}

function parseArgs(s: string): unknown {
  try {
    const v = JSON.parse(s);
    return isObj(v) ? v : { value: v };
  } catch {
    return { raw: s };
  }
}

// ---------------------------------------------------------------- request bodies

function chatBody(b: ChatRequest, o: BuildOptions): Json {
  const out: Json = { ...b, model: o.model, max_tokens: o.maxTokens };
  delete out.max_completion_tokens;
  delete out.stream_options;
  if (o.stream) {
    out.stream = true;
    out.stream_options = { include_usage: true };
  } else delete out.stream;
  return out;
}

function anthropicBody(b: ChatRequest, o: BuildOptions): Json {
  const system = b.messages.filter((m) => m.role === 'system' || m.role === 'developer').map((m) => textOf(m.content));
  const messages: { role: 'user' | 'assistant'; content: Json[] }[] = [];
  const push = (role: 'user' | 'assistant', blocks: Json[]) => {
    const last = messages[messages.length - 1];
    if (last && last.role === role) last.content.push(...blocks);
    else messages.push({ role, content: blocks });
  };
  for (const m of b.messages) {
    if (m.role === 'system' || m.role === 'developer') continue;
    if (m.role === 'tool') {
      push('user', [{ type: 'tool_result', tool_use_id: m.tool_call_id ?? '', content: textOf(m.content) }]);
    } else if (m.role === 'assistant') {
      const blocks: Json[] = [];
      const text = textOf(m.content);
      if (text) blocks.push({ type: 'text', text });
      for (const c of m.tool_calls ?? [])
        blocks.push({ type: 'tool_use', id: c.id, name: c.function.name, input: parseArgs(c.function.arguments) });
      push('assistant', blocks.length ? blocks : [{ type: 'text', text: '' }]);
    } else push('user', [{ type: 'text', text: textOf(m.content) }]);
  }
  const out: Json = { model: o.model, max_tokens: o.maxTokens, messages };
  if (system.length) out.system = system.join('\n\n');
  if (b.tools?.length) {
    out.tools = b.tools.map((t) => ({
      name: t.function.name,
      description: t.function.description ?? '',
      input_schema: t.function.parameters ?? { type: 'object' },
    }));
  }
  if (typeof b.temperature === 'number') out.temperature = b.temperature;
  if (o.stream) out.stream = true;
  return out;
}

function responsesBody(b: ChatRequest, o: BuildOptions): Json {
  const instructions = b.messages
    .filter((m) => m.role === 'system' || m.role === 'developer')
    .map((m) => textOf(m.content));
  const input: Json[] = [];
  for (const m of b.messages) {
    if (m.role === 'system' || m.role === 'developer') continue;
    if (m.role === 'tool')
      input.push({ type: 'function_call_output', call_id: m.tool_call_id ?? '', output: textOf(m.content) });
    else if (m.role === 'assistant') {
      const text = textOf(m.content);
      if (text || !m.tool_calls?.length) input.push({ type: 'message', role: 'assistant', content: text });
      for (const c of m.tool_calls ?? [])
        input.push({ type: 'function_call', call_id: c.id, name: c.function.name, arguments: c.function.arguments });
    } else input.push({ type: 'message', role: 'user', content: textOf(m.content) });
  }
  // store: false — a load test must not fill the target's response store
  const out: Json = {
    model: o.model,
    input,
    max_output_tokens: o.maxTokens,
    store: false,
    prompt_cache_key: o.sessionId,
  };
  if (instructions.length) out.instructions = instructions.join('\n\n');
  if (b.tools?.length) {
    out.tools = b.tools.map((t) => ({
      type: 'function',
      name: t.function.name,
      description: t.function.description ?? '',
      parameters: t.function.parameters ?? { type: 'object' },
    }));
  }
  if (typeof b.temperature === 'number') out.temperature = b.temperature;
  if (o.stream) out.stream = true;
  return out;
}

// Bodies of one session share most message objects with the previous body: their JSON is made
// once (a body is then a join of cached strings, not a full JSON.stringify of the history).
const jsonCache = new WeakMap<object, Buffer>();
function jsonOf(v: unknown): Buffer {
  if (typeof v !== 'object' || v === null) return Buffer.from(JSON.stringify(v));
  let b = jsonCache.get(v);
  if (b === undefined) {
    b = Buffer.from(JSON.stringify(v));
    jsonCache.set(v, b);
  }
  return b;
}

const COMMA = Buffer.from(',');
const MESSAGES_OPEN = Buffer.from(',"messages":[');
const TOOLS_OPEN = Buffer.from(',"tools":');
const CLOSE = Buffer.from(']}');

/** The chat body as bytes: cached message JSON copied once into one buffer (no string join, no re-encode). */
function chatJson(b: ChatRequest, o: BuildOptions): Buffer {
  const { messages, tools, ...rest } = chatBody(b, o) as Json & { messages: ChatMessage[]; tools?: unknown };
  const parts: Buffer[] = [Buffer.from(JSON.stringify(rest).slice(0, -1))];
  if (tools !== undefined) parts.push(TOOLS_OPEN, jsonOf(tools));
  parts.push(MESSAGES_OPEN);
  for (let i = 0; i < messages.length; i++) {
    if (i) parts.push(COMMA);
    parts.push(jsonOf(messages[i]));
  }
  parts.push(CLOSE);
  return Buffer.concat(parts);
}

export function buildRequest(api: ApiName, b: ChatRequest, o: BuildOptions): BuiltRequest {
  const headers: Record<string, string> = { 'content-type': 'application/json', 'x-session-id': o.sessionId };
  if (api === 'anthropic') {
    headers['anthropic-version'] = ANTHROPIC_VERSION;
    if (o.key) headers['x-api-key'] = o.key;
    return { path: '/v1/messages', headers, body: JSON.stringify(anthropicBody(b, o)) };
  }
  if (o.key) headers.authorization = `Bearer ${o.key}`;
  if (api === 'responses') return { path: '/v1/responses', headers, body: JSON.stringify(responsesBody(b, o)) };
  return { path: '/v1/chat/completions', headers, body: chatJson(b, o) };
}

// ---------------------------------------------------------------- answers

function errorOf(j: Json): string | undefined {
  const e = j.error;
  if (isObj(e)) return typeof e.message === 'string' ? e.message : JSON.stringify(e);
  if (typeof e === 'string') return e;
  return undefined;
}

function chatUsage(u: unknown): UsageCounts | undefined {
  if (!isObj(u)) return undefined;
  const d = isObj(u.prompt_tokens_details) ? u.prompt_tokens_details : {};
  return { prompt: num(u.prompt_tokens), cached: num(d.cached_tokens), completion: num(u.completion_tokens) };
}

function anthropicUsage(u: unknown, into?: UsageCounts): UsageCounts | undefined {
  if (!isObj(u)) return into;
  const out = into ?? { prompt: 0, cached: 0, completion: 0 };
  // input_tokens counts only the uncached part; the prompt is all three
  if ('input_tokens' in u || 'cache_read_input_tokens' in u) {
    out.prompt = num(u.input_tokens) + num(u.cache_read_input_tokens) + num(u.cache_creation_input_tokens);
    out.cached = num(u.cache_read_input_tokens);
  }
  if ('output_tokens' in u) out.completion = num(u.output_tokens);
  return out;
}

function responsesUsage(u: unknown): UsageCounts | undefined {
  if (!isObj(u)) return undefined;
  const d = isObj(u.input_tokens_details) ? u.input_tokens_details : {};
  return { prompt: num(u.input_tokens), cached: num(d.cached_tokens), completion: num(u.output_tokens) };
}

function fromChatJson(j: Json): ParsedAnswer {
  const choice = Array.isArray(j.choices) && isObj(j.choices[0]) ? j.choices[0] : undefined;
  const msg = choice && isObj(choice.message) ? choice.message : undefined;
  const answer: ReceivedAnswer | undefined = msg
    ? {
        content: typeof msg.content === 'string' ? msg.content : null,
        ...(Array.isArray(msg.tool_calls) && msg.tool_calls.length ? { tool_calls: msg.tool_calls as ToolCall[] } : {}),
      }
    : undefined;
  return {
    answer,
    usage: chatUsage(j.usage),
    finish: typeof choice?.finish_reason === 'string' ? choice.finish_reason : undefined,
    error: errorOf(j),
  };
}

function fromAnthropicJson(j: Json): ParsedAnswer {
  if (j.type === 'error') return { error: errorOf(j) ?? 'error' };
  const blocks = Array.isArray(j.content) ? j.content.filter(isObj) : [];
  const text = blocks
    .filter((b) => b.type === 'text')
    .map((b) => String(b.text ?? ''))
    .join('');
  const calls: ToolCall[] = blocks
    .filter((b) => b.type === 'tool_use')
    .map((b) => ({
      id: String(b.id ?? ''),
      type: 'function',
      function: { name: String(b.name ?? ''), arguments: JSON.stringify(b.input ?? {}) },
    }));
  return {
    answer: { content: text || (calls.length ? null : ''), ...(calls.length ? { tool_calls: calls } : {}) },
    usage: anthropicUsage(j.usage),
    finish: typeof j.stop_reason === 'string' ? j.stop_reason : undefined,
  };
}

function fromResponsesJson(j: Json): ParsedAnswer {
  const resp = isObj(j.response) ? j.response : j;
  const items = Array.isArray(resp.output) ? resp.output.filter(isObj) : [];
  let text = '';
  const calls: ToolCall[] = [];
  for (const it of items) {
    if (it.type === 'message' && Array.isArray(it.content)) {
      for (const p of it.content) if (isObj(p) && p.type === 'output_text') text += String(p.text ?? '');
    } else if (it.type === 'function_call') {
      calls.push({
        id: String(it.call_id ?? it.id ?? ''),
        type: 'function',
        function: { name: String(it.name ?? ''), arguments: String(it.arguments ?? '{}') },
      });
    }
  }
  return {
    answer: { content: text || (calls.length ? null : ''), ...(calls.length ? { tool_calls: calls } : {}) },
    usage: responsesUsage(resp.usage),
    finish: typeof resp.status === 'string' ? resp.status : undefined,
    error: errorOf(resp),
  };
}

/** The `data:` payloads of an SSE body, with the event name each came under. */
export function* sseEvents(text: string): Generator<{ event?: string; data: string }> {
  let event: string | undefined;
  let data: string[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line === '') {
      if (data.length) yield { event, data: data.join('\n') };
      event = undefined;
      data = [];
    } else if (line.startsWith('event:')) event = line.slice(6).trim();
    else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
  }
  if (data.length) yield { event, data: data.join('\n') };
}

function parseJson(s: string): Json | undefined {
  try {
    const v = JSON.parse(s);
    return isObj(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

function fromChatStream(text: string): ParsedAnswer {
  let content = '';
  const calls: { id: string; name: string; args: string }[] = [];
  const out: ParsedAnswer = {};
  for (const { data } of sseEvents(text)) {
    if (data === '[DONE]') continue;
    const j = parseJson(data);
    if (!j) continue;
    if (j.error) out.error = errorOf(j);
    if (j.usage) out.usage = chatUsage(j.usage);
    const choice = Array.isArray(j.choices) && isObj(j.choices[0]) ? j.choices[0] : undefined;
    if (!choice) continue;
    if (typeof choice.finish_reason === 'string') out.finish = choice.finish_reason;
    const d = isObj(choice.delta) ? choice.delta : {};
    if (typeof d.content === 'string') content += d.content;
    if (Array.isArray(d.tool_calls)) {
      for (const t of d.tool_calls.filter(isObj)) {
        const i = num(t.index);
        const c = (calls[i] ??= { id: '', name: '', args: '' });
        if (typeof t.id === 'string') c.id = t.id;
        const f = isObj(t.function) ? t.function : {};
        if (typeof f.name === 'string') c.name += f.name;
        if (typeof f.arguments === 'string') c.args += f.arguments;
      }
    }
  }
  const tc = calls
    .filter(Boolean)
    .map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.args } }));
  out.answer = { content: content || (tc.length ? null : ''), ...(tc.length ? { tool_calls: tc } : {}) };
  return out;
}

function fromAnthropicStream(body: string): ParsedAnswer {
  const blocks: { type: string; text: string; id?: string; name?: string }[] = [];
  const out: ParsedAnswer = {};
  let usage: UsageCounts | undefined;
  for (const { data } of sseEvents(body)) {
    const j = parseJson(data);
    if (!j) continue;
    switch (j.type) {
      case 'message_start':
        usage = anthropicUsage(isObj(j.message) ? j.message.usage : undefined, usage);
        break;
      case 'content_block_start': {
        const b = isObj(j.content_block) ? j.content_block : {};
        blocks[num(j.index)] = {
          type: String(b.type ?? 'text'),
          text: '',
          id: b.id as string | undefined,
          name: b.name as string | undefined,
        };
        break;
      }
      case 'content_block_delta': {
        const d = isObj(j.delta) ? j.delta : {};
        const b = (blocks[num(j.index)] ??= { type: 'text', text: '' });
        if (d.type === 'text_delta') b.text += String(d.text ?? '');
        else if (d.type === 'input_json_delta') b.text += String(d.partial_json ?? '');
        break;
      }
      case 'message_delta': {
        usage = anthropicUsage(j.usage, usage);
        const d = isObj(j.delta) ? j.delta : {};
        if (typeof d.stop_reason === 'string') out.finish = d.stop_reason;
        break;
      }
      case 'error':
        out.error = errorOf(j) ?? 'error';
        break;
    }
  }
  const text = blocks
    .filter((b) => b && b.type === 'text')
    .map((b) => b.text)
    .join('');
  const calls = blocks
    .filter((b) => b && b.type === 'tool_use')
    .map((b) => ({ id: b.id ?? '', type: 'function', function: { name: b.name ?? '', arguments: b.text || '{}' } }));
  out.answer = { content: text || (calls.length ? null : ''), ...(calls.length ? { tool_calls: calls } : {}) };
  out.usage = usage;
  return out;
}

function fromResponsesStream(text: string): ParsedAnswer {
  let last: ParsedAnswer = {};
  for (const { event, data } of sseEvents(text)) {
    const j = parseJson(data);
    if (!j) continue;
    const type = typeof j.type === 'string' ? j.type : event;
    if (type === 'response.completed' || type === 'response.incomplete' || type === 'response.failed')
      last = fromResponsesJson(j);
    else if (type === 'error')
      last = { ...last, error: errorOf(j) ?? (typeof j.message === 'string' ? j.message : 'error') };
  }
  return last;
}

/** Reads a complete answer body (JSON, or the whole SSE stream when `stream`). */
export function parseAnswer(api: ApiName, stream: boolean, body: string): ParsedAnswer {
  if (stream && !body.trimStart().startsWith('{')) {
    if (api === 'anthropic') return fromAnthropicStream(body);
    if (api === 'responses') return fromResponsesStream(body);
    return fromChatStream(body);
  }
  const j = parseJson(body);
  if (!j) return { error: body ? `not JSON: ${body.slice(0, 120)}` : 'empty body' };
  if (api === 'anthropic') return fromAnthropicJson(j);
  if (api === 'responses') return fromResponsesJson(j);
  return fromChatJson(j);
}
