// Chat completion -> OpenAI Response object, whole or as the Responses event stream
// (response.created, response.in_progress, output_item.added/done, content_part.added/done,
// output_text.delta/done, reasoning_text.delta/done, function_call_arguments.delta/done,
// custom_tool_call_input.done (freeform tools),
// response.completed or response.incomplete; `error` when the upstream fails). A completed answer
// is stored (unless `store: false`) before its last event is sent, so a follow-up naming it by
// previous_response_id always finds it. O(answer) whole; O(chunk) per stream chunk.
import type { ChatMessage, ToolCall } from '../../middleware/types.ts';
import { extractUsage, type ExtractedUsage } from '../accounting/record/extract.ts';
import {
  argumentsObject,
  choiceView,
  firstChoice,
  reasoningOf,
  sseEvent,
  type ChoiceView,
  type ChunkDelta,
} from './chat-answer.ts';
import { sealReasoning } from './reasoning-seal.ts';
import { CUSTOM_TOOL_INPUT, type ResponsesState } from './responses-request.ts';
import type { ResponseStore } from './responses-store.ts';
import type { AnswerContext, ShapedError, StreamTranslator } from './types.ts';
import { randomHex } from './random-ids.ts';

type Obj = Record<string, unknown>;

export const newId = (prefix: string): string => `${prefix}_${randomHex(12)}`;

export function responsesUsage(u: ExtractedUsage | undefined, estimatedPrompt: number): Obj {
  const input = u?.promptTokens ?? estimatedPrompt;
  const output = u?.outputTokens ?? 0;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: u?.cachedTokens ?? 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: input + output,
  };
}

function skeleton(s: ResponsesState, status: string): Obj {
  return {
    id: s.id,
    object: 'response',
    created_at: s.createdAt,
    status,
    error: null,
    incomplete_details: null,
    model: s.model,
    output: [],
    usage: null,
    store: s.store,
    ...s.echo,
  };
}

function reasoningItem(id: string, text: string, ctx: AnswerContext): Obj {
  const item: Obj = { type: 'reasoning', id, summary: [], content: [{ type: 'reasoning_text', text }] };
  if ((ctx.state as ResponsesState).sealReasoning) item.encrypted_content = sealReasoning(ctx.mac, ctx.tenant, text);
  return item;
}
const textPart = (text: string): Obj => ({ type: 'output_text', text, annotations: [], logprobs: [] });
const messageItem = (id: string, text: string, status: string): Obj => ({
  type: 'message',
  id,
  status,
  role: 'assistant',
  content: status === 'completed' ? [textPart(text)] : [],
});
const callItem = (id: string, c: ToolCall, status: string): Obj => ({
  type: 'function_call',
  id,
  call_id: c.id,
  name: c.function.name,
  arguments: c.function.arguments,
  status,
});

/** A freeform tool's call: its `input` string back out of the function form's arguments. */
function customInput(args: string): string {
  const v = argumentsObject(args)[CUSTOM_TOOL_INPUT];
  return typeof v === 'string' ? v : args;
}
const customItem = (id: string, c: ToolCall, status: string): Obj => ({
  type: 'custom_tool_call',
  id,
  call_id: c.id,
  name: c.function.name,
  input: customInput(c.function.arguments),
  status,
});

function outputItems(v: ChoiceView, custom: string[], ctx: AnswerContext): Obj[] {
  const out: Obj[] = [];
  if (v.reasoning) out.push(reasoningItem(newId('rs'), v.reasoning, ctx));
  if (v.content) out.push(messageItem(newId('msg'), v.content, 'completed'));
  for (const c of v.toolCalls)
    out.push(
      custom.includes(c.function.name)
        ? customItem(newId('ctc'), c, 'completed')
        : callItem(newId('fc'), c, 'completed'),
    );
  return out;
}

function finalResponse(
  s: ResponsesState,
  v: ChoiceView,
  output: Obj[],
  usage: ExtractedUsage | undefined,
  estimatedPrompt: number,
): Obj {
  const r = skeleton(s, v.finish === 'length' ? 'incomplete' : 'completed');
  r.output = output;
  r.usage = responsesUsage(usage, estimatedPrompt);
  if (v.finish === 'length') r.incomplete_details = { reason: 'max_output_tokens' };
  return r;
}

function assistantMessage(v: ChoiceView): ChatMessage {
  const m: ChatMessage = { role: 'assistant', content: v.content || (v.toolCalls.length ? null : '') };
  if (v.reasoning) m.reasoning_content = v.reasoning;
  if (v.toolCalls.length)
    m.tool_calls = v.toolCalls.map((c) => ({
      id: c.id,
      type: 'function',
      function: { name: c.function.name, arguments: c.function.arguments },
    }));
  return m;
}

async function keep(store: ResponseStore, ctx: AnswerContext, v: ChoiceView, response: Obj): Promise<void> {
  const s = ctx.state as ResponsesState;
  if (!s.store) return;
  await store.put(ctx.tenant, s.id, { response, messages: [...s.conversation, assistantMessage(v)] });
}

export async function toResponseObject(
  store: ResponseStore,
  obj: Obj,
  usage: ExtractedUsage | undefined,
  ctx: AnswerContext,
): Promise<Obj> {
  const v = choiceView(obj);
  const s = ctx.state as ResponsesState;
  const r = finalResponse(s, v, outputItems(v, s.customTools, ctx), usage, ctx.promptTokens);
  await keep(store, ctx, v, r);
  return r;
}

export function responsesErrorBody(err: ShapedError): unknown {
  return { error: { message: err.message, type: err.type, code: err.code, param: err.param } };
}

type Open =
  | { kind: 'reasoning'; id: string; index: number; text: string }
  | { kind: 'message'; id: string; index: number; text: string }
  | { kind: 'call'; id: string; index: number; call: ToolCall };

export class ResponsesStream implements StreamTranslator {
  private seq = 0;
  private started = false;
  private open: Open | undefined;
  private readonly items: Obj[] = [];
  private readonly calls = new Map<number, Open & { kind: 'call' }>();
  private readonly view: ChoiceView = { content: '', reasoning: '', toolCalls: [], finish: null, stopString: null };
  private usage: ExtractedUsage | undefined;
  private readonly s: ResponsesState;

  constructor(
    private readonly ctx: AnswerContext,
    private readonly store: ResponseStore,
  ) {
    this.s = ctx.state as ResponsesState;
  }

  private ev(type: string, data: Obj): string {
    return sseEvent(type, { type, sequence_number: this.seq++, ...data });
  }

  private start(): string {
    if (this.started) return '';
    this.started = true;
    return (
      this.ev('response.created', { response: skeleton(this.s, 'in_progress') }) +
      this.ev('response.in_progress', { response: skeleton(this.s, 'in_progress') })
    );
  }

  private close(): string {
    const o = this.open;
    if (!o) return '';
    this.open = undefined;
    const at = { item_id: o.id, output_index: o.index };
    let item: Obj;
    let out = '';
    if (o.kind === 'reasoning') {
      item = reasoningItem(o.id, o.text, this.ctx);
      out += this.ev('response.reasoning_text.done', { ...at, content_index: 0, text: o.text });
    } else if (o.kind === 'message') {
      item = messageItem(o.id, o.text, 'completed');
      out += this.ev('response.output_text.done', { ...at, content_index: 0, text: o.text, logprobs: [] });
      out += this.ev('response.content_part.done', { ...at, content_index: 0, part: textPart(o.text) });
    } else if (this.s.customTools.includes(o.call.function.name)) {
      // The function form's arguments are JSON around the input: it is only whole at the end.
      item = customItem(o.id, o.call, 'completed');
      out += this.ev('response.custom_tool_call_input.done', { ...at, input: item.input });
    } else {
      item = callItem(o.id, o.call, 'completed');
      out += this.ev('response.function_call_arguments.done', {
        ...at,
        name: o.call.function.name,
        arguments: o.call.function.arguments,
      });
    }
    this.items.push(item);
    return out + this.ev('response.output_item.done', { output_index: o.index, item });
  }

  private openItem(o: Open, item: Obj): string {
    const out = this.close();
    this.open = o;
    return out + this.ev('response.output_item.added', { output_index: o.index, item });
  }

  chunk(obj: Obj): string {
    let out = this.start();
    const u = this.ctx.readUsage(obj);
    if (u) this.usage = u;
    const c = firstChoice(obj);
    if (!c) return out;
    if (typeof c.finish_reason === 'string') this.view.finish = c.finish_reason;
    const d = (c.delta ?? {}) as ChunkDelta;
    const reasoning = reasoningOf(d);
    if (reasoning) {
      if (this.open?.kind !== 'reasoning') {
        const o: Open = {
          kind: 'reasoning',
          id: newId('rs'),
          index: this.items.length + (this.open ? 1 : 0),
          text: '',
        };
        out += this.openItem(o, { type: 'reasoning', id: o.id, summary: [], content: [] });
      }
      const o = this.open as Open & { kind: 'reasoning' };
      o.text += reasoning;
      this.view.reasoning += reasoning;
      out += this.ev('response.reasoning_text.delta', {
        item_id: o.id,
        output_index: o.index,
        content_index: 0,
        delta: reasoning,
      });
    }
    if (typeof d.content === 'string' && d.content) {
      if (this.open?.kind !== 'message') {
        const o: Open = { kind: 'message', id: newId('msg'), index: this.items.length + (this.open ? 1 : 0), text: '' };
        out += this.openItem(o, messageItem(o.id, '', 'in_progress'));
        out += this.ev('response.content_part.added', {
          item_id: o.id,
          output_index: o.index,
          content_index: 0,
          part: textPart(''),
        });
      }
      const o = this.open as Open & { kind: 'message' };
      o.text += d.content;
      this.view.content += d.content;
      out += this.ev('response.output_text.delta', {
        item_id: o.id,
        output_index: o.index,
        content_index: 0,
        delta: d.content,
        logprobs: [],
      });
    }
    for (const t of d.tool_calls ?? []) {
      const ti = t.index ?? this.calls.size;
      let o = this.calls.get(ti);
      if (!o) {
        const call: ToolCall = {
          id: t.id ?? newId('call'),
          type: 'function',
          function: { name: t.function?.name ?? '', arguments: '' },
        };
        const custom = this.s.customTools.includes(call.function.name);
        o = { kind: 'call', id: newId(custom ? 'ctc' : 'fc'), index: this.items.length + (this.open ? 1 : 0), call };
        this.calls.set(ti, o);
        this.view.toolCalls.push(call);
        out += this.openItem(
          o,
          custom ? { ...customItem(o.id, call, 'in_progress'), input: '' } : callItem(o.id, call, 'in_progress'),
        );
      }
      const args = t.function?.arguments;
      if (args) {
        o.call.function.arguments += args;
        if (!this.s.customTools.includes(o.call.function.name))
          out += this.ev('response.function_call_arguments.delta', {
            item_id: o.id,
            output_index: o.index,
            delta: args,
          });
      }
    }
    return out;
  }

  async done(): Promise<string> {
    const out = this.start() + this.close();
    const r = finalResponse(this.s, this.view, this.items, this.usage, this.ctx.promptTokens);
    await keep(this.store, this.ctx, this.view, r);
    return out + this.ev(r.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: r });
  }

  error(err: ShapedError): string {
    return this.ev('error', { code: err.code, message: err.message, param: err.param });
  }
}
