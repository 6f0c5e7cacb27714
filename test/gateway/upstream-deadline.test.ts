// An attempt's connect + headers and body-idle limits hold on the real clock even when this
// process's timers run late. undici's own timeouts run on a clock that advances one step per
// (late) timer run, so a process whose event loop is busy in long slices saw them stretch several
// times over (bench chaos: a 4 s headers timeout ending after 8.7 s; calls hit the client's 15 s
// no-byte limit). The gateway runs in this process: the test blocks its event loop in 1 s slices
// and counts the slices the attempt lasts. A slice is measured by Date.now(), so machine load
// makes slices no shorter, and the count does not depend on how fast the machine is.
import { afterEach, describe, expect, it } from 'vitest';
import { startRig, type TestRig, until } from '../helpers/gateway.ts';

const SLICE_MS = 1_000;
/** More slices than undici's fast-timer clock alone needs to reach the limits below (~8). */
const MAX_SLICES = 14;
const msg = [{ role: 'user' as const, content: 'hi' }];

let rig: TestRig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

/** Blocks the event loop SLICE_MS at a time, yielding between slices, until `done`; the count. */
async function slicesUntil(done: () => boolean): Promise<number> {
  let n = 0;
  while (n < MAX_SLICES) {
    await new Promise((r) => setImmediate(r));
    if (done()) break;
    const end = Date.now() + SLICE_MS;
    while (Date.now() < end) {
      // a synchronous section: timers that fall due meanwhile run after it
    }
    n++;
  }
  return n;
}

function post(stream: boolean): Promise<Response> {
  return fetch(`${rig!.gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm1', messages: msg, stream }),
  });
}

const worker = () => rig!.gw.ctx.fleet.get('m1')!.workers[0];

/** Posts, waits until the worker holds the call, blocks the event loop in slices until the gateway gave it
 *  up (at most 5 slices), and checks the client got a 504 upstream_timeout. */
async function givenUpWithin5Slices(stream: boolean): Promise<Response> {
  const res = post(stream);
  await until(() => rig!.ups[0].received === 1 && worker().inFlight === 1);
  const slices = await slicesUntil(() => worker().inFlight === 0);
  expect(slices).toBeLessThanOrEqual(5);
  const r = await res;
  expect(r.status).toBe(504);
  expect(await r.clone().json()).toMatchObject({ error: { code: 'upstream_timeout' } });
  return r;
}

describe('upstream attempt deadlines on the real clock', () => {
  it('a worker that never answers is given up after connect + headers timeout, not after the stretched one', async () => {
    rig = await startRig({
      upstreams: [{ name: 'a', knobs: { hang: true } }],
      config: { upstream: { connect_timeout_ms: 500, headers_timeout_ms: 3_000, attempts: 1 } },
    });
    // due 3.5 s after the attempt started: it ends in the yield after the 4th slice (undici's
    // timers alone: ~8)
    const r = await givenUpWithin5Slices(false);
    const id = r.headers.get('x-request-id')!;
    const rec = (await (await fetch(`${rig.gw.url}/v1/gateway/requests/${id}`)).json()) as {
      attemptLog: { outcome: string }[];
    };
    expect(rec.attemptLog.map((a) => a.outcome)).toEqual(['timeout']);
  });

  it('a stream whose worker sent headers and then nothing is given up after body timeout of silence', async () => {
    rig = await startRig({
      upstreams: [{ name: 'a', knobs: { chunkDelayMs: 120_000 } }],
      config: { upstream: { body_timeout_ms: 3_000, attempts: 1 } },
    });
    // the headers are flushed at once; due 3 s after they arrived (before the 1st slice, or in
    // the yield after it): it ends after the 4th slice at the latest (undici's timers alone: ~8)
    await givenUpWithin5Slices(true);
  });

  it('a stream slower in total than the body timeout, but never silent that long, is served whole', async () => {
    rig = await startRig({
      upstreams: [{ name: 'a', knobs: { chunkDelayMs: 250, words: 24 } }],
      config: { upstream: { body_timeout_ms: 4_000, attempts: 1 } },
    });
    const r = await post(true);
    expect(r.status).toBe(200);
    const text = await r.text();
    expect(text).toContain('hello from a');
    expect(text).toContain(' w23');
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    await until(() => worker().inFlight === 0);
  });
});
