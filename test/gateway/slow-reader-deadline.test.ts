// A client that stops reading its stream (backpressure all the way to the worker) for longer than
// body_timeout_ms: the attempt's real-clock body limit (attempt-deadline.ts) counts only the
// worker's silence, so the stream must reach [DONE] and the worker stay healthy. Before the limit
// was held while the relay waited on the client, each such stream was cut as
// upstream_stream_failed and counted toward ejection: three of them ejected a healthy worker.
import http from 'node:http';
import { afterEach, expect, it } from 'vitest';
import { AttemptDeadline } from '../../gateway/proxy/attempt-deadline.ts';
import { startRig, type TestRig, until } from '../helpers/gateway.ts';

let rig: TestRig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

/** Posts a streaming call, does not read the answer until `release` settles, then reads it whole. */
function pausingReader(url: string, release: Promise<void>, onHeaders: () => void): Promise<string> {
  return new Promise((resolve) => {
    const u = new URL(`${url}/v1/chat/completions`);
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        res.pause();
        onHeaders();
        let body = '';
        void release.then(() => {
          res.setEncoding('utf8');
          res.on('data', (c: string) => {
            body += c;
          });
          res.on('end', () => resolve(body));
          res.on('error', () => resolve(body));
          res.resume();
        });
      },
    );
    req.on('error', () => resolve('client error'));
    req.end(JSON.stringify({ model: 'm1', messages: [{ role: 'user', content: 'hi' }], stream: true }));
  });
}

it('a client that pauses reading longer than body_timeout_ms gets its whole stream; the worker stays healthy', async () => {
  const bodyMs = 1_500;
  rig = await startRig({
    upstreams: [{ name: 'a', knobs: { words: 100_000 } }],
    config: { upstream: { body_timeout_ms: bodyMs, attempts: 1 }, health: { interval_ms: 0, eject_after: 3 } },
  });
  const w = rig.gw.ctx.fleet.get('m1')!.workers[0];
  let open = (): void => undefined;
  const release = new Promise<void>((r) => {
    open = r;
  });
  let started = 0;
  const bodies = Promise.all([0, 1, 2].map(() => pausingReader(rig!.gw.url, release, () => started++)));
  await until(() => started === 3);
  // Well past the body limit while the clients read nothing: the relay waits on them, not on the worker.
  await new Promise((r) => setTimeout(r, bodyMs * 3));
  open();
  for (const b of await bodies) {
    expect(b).not.toContain('upstream_stream_failed');
    expect(b.trimEnd().endsWith('data: [DONE]')).toBe(true);
  }
  expect(w.healthy).toBe(true);
}, 60_000);

it('the body limit stops while held and starts again, whole, on resume', async () => {
  const parent = new AbortController();
  const d = new AttemptDeadline(parent.signal, { headersMs: 60_000, bodyMs: 200 });
  d.headers();
  d.hold();
  d.hold(); // nests
  await new Promise((r) => setTimeout(r, 600));
  d.resume();
  await new Promise((r) => setTimeout(r, 400));
  expect(d.signal.aborted).toBe(false);
  d.resume();
  await until(() => d.signal.aborted);
  expect((d.signal.reason as { code?: string }).code).toBe('UND_ERR_BODY_TIMEOUT');
  d.done();
});

it("the attempt's signal (an EventEmitter undici accepts) forwards the request's abort once, with its reason", () => {
  const parent = new AbortController();
  const d = new AttemptDeadline(parent.signal, { headersMs: 60_000, bodyMs: 60_000 });
  let heard = 0;
  d.signal.once('abort', () => heard++);
  expect(d.signal.aborted).toBe(false);
  const why = new Error('client left');
  parent.abort(why);
  parent.abort(new Error('again'));
  expect(d.signal.aborted).toBe(true);
  expect(d.signal.reason).toBe(why);
  expect(heard).toBe(1);
  d.done();
  // Already aborted when the attempt starts: aborted from the start.
  const late = new AttemptDeadline(parent.signal, { headersMs: 60_000, bodyMs: 60_000 });
  expect(late.signal.reason).toBe(why);
  late.done();
});
