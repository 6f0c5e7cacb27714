// A minimal OpenAI-compatible upstream for gateway tests and the overhead benchmark: chat and
// text completions, streaming or not, tool calls, usage with prompt_tokens_details.cached_tokens,
// and fault knobs (status, hang, die after N stream chunks, bad JSON, failing /health).
// Not the reference worker (loadtest/sim-worker): zero latency, no generation. By default it has no
// tokenizer and reports the `cachedTokens` knob (a never-caching worker: 0) and prompt tokens as
// bytes / 4; with `prefixCache` it reports what vLLM's block cache would (fake-upstream-cache.ts:
// the reference worker's tokenizer and cache steps), as deployed engines do.
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { FakePrefixCache, type FakeCacheOptions, type FakeCacheReport } from './fake-upstream-cache.ts';
import type { ChatMessage } from './sim-worker/tokenize.ts';
import { watchGc } from './overhead/gc-pauses.ts';

export interface FakeKnobs {
  /** Answer every completion with this HTTP status and an OpenAI error body (0 = normal). */
  status: number;
  /** Never answer (until the client aborts). */
  hang: boolean;
  /** In streams, destroy the socket after this many data frames (undefined = never). */
  dieAfterChunks?: number;
  /** Answer 200 with a body that is not JSON. */
  badJson: boolean;
  /** /health answers 503 when false. */
  healthy: boolean;
  /** Delay before each stream frame, ms. */
  chunkDelayMs: number;
  /** Words in the answer (stream frames = words). */
  words: number;
  /** cached_tokens reported in usage (when the upstream has no prefix cache). */
  cachedTokens: number;
  /** Streams pause after their first frame until this settles (a test holds a stream open for as
   *  long as it needs, not for a guessed time). */
  hold?: Promise<unknown>;
}

export interface FakeUpstream {
  url: string;
  name: string;
  knobs: FakeKnobs;
  /** Bodies of the completion requests received (kept only when `record` is on). */
  requests: Record<string, unknown>[];
  /** Completion requests whose client went away before the answer was complete. */
  aborted: number;
  received: number;
  /** The prefix cache whose hits are reported, when one was asked for. */
  cache?: FakePrefixCache;
  /** With `trace`: each request's [arrival, answer sent] (ms since the epoch), in arrival order. */
  spans: [number, number][];
  app: FastifyInstance;
  close(): Promise<void>;
}

export interface FakeUpstreamOptions {
  name?: string;
  port?: number;
  record?: boolean;
  knobs?: Partial<FakeKnobs>;
  /** Report cached_tokens (and prompt_tokens) as a prefix-caching engine would. */
  prefixCache?: FakeCacheOptions;
  /** Keep each request's [arrival, answer sent] on the epoch clock (FakeUpstream.spans); arrival is
   *  when its body was fully received (its headers, without a body): a body still on its way is the
   *  sender's and the hop's time, not the upstream's (a gateway may send one in pieces). */
  trace?: boolean;
}

/** Request spans a traced fake keeps (the most recent; the older half dropped when full). */
export const FAKE_SPANS_MAX = 65_536;

/** ms since the epoch, on the clock bench overhead's processes share. */
const epochNow = (): number => performance.timeOrigin + performance.now();

const DEFAULT_KNOBS: FakeKnobs = {
  status: 0,
  hang: false,
  badJson: false,
  healthy: true,
  chunkDelayMs: 0,
  words: 8,
  cachedTokens: 0,
};

type Body = {
  model?: string;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  tools?: { function?: { name?: string } }[];
  tool_choice?: unknown;
  prompt?: unknown;
  messages?: unknown;
  cache_salt?: unknown;
  add_generation_prompt?: unknown;
};

const WORDS = (name: string, n: number): string[] =>
  Array.from({ length: n }, (_, i) => (i === 0 ? `hello from ${name}` : ` w${i}`));

/** The cache's report for a request (undefined: a body it cannot render; it is answered as without). */
function cacheReport(
  cache: FakePrefixCache,
  kind: 'chat' | 'text',
  body: Body,
  text: string,
  toolCall: { id: string; type: 'function'; function: { name: string; arguments: string } } | undefined,
): FakeCacheReport | undefined {
  const salt = typeof body.cache_salt === 'string' && body.cache_salt ? body.cache_salt : undefined;
  try {
    if (kind === 'chat') {
      if (!Array.isArray(body.messages) || body.messages.length === 0) return undefined;
      const answer = toolCall ? { content: null, toolCalls: [toolCall] } : { content: text };
      const tools = Array.isArray(body.tools) ? body.tools : undefined;
      return cache.chat(body.messages as ChatMessage[], tools, answer, salt, body.add_generation_prompt !== false);
    }
    let p = body.prompt;
    if (Array.isArray(p) && p.length === 1 && (typeof p[0] === 'string' || Array.isArray(p[0]))) p = p[0];
    if (typeof p === 'string') return cache.text(p, text, salt);
    if (Array.isArray(p) && p.length > 0 && p.every((x) => Number.isInteger(x) && x >= 0))
      return cache.text(p as number[], text, salt);
  } catch {
    // a template that refuses the messages: the engine would answer 400; the fake answers anyway
  }
  return undefined;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function startFakeUpstream(opts: FakeUpstreamOptions = {}): Promise<FakeUpstream> {
  const app = Fastify({ logger: false, bodyLimit: 256 * 1024 * 1024, keepAliveTimeout: 60_000 });
  const name = opts.name ?? 'fake';
  const up: FakeUpstream = {
    url: '',
    name,
    knobs: { ...DEFAULT_KNOBS, ...opts.knobs },
    requests: [],
    aborted: 0,
    received: 0,
    app,
    cache: opts.prefixCache ? await FakePrefixCache.load(opts.prefixCache) : undefined,
    spans: [],
    close: async () => {
      app.server.closeAllConnections();
      await app.close();
    },
  };
  let seq = 0;
  if (opts.trace) {
    const arrived = new WeakMap<object, number>();
    app.addHook('onRequest', (req, _reply, done) => {
      arrived.set(req, epochNow());
      done();
    });
    app.addHook('preParsing', (req, _reply, payload, done) => {
      payload.once('end', () => arrived.set(req, epochNow()));
      done(null, payload);
    });
    app.addHook('onResponse', (req, _reply, done) => {
      const t = arrived.get(req);
      if (t !== undefined) {
        if (up.spans.length >= FAKE_SPANS_MAX) up.spans.splice(0, FAKE_SPANS_MAX / 2);
        up.spans.push([t, epochNow()]);
      }
      done();
    });
  }

  app.get('/health', async (_req, reply) =>
    up.knobs.healthy ? { status: 'ok' } : reply.code(503).send({ status: 'down' }),
  );

  const handle =
    (kind: 'chat' | 'text') =>
    async (req: { body: unknown; raw: { headers: Record<string, unknown> } }, reply: FastifyReply) => {
      const body = req.body as Body;
      const rawLen = Number(req.raw.headers['content-length'] ?? 0);
      up.received++;
      if (opts.record !== false) up.requests.push(body as Record<string, unknown>);
      const k = up.knobs;
      let done = false;
      reply.raw.once('close', () => {
        if (!done) up.aborted++;
      });
      if (k.hang) {
        await new Promise((r) => reply.raw.once('close', r));
        return reply;
      }
      if (k.status) {
        done = true;
        return reply.code(k.status).send({
          error: { message: `fake ${name} status ${k.status}`, type: 'fake_error', code: 'fake', param: null },
        });
      }
      if (k.badJson) {
        done = true;
        return reply.code(200).header('content-type', 'application/json').send('this is {not json');
      }
      const id = `cmpl-${name}-${++seq}`;
      const wantsTool =
        kind === 'chat' && Array.isArray(body.tools) && body.tools.length > 0 && body.tool_choice !== 'none';
      const toolName = body.tools?.[0]?.function?.name ?? 'tool';
      const words = WORDS(name, k.words);
      const toolCall = wantsTool
        ? { id: 'call_1', type: 'function' as const, function: { name: toolName, arguments: '{"path":"a.txt"}' } }
        : undefined;
      const report = up.cache ? cacheReport(up.cache, kind, body, words.join(''), toolCall) : undefined;
      const promptTokens = report ? report.promptTokens : Math.ceil(rawLen / 4);
      const usage = {
        prompt_tokens: promptTokens,
        completion_tokens: k.words,
        total_tokens: promptTokens + k.words,
        prompt_tokens_details: { cached_tokens: report ? report.cachedTokens : k.cachedTokens },
      };
      const created = Math.floor(Date.now() / 1000);
      const object = kind === 'chat' ? 'chat.completion' : 'text_completion';
      if (!body.stream) {
        done = true;
        const choice =
          kind === 'text'
            ? { index: 0, text: words.join(''), finish_reason: 'stop', logprobs: null }
            : wantsTool
              ? {
                  index: 0,
                  message: { role: 'assistant', content: null, tool_calls: [toolCall] },
                  finish_reason: 'tool_calls',
                }
              : { index: 0, message: { role: 'assistant', content: words.join('') }, finish_reason: 'stop' };
        return reply.send({ id, object, created, model: body.model, choices: [choice], usage });
      }
      reply.hijack();
      const out = reply.raw;
      out.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      out.flushHeaders();
      const chunkObject = kind === 'chat' ? 'chat.completion.chunk' : 'text_completion';
      const frames: unknown[] = [];
      const mk = (choice: unknown) => ({ id, object: chunkObject, created, model: body.model, choices: [choice] });
      if (kind === 'chat') {
        frames.push(mk({ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }));
        if (wantsTool) {
          frames.push(
            mk({
              index: 0,
              delta: {
                tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: toolName, arguments: '' } }],
              },
              finish_reason: null,
            }),
          );
          frames.push(
            mk({
              index: 0,
              delta: { tool_calls: [{ index: 0, function: { arguments: '{"path":' } }] },
              finish_reason: null,
            }),
          );
          frames.push(
            mk({
              index: 0,
              delta: { tool_calls: [{ index: 0, function: { arguments: '"a.txt"}' } }] },
              finish_reason: null,
            }),
          );
        } else {
          for (const w of words) frames.push(mk({ index: 0, delta: { content: w }, finish_reason: null }));
        }
        frames.push(mk({ index: 0, delta: {}, finish_reason: wantsTool ? 'tool_calls' : 'stop' }));
      } else {
        for (const w of words) frames.push(mk({ index: 0, text: w, finish_reason: null }));
        frames.push(mk({ index: 0, text: '', finish_reason: 'stop' }));
      }
      if (body.stream_options?.include_usage)
        frames.push({ id, object: chunkObject, created, model: body.model, choices: [], usage });
      let n = 0;
      for (const f of frames) {
        if (k.dieAfterChunks !== undefined && n >= k.dieAfterChunks) {
          done = true;
          // Let the frames already written reach the client first: the failure is after the first byte.
          await sleep(20);
          out.socket?.destroy();
          return reply;
        }
        if (k.chunkDelayMs) await sleep(k.chunkDelayMs);
        if (n === 1 && k.hold) await Promise.race([k.hold, new Promise((r) => out.once('close', r))]);
        if (out.destroyed) return reply;
        if (!out.write(`data: ${JSON.stringify(f)}\n\n`)) await new Promise((r) => out.once('drain', r));
        n++;
      }
      done = true;
      out.end('data: [DONE]\n\n');
      return reply;
    };
  app.post('/v1/chat/completions', handle('chat'));
  app.post('/v1/completions', handle('text'));

  await app.listen({ host: '127.0.0.1', port: opts.port ?? 0 });
  const addr = app.server.address();
  up.url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  return up;
}

// `tsx loadtest/fake-upstream.ts [port] [--prefix-cache TOKENIZER] [--trace]` runs one in its own
// process (the overhead bench does). With --trace it answers stdin lines after its URL line:
// `reset` forgets the spans and GC pauses so far, `trace` prints those since as one JSON line
// ({ spans, gc }: its requests' [arrival, answer sent] and its main-thread GC pauses, epoch ms).
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values, positionals } = parseArgs({
    args: process.argv.slice(2),
    options: { 'prefix-cache': { type: 'string' }, trace: { type: 'boolean' } },
    allowPositionals: true,
  });
  const tokenizer = values['prefix-cache'];
  const up = await startFakeUpstream({
    port: Number(positionals[0] ?? 0),
    record: false,
    knobs: { words: 16 },
    prefixCache: tokenizer ? { tokenizer } : undefined,
    trace: values.trace,
  });
  process.stdout.write(`${up.url}\n`);
  if (values.trace) {
    const gc = watchGc();
    let since = 0;
    createInterface({ input: process.stdin }).on('line', (cmd) => {
      if (cmd === 'reset') {
        up.spans.length = 0;
        since = epochNow();
        process.stdout.write('ok\n');
      } else if (cmd === 'trace')
        process.stdout.write(
          `${JSON.stringify({ spans: up.spans, gc: gc.events().filter((g) => g.start >= since) })}\n`,
        );
      else process.stdout.write(`${JSON.stringify({ error: `unknown command ${cmd}` })}\n`);
    });
  }
}
