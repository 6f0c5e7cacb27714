// Relays one attempt's live answer to the client (the ResponseConsumer of upstream-call.ts, which
// owns failover and decides what a failure means). Non-stream: the body is read once, parsed once
// (for usage and the assistant message) and sent as the original bytes. Stream: frames are
// forwarded as they arrive, honouring the client's backpressure; the client's status line is
// written with the first upstream byte, so a worker that fails before it is still failed over.
// Translating adapters (Anthropic Messages, OpenAI Responses) get the parsed answer (toResponse)
// or each parsed chunk (their stream translator); every client gets the worker's errors reshaped
// into its API (upstream-error.ts).
import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import type { AbortLike, ChatMessage } from '../../middleware/types.ts';
import type { GatewayContext } from '../context.ts';
import { GatewayError } from '../../middleware/errors.ts';
import type { AnswerContext, IngressAdapter, ShapedError } from '../ingress/types.ts';
import type { Attempt } from './attempt.ts';
import type { ResponseConsumer } from './upstream-call.ts';
import type { UpstreamResponse } from './upstream-response.ts';
import { usageEvent, type Exchange } from './finish.ts';
import { SseRelay } from './sse.ts';
import { lap, tick } from '../../middleware/perf/stage-timers.ts';
import type { EngineAdapter } from '../upstream/engines.ts';
import { upstreamErrorBody } from './upstream-error.ts';

/** Waits for the client to drain or leave; removes both listeners (one wait per full buffer of a long stream). */
function drain(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

function finishReasonsOf(obj: object): string[] {
  const choices = (obj as { choices?: unknown }).choices;
  if (!Array.isArray(choices)) return [];
  const out: string[] = [];
  for (const c of choices.slice(0, 16)) if (c && typeof c.finish_reason === 'string') out.push(c.finish_reason);
  return out;
}

function assistantOf(obj: { choices?: { message?: ChatMessage; text?: string }[] }): ChatMessage | undefined {
  const c = Array.isArray(obj.choices) ? obj.choices[0] : undefined;
  if (!c) return undefined;
  if (c.message && typeof c.message === 'object') return c.message;
  if (typeof c.text === 'string') return { role: 'assistant', content: c.text };
  return undefined;
}

/** Per body chunk: the attempt's first byte, then its progress (the body's idle limit). */
function firstByteThenProgress(a: Attempt): () => void {
  let first = true;
  return () => {
    if (first) {
      first = false;
      a.firstByte();
    } else a.progress();
  };
}

/** The relay of one request; the same instance serves each attempt until one answers. */
export class Relay implements ResponseConsumer {
  private sse: SseRelay | undefined;

  constructor(
    private readonly gw: GatewayContext,
    private readonly ex: Exchange,
    private readonly reply: FastifyReply,
    private readonly signal: AbortLike,
    private readonly adapter: IngressAdapter,
    private readonly answer: AnswerContext,
    private readonly engine: EngineAdapter,
  ) {}

  consume(a: Attempt, res: UpstreamResponse): Promise<'complete' | 'cut'> {
    const isSse = String(res.headers['content-type'] ?? '').startsWith('text/event-stream');
    if (this.ex.stream && isSse && res.statusCode < 300) return this.stream(a, res);
    return this.json(a, res);
  }

  committed(): boolean {
    return this.reply.raw.headersSent;
  }

  failMidStream(err: ShapedError): void {
    const out = this.reply.raw;
    if (!out.destroyed && this.sse) out.write(this.sse.errorFrames(err));
    if (!out.destroyed) out.end();
  }

  private async json(a: Attempt, res: UpstreamResponse): Promise<'complete' | 'cut'> {
    const { ex, reply, adapter } = this;
    const t = performance.now();
    let raw: Buffer;
    try {
      raw = await res.body.readAll(firstByteThenProgress(a));
    } finally {
      ex.upstreamWaitMs += performance.now() - t;
    }
    if (this.signal.aborted) return 'cut';
    ex.ttftAt = a.firstByteAt;
    const t1 = tick();
    let buf: Buffer | string = raw;
    let contentType = String(res.headers['content-type'] ?? 'application/json');
    ex.status = res.statusCode;
    if (res.statusCode < 300) {
      let obj: unknown;
      try {
        obj = JSON.parse(buf.toString('utf8'));
      } catch {
        throw new GatewayError('upstream_bad_response', 'worker returned a body that is not valid JSON');
      }
      if (!obj || typeof obj !== 'object')
        throw new GatewayError('upstream_bad_response', 'worker returned a JSON body that is not an object');
      ex.usage = this.engine.usage(obj);
      a.usage = ex.usage;
      ex.assistant = assistantOf(obj as Parameters<typeof assistantOf>[0]);
      ex.finishReasons = finishReasonsOf(obj);
      if (adapter.toResponse) {
        buf = JSON.stringify(await adapter.toResponse(obj as Record<string, unknown>, ex.usage, this.answer));
        contentType = 'application/json';
      }
    } else {
      ex.errorCode = `upstream_${res.statusCode}`;
      const e = upstreamErrorBody(adapter, this.engine, res.statusCode, buf);
      buf = e.body;
      if (e.json) contentType = 'application/json';
    }
    if (this.gw.responseHeaders && ex.usage) {
      try {
        reply.headers(this.gw.responseHeaders(usageEvent(ex)));
      } catch (err) {
        // Accounting must never fail an answer the worker already gave.
        process.emitWarning(`ctxgate: responseHeaders threw: ${(err as Error).message}`);
      }
    }
    lap('response', t1);
    // The call's session state was written while the worker computed (pipeline deferStore): stored
    // before the client can send its next call.
    if (ex.result?.stored) await ex.result.stored;
    // reply.send, not writeHead/end on reply.raw: the same bytes at the same server CPU per call
    // (a Fastify server answering this way, 12 alternating rounds: 38.8 vs 38.8 µs), and send
    // keeps any onSend hook a deployment registers.
    reply.code(res.statusCode).header('content-type', contentType).send(buf);
    return 'complete';
  }

  /** Hijacks the reply and writes the SSE status line: from here on, the client has the answer. */
  private open(): void {
    const { reply } = this;
    reply.hijack();
    reply.raw.writeHead(200, {
      ...(reply.getHeaders() as Record<string, string>),
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
  }

  private async stream(a: Attempt, res: UpstreamResponse): Promise<'complete' | 'cut'> {
    const { ex, signal } = this;
    const out = this.reply.raw;
    const relay = new SseRelay(ex.clientWantsUsage ?? false, this.adapter.streamer?.(this.answer), this.engine.usage);
    this.sse = relay;
    res.body.setEncoding('utf8');
    ex.status = 200;
    const start = performance.now();
    let processing = 0;
    try {
      for await (const chunk of res.body) {
        const p0 = performance.now();
        if (a.firstByteAt === undefined) {
          a.firstByte();
          if (ex.result?.stored) await a.waitOff(ex.result.stored);
          this.open();
        } else a.progress();
        const text = relay.push(chunk as string);
        // a client that reads slowly must not count as the worker's silence (attempt-deadline.ts)
        if (text && !out.write(text)) await a.waitOff(drain(out));
        processing += performance.now() - p0;
        if (signal.aborted || out.destroyed) return 'cut';
      }
      if (signal.aborted) return 'cut';
      if (!out.headersSent) {
        if (ex.result?.stored) await a.waitOff(ex.result.stored);
        this.open();
      }
      const tail = await relay.end();
      if (tail) out.write(tail);
      if (!out.destroyed) out.end();
      return 'complete';
    } finally {
      ex.upstreamWaitMs += performance.now() - start - processing;
      ex.ttftAt = relay.firstTokenAt;
      ex.usage = relay.usage;
      a.usage = relay.usage;
      ex.assistant = relay.assistant();
      ex.finishReasons = relay.finishReasons.filter(Boolean);
    }
  }
}
