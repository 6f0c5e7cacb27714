// The protocol-adapter contract. Each ingress API (OpenAI chat, OpenAI completions, Anthropic
// Messages, OpenAI Responses) is one adapter: it validates the client's body, translates it to the
// canonical chat form the context pipeline works on, builds the upstream body, translates the
// answer back (whole JSON, or stream chunk by chunk) and shapes errors the way its clients expect.
// The proxy core (gateway/proxy/) knows no API; server.ts, limits and metrics derive from the list.
import type { ChatRequest, Receipt } from '../../middleware/types.ts';
import type { ExtractedUsage } from '../accounting/record/extract.ts';
import type { Mac } from './thinking-signature.ts';

/** Bounded `api` label values (metrics, records, usage events). */
export type ApiName = 'openai-chat' | 'openai-completions' | 'anthropic-messages' | 'openai-responses';

/** What an adapter made of a client body. */
export interface IngressRequest {
  model: string;
  stream: boolean;
  /** The body the pipeline sees and the upstream gets: canonical chat form (or the completions body). */
  body: ChatRequest;
  /** Receipts of what translation did that the pipeline cannot see (dropped reasoning items...). */
  receipts?: Receipt[];
  /** Adapter state carried to the response translation (the client's original fields, ids). */
  state?: unknown;
}

/** What the response translators know about the finished exchange. */
export interface AnswerContext {
  requestId: string;
  tenant: string;
  /** Estimated prompt tokens (for the first stream event, before the worker reports usage). */
  promptTokens: number;
  state: unknown;
  /** The engine's usage reader (its adapter's): answers and stream chunks carry usage its way. */
  readUsage(payload: unknown): ExtractedUsage | undefined;
  /** The gateway's signing MAC (thinking signatures), keyed per purpose by the server secret. */
  mac: Mac;
}

/** Turns upstream chat-completion chunks into the client API's stream events. */
export interface StreamTranslator {
  /** One parsed `chat.completion.chunk` (usage-only chunks included); returns frames to send now. */
  chunk(obj: Record<string, unknown>): string;
  /** The upstream finished (`[DONE]` or end of body): closing frames (awaited: state may be stored first). */
  done(): string | Promise<string>;
  /** The upstream failed after the first byte, or the gateway ends the stream: the error frames. */
  error(err: ShapedError): string;
}

export interface IngressAdapter {
  api: ApiName;
  /** POST route served. */
  path: string;
  /** Upstream endpoint the canonical body goes to. */
  upstreamPath: '/v1/chat/completions' | '/v1/completions';
  /** Whether the context pipeline runs (chat-form bodies only). */
  pipeline: boolean;
  /** Validates and translates; throws GatewayError (shaped later by errorBody). Async for stored state. */
  parse(body: unknown, ctx: ParseContext): IngressRequest | Promise<IngressRequest>;
  /** Translates a 2xx chat completion; absent: the worker's bytes go back unchanged. */
  toResponse?(
    obj: Record<string, unknown>,
    usage: ExtractedUsage | undefined,
    ctx: AnswerContext,
  ): unknown | Promise<unknown>;
  /** Stream translator; absent: upstream SSE frames are relayed (usage chunk handled by the relay). */
  streamer?(ctx: AnswerContext): StreamTranslator;
  /** The API's error body (the status is the error's). */
  errorBody(err: ShapedError): unknown;
}

/** What an error body is made from: a GatewayError, or a worker's error re-shaped. */
export interface ShapedError {
  status: number;
  type: string;
  code: string;
  message: string;
  param: string | null;
}

export interface ParseContext {
  tenant: string;
  maxMessages: number;
  /** The same MAC as AnswerContext.mac: checks signatures the gateway gave out earlier. */
  mac?: Mac;
}
