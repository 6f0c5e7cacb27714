// Chat completion -> Anthropic Messages answer, whole or as the Messages event stream
// (message_start, ping, content_block_start/delta/stop with text_delta, thinking_delta and
// input_json_delta, message_delta with usage, message_stop; `error` when the upstream fails).
// Usage: input_tokens are the UNCACHED prompt tokens, cache_read_input_tokens the cached ones;
// engines write every uncached prefix to their cache without a surcharge, so cache creation is 0.
// O(answer) whole; O(chunk) per stream chunk.
import { extractUsage, type ExtractedUsage } from '../accounting/record/extract.ts';
import type { AnthropicState } from './anthropic-request.ts';
import { signThinking } from './thinking-signature.ts';
import { argumentsObject, choiceView, firstChoice, reasoningOf, sseEvent, type ChunkDelta } from './chat-answer.ts';
import type { AnswerContext, ShapedError, StreamTranslator } from './types.ts';
import { randomHex } from './random-ids.ts';

type Obj = Record<string, unknown>;

export const messageId = (): string => `msg_${randomHex(12)}`;

export function stopReason(
  finish: string | null,
  stopString: string | null,
): { stop_reason: string; stop_sequence: string | null } {
  if (finish === 'length') return { stop_reason: 'max_tokens', stop_sequence: null };
  if (finish === 'tool_calls') return { stop_reason: 'tool_use', stop_sequence: null };
  if (finish === 'content_filter') return { stop_reason: 'refusal', stop_sequence: null };
  if (stopString) return { stop_reason: 'stop_sequence', stop_sequence: stopString };
  return { stop_reason: 'end_turn', stop_sequence: null };
}

export function anthropicUsage(u: ExtractedUsage | undefined, estimatedPrompt = 0): Obj {
  const prompt = u?.promptTokens ?? estimatedPrompt;
  const cached = u?.cachedTokens ?? 0;
  return {
    input_tokens: prompt - cached,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: cached,
    output_tokens: u?.outputTokens ?? 0,
  };
}

export function toAnthropicMessage(obj: Obj, usage: ExtractedUsage | undefined, ctx: AnswerContext): Obj {
  const v = choiceView(obj);
  const content: Obj[] = [];
  if (v.reasoning)
    content.push({
      type: 'thinking',
      thinking: v.reasoning,
      signature: signThinking(ctx.mac, ctx.tenant, v.reasoning),
    });
  if (v.content) content.push({ type: 'text', text: v.content });
  for (const t of v.toolCalls)
    content.push({ type: 'tool_use', id: t.id, name: t.function.name, input: argumentsObject(t.function.arguments) });
  return {
    id: messageId(),
    type: 'message',
    role: 'assistant',
    model: (ctx.state as AnthropicState).model,
    content,
    ...stopReason(v.finish, v.stopString),
    usage: anthropicUsage(usage, ctx.promptTokens),
  };
}

const ANTHROPIC_ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  415: 'invalid_request_error',
  429: 'rate_limit_error',
  503: 'overloaded_error',
  504: 'timeout_error',
};

/** Anthropic's error shape: {"type":"error","error":{"type","message"}}. */
export function anthropicErrorBody(err: ShapedError): unknown {
  const type = ANTHROPIC_ERROR_TYPES[err.status] ?? (err.status >= 500 ? 'api_error' : 'invalid_request_error');
  return { type: 'error', error: { type, message: err.message } };
}

type BlockKind = 'text' | 'thinking' | 'tool_use';

export class AnthropicStream implements StreamTranslator {
  private started = false;
  private index = -1;
  private open: BlockKind | undefined;
  /** Chat tool-call index -> block index (arguments of one call may arrive in many chunks). */
  private readonly toolBlocks = new Map<number, number>();
  private finish: string | null = null;
  private stopString: string | null = null;
  private usage: ExtractedUsage | undefined;
  private readonly id = messageId();
  /** Text of the open thinking block (signed when it closes). */
  private thinking = '';

  constructor(private readonly ctx: AnswerContext) {}

  private start(): string {
    if (this.started) return '';
    this.started = true;
    const message = {
      id: this.id,
      type: 'message',
      role: 'assistant',
      model: (this.ctx.state as AnthropicState).model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...anthropicUsage(undefined, this.ctx.promptTokens), output_tokens: 0 },
    };
    return sseEvent('message_start', { type: 'message_start', message }) + sseEvent('ping', { type: 'ping' });
  }

  private close(): string {
    if (!this.open) return '';
    let out = '';
    if (this.open === 'thinking') {
      // As Anthropic streams it: the block's signature in a signature_delta just before its stop.
      const signature = signThinking(this.ctx.mac, this.ctx.tenant, this.thinking);
      out = this.delta(this.index, { type: 'signature_delta', signature });
      this.thinking = '';
    }
    this.open = undefined;
    return out + sseEvent('content_block_stop', { type: 'content_block_stop', index: this.index });
  }

  private openBlock(kind: BlockKind, block: Obj): string {
    const out = this.close();
    this.index++;
    this.open = kind;
    return (
      out + sseEvent('content_block_start', { type: 'content_block_start', index: this.index, content_block: block })
    );
  }

  private delta(index: number, delta: Obj): string {
    return sseEvent('content_block_delta', { type: 'content_block_delta', index, delta });
  }

  chunk(obj: Obj): string {
    let out = this.start();
    const u = this.ctx.readUsage(obj);
    if (u) this.usage = u;
    const c = firstChoice(obj);
    if (!c) return out;
    if (typeof c.finish_reason === 'string') this.finish = c.finish_reason;
    if (typeof c.stop_reason === 'string') this.stopString = c.stop_reason;
    const d = (c.delta ?? {}) as ChunkDelta;
    const reasoning = reasoningOf(d);
    if (reasoning) {
      if (this.open !== 'thinking')
        out += this.openBlock('thinking', { type: 'thinking', thinking: '', signature: '' });
      out += this.delta(this.index, { type: 'thinking_delta', thinking: reasoning });
      this.thinking += reasoning;
    }
    if (typeof d.content === 'string' && d.content) {
      if (this.open !== 'text') out += this.openBlock('text', { type: 'text', text: '' });
      out += this.delta(this.index, { type: 'text_delta', text: d.content });
    }
    for (const t of d.tool_calls ?? []) {
      const ti = t.index ?? this.toolBlocks.size;
      let bi = this.toolBlocks.get(ti);
      if (bi === undefined) {
        out += this.openBlock('tool_use', {
          type: 'tool_use',
          id: t.id ?? `toolu_${this.id.slice(4)}_${ti}`,
          name: t.function?.name ?? '',
          input: {},
        });
        bi = this.index;
        this.toolBlocks.set(ti, bi);
      }
      const args = t.function?.arguments;
      if (args) out += this.delta(bi, { type: 'input_json_delta', partial_json: args });
    }
    return out;
  }

  done(): string {
    return (
      this.start() +
      this.close() +
      sseEvent('message_delta', {
        type: 'message_delta',
        delta: stopReason(this.finish, this.stopString),
        usage: anthropicUsage(this.usage, this.ctx.promptTokens),
      }) +
      sseEvent('message_stop', { type: 'message_stop' })
    );
  }

  error(err: ShapedError): string {
    return sseEvent('error', anthropicErrorBody(err));
  }
}
