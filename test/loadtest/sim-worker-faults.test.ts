// Every fault knob: worker-wide (setFault / options) and per request (x-sim-fault header).
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';
import { parseFaultHeader } from '../../loadtest/sim-worker/faults.ts';

let w: SimWorker;
const body = (extra: Record<string, unknown> = {}): string =>
  JSON.stringify({ model: 'sim', messages: [{ role: 'user', content: 'hi there' }], max_tokens: 8, ...extra });
const post = (headers: Record<string, string> = {}, extra: Record<string, unknown> = {}) =>
  request(w.url + '/v1/chat/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: body(extra),
  });

beforeAll(async () => {
  w = await startSimWorker({ model: 'sim', tokenizer: 'qwen3', seed: 3 });
});
afterAll(async () => {
  await w?.close();
});

describe('sim-worker faults', () => {
  it('parses the header', () => {
    expect(parseFaultHeader('status=503; hang=20, die-after-chunks=3,reset')).toEqual({
      status: 503,
      hangMs: 20,
      dieAfterChunks: 3,
      reset: true,
    });
    expect(parseFaultHeader('die-after-headers')).toEqual({ dieAfterHeaders: true });
  });

  it('x-sim-fault status answers that status with a vLLM-shaped error', async () => {
    const r = await post({ 'x-sim-fault': 'status=503' });
    expect(r.statusCode).toBe(503);
    expect(await r.body.json()).toMatchObject({ object: 'error', code: 503 });
  });

  it('x-sim-fault reset destroys the socket before any byte', async () => {
    await expect(post({ 'x-sim-fault': 'reset' })).rejects.toThrow();
  });

  it('x-sim-fault hang holds the first byte back (a client header timeout fires), then answers', async () => {
    const hung = request(w.url + '/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-sim-fault': 'hang=3000' },
      body: body(),
      headersTimeout: 300,
    });
    await expect(hung).rejects.toMatchObject({ code: 'UND_ERR_HEADERS_TIMEOUT' });
    const r = await post({ 'x-sim-fault': 'hang=50' });
    expect(r.statusCode).toBe(200);
    expect(((await r.body.json()) as { object: string }).object).toBe('chat.completion');
  });

  it('die-after-chunks on a non-stream answer sends a truncated body', async () => {
    const r = await post({ 'x-sim-fault': 'die-after-chunks=1' });
    expect(r.statusCode).toBe(200);
    await expect(r.body.json()).rejects.toThrow();
  });

  it('die-after-chunks cuts a stream after N events (header and worker-wide)', async () => {
    for (const mode of ['header', 'worker'] as const) {
      if (mode === 'worker') w.setFault({ dieAfterChunks: 2 });
      const r = await post(mode === 'header' ? { 'x-sim-fault': 'die-after-chunks=2' } : {}, { stream: true });
      expect(r.statusCode).toBe(200);
      let text = '';
      await expect(
        (async () => {
          for await (const c of r.body) text += c.toString();
        })(),
      ).rejects.toThrow();
      expect(text.match(/^data: /gm)?.length).toBe(2);
      expect(text).not.toContain('[DONE]');
      w.setFault({ dieAfterChunks: 0 });
    }
  });

  it('fail-rate fails a seeded share of requests with fail-status; 0 restores', async () => {
    w.setFault({ failRate: 0.5, failStatus: 429 });
    const codes: number[] = [];
    for (let i = 0; i < 30; i++) {
      const r = await post();
      codes.push(r.statusCode);
      await r.body.text();
    }
    const failed = codes.filter((c) => c === 429).length;
    expect(failed).toBeGreaterThan(5);
    expect(failed).toBeLessThan(25);
    expect(codes.every((c) => c === 200 || c === 429)).toBe(true);
    w.setFault({ failRate: 0 });
    const ok = await post();
    expect(ok.statusCode).toBe(200);
    await ok.body.text();
  });

  it('worker-wide hang-ms applies to every request', async () => {
    w.setFault({ hangMs: 3000 });
    const hung = request(w.url + '/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: body(),
      headersTimeout: 300,
    });
    await expect(hung).rejects.toMatchObject({ code: 'UND_ERR_HEADERS_TIMEOUT' });
    w.setFault({ hangMs: 0 });
    const r = await post();
    expect(r.statusCode).toBe(200);
    await r.body.text();
  });
});
