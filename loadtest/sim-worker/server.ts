// HTTP surface of the reference worker (node:http, no framework, so faults can cut sockets
// at exact points): OpenAI chat/completions (stream and not), /v1/models, /health, /metrics,
// /tokenize and /detokenize, vLLM /reset_prefix_cache, SGLang /generate (stream and not),
// /flush_cache, /get_server_info.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpError, type Admission, type Prepared, type SimEngine } from './engine.ts';
import type { FaultInjector, RequestFault } from './faults.ts';
import type { WorkerMetrics } from './metrics.ts';
import {
  chatChunk,
  chatCompletion,
  errorBody,
  textChunk,
  textCompletion,
  textDeltas,
  usage,
  usageChunk,
} from './openai-shapes.ts';
import { finishReason, generateEvents, generateMeta } from './sglang-shapes.ts';
import { timingHeader } from './timing.ts';

const MAX_BODY_BYTES = 64 * 1024 * 1024;
/** Sleeps shorter than this are accumulated rather than scheduled one by one. */
const MIN_SLEEP_MS = 4;

export interface ServerDeps {
  engine: SimEngine;
  faults: FaultInjector;
  metrics: WorkerMetrics;
  load: { running: number; waiting: number };
}

const sleep = (ms: number): Promise<void> => (ms > 0 ? new Promise((r) => setTimeout(r, ms)) : Promise.resolve());

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, 'request body too large');
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function sendError(res: ServerResponse, err: unknown, sglangNative = false): void {
  const status = err instanceof HttpError ? err.status : 500;
  const message = err instanceof Error ? err.message : String(err);
  if (res.headersSent) return void res.destroy();
  sendJson(
    res,
    status,
    sglangNative ? { error: { message } } : errorBody(status, message, err instanceof HttpError ? err.param : null),
  );
}

export function createHandler(d: ServerDeps): (req: IncomingMessage, res: ServerResponse) => void {
  const { engine } = d;
  const o = engine.opts;
  const refreshLoad = (): void => d.metrics.setLoad(d.load.running, d.load.waiting, engine.cache.usage());

  /** Waits out modeled queue + prefill (scaled), keeping the running/waiting gauges honest. */
  async function runAdmission(prepared: Prepared): Promise<Admission> {
    const a = engine.admit(prepared);
    d.metrics.observe({
      promptTokens: prepared.promptIds.length,
      cachedTokens: a.lease.cachedTokens,
      outputTokens: prepared.outputIds.length,
      ttftS: a.schedule.ttftS,
    });
    d.load.waiting++;
    refreshLoad();
    await sleep(a.schedule.queueS * 1000 * o.timeScale);
    d.load.waiting--;
    d.load.running++;
    refreshLoad();
    await sleep(a.schedule.prefillS * 1000 * o.timeScale);
    return a;
  }

  function done(a: Admission, generated?: number): void {
    engine.complete(a, generated);
    d.load.running--;
    refreshLoad();
  }

  /** Writes SSE events with decode pacing; returns false when the connection died. */
  async function stream(
    res: ServerResponse,
    a: Admission,
    events: { data: unknown; tokens: number }[],
    fault: RequestFault,
  ): Promise<boolean> {
    const perTokenMs = (a.schedule.decodeS * 1000 * o.timeScale) / Math.max(1, a.prepared.outputIds.length);
    let owed = 0;
    let sent = 0;
    let generated = 0;
    for (const ev of events) {
      owed += perTokenMs * ev.tokens;
      if (owed >= MIN_SLEEP_MS) {
        await sleep(owed);
        owed = 0;
      }
      if (res.destroyed) break;
      const line = `data: ${JSON.stringify(ev.data)}\n\n`;
      generated += ev.tokens;
      sent++;
      if (fault.dieAfterChunks > 0 && sent >= fault.dieAfterChunks) {
        // Let the N-th event reach the client, then cut the connection without a terminator.
        await new Promise<void>((r) => res.write(line, () => r()));
        res.socket?.destroy();
        res.destroy();
        break;
      }
      res.write(line);
    }
    const alive = !res.destroyed;
    if (alive) res.end('data: [DONE]\n\n');
    done(a, alive ? undefined : generated);
    return alive;
  }

  function sseHead(res: ServerResponse, a: Admission): void {
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-sim-timing': timingHeader(a.schedule),
    });
  }

  async function chat(body: Record<string, unknown>, res: ServerResponse, fault: RequestFault): Promise<void> {
    const p = engine.prepareChat(body);
    const a = await runAdmission(p);
    const id = 'chatcmpl-' + randomUUID().replace(/-/g, '');
    const created = Math.floor(Date.now() / 1000);
    const u = usage(p.promptIds.length, p.outputIds.length, a.lease.cachedTokens);
    const model = o.model;
    if (body.stream !== true) {
      await sleep(a.schedule.decodeS * 1000 * o.timeScale);
      const text = JSON.stringify(
        chatCompletion(
          id,
          created,
          model,
          { content: p.content, toolCalls: p.toolCalls, reasoning: p.reasoning },
          p.finishReason,
          u,
        ),
      );
      if (fault.dieAfterChunks > 0) {
        res.writeHead(200, { 'content-type': 'application/json', 'x-sim-timing': timingHeader(a.schedule) });
        await new Promise<void>((r) => res.write(text.slice(0, text.length >> 1), () => r()));
        res.socket?.destroy();
        res.destroy();
        done(a, 0);
        return;
      }
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(text),
        'x-sim-timing': timingHeader(a.schedule),
      });
      res.end(text);
      done(a);
      return;
    }
    sseHead(res, a);
    const events: { data: unknown; tokens: number }[] = [
      { data: chatChunk(id, created, model, { role: 'assistant', content: '' }), tokens: 0 },
    ];
    if (p.reasoning)
      events.push({
        data: chatChunk(id, created, model, { reasoning_content: p.reasoning }),
        tokens: p.outputIds.length - p.contentIds.length,
      });
    if (p.toolCalls.length) {
      if (p.content)
        events.push({ data: chatChunk(id, created, model, { content: p.content }), tokens: p.contentIds.length });
      p.toolCalls.forEach((c, index) => {
        events.push({
          data: chatChunk(id, created, model, {
            tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.function.name, arguments: '' } }],
          }),
          tokens: 1,
        });
        events.push({
          data: chatChunk(id, created, model, {
            tool_calls: [{ index, function: { arguments: c.function.arguments } }],
          }),
          tokens: 1,
        });
      });
    } else if (p.content) {
      for (const piece of textDeltas(engine.tok.decode, p.contentIds, p.content))
        events.push({ data: chatChunk(id, created, model, { content: piece }), tokens: 1 });
    }
    events.push({ data: chatChunk(id, created, model, {}, p.finishReason), tokens: 0 });
    const opts = body.stream_options as { include_usage?: boolean } | undefined;
    if (opts?.include_usage) events.push({ data: usageChunk(id, created, model, u), tokens: 0 });
    await stream(res, a, events, fault);
  }

  async function completion(body: Record<string, unknown>, res: ServerResponse, fault: RequestFault): Promise<void> {
    const p = engine.prepareText(body, body.prompt);
    const a = await runAdmission(p);
    const id = 'cmpl-' + randomUUID().replace(/-/g, '');
    const created = Math.floor(Date.now() / 1000);
    const u = usage(p.promptIds.length, p.outputIds.length, a.lease.cachedTokens);
    if (body.stream !== true) {
      await sleep(a.schedule.decodeS * 1000 * o.timeScale);
      sendJson(res, 200, textCompletion(id, created, o.model, p.content ?? '', p.finishReason, u), {
        'x-sim-timing': timingHeader(a.schedule),
      });
      done(a);
      return;
    }
    sseHead(res, a);
    const events = textDeltas(engine.tok.decode, p.contentIds, p.content ?? '').map((t) => ({
      data: textChunk(id, created, o.model, t),
      tokens: 1,
    }));
    events.push({ data: textChunk(id, created, o.model, '', p.finishReason), tokens: 0 });
    if ((body.stream_options as { include_usage?: boolean } | undefined)?.include_usage)
      events.push({ data: usageChunk(id, created, o.model, u, 'text_completion'), tokens: 0 });
    await stream(res, a, events, fault);
  }

  async function sglangGenerate(
    body: Record<string, unknown>,
    res: ServerResponse,
    fault: RequestFault,
  ): Promise<void> {
    const p = engine.prepareText({ ...body, model: undefined }, body.input_ids ?? body.text);
    const t = performance.now();
    const a = await runAdmission(p);
    const id = randomUUID().replace(/-/g, '');
    if (body.stream === true) {
      sseHead(res, a);
      const deltas = textDeltas(engine.tok.decode, p.contentIds, p.content ?? '');
      await stream(res, a, generateEvents(id, p, a.lease.cachedTokens, deltas, engine.tok.eosId, t), fault);
      return;
    }
    await sleep(a.schedule.decodeS * 1000 * o.timeScale);
    const meta = generateMeta(id, p, a.lease.cachedTokens, p.outputIds.length, finishReason(p, engine.tok.eosId), t);
    sendJson(res, 200, { text: p.content ?? '', meta_info: meta }, { 'x-sim-timing': timingHeader(a.schedule) });
    done(a);
  }

  function tokenize(body: Record<string, unknown>, res: ServerResponse): void {
    engine.checkModel(body);
    const tokens = Array.isArray(body.messages)
      ? engine.chatPromptIds(body)
      : engine.textPromptIds(body.prompt, body.add_special_tokens !== false);
    sendJson(res, 200, { count: tokens.length, max_model_len: o.maxModelLen, tokens, token_strs: null });
  }

  /** vLLM: `{prompt}`; SGLang: `{text}` (each engine's DetokenizeResponse). */
  function detokenize(body: Record<string, unknown>, res: ServerResponse): void {
    const ids = body.tokens;
    if (!Array.isArray(ids) || !ids.every((x) => Number.isInteger(x) && x >= 0))
      throw new HttpError(400, 'tokens must be a list of token ids', 'tokens');
    const text = engine.tok.decode(ids as number[]);
    sendJson(res, 200, o.flavor === 'sglang' ? { text } : { prompt: text });
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    const method = req.method ?? 'GET';
    if (method === 'GET' && path === '/health') return void res.writeHead(200).end();
    if (method === 'GET' && path === '/metrics') {
      refreshLoad();
      const text = await d.metrics.registry.metrics();
      res.writeHead(200, { 'content-type': d.metrics.registry.contentType });
      return void res.end(text);
    }
    if (method === 'GET' && path === '/v1/models') {
      return sendJson(res, 200, {
        object: 'list',
        data: [
          {
            id: o.model,
            object: 'model',
            created: Math.floor(Date.now() / 1000),
            owned_by: o.flavor,
            root: o.model,
            parent: null,
            max_model_len: o.maxModelLen,
            permission: [],
          },
        ],
      });
    }
    if (o.flavor === 'sglang' && path === '/get_server_info') {
      return sendJson(res, 200, {
        model_path: o.model,
        served_model_name: o.model,
        tokenizer_path: o.tokenizer,
        page_size: 1,
        max_total_num_tokens: o.kvTokens,
        max_running_requests: o.maxRunning,
        context_length: o.maxModelLen,
        enable_cache_report: true,
        version: 'sim',
      });
    }
    if (
      (o.flavor === 'sglang' && path === '/flush_cache') ||
      (o.flavor === 'vllm' && path === '/reset_prefix_cache' && method === 'POST')
    ) {
      engine.cache.flush();
      res.writeHead(200, { 'content-type': 'text/plain' });
      return void res.end(o.flavor === 'sglang' ? 'Cache flushed.\n' : '');
    }
    const routes: Record<string, true> = {
      '/v1/chat/completions': true,
      '/v1/completions': true,
      '/tokenize': true,
      '/detokenize': true,
    };
    if (o.flavor === 'sglang') routes['/generate'] = true;
    if (!routes[path]) return sendJson(res, 404, errorBody(404, `Not Found: ${method} ${path}`));
    if (method !== 'POST') return sendJson(res, 405, errorBody(405, 'Method Not Allowed'));

    const fault = d.faults.decide(req.headers['x-sim-fault'] as string | undefined);
    if (fault.reset) return void req.socket.destroy();
    const raw = await readBody(req);
    await sleep(fault.hangMs);
    if (fault.status)
      return sendJson(res, fault.status, errorBody(fault.status, `simulated failure (status ${fault.status})`));
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      throw new HttpError(400, 'request body is not valid JSON');
    }
    if (!body || typeof body !== 'object' || Array.isArray(body))
      throw new HttpError(400, 'request body must be a JSON object');
    if (fault.dieAfterHeaders) {
      res.writeHead(200, { 'content-type': body.stream === true ? 'text/event-stream' : 'application/json' });
      res.flushHeaders();
      await sleep(MIN_SLEEP_MS);
      res.socket?.destroy();
      return void res.destroy();
    }
    if (path === '/v1/chat/completions') return chat(body, res, fault);
    if (path === '/v1/completions') return completion(body, res, fault);
    if (path === '/tokenize') return tokenize(body, res);
    if (path === '/detokenize') return detokenize(body, res);
    return sglangGenerate(body, res, fault);
  }

  return (req, res) => {
    // SGLang's native routes answer errors as `{"error": {"message"}}` (http_server), not the
    // OpenAI routes' flat `{"object": "error", ...}`.
    const native = o.flavor === 'sglang' && (req.url ?? '').split('?')[0] === '/generate';
    route(req, res).catch((err) => sendError(res, err, native));
  };
}
