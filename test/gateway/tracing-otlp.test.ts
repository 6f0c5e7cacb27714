// OpenTelemetry through the assembled gateway, exported to an in-process OTLP/HTTP receiver: one
// request span with GenAI semantic-convention attributes, child spans for the pipeline, the
// routing decision and each upstream attempt (a failed first attempt included), the attempt's W3C
// traceparent received by the worker, a client's traceparent continued; protobuf (the default
// protocol) reaches the receiver too; without OTEL_* variables nothing is configured.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAssembledGateway } from '../../gateway/assemble.ts';
import { parseConfig } from '../../gateway/config/load.ts';
import { tracingConfigured, tracingFromEnv } from '../../gateway/telemetry/tracing.ts';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: { key: string; value: Record<string, unknown> }[];
  status?: { code?: number };
}

const body = (req: IncomingMessage): Promise<Buffer> =>
  new Promise((resolve) => {
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => resolve(Buffer.concat(parts)));
  });

let receiver: Server;
let receiverUrl: string;
const exports: { contentType: string; body: Buffer }[] = [];
let worker: Server;
let workerUrl: string;
const workerTraceparents: string[] = [];
let failNext = 0;

async function listen(s: Server): Promise<string> {
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const a = s.address();
  return `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`;
}

beforeAll(async () => {
  receiver = createServer(async (req, res) => {
    exports.push({ contentType: String(req.headers['content-type']), body: await body(req) });
    res
      .writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/json' })
      .end(req.headers['content-type']?.includes('json') ? '{}' : '');
  });
  receiverUrl = await listen(receiver);
  // A minimal OpenAI-compatible worker that records the traceparent it is sent.
  worker = createServer(async (req, res) => {
    await body(req);
    if (req.url?.endsWith('/chat/completions')) {
      workerTraceparents.push(String(req.headers.traceparent ?? ''));
      if (failNext > 0) {
        failNext--;
        res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":{"message":"busy"}}');
        return;
      }
      const answer = {
        id: 'c1',
        object: 'chat.completion',
        created: 1,
        model: 'm',
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
        usage: {
          prompt_tokens: 120,
          completion_tokens: 7,
          total_tokens: 127,
          prompt_tokens_details: { cached_tokens: 96 },
        },
      };
      res
        .writeHead(200, { 'content-type': 'application/json', 'x-sim-timing': 'prefill_ms=3;decode_ms=9' })
        .end(JSON.stringify(answer));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  workerUrl = await listen(worker);
});

afterAll(async () => {
  receiver?.close();
  worker?.close();
});

const config = () =>
  parseConfig(
    {
      listen: { host: '127.0.0.1', port: 0 },
      auth: { mode: 'none' },
      health: { interval_ms: 0 },
      upstream: { attempts: 2 },
      models: [
        {
          name: 'm',
          tokenizer: 'qwen3',
          layout: 'ctxgate',
          policy: 'ctxgate',
          workers: [
            { url: workerUrl, id: 'wa' },
            { url: workerUrl, id: 'wb' },
          ],
        },
      ],
    },
    'otel',
  );

const attr = (s: OtlpSpan, k: string): unknown => {
  const v = s.attributes.find((a) => a.key === k)?.value;
  if (!v) return undefined;
  if ('arrayValue' in v)
    return ((v.arrayValue as { values?: Record<string, unknown>[] }).values ?? []).map((x) => Object.values(x)[0]);
  const raw = Object.values(v)[0];
  return 'intValue' in v ? Number(raw) : raw;
};

function spansOf(json: Buffer[]): OtlpSpan[] {
  const out: OtlpSpan[] = [];
  for (const b of json) {
    const d = JSON.parse(b.toString('utf8')) as {
      resourceSpans: { resource: unknown; scopeSpans: { spans: OtlpSpan[] }[] }[];
    };
    for (const rs of d.resourceSpans) for (const ss of rs.scopeSpans) out.push(...ss.spans);
  }
  return out;
}

describe('OpenTelemetry traces', () => {
  it('nothing is configured without the OTEL_* variables', async () => {
    expect(tracingConfigured({})).toBe(false);
    expect(await tracingFromEnv({ OTEL_SERVICE_NAME: 'x' })).toBeNull();
    expect(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_SDK_DISABLED: 'true' })).toBe(false);
    expect(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_TRACES_EXPORTER: 'none' })).toBe(false);
    await expect(
      tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
    ).rejects.toThrow(/OTEL_EXPORTER_OTLP_PROTOCOL/);
  });

  it('exports a request span with GenAI attributes and pipeline, routing and attempt children (OTLP/HTTP JSON)', async () => {
    exports.length = 0;
    workerTraceparents.length = 0;
    const tracing = await tracingFromEnv({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'ctxgate-test',
    });
    const gw = await startAssembledGateway(config(), { logger: false, reporting: false, tracing });
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'none', maxRetries: 0 });
    failNext = 1; // the first attempt gets a 503: two attempt spans, one failed
    const clientTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    await client.chat.completions.create(
      { model: 'm', messages: [{ role: 'user', content: 'hello there' }] },
      { headers: { traceparent: `00-${clientTrace}-00f067aa0ba902b7-01` } },
    );
    await gw.close(); // flushes the span processor
    const spans = spansOf(exports.filter((e) => e.contentType.includes('json')).map((e) => e.body));
    const root = spans.find((s) => s.name === 'chat m')!;
    expect(root).toBeDefined();
    expect(root.traceId).toBe(clientTrace);
    expect(root.parentSpanId).toBe('00f067aa0ba902b7');
    expect(attr(root, 'gen_ai.request.model')).toBe('m');
    expect(attr(root, 'gen_ai.operation.name')).toBe('chat');
    expect(attr(root, 'gen_ai.usage.input_tokens')).toBe(120);
    expect(attr(root, 'gen_ai.usage.output_tokens')).toBe(7);
    expect(attr(root, 'gen_ai.usage.cache_read.input_tokens')).toBe(96);
    expect(attr(root, 'gen_ai.response.finish_reasons')).toEqual(['stop']);
    expect(attr(root, 'ctxgate.attempts')).toBe(2);
    const children = spans.filter((s) => s.parentSpanId === root.spanId);
    const names = children.map((s) => s.name).sort();
    expect(names.filter((n) => n === 'ctxgate.pipeline')).toHaveLength(1);
    const routes = children.filter((s) => s.name === 'ctxgate.route');
    expect(routes).toHaveLength(2);
    expect(attr(routes[0], 'ctxgate.policy')).toBe('ctxgate');
    expect(typeof attr(routes[0], 'ctxgate.branch')).toBe('string');
    expect(attr(routes[0], 'ctxgate.predicted_cached_tokens')).toBeTypeOf('number');
    const attempts = children.filter((s) => s.name.startsWith('upstream '));
    expect(attempts).toHaveLength(2);
    expect(attempts.filter((s) => s.status?.code === 2)).toHaveLength(1); // the 503
    // Each attempt's traceparent reached the worker: same trace, the attempt span as parent.
    expect(workerTraceparents).toHaveLength(2);
    for (const tp of workerTraceparents) {
      const [, traceId, parent] = tp.split('-');
      expect(traceId).toBe(clientTrace);
      expect(attempts.map((s) => s.spanId)).toContain(parent);
    }
  });

  it('the default protocol (http/protobuf) reaches the receiver', async () => {
    exports.length = 0;
    const tracing = await tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl });
    const gw = await startAssembledGateway(config(), { logger: false, reporting: false, tracing });
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'none', maxRetries: 0 });
    await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'proto' }] });
    await gw.close();
    const proto = exports.filter((e) => e.contentType === 'application/x-protobuf');
    expect(proto.length).toBeGreaterThan(0);
    // Protobuf strings are raw UTF-8: the span name and attribute keys are visible in the bytes.
    const all = Buffer.concat(proto.map((e) => e.body)).toString('latin1');
    expect(all).toContain('chat m');
    expect(all).toContain('gen_ai.usage.cache_read.input_tokens');
  });
});
