// bench chaos's four fault kinds, one at a time and in a fixed order, over real sockets: a worker
// killed (its listener and every connection closed, as the kernel does at kill -9) and then
// restarted on the same port, a worker hanging before its first byte past the attempt's headers
// limit, a worker dying after three stream chunks, a worker answering 503. Two workers by round
// robin, so every fault meets both a first attempt and a failover; bodies over 16 KiB with the
// stream_options splice (the body shape the upstream splice works on, proxy/body.ts), stream and
// non-stream. Each call is answered (by the other worker when the faulty one failed before the
// first byte) or, for a stream cut after its first byte, ends with the SSE error event; and once
// the calls are done nothing is left behind: no attempt in flight on any worker, no request
// running, pending or queued in any upstream pool, and a keep-alive socket to a killed worker is
// never reused (the first calls after the restart are answered by it). A request an upstream pool
// kept after its attempt ended (an aborted body write, a socket reused after a reset) shows here
// as a pool that does not drain.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type StartedGateway } from '../../gateway/server.ts';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';
import { until } from '../helpers/until.ts';
import { pairConfig } from '../helpers/pair-config.ts';

/** Well over the size where a body without room is sent in pieces (proxy/body.ts). */
const SYSTEM = 'You are a careful coding agent; explain every step you take. '.repeat(300);
const opts = (seed: number, port = 0) => ({ port, model: 'm', tokenizer: 'qwen3', timeScale: 0, seed });

let a: SimWorker;
let b: SimWorker;
let gw: StartedGateway;
let client: OpenAI;
let n = 0;

beforeAll(async () => {
  [a, b] = await Promise.all([startSimWorker(opts(0)), startSimWorker(opts(1))]);
  // A short headers limit so a hung worker is given up (failover) within the test's bounds.
  gw = await startGateway(pairConfig(a, b, { connect_timeout_ms: 500, headers_timeout_ms: 1500, attempts: 2 }), {
    logger: false,
  });
  client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'x', maxRetries: 0 });
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await Promise.all([a?.close(), b?.close()]);
});

type Outcome = { worker: string | null; text: string; streamError?: string };

async function nonStream(): Promise<Outcome> {
  const { data, response } = await client.chat.completions
    .create({
      model: 'm',
      max_tokens: 16,
      messages: [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: `call ${n++}` },
      ],
    })
    .withResponse();
  return { worker: response.headers.get('x-ctxgate-worker'), text: data.choices[0].message.content ?? '' };
}

async function stream(): Promise<Outcome> {
  const { data, response } = await client.chat.completions
    .create({
      model: 'm',
      max_tokens: 16,
      stream: true,
      messages: [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: `call ${n++}` },
      ],
    })
    .withResponse();
  let text = '';
  try {
    for await (const chunk of data) text += chunk.choices[0]?.delta?.content ?? '';
  } catch (err) {
    return { worker: response.headers.get('x-ctxgate-worker'), text, streamError: (err as Error).message };
  }
  return { worker: response.headers.get('x-ctxgate-worker'), text };
}

/** Two calls of each kind: round robin gives each worker a first attempt of both. */
async function round(): Promise<Outcome[]> {
  const out: Outcome[] = [];
  for (const call of [nonStream, nonStream, stream, stream]) out.push(await call());
  return out;
}

/** Nothing in flight, running, pending or queued anywhere once the calls are answered. */
/** With `fault` set on worker a, every call of a round is answered by b; then a is `cleared`. */
async function allAnsweredByB(
  fault: Parameters<SimWorker['setFault']>[0],
  cleared: Parameters<SimWorker['setFault']>[0],
): Promise<void> {
  a.setFault(fault);
  try {
    for (const o of await round()) {
      expect(o.worker).toBe('b');
      expect(o.text).not.toBe('');
      expect(o.streamError).toBeUndefined();
    }
  } finally {
    a.setFault(cleared);
  }
  await drained();
}

async function drained(): Promise<void> {
  const workers = [...gw.ctx.fleet.values()].flatMap((r) => r.workers);
  const residue = () =>
    workers
      .map((w) => {
        const s = w.pool.stats;
        return s.running + s.pending + s.queued + w.inFlight > 0
          ? `${w.id}: in flight ${w.inFlight}, running ${s.running}, pending ${s.pending}, queued ${s.queued}`
          : '';
      })
      .filter(Boolean);
  // the last attempt's end is bookkept right after its answer went out
  await until(() => residue().length === 0, 5_000).catch(() => undefined);
  expect(residue()).toEqual([]);
}

describe('chaos fault kinds, one at a time, with bodies over 16 KiB', () => {
  it('a killed worker: its calls fail over; after its restart on the same port it answers again', async () => {
    const port = a.port;
    await a.close();
    for (const o of await round()) {
      expect(o.worker).toBe('b');
      expect(o.text).not.toBe('');
      expect(o.streamError).toBeUndefined();
    }
    a = await startSimWorker(opts(0, port));
    const after = await round();
    for (const o of after) {
      expect(o.text).not.toBe('');
      expect(o.streamError).toBeUndefined();
    }
    expect(after.map((o) => o.worker)).toContain('a');
    await drained();
  });

  it('a hung worker: each call given up there is answered by the other', async () => {
    await allAnsweredByB({ hangMs: 30_000 }, { hangMs: 0 });
  });

  it('a worker dying mid-stream: streams it served end with the error event, the rest are answered', async () => {
    a.setFault({ dieAfterChunks: 3 });
    let cut = 0;
    try {
      for (const o of await round()) {
        if (o.streamError !== undefined) {
          expect(o.worker).toBe('a');
          cut++;
        } else expect(o.text).not.toBe('');
      }
    } finally {
      a.setFault({ dieAfterChunks: 0 });
    }
    expect(cut).toBeGreaterThan(0);
    await drained();
  });

  it('a worker answering 503: every call is answered by the other', async () => {
    await allAnsweredByB({ failRate: 1, failStatus: 503 }, { failRate: 0 });
  });

  it('after all four, both workers answer and nothing is left behind', async () => {
    const out = await round();
    expect(new Set(out.map((o) => o.worker))).toEqual(new Set(['a', 'b']));
    await drained();
  });
});
