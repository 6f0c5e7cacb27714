// The fake upstream's --trace (bench overhead's slow-call split reads it): each request's
// [arrival, answer sent] on the epoch clock, and, run as its own process, `reset` / `trace` over
// stdin with its GC pauses.
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { startFakeUpstream } from '../../loadtest/fake-upstream.ts';
import { child, type Child } from '../../loadtest/overhead/load.ts';

const stops: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const s of stops) await s();
});

const chat = (url: string): Promise<Response> =>
  fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
  });

describe('fake upstream trace', () => {
  it('keeps each answered request as [arrival, answer sent] within the client’s own window', async () => {
    const up = await startFakeUpstream({ record: false, trace: true });
    stops.push(() => up.close());
    const untraced = await startFakeUpstream({ record: false });
    stops.push(() => untraced.close());
    for (let i = 0; i < 3; i++) {
      const t0 = performance.timeOrigin + performance.now();
      const r = await chat(up.url);
      await r.text();
      const t1 = performance.timeOrigin + performance.now();
      expect(r.status).toBe(200);
      expect(up.spans).toHaveLength(i + 1);
      const [a, b] = up.spans[i];
      expect(a).toBeGreaterThanOrEqual(t0 - 1);
      expect(b).toBeGreaterThanOrEqual(a);
      expect(b).toBeLessThanOrEqual(t1 + 1);
    }
    await (await chat(untraced.url)).text();
    expect(untraced.spans).toHaveLength(0);
  });

  it('a body sent in two pieces: the span starts once the whole body has arrived', async () => {
    const { request } = await import('node:http');
    const up = await startFakeUpstream({ record: false, trace: true });
    stops.push(() => up.close());
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x'.repeat(4000) }] });
    const { port } = new URL(up.url);
    let lastPieceAt = Number.POSITIVE_INFINITY;
    const done = new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/v1/chat/completions',
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.write(body.slice(0, 100));
      // the rest 150 ms later (a sender slow to finish its body)
      setTimeout(() => {
        lastPieceAt = performance.timeOrigin + performance.now();
        req.end(body.slice(100));
      }, 150);
    });
    expect(await done).toBe(200);
    expect(up.spans).toHaveLength(1);
    // arrival is after the second piece was sent, not at the headers: an order, not a duration
    // (review s36 F4: a threshold in ms would pass the old behaviour whenever the fake stalled)
    expect(up.spans[0][0]).toBeGreaterThanOrEqual(lastPieceAt - 1);
  });

  it('as its own process: reset, then trace prints the spans since and its GC pauses', async () => {
    const file = fileURLToPath(new URL('../../loadtest/fake-upstream.ts', import.meta.url));
    const up: Child = await child(file, ['0', '--trace']);
    stops.push(() => up.stop());
    const url = up.line.trim();
    await (await chat(url)).text();
    expect(await up.ask('reset')).toBe('ok');
    for (let i = 0; i < 2; i++) await (await chat(url)).text();
    const tr = JSON.parse(await up.ask('trace')) as { spans: [number, number][]; gc: unknown[] };
    expect(tr.spans).toHaveLength(2);
    expect(Array.isArray(tr.gc)).toBe(true);
    expect(JSON.parse(await up.ask('what'))).toEqual({ error: 'unknown command what' });
  }, 60_000);
});
