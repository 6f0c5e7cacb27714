// The engine core behind the HTTP layer: turns a request body into prompt ids (rendered
// template, one sequence), picks the output, books cache and batch time, and on completion
// inserts what was generated. No sockets here, so the calibration and tests can reason about
// it directly. Output ids for the cache are the template's own rendering of the answer
// (what a model following its format emits), with any reasoning first — templates drop
// reasoning from history, so the next prompt diverges right after it, as on the engines.
import { BlockCache, type BlockEventSink } from './block-cache.ts';
import { RadixCache, type RadixEventSink } from './radix-cache.ts';
import type { CacheLease, PrefixCache } from './prefix-cache.ts';
import { BatchClock, type Schedule } from './timing.ts';
import { generate, toolTurnsOf, type GenerateRequest, type ToolCall, type ToolSpec } from './generate.ts';
import type { ChatMessage, WorkerTokenizer } from './tokenize.ts';
import type { SimWorkerOptions } from './options.ts';
import { workspaceOf } from './workspace.ts';

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly param: string | null = null,
  ) {
    super(message);
  }
}

/** Sim-only extension: answer with this message instead of a generated one (replays). */
export interface ForcedOutput {
  content?: string | null;
  tool_calls?: ToolCall[];
  reasoning_content?: string;
}

export interface Prepared {
  promptIds: number[];
  /** vLLM `cache_salt` (SGLang also `extra_key`): the prefix-cache namespace of this request. */
  salt?: string;
  content: string | null;
  toolCalls: ToolCall[];
  reasoning?: string;
  /** Ids streamed as content (plain text answers). */
  contentIds: number[];
  /** Ids the engine generated (reported as completion_tokens, cached on finish). */
  outputIds: number[];
  finishReason: string;
}

export interface Admission {
  prepared: Prepared;
  lease: CacheLease;
  schedule: Schedule;
}

export interface EngineStats {
  requests: number;
  promptTokens: number;
  cachedTokens: number;
  completionTokens: number;
}

function startsWith(a: number[], prefix: number[]): boolean {
  if (a.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (a[i] !== prefix[i]) return false;
  return true;
}

/** vLLM rejects a cache_salt that is not a non-empty string; SGLang's native field is extra_key. */
function saltOf(body: Record<string, unknown>, flavor: string): string | undefined {
  const v = body.cache_salt ?? (flavor === 'sglang' ? body.extra_key : undefined);
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || v.length === 0)
    throw new HttpError(400, 'cache_salt must be a non-empty string', 'cache_salt');
  return v;
}

/** Text of the messages (string content and text parts), where an agent names its workspace. */
/** Qwen3-style templates think unless the request says chat_template_kwargs.enable_thinking: false. */
function thinkingOn(body: Record<string, unknown>): boolean {
  const k = body.chat_template_kwargs as { enable_thinking?: unknown } | undefined;
  return k?.enable_thinking !== false;
}

/** A reasoning model's thought before its answer: deterministic, about the last user turn. */
function reasoningFor(messages: ChatMessage[], tool: boolean): string {
  let last = '';
  for (const m of messages) if (m.role === 'user') last = promptText([m]);
  const gist = last.replace(/\s+/g, ' ').trim().slice(0, 80);
  return `The user asks: "${gist}". ${tool ? 'A tool call will tell me more.' : 'I can answer that directly.'}`;
}

function promptText(messages: ChatMessage[]): string {
  const parts: string[] = [];
  for (const m of messages) {
    const c = m.content;
    if (typeof c === 'string') parts.push(c);
    else if (Array.isArray(c))
      for (const p of c)
        if (p && typeof (p as { text?: unknown }).text === 'string') parts.push((p as { text: string }).text);
  }
  return parts.join('\n');
}

function nonNegInt(body: Record<string, unknown>, key: string): number | undefined {
  const sp = body.sampling_params as Record<string, unknown> | undefined;
  const v = body[key] ?? (key === 'min_tokens' ? sp?.min_new_tokens : undefined);
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0)
    throw new HttpError(400, `${key} must be a non-negative integer`, key);
  return v;
}

/** Sampling knobs every generate call honours: vLLM ignore_eos / min_tokens (SGLang's in sampling_params). */
function lengthParams(body: Record<string, unknown>): Pick<GenerateRequest, 'ignoreEos' | 'minTokens'> {
  const sp = body.sampling_params as Record<string, unknown> | undefined;
  return { ignoreEos: body.ignore_eos === true || sp?.ignore_eos === true, minTokens: nonNegInt(body, 'min_tokens') };
}

function maxTokensOf(body: Record<string, unknown>): number | undefined {
  const v =
    body.max_completion_tokens ??
    body.max_tokens ??
    (body.sampling_params as Record<string, unknown> | undefined)?.max_new_tokens;
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0)
    throw new HttpError(400, 'max_tokens must be a non-negative integer', 'max_tokens');
  return v;
}

export class SimEngine {
  readonly cache: PrefixCache;
  readonly clock: BatchClock;
  readonly totals: EngineStats = { requests: 0, promptTokens: 0, cachedTokens: 0, completionTokens: 0 };
  private readonly t0 = performance.now();

  constructor(
    readonly opts: SimWorkerOptions,
    readonly tok: WorkerTokenizer,
    kvEvents?: BlockEventSink & RadixEventSink,
  ) {
    this.cache =
      opts.flavor === 'sglang'
        ? new RadixCache(opts.kvTokens, kvEvents)
        : new BlockCache(opts.kvTokens, opts.blockSize, {}, kvEvents);
    this.clock = new BatchClock(opts.timing, opts.maxRunning);
  }

  checkModel(body: Record<string, unknown>): void {
    const model = body.model;
    if (model !== undefined && model !== this.opts.model)
      throw new HttpError(404, `The model \`${String(model)}\` does not exist.`, 'model');
  }

  /** Prompt ids of a chat body: the chat template rendered, encoded as one sequence. */
  chatPromptIds(body: Record<string, unknown>): number[] {
    const messages = body.messages;
    if (!Array.isArray(messages) || messages.length === 0)
      throw new HttpError(400, 'messages must be a non-empty array', 'messages');
    for (const m of messages)
      if (!m || typeof m !== 'object' || typeof (m as ChatMessage).role !== 'string')
        throw new HttpError(400, 'each message needs a role', 'messages');
    const tools = Array.isArray(body.tools) ? body.tools : undefined;
    let text: string;
    try {
      text = this.tok.renderChat(messages as ChatMessage[], {
        tools,
        addGenerationPrompt: body.add_generation_prompt !== false,
      });
    } catch (err) {
      throw new HttpError(400, `chat template failed: ${(err as Error).message}`, 'messages');
    }
    return this.tok.encodeCached(text);
  }

  /** Prompt ids of a completions / generate / tokenize prompt (string or ids). */
  textPromptIds(prompt: unknown, addSpecial = true): number[] {
    let p = prompt;
    if (Array.isArray(p) && p.length === 1 && (typeof p[0] === 'string' || Array.isArray(p[0]))) p = p[0];
    if (typeof p === 'string') {
      const ids = this.tok.encodeCached(p);
      return addSpecial && this.tok.bosId !== undefined ? [this.tok.bosId, ...ids] : ids;
    }
    if (Array.isArray(p) && p.every((x) => Number.isInteger(x) && x >= 0)) return p as number[];
    throw new HttpError(400, 'prompt must be a string or a list of token ids', 'prompt');
  }

  private checkLength(promptLen: number, maxTokens: number | undefined): void {
    const total = promptLen + (maxTokens ?? 0);
    if (total > this.opts.maxModelLen) {
      throw new HttpError(
        400,
        `This model's maximum context length is ${this.opts.maxModelLen} tokens. However, you requested ${total} tokens (${promptLen} in the messages, ${maxTokens ?? 0} in the completion). Please reduce the length of the messages or completion.`,
        'messages',
      );
    }
  }

  prepareChat(body: Record<string, unknown>): Prepared {
    this.checkModel(body);
    const promptIds = this.chatPromptIds(body);
    const maxTokens = maxTokensOf(body);
    this.checkLength(promptIds.length, maxTokens);
    const tools = Array.isArray(body.tools) ? (body.tools as ToolSpec[]) : undefined;
    const forced = body.sim_output as ForcedOutput | undefined;
    let content: string | null;
    let toolCalls: ToolCall[];
    let reasoning: string | undefined;
    let contentIds: number[];
    let finishReason: string;
    if (forced && typeof forced === 'object') {
      content = forced.content ?? null;
      toolCalls = forced.tool_calls ?? [];
      reasoning = forced.reasoning_content || undefined;
      contentIds = content ? this.tok.encodeCached(content) : [];
      finishReason = toolCalls.length ? 'tool_calls' : 'stop';
    } else {
      const messages = body.messages as ChatMessage[];
      const g = generate(this.tok, {
        promptIds,
        seed: this.opts.seed,
        maxTokens,
        contextLeft: this.opts.maxModelLen - promptIds.length,
        ...lengthParams(body),
        tools,
        toolChoice: body.tool_choice,
        toolCallRate: this.opts.toolCallRate,
        toolTurns: toolTurnsOf(messages),
        maxToolTurns: this.opts.maxToolTurns,
        workspace: tools?.length ? workspaceOf(promptText(messages), this.opts.workspaceRoots) : undefined,
      });
      ({ content, toolCalls, contentIds, finishReason } = g);
      if (this.opts.reasoning && thinkingOn(body)) reasoning = reasoningFor(messages, toolCalls.length > 0);
    }
    const outputIds = this.answerIds(body, promptIds, { content, toolCalls, contentIds }, finishReason === 'length');
    const withReasoning = reasoning ? [...this.tok.encodeCached(reasoning), ...outputIds] : outputIds;
    return {
      promptIds,
      salt: saltOf(body, this.opts.flavor),
      content,
      toolCalls,
      reasoning,
      contentIds,
      outputIds: withReasoning,
      finishReason,
    };
  }

  /** The ids of the answer as the template renders it after the prompt; text ids if it does not extend. */
  private answerIds(
    body: Record<string, unknown>,
    promptIds: number[],
    a: { content: string | null; toolCalls: ToolCall[]; contentIds: number[] },
    truncated: boolean,
  ): number[] {
    if (truncated) return a.contentIds;
    const messages = body.messages as ChatMessage[];
    const tools = Array.isArray(body.tools) ? body.tools : undefined;
    const assistant: ChatMessage = { role: 'assistant', content: a.content ?? (a.toolCalls.length ? null : '') };
    if (a.toolCalls.length) assistant.tool_calls = a.toolCalls;
    try {
      const full = this.tok.encodeCached(
        this.tok.renderChat([...messages, assistant], { tools, addGenerationPrompt: false }),
      );
      if (startsWith(full, promptIds) && full.length > promptIds.length) return full.slice(promptIds.length);
    } catch {
      /* template refused the answer shape: fall back to the text ids */
    }
    const text = a.toolCalls.length ? a.toolCalls.map((c) => c.function.name + c.function.arguments).join('') : '';
    return [...(a.contentIds.length ? a.contentIds : this.tok.encodeCached(text)), this.tok.eosId];
  }

  prepareText(body: Record<string, unknown>, prompt: unknown): Prepared {
    this.checkModel(body);
    const promptIds = this.textPromptIds(prompt);
    if (promptIds.length === 0) throw new HttpError(400, 'prompt is empty', 'prompt');
    const maxTokens =
      maxTokensOf(body) ?? (body.max_tokens === undefined && body.sampling_params === undefined ? 16 : undefined);
    this.checkLength(promptIds.length, maxTokens);
    const g = generate(this.tok, {
      promptIds,
      seed: this.opts.seed,
      maxTokens,
      contextLeft: this.opts.maxModelLen - promptIds.length,
      ...lengthParams(body),
    });
    return {
      promptIds,
      salt: saltOf(body, this.opts.flavor),
      content: g.content,
      toolCalls: [],
      contentIds: g.contentIds,
      outputIds: g.contentIds,
      finishReason: g.finishReason,
    };
  }

  /** Modeled "now" in seconds: wall time, stretched by 1/timeScale when sleeping is scaled. */
  modeledNow(): number {
    const wall = (performance.now() - this.t0) / 1000;
    return this.opts.timeScale > 0 ? wall / this.opts.timeScale : wall;
  }

  admit(prepared: Prepared): Admission {
    const lease = this.cache.begin(prepared.promptIds, prepared.salt);
    const schedule = this.clock.schedule(
      this.modeledNow(),
      prepared.promptIds.length,
      lease.cachedTokens,
      prepared.outputIds.length,
    );
    this.totals.requests++;
    this.totals.promptTokens += prepared.promptIds.length;
    this.totals.cachedTokens += lease.cachedTokens;
    this.totals.completionTokens += prepared.outputIds.length;
    return { prepared, lease, schedule };
  }

  /** `generated` = how many output ids were produced before the request ended. */
  complete(a: Admission, generated = a.prepared.outputIds.length): void {
    this.cache.finish(a.lease, a.prepared.outputIds.slice(0, generated));
  }
}
