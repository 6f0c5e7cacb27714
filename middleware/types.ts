// Shared shapes of the context pipeline: the OpenAI chat request as the gateway sees it, the
// receipts each stage leaves, and the small interface the gateway calls. Pure types, no logic.

export interface ToolCall {
  id: string;
  type: 'function' | string;
  function: { name: string; arguments: string };
  [k: string]: unknown;
}

export interface ContentPart {
  type: string;
  text?: string;
  [k: string]: unknown;
}

export interface ChatMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool' | string;
  content?: string | ContentPart[] | null;
  name?: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  /** DeepSeek-R1 / Qwen3 style reasoning kept by some agents on assistant turns. */
  reasoning_content?: string;
  [k: string]: unknown;
}

export interface ToolDef {
  type: 'function' | string;
  function: { name: string; description?: string; parameters?: unknown; [k: string]: unknown };
  [k: string]: unknown;
}

export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  tools?: ToolDef[];
  stream?: boolean;
  [k: string]: unknown;
}

/** What one stage did, and why: every decision leaves one (docs/architecture.md, "Receipts"). */
export interface Receipt {
  stage: string;
  action: string;
  target?: string;
  tokens_before?: number;
  tokens_after?: number;
  reason: string;
}

export type BreakCause =
  | 'none'
  | 'new_session'
  | 'system_changed'
  | 'tools_changed'
  | 'history_edited'
  | 'template_rerender'
  | 'truncated';

export interface PrefixDiagnostics {
  /** Tokens of this prompt predicted to be served from the worker's prefix cache. */
  predicted_cached_tokens: number;
  prompt_tokens: number;
  break_cause: BreakCause;
  /** Token index of the first difference against the session's previous call, when it broke. */
  break_token_index?: number;
  /** Message index of the first differing message, when known. */
  break_message_index?: number;
  /** Estimate of the cached tokens the agent's original (unrewritten) layout would have had. */
  original_cached_tokens?: number;
}

/**
 * What the pipeline needs of an abort signal: an AbortSignal has it, and so has the gateway's
 * lighter per-request signal (an AbortController costs a few µs per request).
 */
export interface AbortLike {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/** Per-request context the gateway hands to the pipeline. */
export interface PipelineContext {
  tenant: string;
  requestId: string;
  /** Lower-cased request headers. */
  headers: Record<string, string | undefined>;
  /** Model name as configured (the served name the client asked for). */
  model: string;
  /** The tenant's prefix-cache salt: seeds the block hashes, so equal prompts of two tenants
   *  never share a chain (the worker gets it as `cache_salt`). */
  cacheSalt?: string;
  /** The client's own body when its API is not chat (Anthropic Messages, Responses...): traffic
   *  capture records it beside the canonical body. Never read by the stages. */
  clientBody?: { api: string; body: unknown };
  /** Aborted when the client goes away: a call still waiting for its session's lock leaves the queue. */
  signal?: AbortLike;
  /** The gateway's request path: process() returns before the session state is written (the write
   *  runs after the body went upstream: `sent` below); `result.stored` settles
   *  when it is stored. Without it, process() returns once the state is stored. */
  deferStore?: boolean;
  /** With `deferStore`: runs `run` once the body was dispatched upstream, or once the caller knows
   *  it never will be (its send gate, gateway/proxy/send-gate.ts); it must run exactly once, or the
   *  session stays locked. The stages' after-send jobs (after-send.ts) and the state write run
   *  then. Absent: on the next turn of the event loop (setImmediate). */
  sent?: (run: () => void) => void;
  /** Told which received messages (or tools) the pipeline replaced with JSON-equal objects of the
   *  session's earlier call: the gateway's body parser hands those out next time, so they stay
   *  identical call after call (gateway/body/body-memo.ts adopt). */
  onInterned?: (key: 'messages' | 'tools', received: readonly unknown[], interned: readonly unknown[]) => void;
}

export interface PipelineResult {
  /** The body to send upstream (the same object when layout is passthrough). */
  body: ChatRequest;
  sessionId: string;
  /** Key routing keeps sticky: the session's first-call (base) id, also for a fork (defaults to sessionId). */
  affinityKey?: string;
  receipts: Receipt[];
  /** Cache-break diagnostics. With `ctx.deferStore` they are made after the send (middleware/after-send.ts),
   *  first in the state write: set once `ctx.sent` ran the write (synchronously, before any I/O), absent before. */
  prefix?: PrefixDiagnostics;
  /** Engine-exact prompt token ids when the pipeline rendered them (for routing and metrics), packed:
   *  Array.from(...) where a plain array is needed (JSON.stringify writes a typed array as an object). */
  promptTokenIds?: Uint32Array;
  /** vLLM-compatible block hashes of promptTokenIds (hex strings), block size of the model config. */
  blockHashes?: readonly string[];
  /** blockHashes' 64-bit keys for the routing index (kvplanner/hash-keys.ts: [low, high] per block). */
  blockKeys?: Int32Array;
  /** With `ctx.deferStore`: settles (never rejects) once this call's session state is stored and the
   *  session's lock released. Whoever answers the client waits for it first, so a client's next call,
   *  on any replica, reads this call's state. */
  stored?: Promise<void>;
}

/** What the gateway learns after the upstream answered, fed back to the pipeline (ledger, compaction). */
export interface PipelineOutcome {
  status: number;
  /** Assistant message as returned (non-stream) or assembled from the stream. */
  assistant?: ChatMessage;
  promptTokens?: number;
  cachedTokens?: number;
  /** Output tokens the worker reported (absent when it reported no usage). */
  completionTokens?: number;
  worker?: string;
}

/** The only thing the gateway knows about the middleware. */
/** What a context chain runs (middleware/chain.ts describeChain): entry points compare these. */
export interface ChainDescription {
  /** Each stage in order, with the settings it was created with. */
  stages: { name: string; settings: Readonly<Record<string, unknown>> }[];
  /** Whether the stages' notes are placed as a leaf note. */
  leafNote: boolean;
  transforms: Readonly<Record<string, boolean | 'eager'>>;
}

export interface ContextPipeline {
  process(body: ChatRequest, ctx: PipelineContext): Promise<PipelineResult>;
  /** Optional feedback once the upstream answered; must never throw into the request path. */
  observe?(result: PipelineResult, outcome: PipelineOutcome, ctx: PipelineContext): void;
  /** The chain this pipeline runs (absent: none, e.g. a pipeline without a tokenizer). */
  readonly chain?: ChainDescription;
}
