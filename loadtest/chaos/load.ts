// Concurrent multi-turn sessions against the gateway for `bench chaos`, half of the calls
// streaming, classifying every outcome: success, non-stream failure (by code), a stream that
// ended with the SSE error event (clean), a stream that ended without [DONE] or error event
// (unclean), and a hung stream (no byte for longer than idleTimeoutMs; aborted by the client).
// Every call carries its own x-request-id, and the hung ones are kept (bounded) with the second
// they started, so the bench can ask the gateway what their attempts did.
import { Agent, request } from 'undici';
import type { Session } from '../formats/types.ts';

export interface LoadStats {
  sent: number;
  succeeded: number;
  failedNonstream: number;
  failedStreamClean: number;
  failedStreamUnclean: number;
  failedStreamHttp: number;
  hungStreams: number;
  retries: number;
  failuresByKind: Record<string, number>;
  latenciesMs: number[];
  /** The first MAX_HUNG calls that hung (no byte for idleTimeoutMs), in the order they hung. */
  hung: HungCall[];
}

export interface HungCall {
  /** The x-request-id it was sent with. */
  id: string;
  stream: boolean;
  /** Seconds from the load's start to the call's start. */
  startS: number;
  /** The gateway's record of it, read RECORD_DELAY_MS after the client gave up: each attempt as
   *  worker:outcome@start+end ms, or why there is none (a call the gateway never finished). */
  record?: string;
}

/** The gateway writes a request's record when it ends (client_closed once the client gave up). */
const RECORD_DELAY_MS = 2_000;

async function recordOf(url: string, id: string): Promise<string> {
  try {
    const res = await request(`${url}/v1/gateway/requests/${encodeURIComponent(id)}`);
    const text = await res.body.text();
    if (res.statusCode === 404) return 'no record: the gateway had not finished it';
    if (res.statusCode !== 200) return `record: HTTP ${res.statusCode}`;
    const r = JSON.parse(text) as {
      status: number;
      attemptLog?: { worker: string; outcome: string; startMs: number; headersMs?: number; endMs?: number }[];
    };
    const attempts = (r.attemptLog ?? []).map(
      (a) =>
        `${a.worker}:${a.outcome}@${Math.round(a.startMs)}+${a.headersMs === undefined ? '-' : Math.round(a.headersMs)}/${a.endMs === undefined ? '-' : Math.round(a.endMs)}ms`,
    );
    return `status ${r.status}; attempts ${attempts.join(' ') || 'none'}`;
  } catch (err) {
    return `record: ${(err as Error).message}`;
  }
}

const MAX_HUNG = 50;

export function emptyStats(): LoadStats {
  return {
    sent: 0,
    succeeded: 0,
    failedNonstream: 0,
    failedStreamClean: 0,
    failedStreamUnclean: 0,
    failedStreamHttp: 0,
    hungStreams: 0,
    retries: 0,
    failuresByKind: {},
    latenciesMs: [],
    hung: [],
  };
}

export interface LoadOptions {
  url: string;
  model: string;
  sessions: Session[];
  concurrency: number;
  /** Stop starting new calls at this Date.now(). */
  untilMs: number;
  idleTimeoutMs: number;
  maxTokens: number;
  stats: LoadStats;
  /** Prefix of the calls' x-request-id and session ids (unique per load run). */
  idPrefix?: string;
}

const kind = (s: LoadStats, k: string): void => {
  s.failuresByKind[k] = (s.failuresByKind[k] ?? 0) + 1;
};

async function errorCode(body: AsyncIterable<unknown> & { text(): Promise<string> }): Promise<string> {
  try {
    const j = JSON.parse(await body.text()) as { error?: { code?: string } };
    return j.error?.code ?? 'unknown';
  } catch {
    return 'unparseable';
  }
}

async function call(
  o: LoadOptions,
  agent: Agent,
  body: Record<string, unknown>,
  sessionId: string,
  requestId: string,
  loadStart: number,
  /** record look-ups of hung calls, awaited before runLoad returns */
  lookups: Promise<void>[],
): Promise<void> {
  const s = o.stats;
  const stream = body.stream === true;
  const t0 = performance.now();
  s.sent++;
  const ac = new AbortController();
  let idle: NodeJS.Timeout | undefined;
  let hung = false;
  const arm = (): void => {
    clearTimeout(idle);
    idle = setTimeout(() => {
      hung = true;
      ac.abort();
    }, o.idleTimeoutMs);
  };
  arm();
  try {
    const res = await request(`${o.url}/v1/chat/completions`, {
      method: 'POST',
      dispatcher: agent,
      headers: { 'content-type': 'application/json', 'x-session-id': sessionId, 'x-request-id': requestId },
      body: JSON.stringify(body),
      signal: ac.signal,
    });
    const attempts = Number(res.headers['x-ctxgate-attempts'] ?? 1);
    if (attempts > 1) s.retries += attempts - 1;
    if (res.statusCode >= 300) {
      const code = await errorCode(res.body);
      if (stream) s.failedStreamHttp++;
      else s.failedNonstream++;
      kind(s, `${stream ? 'stream' : 'nonstream'}:${res.statusCode}:${code}`);
      return;
    }
    if (!stream) {
      const text = await res.body.text();
      JSON.parse(text);
      s.succeeded++;
      s.latenciesMs.push(performance.now() - t0);
      return;
    }
    let tail = '';
    let errored = false;
    res.body.setEncoding('utf8');
    for await (const chunk of res.body) {
      arm();
      const c = chunk as string;
      if (c.includes('"error":')) errored = true;
      tail = (tail + c).slice(-64);
    }
    s.latenciesMs.push(performance.now() - t0);
    if (errored) {
      s.failedStreamClean++;
      kind(s, 'stream:error_event');
    } else if (tail.trimEnd().endsWith('data: [DONE]')) s.succeeded++;
    else {
      s.failedStreamUnclean++;
      kind(s, 'stream:ended_without_done');
    }
  } catch (err) {
    if (hung) {
      if (stream) s.hungStreams++;
      else s.failedNonstream++;
      kind(s, `${stream ? 'stream' : 'nonstream'}:hung`);
      if (s.hung.length < MAX_HUNG) {
        const h: HungCall = { id: requestId, stream, startS: (t0 - loadStart) / 1000 };
        s.hung.push(h);
        lookups.push(
          new Promise<void>((r) => setTimeout(r, RECORD_DELAY_MS)).then(async () => {
            h.record = await recordOf(o.url, requestId);
          }),
        );
      }
    } else {
      if (stream) s.failedStreamUnclean++;
      else s.failedNonstream++;
      kind(
        s,
        `${stream ? 'stream' : 'nonstream'}:${(err as { code?: string }).code ?? (err as Error).message.slice(0, 40)}`,
      );
    }
  } finally {
    clearTimeout(idle);
  }
}

/** Runs `concurrency` session loops until untilMs; each replays its session's calls in order. */
export async function runLoad(o: LoadOptions): Promise<void> {
  const agent = new Agent({ connections: o.concurrency * 2, keepAliveTimeout: 10_000 });
  const loadStart = performance.now();
  const lookups: Promise<void>[] = [];
  const prefix = o.idPrefix ?? 'chaos';
  const loop = async (i: number): Promise<void> => {
    let round = 0;
    while (Date.now() < o.untilMs) {
      const session = o.sessions[i % o.sessions.length];
      // each run's sessions its own (a warm-up's never continue into the measured run)
      const sid = `${prefix}-${i}-${round++}`;
      for (let turn = 0; turn < session.calls.length && Date.now() < o.untilMs; turn++) {
        const body = {
          ...session.calls[turn].body,
          model: o.model,
          stream: (turn + i) % 2 === 0,
          max_tokens: o.maxTokens,
        } as Record<string, unknown>;
        delete body.max_completion_tokens;
        await call(o, agent, body, sid, `${prefix}-${i}-${round - 1}-${turn}`, loadStart, lookups);
      }
    }
  };
  await Promise.all(Array.from({ length: o.concurrency }, (_, i) => loop(i)));
  await Promise.all(lookups);
  await agent.close();
}

export function percentile(xs: number[], p: number): number {
  if (!xs.length) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
}
