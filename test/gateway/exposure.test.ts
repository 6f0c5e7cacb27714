// What a tenant can see of the fleet: worker ids, never addresses; upstream errors reshaped into
// the OpenAI error shape without internals (a 5xx body with a traceback, vLLM's
// `{"object":"error",…}` 4xx); a client that leaves is logged at info, without a stack.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../gateway/config/load.ts';
import { startGateway, type StartedGateway } from '../../gateway/server.ts';
import { keyHash } from '../helpers/keys.ts';
import { until } from '../helpers/until.ts';

const KEY_A = 'sk-exposure-a-0123456789';
const KEY_ADMIN = 'sk-exposure-admin-0123456789';
const INTERNALS = ['Traceback', '/opt/vllm', '10.0.0.5', 'tenant-b-prompt'];
let worker: Server;
let gw: StartedGateway;
let url: string;
const logs: { level: number; msg?: string; err?: { stack?: string } }[] = [];
/** Called when the worker holds a 'hang' call (the gateway has sent it on). */
let onHang: (() => void) | undefined;

beforeAll(async () => {
  worker = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const body = JSON.parse(raw) as { messages: { content: string }[] };
      const what = body.messages[0].content;
      if (what === 'hang') {
        onHang?.();
        return; // never answers
      }
      if (what === 'boom') {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            error:
              'Traceback (most recent call last):\n  File "/opt/vllm/engine.py", line 12\nRuntimeError: CUDA error on 10.0.0.5 while serving tenant-b-prompt',
          }),
        );
        return;
      }
      if (what === 'too-long') {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            object: 'error',
            message: "This model's maximum context length is 10 tokens.",
            type: 'BadRequestError',
            param: null,
            code: 400,
          }),
        );
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'x',
          object: 'chat.completion',
          created: 1,
          model: 'm',
          choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
        }),
      );
    });
  });
  await new Promise<void>((r) => worker.listen(0, '127.0.0.1', () => r()));
  url = `http://127.0.0.1:${(worker.address() as AddressInfo).port}`;
  const config = parseConfig({
    listen: { host: '127.0.0.1', port: 0 },
    health: { interval_ms: 0 },
    upstream: { attempts: 1 },
    auth: {
      mode: 'keys',
      keys: [
        { key: keyHash(KEY_A), tenant: 'a' },
        { key: keyHash(KEY_ADMIN), tenant: 'ops', admin: true },
      ],
    },
    models: [{ name: 'm', layout: 'passthrough', workers: [{ url }] }],
  });
  const stream = new Writable({
    write(chunk, _enc, cb) {
      for (const line of String(chunk).split('\n')) if (line) logs.push(JSON.parse(line));
      cb();
    },
  });
  gw = await startGateway(config, { logger: { level: 'info', stream } as never });
});
afterAll(async () => {
  await gw?.close();
  worker.closeAllConnections();
  await new Promise((r) => worker.close(r));
});

const client = (key = KEY_A) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0, timeout: 10_000 });
const ask = (content: string) =>
  client()
    .chat.completions.create({ model: 'm', messages: [{ role: 'user', content }] })
    .withResponse();

describe('what a tenant sees', () => {
  it('worker ids, never addresses (admins see addresses on the admin route)', async () => {
    const { response } = await ask('hello');
    expect(response.headers.get('x-ctxgate-worker')).toBe('w0');
    const rec = (await (
      await fetch(`${gw.url}/v1/gateway/requests/${response.headers.get('x-request-id')}`, {
        headers: { authorization: `Bearer ${KEY_A}` },
      })
    ).json()) as { worker: string };
    expect(rec.worker).toBe('w0');
    expect(JSON.stringify(rec)).not.toContain(url);
    expect(
      (await fetch(`${gw.url}/v1/gateway/workers`, { headers: { authorization: `Bearer ${KEY_A}` } })).status,
    ).toBe(403);
    const admin = await (
      await fetch(`${gw.url}/v1/gateway/workers`, { headers: { authorization: `Bearer ${KEY_ADMIN}` } })
    ).text();
    expect(admin).toContain(url);
  });

  it("a worker's 5xx reaches the client in the OpenAI shape without its internals", async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY_A}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'boom' }] }),
    });
    expect(res.status).toBe(500);
    const text = await res.text();
    for (const s of INTERNALS) expect(text).not.toContain(s);
    const body = JSON.parse(text) as { error: { message: string; type: string; code: string } };
    expect(body.error.code).toBe('upstream_500');
    expect(body.error.type).toBe('upstream_error');
    await expect(ask('boom')).rejects.toMatchObject({ status: 500, code: 'upstream_500' });
  });

  it("vLLM's {object: error} 4xx becomes an OpenAI error the SDK parses, message kept", async () => {
    const err = (await ask('too-long').catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.code).toBe('upstream_400');
    expect(err.message).toContain('maximum context length is 10 tokens');
  });

  it('a client that leaves is logged at info, without a stack', async () => {
    logs.length = 0;
    const ac = new AbortController();
    const held = new Promise<void>((r) => {
      onHang = r;
    });
    const p = client().chat.completions.create(
      { model: 'm', messages: [{ role: 'user', content: 'hang' }] },
      { signal: ac.signal },
    );
    await held; // the client leaves while its call is in flight upstream, however slow the host
    ac.abort();
    await expect(p).rejects.toThrow();
    await until(() => logs.some((l) => /client (closed|left|gone)/i.test(l.msg ?? '')));
    expect(logs.filter((l) => l.level >= 40)).toEqual([]);
    const gone = logs.find((l) => /client (closed|left|gone)/i.test(l.msg ?? ''));
    expect(gone?.level).toBe(30);
    expect(JSON.stringify(logs)).not.toContain('    at ');
  });
});
