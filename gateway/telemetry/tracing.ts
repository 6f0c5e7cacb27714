// OpenTelemetry traces, configured by the standard environment: OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), OTEL_EXPORTER_OTLP_PROTOCOL (http/protobuf, the default, or
// http/json), OTEL_SERVICE_NAME (default ctxgate), OTEL_EXPORTER_OTLP_HEADERS; OTEL_SDK_DISABLED=true
// or OTEL_TRACES_EXPORTER=none turn it off. Unset: tracingFromEnv() returns null, no SDK module is
// even loaded, and the request path pays one null check. Set: one span per request (GenAI
// semantic-convention attributes) with child spans for the context pipeline, the routing decision
// and each upstream attempt, batched to the OTLP exporter; the W3C traceparent of each attempt is
// sent to the worker, and a client's traceparent is continued.
import type { Attributes, Context, Span } from '@opentelemetry/api';

export type TraceAttributes = Attributes;

export interface SpanHandle {
  set(attrs: TraceAttributes): void;
  /** Ends the span; an error message marks it failed. Idempotent. */
  end(error?: string): void;
  /** W3C traceparent naming this span as the parent (sent upstream). */
  traceparent(): string;
}

export interface RequestTrace extends SpanHandle {
  /** Starts a child span of the request now. */
  child(name: string, attrs?: TraceAttributes): SpanHandle;
}

export interface Tracing {
  /** Starts a request span, continuing the client's `traceparent` when it sent a valid one. */
  startRequest(name: string, attrs: TraceAttributes, traceparent?: string): RequestTrace;
  /** Exports what is buffered and stops the exporter. */
  shutdown(): Promise<void>;
}

export const DEFAULT_SERVICE_NAME = 'ctxgate';
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** Whether the environment asks for trace export. */
export function tracingConfigured(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.toLowerCase() === 'true') return false;
  if (env.OTEL_TRACES_EXPORTER?.split(',').some((s) => s.trim() === 'none')) return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/** The tracing of this environment, or null (nothing loaded) when it configures no exporter. */
export async function tracingFromEnv(env: NodeJS.ProcessEnv = process.env): Promise<Tracing | null> {
  if (!tracingConfigured(env)) return null;
  const api = await import('@opentelemetry/api');
  const { TracerProvider, BatchSpanProcessor } = await import('@opentelemetry/sdk-trace');
  const { resourceFromAttributes } = await import('@opentelemetry/resources');
  const protocol = (
    env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ??
    env.OTEL_EXPORTER_OTLP_PROTOCOL ??
    'http/protobuf'
  ).trim();
  if (protocol !== 'http/protobuf' && protocol !== 'http/json') {
    throw new Error(`OTEL_EXPORTER_OTLP_PROTOCOL: '${protocol}' is not supported (use http/protobuf or http/json)`);
  }
  const { OTLPTraceExporter } =
    protocol === 'http/json'
      ? await import('@opentelemetry/exporter-trace-otlp-http')
      : await import('@opentelemetry/exporter-trace-otlp-proto');
  // Endpoint and headers from `env` (not necessarily process.env), as the OTLP exporter spec reads them.
  const exporter = new OTLPTraceExporter({
    url: tracesUrl(env),
    headers: parseHeaders(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS ?? env.OTEL_EXPORTER_OTLP_HEADERS),
  });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME || DEFAULT_SERVICE_NAME }),
    spanProcessors: [new BatchSpanProcessor({ exporter })],
  });
  const tracer = provider.getTracer('ctxgate');
  return {
    startRequest(name, attrs, traceparent) {
      let parent: Context = api.ROOT_CONTEXT;
      const m = traceparent ? TRACEPARENT.exec(traceparent.trim()) : null;
      if (m && !/^0+$/.test(m[1]) && !/^0+$/.test(m[2])) {
        parent = api.trace.setSpanContext(parent, {
          traceId: m[1],
          spanId: m[2],
          traceFlags: parseInt(m[3], 16) & 1,
          isRemote: true,
        });
      }
      const span = tracer.startSpan(name, { kind: api.SpanKind.SERVER, attributes: attrs }, parent);
      const ctx = api.trace.setSpan(parent, span);
      return {
        ...handle(api, span),
        child: (n, a) =>
          handle(
            api,
            tracer.startSpan(
              n,
              { kind: n.startsWith('upstream') ? api.SpanKind.CLIENT : api.SpanKind.INTERNAL, attributes: a },
              ctx,
            ),
          ),
      };
    },
    shutdown: () => provider.shutdown(),
  };
}

/** The signal-specific endpoint is used as is; the generic one gets `/v1/traces` appended. */
export function tracesUrl(env: NodeJS.ProcessEnv): string {
  if (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  return `${(env.OTEL_EXPORTER_OTLP_ENDPOINT ?? '').replace(/\/+$/, '')}/v1/traces`;
}

/** `k1=v1,k2=v2` (values URL-encoded), as OTEL_EXPORTER_OTLP_HEADERS is specified. */
export function parseHeaders(s: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (s ?? '').split(',')) {
    const i = part.indexOf('=');
    if (i <= 0) continue;
    try {
      out[decodeURIComponent(part.slice(0, i).trim())] = decodeURIComponent(part.slice(i + 1).trim());
    } catch {
      // A malformed escape: skip that header rather than fail start-up.
    }
  }
  return out;
}

function handle(api: typeof import('@opentelemetry/api'), span: Span): SpanHandle {
  let ended = false;
  return {
    set: (a) => void span.setAttributes(a),
    end(error) {
      if (ended) return;
      ended = true;
      if (error) span.setStatus({ code: api.SpanStatusCode.ERROR, message: error });
      span.end();
    },
    traceparent() {
      const c = span.spanContext();
      return `00-${c.traceId}-${c.spanId}-0${c.traceFlags & 1}`;
    },
  };
}
