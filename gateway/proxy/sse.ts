// Relays an upstream SSE stream to the client frame by frame while learning from it: the first
// content/tool-call delta (TTFT), the usage block, and the assistant message (for the pipeline).
// Frames are forwarded as the original bytes unless they must change: when the client did not ask
// for usage, the usage-only final chunk is dropped and `usage` keys are removed from other chunks.
// With a stream translator (Anthropic Messages, OpenAI Responses) each parsed chunk is handed to
// it and only its events reach the client; `[DONE]`, comments and non-JSON frames are not forwarded.
// Cost: one JSON.parse per frame (frames are small); O(frame) re-serialisation only when edited.
import type { ChatMessage, ToolCall } from '../../middleware/types.ts';
import { STREAM_ERROR_CODE, streamErrorFrames } from '../../middleware/errors.ts';
import type { ShapedError, StreamTranslator } from '../ingress/types.ts';
import { extractUsage, type Usage } from './usage.ts';

const FRAME_END = '\n\n';

interface ToolCallDelta {
  index?: number;
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: string };
}

interface ChunkChoice {
  index?: number;
  text?: string;
  finish_reason?: string | null;
  delta?: {
    role?: string;
    content?: string | null;
    reasoning_content?: string | null;
    reasoning?: string | null;
    tool_calls?: ToolCallDelta[];
  };
}

/** Choices whose finish_reason is kept (n > this is rare; traces need no more). */
const MAX_FINISH_REASONS = 16;

export class SseRelay {
  usage: Usage | undefined;
  /** finish_reason of each choice, by index, as the stream reported it (traces). */
  readonly finishReasons: string[] = [];
  /** performance.now() of the first content/tool-call delta. */
  firstTokenAt: number | undefined;
  sawDone = false;
  private pending = '';
  private content = '';
  private reasoning = '';
  private readonly toolCalls: ToolCall[] = [];

  constructor(
    private readonly clientWantsUsage: boolean,
    private readonly translator?: StreamTranslator,
    /** The engine adapter's usage reader. */
    private readonly readUsage: (payload: unknown) => Usage | undefined = extractUsage,
  ) {}

  /** Feeds upstream bytes; returns what to write to the client now ('' when nothing). */
  push(chunk: string): string {
    this.pending += chunk;
    // Engines may emit \r\n; normalise only when present so the common case stays a plain search.
    if (this.pending.includes('\r')) this.pending = this.pending.replace(/\r\n/g, '\n');
    let out = '';
    let start = 0;
    for (;;) {
      const end = this.pending.indexOf(FRAME_END, start);
      if (end < 0) break;
      out += this.frame(this.pending.slice(start, end + 2));
      start = end + 2;
    }
    this.pending = start ? this.pending.slice(start) : this.pending;
    return out;
  }

  /** Bytes left without a frame terminator when the upstream ended (forwarded as-is). */
  flush(): string {
    const rest = this.pending;
    this.pending = '';
    return rest.trim() ? this.frame(rest.endsWith('\n') ? rest + '\n' : rest + FRAME_END) : '';
  }

  /** What ends a stream the upstream finished: the unterminated remainder, then the API's closing events. */
  async end(): Promise<string> {
    const rest = this.flush();
    return this.translator ? rest + (await this.translator.done()) : rest;
  }

  /** The frames that end a stream the upstream broke (or the gateway stopped), in the client's API. */
  errorFrames(err: ShapedError): string {
    if (this.translator) return this.translator.error(err);
    if (err.code === STREAM_ERROR_CODE) return streamErrorFrames(err.message);
    return `data: ${JSON.stringify({ error: { message: err.message, type: err.type, code: err.code, param: err.param } })}\n\ndata: [DONE]\n\n`;
  }

  private frame(raw: string): string {
    // A frame may hold comment lines or several data lines; only a single `data: {...}` is inspected.
    let dataAt = 0;
    if (!raw.startsWith('data:')) {
      dataAt = raw.indexOf('\ndata:') + 1;
      if (dataAt === 0) return this.translator ? '' : raw;
    }
    const payload = raw.slice(dataAt + 5, raw.indexOf('\n', dataAt)).trim();
    if (payload === '[DONE]') {
      this.sawDone = true;
      return this.translator ? '' : raw;
    }
    let obj: { choices?: ChunkChoice[]; usage?: unknown };
    try {
      obj = JSON.parse(payload);
    } catch {
      return this.translator ? '' : raw; // not JSON: not ours to judge, forwarded untouched to OpenAI clients
    }
    if (!obj || typeof obj !== 'object') return this.translator ? '' : raw;
    const u = this.readUsage(obj);
    if (u) this.usage = u;
    const choices = Array.isArray(obj.choices) ? obj.choices : [];
    for (const c of choices) this.learn(c);
    if (this.translator) return this.translator.chunk(obj as Record<string, unknown>);
    if (this.clientWantsUsage || !('usage' in obj)) return raw;
    if (choices.length === 0 && obj.usage) return ''; // the usage-only chunk the client did not ask for
    delete obj.usage;
    // Only the data line changes: event:, id: and comment lines of the frame travel as they came.
    const lineEnd = raw.indexOf('\n', dataAt);
    return raw.slice(0, dataAt) + `data: ${JSON.stringify(obj)}` + raw.slice(lineEnd);
  }

  private learn(c: ChunkChoice): void {
    if (typeof c.finish_reason === 'string' && (c.index ?? 0) < MAX_FINISH_REASONS)
      this.finishReasons[c.index ?? 0] = c.finish_reason;
    if ((c.index ?? 0) !== 0) {
      if (this.firstTokenAt === undefined && (c.delta?.content || c.delta?.tool_calls?.length || c.text))
        this.firstTokenAt = performance.now();
      return;
    }
    const d = c.delta;
    if (typeof c.text === 'string' && c.text) {
      this.firstTokenAt ??= performance.now();
      this.content += c.text;
    }
    if (!d) return;
    // Reasoning tokens are generated tokens too: they count for time to first token.
    const reasoning = d.reasoning_content ?? d.reasoning;
    if (d.content || reasoning || d.tool_calls?.length) this.firstTokenAt ??= performance.now();
    if (d.content) this.content += d.content;
    if (reasoning) this.reasoning += reasoning;
    for (const t of d.tool_calls ?? []) {
      const i = t.index ?? this.toolCalls.length;
      const tc = (this.toolCalls[i] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
      if (t.id) tc.id = t.id;
      if (t.type) tc.type = t.type;
      if (t.function?.name) tc.function.name += t.function.name;
      if (t.function?.arguments) tc.function.arguments += t.function.arguments;
    }
  }

  /** The assistant message assembled from choice 0's deltas. */
  assistant(): ChatMessage {
    const m: ChatMessage = { role: 'assistant', content: this.content || (this.toolCalls.length ? null : '') };
    if (this.reasoning) m.reasoning_content = this.reasoning;
    const calls = this.toolCalls.filter(Boolean);
    if (calls.length) m.tool_calls = calls;
    return m;
  }
}
