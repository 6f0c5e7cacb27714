// Failover before the first byte, never after; mid-stream failure event; client abort; health.
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { startRig, until, type TestRig } from '../helpers/gateway.ts';

const msg = [{ role: 'user' as const, content: 'hi' }];
let rig: TestRig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

async function chat(r: TestRig) {
  const { data, response } = await r.client().chat.completions.create({ model: 'm1', messages: msg }).withResponse();
  return {
    data,
    worker: response.headers.get('x-ctxgate-worker'),
    attempts: Number(response.headers.get('x-ctxgate-attempts')),
  };
}

interface WorkersBody {
  models: {
    workers: { id: string; healthy: boolean; consecutiveFailures: number; lastErrors: { message: string }[] }[];
  }[];
}
const workers = async (r: TestRig) =>
  ((await fetch(`${r.gw.url}/v1/gateway/workers`).then((x) => x.json())) as WorkersBody).models[0].workers;

describe('failover', () => {
  it('retries on another worker when one was killed between requests', async () => {
    rig = await startRig();
    expect((await chat(rig)).attempts).toBe(1);
    await rig.ups[1].close();
    const results = [await chat(rig), await chat(rig), await chat(rig)];
    expect(
      results.every((r) => r.worker === 'a' && r.data.choices[0].message.content?.startsWith('hello from a')),
    ).toBe(true);
    expect(results.some((r) => r.attempts === 2)).toBe(true);
  });

  it('retries a worker that refuses connections before the first byte', async () => {
    rig = await startRig();
    await rig.ups[0].close(); // port now refuses
    for (let i = 0; i < 4; i++) expect((await chat(rig)).worker).toBe('b');
    const w = await workers(rig);
    expect(w[0].lastErrors[0].message).toMatch(/ECONNREFUSED|refused/i);
  });

  it('retries a 5xx before the first byte and reports the attempts', async () => {
    rig = await startRig({
      upstreams: [{ name: 'a', knobs: { status: 503 } }, { name: 'b' }],
      config: { health: { interval_ms: 0, eject_after: 100 } },
    });
    const r = [await chat(rig), await chat(rig)];
    expect(r.map((x) => x.worker)).toEqual(['b', 'b']);
    // Every attempt that reached a (503) was followed by one on b.
    expect(r.filter((x) => x.attempts === 2).length).toBe(rig.ups[0].received);
    expect(rig.ups[0].received).toBeGreaterThan(0);
    await until(() => rig!.usage.length === 2);
    expect(rig.usage.map((u) => u.attempts).sort()).toEqual(r.map((x) => x.attempts).sort());
  });

  it('answers the last 5xx, without the worker body, when every attempt failed with one', async () => {
    rig = await startRig({
      upstreams: [
        { name: 'a', knobs: { status: 500 } },
        { name: 'b', knobs: { status: 500 } },
      ],
    });
    const r = await fetch(`${rig.gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm1', messages: msg }),
    });
    expect(r.status).toBe(500);
    expect(r.headers.get('x-ctxgate-attempts')).toBe('2');
    const e = ((await r.json()) as { error: { type: string; code: string; message: string } }).error;
    expect(e).toMatchObject({ type: 'upstream_error', code: 'upstream_500' });
    expect(e.message).not.toContain('fake');
  });

  it('never retries after the first byte: a mid-stream failure ends with the SSE error event', async () => {
    rig = await startRig({
      upstreams: [
        { name: 'a', knobs: { dieAfterChunks: 3 } },
        { name: 'b', knobs: { dieAfterChunks: 3 } },
      ],
    });
    const stream = await rig.client().chat.completions.create({ model: 'm1', messages: msg, stream: true });
    const got: string[] = [];
    const err = await (async () => {
      try {
        for await (const c of stream) got.push(c.choices[0]?.delta?.content ?? '');
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as InstanceType<typeof OpenAI.APIError>).error).toMatchObject({
      type: 'upstream_error',
      code: 'upstream_stream_failed',
    });
    expect(got.join('')).toMatch(/^hello from (a|b) w1$/);
    expect(rig.ups[0].received + rig.ups[1].received).toBe(1);

    const raw = await fetch(`${rig.gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm1', messages: msg, stream: true }),
    });
    const text = await raw.text();
    expect(text).toMatch(
      /data: \{"error":\{"message":"[^"]+","type":"upstream_error","code":"upstream_stream_failed"\}\}\n\ndata: \[DONE\]\n\n$/,
    );
    await until(() => rig!.usage.filter((u) => u.errorCode === 'upstream_stream_failed').length === 2);
  });

  it('a client that disconnects aborts the upstream request (non-stream and stream)', async () => {
    rig = await startRig({ upstreams: [{ name: 'a', knobs: { hang: true } }] });
    const ac = new AbortController();
    const p = rig
      .client()
      .chat.completions.create({ model: 'm1', messages: msg }, { signal: ac.signal })
      .catch((e) => e);
    await until(() => rig!.ups[0].received === 1);
    ac.abort();
    expect(await p).toBeInstanceOf(Error);
    await until(() => rig!.ups[0].aborted === 1);

    rig.ups[0].knobs.hang = false;
    rig.ups[0].knobs.chunkDelayMs = 100;
    rig.ups[0].knobs.words = 50;
    const ac2 = new AbortController();
    const stream = await rig
      .client()
      .chat.completions.create({ model: 'm1', messages: msg, stream: true }, { signal: ac2.signal });
    try {
      for await (const c of stream) if (c.choices[0]?.delta?.content) ac2.abort();
    } catch {
      /* aborted by us */
    }
    await until(() => rig!.ups[0].aborted === 2);
    await until(() => rig!.usage.filter((u) => u.status === 499).length === 2);
  });
});

describe('health', () => {
  it('ejects after eject_after failed checks, routes around, re-admits on success', async () => {
    rig = await startRig({ config: { health: { interval_ms: 0, eject_after: 2, readmit_after: 1 } } });
    rig.ups[0].knobs.healthy = false;
    await rig.gw.checkHealth();
    expect((await workers(rig))[0].healthy).toBe(true);
    await rig.gw.checkHealth();
    expect((await workers(rig))[0].healthy).toBe(false);
    for (let i = 0; i < 3; i++) expect((await chat(rig)).worker).toBe('b');
    expect((await fetch(`${rig.gw.url}/ready`)).status).toBe(200);
    const metrics = await fetch(`${rig.gw.url}/metrics`).then((r) => r.text());
    expect(metrics).toContain('ctxgate_worker_healthy{model="m1",worker="a"} 0');

    rig.ups[1].knobs.healthy = false;
    await rig.gw.checkHealth();
    await rig.gw.checkHealth();
    const notReady = await fetch(`${rig.gw.url}/ready`);
    expect(notReady.status).toBe(503);
    expect(await notReady.json()).toMatchObject({ status: 'not_ready', models: { m1: { healthy: 0, workers: 2 } } });

    rig.ups[0].knobs.healthy = true;
    await rig.gw.checkHealth();
    expect((await workers(rig))[0].healthy).toBe(true);
    expect((await chat(rig)).worker).toBe('a');
  });

  it('ejects passively after consecutive request failures', async () => {
    rig = await startRig({ config: { health: { interval_ms: 0, eject_after: 2 } } });
    await rig.ups[0].close();
    for (let i = 0; i < 4; i++) await chat(rig);
    const w = await workers(rig);
    expect(w[0].healthy).toBe(false);
    expect(w[0].consecutiveFailures).toBe(2);
  });
});
