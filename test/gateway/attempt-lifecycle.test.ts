// Every state transition of one upstream attempt, and the one failover loop around them, over real
// sockets against reference workers whose faults (setFault, x-sim-fault) cut the exchange at exact
// points: before the headers (reset, timeout), at the status line (5xx), after the headers but
// before any body byte (die-after-headers), after the first byte (die-after-chunks), and on our
// side (client abort, shutdown). The consumer here reads bodies like the relay does; the relay
// itself is exercised end to end by the gateway tests at the bottom.
import OpenAI from 'openai';
import { Registry } from 'prom-client';
import type { UpstreamResponse } from '../../gateway/proxy/upstream-response.ts';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ShapedError } from '../../gateway/ingress/types.ts';
import { createMetrics } from '../../gateway/metrics.ts';
import type { Attempt, AttemptObserver } from '../../gateway/proxy/attempt.ts';
import { type CallResult, UpstreamCall } from '../../gateway/proxy/upstream-call.ts';
import { startGateway, type StartedGateway } from '../../gateway/server.ts';
import { createFleet, type ModelRoute } from '../../gateway/upstream/fleet.ts';
import { GatewayError } from '../../middleware/errors.ts';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';
import { pairConfig } from '../helpers/pair-config.ts';

let a: SimWorker;
let b: SimWorker;
beforeAll(async () => {
  [a, b] = await Promise.all([startSimWorker({ model: 'm', seed: 1 }), startSimWorker({ model: 'm', seed: 2 })]);
});
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
});
afterEach(() => {
  for (const w of [a, b])
    w.setFault({ reset: false, dieAfterHeaders: false, dieAfterChunks: 0, hangMs: 0, failRate: 0 });
});

function fleet(upstream: Record<string, unknown> = {}): {
  route: ModelRoute;
  metrics: ReturnType<typeof createMetrics>;
} {
  // Workers in order: the first one (a) goes first.
  const config = pairConfig(a, b, upstream);
  const metrics = createMetrics(new Registry());
  return { route: createFleet(config, metrics).get('m')!, metrics };
}

/** Records each transition as `worker:event`. */
function recorder(): { log: string[]; observer: AttemptObserver } {
  const log: string[] = [];
  return {
    log,
    observer: {
      onBegin: (x) => log.push(`${x.worker.id}:begin`),
      onHeaders: (x) => log.push(`${x.worker.id}:headers ${x.statusCode}`),
      onFirstByte: (x) => log.push(`${x.worker.id}:first-byte`),
      onEnd: (x) => log.push(`${x.worker.id}:end ${x.outcome}`),
    },
  };
}

/** Reads a body the way the relay does: first byte marked, committed once a stream byte went out. */
class Reader {
  text = '';
  sent = false;
  failed: ShapedError | undefined;
  constructor(
    private readonly stream: boolean,
    private readonly signal?: AbortSignal,
  ) {}
  async consume(x: Attempt, res: UpstreamResponse): Promise<'complete' | 'cut'> {
    for await (const c of res.body) {
      x.firstByte();
      if (this.stream) this.sent = true;
      this.text += String(c);
      if (this.signal?.aborted) return 'cut';
    }
    if (!this.stream) JSON.parse(this.text);
    return 'complete';
  }
  committed(): boolean {
    return this.sent;
  }
  failMidStream(err: ShapedError): void {
    this.failed = err;
  }
}

async function call(
  route: ModelRoute,
  metrics: ReturnType<typeof createMetrics>,
  opts: { stream?: boolean; fault?: string; signal?: AbortSignal; shuttingDown?: boolean; also?: AttemptObserver } = {},
): Promise<{ r: CallResult | GatewayError; log: string[]; reader: Reader }> {
  const rec = recorder();
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (opts.fault) headers['x-sim-fault'] = opts.fault;
  const c = new UpstreamCall(
    route,
    {
      path: '/v1/chat/completions',
      body: JSON.stringify({
        model: 'm',
        stream: opts.stream ?? false,
        max_tokens: 24,
        messages: [{ role: 'user', content: 'hi' }],
      }),
      headers,
      signal: opts.signal ?? new AbortController().signal,
      shuttingDown: () => opts.shuttingDown ?? false,
      info: { model: 'm', tenant: 't', cacheSalt: '' },
      prefillTokens: 100,
      attempts: 2,
    },
    metrics,
    opts.also ? [rec.observer, opts.also] : [rec.observer],
  );
  const reader = new Reader(opts.stream ?? false, opts.signal);
  const r = await c.run(reader).catch((e: GatewayError) => e);
  return { r, log: rec.log, reader };
}

function settled(route: ModelRoute): void {
  for (const w of route.workers) {
    expect(w.inFlight).toBe(0);
    expect(w.queuedPrefillTokens).toBe(0);
  }
}

describe('attempt lifecycle', () => {
  it('sent → headers → streaming → ended(ok), worker bookkeeping released', async () => {
    const { route, metrics } = fleet();
    const { r, log } = await call(route, metrics);
    expect(r).toMatchObject({ kind: 'answered' });
    expect(log).toEqual(['a:begin', 'a:headers 200', 'a:first-byte', 'a:end ok']);
    settled(route);
    expect(route.byId.get('a')!.verified).toBe(true);
  });

  it('queued prefill is held from begin until the first byte', async () => {
    const { route, metrics } = fleet();
    a.setFault({ hangMs: 300 });
    // Sampled at the transitions themselves (a sleep-then-look raced the hang on a loaded machine).
    const seen: string[] = [];
    const w = route.byId.get('a')!;
    const sample = (at: string) => seen.push(`${at}: inFlight ${w.inFlight}, queued ${w.queuedPrefillTokens}`);
    await call(route, metrics, {
      also: { onBegin: () => sample('begin'), onHeaders: () => sample('headers'), onEnd: () => sample('end') },
    });
    expect(seen).toEqual([
      'begin: inFlight 1, queued 100',
      'headers: inFlight 1, queued 100',
      'end: inFlight 0, queued 0',
    ]);
    settled(route);
  });

  it('sent → ended(error) on a reset before the headers; failed over; counted toward ejection', async () => {
    const { route, metrics } = fleet();
    a.setFault({ reset: true });
    const { r, log } = await call(route, metrics);
    expect(r).toMatchObject({ kind: 'answered' });
    expect(log).toEqual(['a:begin', 'a:end error', 'b:begin', 'b:headers 200', 'b:first-byte', 'b:end ok']);
    expect(route.byId.get('a')!.consecutiveFailures).toBe(1);
    settled(route);
  });

  it('sent → ended(timeout) when the headers do not come in time', async () => {
    const { route, metrics } = fleet({ headers_timeout_ms: 150 });
    a.setFault({ hangMs: 10_000 }); // far past the 150 ms timeout, however late a loaded machine fires it
    const { r, log } = await call(route, metrics);
    expect(r).toMatchObject({ kind: 'answered' });
    expect(log.slice(0, 2)).toEqual(['a:begin', 'a:end timeout']);
    expect(log.at(-1)).toBe('b:end ok');
    settled(route);
  });

  it('headers(5xx) → ended(5xx): failed over, blamed only once another worker served the body', async () => {
    const { route, metrics } = fleet();
    a.setFault({ failRate: 1, failStatus: 503 });
    const { r, log } = await call(route, metrics);
    expect(r).toMatchObject({ kind: 'answered' });
    expect(log.slice(0, 3)).toEqual(['a:begin', 'a:headers 503', 'a:end 5xx']);
    expect(route.byId.get('a')!.consecutiveFailures).toBe(1);

    // Every worker 5xx: the last answer goes back for reshaping, and no worker is blamed.
    const both = fleet();
    b.setFault({ failRate: 1, failStatus: 500 });
    const all = await call(both.route, both.metrics);
    expect(all.r).toMatchObject({ kind: 'failed', status: 500 });
    expect(all.log).toEqual(['a:begin', 'a:headers 503', 'a:end 5xx', 'b:begin', 'b:headers 500', 'b:end 5xx']);
    for (const w of both.route.workers) expect(w.consecutiveFailures).toBe(0);
    settled(both.route);
  });

  it('headers(200) → ended(bad_response) when the body never comes: failed over, stream or not', async () => {
    for (const stream of [false, true]) {
      const { route, metrics } = fleet();
      a.setFault({ dieAfterHeaders: true });
      const { r, log, reader } = await call(route, metrics, { stream });
      expect(r).toMatchObject({ kind: 'answered' });
      expect(log.slice(0, 3)).toEqual(['a:begin', 'a:headers 200', 'a:end bad_response']);
      expect(log.at(-1)).toBe('b:end ok');
      expect(reader.failed).toBeUndefined();
      settled(route);
    }
  });

  it('streaming → ended(stream_failed) after the first byte: no failover, the error event instead', async () => {
    const { route, metrics } = fleet();
    const { r, log, reader } = await call(route, metrics, { stream: true, fault: 'die-after-chunks=3' });
    expect(r).toMatchObject({ kind: 'ended_mid_stream' });
    expect(log).toEqual(['a:begin', 'a:headers 200', 'a:first-byte', 'a:end stream_failed']);
    expect(reader.failed).toMatchObject({ status: 502, code: 'upstream_stream_failed' });
    expect(route.byId.get('a')!.consecutiveFailures).toBe(1);
    settled(route);
  });

  it('ended(client_closed) when the client leaves: not retried, not the worker fault', async () => {
    const { route, metrics } = fleet();
    a.setFault({ hangMs: 10_000 }); // far past the abort, however late a loaded machine fires it
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    const { r, log } = await call(route, metrics, { signal: ac.signal });
    expect(r).toMatchObject({ kind: 'client_closed' });
    expect(log).toEqual(['a:begin', 'a:end client_closed']);
    expect(route.byId.get('a')!.consecutiveFailures).toBe(0);
    settled(route);
  });

  it('ended(shutting_down) at the shutdown deadline: the gateway error, not the worker fault', async () => {
    const { route, metrics } = fleet();
    a.setFault({ hangMs: 10_000 }); // far past the abort, however late a loaded machine fires it
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    const { r, log } = await call(route, metrics, { signal: ac.signal, shuttingDown: true });
    expect(r).toBeInstanceOf(GatewayError);
    expect((r as GatewayError).code).toBe('shutting_down');
    expect(log).toEqual(['a:begin', 'a:end shutting_down']);
    expect(route.byId.get('a')!.consecutiveFailures).toBe(0);
    settled(route);
  });

  it('counts every ended attempt by outcome', async () => {
    const { route, metrics } = fleet();
    a.setFault({ reset: true });
    await call(route, metrics);
    const text = await (
      metrics.upstreamAttempts as unknown as {
        get(): Promise<{ values: { labels: Record<string, string>; value: number }[] }>;
      }
    ).get();
    const by = Object.fromEntries(text.values.map((v) => [`${v.labels.worker}:${v.labels.outcome}`, v.value]));
    expect(by).toEqual({ 'a:error': 1, 'b:ok': 1 });
  });
});

describe('through the gateway (the relay as the consumer)', () => {
  let gw: StartedGateway;
  beforeAll(async () => {
    gw = await startGateway(pairConfig(a, b), { logger: false });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('a stream whose worker dies before the first byte is failed over, not ended with an error', async () => {
    a.setFault({ dieAfterHeaders: true });
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'x', maxRetries: 0 });
    for (let i = 0; i < 2; i++) {
      const { data: stream, response } = await client.chat.completions
        .create({ model: 'm', stream: true, max_tokens: 16, messages: [{ role: 'user', content: `hi ${i}` }] })
        .withResponse();
      let text = '';
      for await (const ch of stream) text += ch.choices[0]?.delta?.content ?? '';
      expect(text.length).toBeGreaterThan(0);
      expect(response.headers.get('x-ctxgate-worker')).toBe('b');
    }
  });

  it('a stream that breaks after the first byte ends with the error event', async () => {
    a.setFault({ dieAfterChunks: 3 });
    b.setFault({ dieAfterChunks: 3 });
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', stream: true, max_tokens: 32, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    // The documented ending: the error event, then [DONE]; never a normal finish.
    expect(text).toMatch(/"code":"upstream_stream_failed"\}\}\n\ndata: \[DONE\]\n\n$/);
    expect(text).not.toContain('"finish_reason":"stop"');
  });
});
