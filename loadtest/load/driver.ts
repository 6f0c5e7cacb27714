// The load of `ctxgate loadtest`: autocannon's connections, each playing agent sessions one after
// another (SessionQueue), every next body built from the answer the target just returned. Each
// connection gets its own request list in autocannon's setupClient hook (its closure is the
// connection's state: autocannon clears per-request contexts after every request of a one-entry
// list). Client-side timing per request: latency from write to last byte, TTFT as the first body
// byte of a stream (engines send the first SSE frame with the first token). A request autocannon
// drops (timeout, connection error) is counted as an error and its session moves on.
import autocannon from 'autocannon';
import type { Session } from '../formats/types.ts';
import { buildRequest, parseAnswer, type ApiName } from './protocols.ts';
import { SessionQueue, type SessionPlayer } from './traffic.ts';

/** After Ctrl-C, how long requests in flight may take before the run is cut. */
export const ABORT_GRACE_S = 10;

export interface LoadOptions {
  target: string;
  api: ApiName;
  model: string;
  key?: string;
  sessions: Session[];
  connections: number;
  /** Seconds; ignored when `requests` is set. */
  durationS: number;
  requests?: number;
  /** Requests per second over all connections (0 = as fast as answers come). */
  rate: number;
  thinkMs: number;
  stream: boolean;
  maxTokens: number;
  timeoutS: number;
  /** Called after every finished request (progress bars). */
  onSample?: (s: CallSample) => void;
}

export interface CallSample {
  session: string;
  turn: number;
  /** HTTP status; 0 when no answer came (timeout, connection error). */
  status: number;
  ok: boolean;
  latency_ms: number;
  ttft_ms?: number;
  prompt_tokens: number;
  cached_tokens: number;
  completion_tokens: number;
  /** ctxgate's predicted cached tokens (x-ctxgate-prefix), when the target is ctxgate. */
  predicted_cached_tokens?: number;
  error?: string;
  /** `timeout` or `conn_error` for requests without an answer. */
  kind?: 'timeout' | 'conn_error';
}

export interface LoadRun {
  samples: CallSample[];
  wallMs: number;
  sessionsStarted: number;
  stoppedEarly: boolean;
}

interface AutocannonClient {
  setRequests(r: unknown[]): void;
  on(event: string, fn: (...a: unknown[]) => void): void;
  _doRequest: (...a: unknown[]) => void;
  destroyed: boolean;
}

export function predictedCached(h: unknown): number | undefined {
  const v = Array.isArray(h) ? h[0] : h;
  if (typeof v !== 'string') return undefined;
  const m = /(?:^|;)\s*cached=(\d+)/.exec(v);
  return m ? Number(m[1]) : undefined;
}

class Connection {
  private player: SessionPlayer;
  private builtAt = 0;
  private sentAt = 0;
  private firstByteAt = 0;
  private inFlight = false;

  constructor(
    private readonly queue: SessionQueue,
    private readonly o: LoadOptions,
    private readonly sink: (s: CallSample) => void,
  ) {
    this.player = queue.take();
  }

  build(req: Record<string, unknown>): Record<string, unknown> {
    if (this.player.done()) this.player = this.queue.take();
    const built = buildRequest(this.o.api, this.player.body(), {
      model: this.o.model,
      stream: this.o.stream,
      maxTokens: this.o.maxTokens,
      key: this.o.key,
      sessionId: this.player.id,
    });
    this.builtAt = performance.now();
    this.firstByteAt = 0;
    this.inFlight = true;
    return { ...req, method: 'POST', path: built.path, headers: built.headers, body: built.body };
  }

  onWrite(): void {
    // autocannon announces a request before it builds the next one: the write happens after both
    this.sentAt = Math.max(performance.now(), this.builtAt);
  }

  onBody(): void {
    if (this.inFlight && !this.firstByteAt) this.firstByteAt = performance.now();
  }

  onResponse(status: number, body: string, headers: Record<string, unknown>): void {
    const end = performance.now();
    const start = Math.max(this.sentAt, this.builtAt);
    const parsed = parseAnswer(this.o.api, this.o.stream, body);
    const ok = status >= 200 && status < 300 && !parsed.error;
    const s: CallSample = {
      session: this.player.id,
      turn: this.player.currentTurn,
      status,
      ok,
      latency_ms: end - start,
      prompt_tokens: ok ? (parsed.usage?.prompt ?? 0) : 0,
      cached_tokens: ok ? (parsed.usage?.cached ?? 0) : 0,
      completion_tokens: ok ? (parsed.usage?.completion ?? 0) : 0,
    };
    if (this.o.stream && this.firstByteAt) s.ttft_ms = this.firstByteAt - start;
    const predicted = predictedCached(headers['x-ctxgate-prefix']);
    if (predicted !== undefined) s.predicted_cached_tokens = predicted;
    if (!ok) s.error = parsed.error ?? `HTTP ${status}`;
    this.finish(s, ok ? parsed.answer : undefined);
  }

  onLost(kind: 'timeout' | 'conn_error'): void {
    if (!this.inFlight) return;
    const end = performance.now();
    this.finish(
      {
        session: this.player.id,
        turn: this.player.currentTurn,
        status: 0,
        ok: false,
        latency_ms: end - Math.max(this.sentAt, this.builtAt),
        prompt_tokens: 0,
        cached_tokens: 0,
        completion_tokens: 0,
        error: kind,
        kind,
      },
      undefined,
    );
  }

  private finish(s: CallSample, answer: Parameters<SessionPlayer['advance']>[0]): void {
    this.inFlight = false;
    this.player.advance(answer);
    this.sink(s);
  }
}

/** Runs one load against one target; resolves with every finished request's sample. */
export async function runLoad(o: LoadOptions, stop?: AbortSignal): Promise<LoadRun> {
  const queue = new SessionQueue(o.sessions);
  const samples: CallSample[] = [];
  const sink = (s: CallSample) => {
    samples.push(s);
    o.onSample?.(s);
  };
  const url = new URL(o.target);
  const base = `${url.protocol}//${url.host}`;
  // The run ends by itself: no request is sent after the deadline (or past `requests`), and the
  // ones in flight are answered and counted before autocannon stops, so the figures cover
  // exactly the requests the target served (autocannon's own duration would drop them).
  const deadline = performance.now() + o.durationS * 1000;
  let sent = 0;
  let idle = 0;
  let inst: autocannon.Instance | undefined;
  let draining = false;
  const mayStart = () => !draining && (o.requests ? sent < o.requests : performance.now() < deadline);
  const goIdle = () => {
    if (++idle === o.connections) inst?.stop();
  };
  const opts: autocannon.Options = {
    url: base,
    connections: o.connections,
    pipelining: 1,
    timeout: o.timeoutS,
    // a safety net only: the run stops itself
    duration: (o.requests ? 24 * 3600 : o.durationS) + o.timeoutS + 30,
    ...(o.rate > 0 ? { overallRate: o.rate } : {}),
    // a placeholder: every connection replaces it with its own session player in setupClient
    requests: [{ method: 'POST', path: '/', body: '{}' }],
    setupClient: (raw: unknown) => {
      const client = raw as AutocannonClient;
      const conn = new Connection(queue, o, sink);
      client.setRequests([
        {
          setupRequest: (req: Record<string, unknown>) => conn.build(req),
          onResponse: (status: number, body: string, _ctx: unknown, headers: Record<string, unknown>) =>
            conn.onResponse(status, body, headers),
        },
      ]);
      client.on('request', () => {
        sent++;
        conn.onWrite();
      });
      client.on('body', () => conn.onBody());
      client.on('timeout', () => conn.onLost('timeout'));
      client.on('connError', () => conn.onLost('conn_error'));
      const next = client._doRequest.bind(client);
      let stopped = false;
      const send = (a: unknown[]) => {
        if (client.destroyed || stopped) return;
        if (!mayStart()) {
          stopped = true;
          goIdle();
          return;
        }
        next(...a);
      };
      let first = true;
      client._doRequest = (...a: unknown[]) => {
        // an agent thinks between an answer and its next request; autocannon has no such knob
        if (first || o.thinkMs <= 0) send(a);
        else setTimeout(() => send(a), o.thinkMs);
        first = false;
      };
    },
  };
  const t0 = performance.now();
  let stoppedEarly = false;
  // Ctrl-C: no new requests; the ones in flight are answered and counted, within a grace period
  const onAbort = () => {
    stoppedEarly = true;
    draining = true;
    setTimeout(() => inst?.stop(), Math.min(o.timeoutS, ABORT_GRACE_S) * 1000).unref();
  };
  stop?.addEventListener('abort', onAbort, { once: true });
  try {
    await new Promise<void>((resolve, reject) => {
      inst = autocannon(opts, (err) => (err ? reject(err) : resolve()));
    });
  } finally {
    stop?.removeEventListener('abort', onAbort);
  }
  return { samples, wallMs: performance.now() - t0, sessionsStarted: queue.taken, stoppedEarly };
}
