// One hostile tenant must not hurt another: prompt size and malformed tools rejected up front in
// the caller's shape, a per-tenant in-flight cap, bodies that make every worker fail do not eject
// the workers, per-tenant request records, server-side header timeouts and a connection cap, and
// start-up refusals (auth none off loopback, port in use, a broken tokenizer) naming the field.
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startAssembledGateway } from '../../gateway/assemble.ts';
import { ConfigError, parseConfig } from '../../gateway/config/load.ts';
import { startGateway } from '../../gateway/server.ts';
import { startRig, type TestRig, until } from '../helpers/gateway.ts';
import { keysAuth } from '../helpers/keys.ts';

const KEYS = { a: 'sk-hostile-a-0123456789', b: 'sk-hostile-b-0123456789' };
const keyed = {
  auth: keysAuth(KEYS),
};
let rig: TestRig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});
const msg = [{ role: 'user' as const, content: 'hi' }];

describe('bounded per request, isolated per tenant', () => {
  it('a prompt over limits.max_prompt_chars gets 413 prompt_too_large before any worker sees it', async () => {
    rig = await startRig({ config: { limits: { max_prompt_chars: 1000 } } });
    const err = await rig
      .client()
      .chat.completions.create({ model: 'm1', messages: [{ role: 'user', content: 'x'.repeat(1001) }] })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 413, code: 'prompt_too_large', param: 'messages' });
    expect(rig.ups.reduce((n, u) => n + u.requests.length, 0)).toBe(0);
  });

  it('malformed tools and tool calls get a 400 naming the field, never reaching a worker', async () => {
    rig = await startRig();
    const c = rig.client();
    const bad = await c.chat.completions
      .create({ model: 'm1', messages: msg, tools: [{ type: 'function', function: { name: 42 } }] as never })
      .catch((e: unknown) => e);
    expect(bad).toMatchObject({ status: 400, param: 'tools[0].function.name' });
    const badArgs = await c.chat.completions
      .create({
        model: 'm1',
        messages: [
          ...msg,
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'x', type: 'function', function: { name: 'f', arguments: { a: 1 } } }],
          },
        ] as never,
      })
      .catch((e: unknown) => e);
    expect(badArgs).toMatchObject({ status: 400, param: 'messages[1].tool_calls[0].function.arguments' });
    expect(rig.ups.reduce((n, u) => n + u.requests.length, 0)).toBe(0);
  });

  it('a tenant over limits.max_concurrent_per_tenant gets 429 while another tenant is served', async () => {
    // a's streams stay open (after their first frame) until the test lets them go: both are still
    // in flight when the third call and tenant b come, however slow the machine
    let letGo!: () => void;
    const hold = new Promise<void>((r) => (letGo = r));
    rig = await startRig({
      config: { ...keyed, limits: { max_concurrent_per_tenant: 2 } },
      upstreams: [{ name: 'a', knobs: { hold } }],
    });
    const slow = (key: string) =>
      rig!
        .client(key)
        .chat.completions.create({ model: 'm1', messages: msg, stream: true })
        .then(async (s) => {
          for await (const _ of s) void _;
          return 'ok';
        });
    const a = [slow(KEYS.a), slow(KEYS.a)];
    await until(() => rig!.ups[0].received === 2); // both admitted and streaming
    const third = await rig
      .client(KEYS.a)
      .chat.completions.create({ model: 'm1', messages: msg })
      .catch((e: unknown) => e);
    expect(third).toMatchObject({ status: 429, code: 'tenant_concurrency_exceeded' });
    // b is served (a non-stream call: the hold is for streams) while a's two are held
    const b = await rig.client(KEYS.b).chat.completions.create({ model: 'm1', messages: msg });
    expect(b.choices.length).toBe(1);
    letGo();
    expect(await Promise.all(a)).toEqual(['ok', 'ok']);
    const metrics = await (await fetch(`${rig.gw.url}/metrics`)).text();
    expect(metrics).toContain('ctxgate_rate_limited_total{tenant="a"} 1');
    expect(metrics).not.toContain('ctxgate_rate_limited_total{tenant="b"}');
  });

  it('bodies that make every worker answer 500 do not eject the workers another tenant needs', async () => {
    rig = await startRig({
      config: { health: { interval_ms: 0, eject_after: 2 } },
      upstreams: [
        { name: 'a', knobs: { status: 500 } },
        { name: 'b', knobs: { status: 500 } },
      ],
    });
    for (let i = 0; i < 6; i++)
      await fetch(`${rig.gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm1', messages: msg }),
      });
    expect(rig.gw.ctx.fleet.get('m1')!.workers.every((w) => w.healthy)).toBe(true);
    rig.ups[0].knobs.status = 0;
    rig.ups[1].knobs.status = 0;
    const ok = await rig.client().chat.completions.create({ model: 'm1', messages: msg });
    expect(ok.choices.length).toBe(1);
    // A worker that fails a body another worker serves is still ejected.
    rig.ups[0].knobs.status = 500;
    for (let i = 0; i < 8; i++) await rig.client().chat.completions.create({ model: 'm1', messages: msg });
    expect(rig.gw.ctx.fleet.get('m1')!.workers.find((w) => w.id === 'a')!.healthy).toBe(false);
  });

  it("one tenant's traffic cannot evict another tenant's request records", async () => {
    rig = await startRig({ config: keyed, deps: { requestRecords: 5 } });
    const { response } = await rig
      .client(KEYS.a)
      .chat.completions.create({ model: 'm1', messages: msg })
      .withResponse();
    const id = response.headers.get('x-request-id')!;
    for (let i = 0; i < 12; i++) await rig.client(KEYS.b).chat.completions.create({ model: 'm1', messages: msg });
    const rec = await fetch(`${rig.gw.url}/v1/gateway/requests/${id}`, {
      headers: { authorization: `Bearer ${KEYS.a}` },
    });
    expect(rec.status).toBe(200);
  });

  it('the server closes slow-header connections and caps open connections', async () => {
    rig = await startRig({
      config: {
        listen: { host: '127.0.0.1', port: 0, headers_timeout_ms: 300, request_timeout_ms: 1000, max_connections: 4 },
      },
    });
    const port = Number(new URL(rig.gw.url).port);
    const open = (p: number): Promise<Socket> =>
      new Promise((r) => {
        const s = connect(p, '127.0.0.1', () => r(s));
        s.on('error', () => undefined);
      });
    const closed = (s: Socket, ms: number) =>
      new Promise<boolean>((r) => {
        if (s.destroyed) return r(true);
        const t = setTimeout(() => r(false), ms);
        s.once('close', () => {
          clearTimeout(t);
          r(true);
        });
      });
    const slow = connect(port, '127.0.0.1', () => slow.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n')); // headers never finish
    slow.on('error', () => undefined).resume(); // read, so the server's close is seen
    expect(await closed(slow, 60_000)).toBe(true); // a bound for a hang: headers_timeout_ms is 300
    await rig.close();
    // The cap, on a server without the short header timeout: each of 8 connections asks for
    // /health at once; those over the cap are closed on arrival, the others answer. Counted by
    // outcome, not by how fast the closes come (a loaded machine can take seconds).
    rig = await startRig({ config: { listen: { host: '127.0.0.1', port: 0, max_connections: 4 } } });
    const capPort = Number(new URL(rig.gw.url).port);
    const many = await Promise.all(Array.from({ length: 8 }, () => open(capPort)));
    const outcome = (s: Socket) =>
      new Promise<'answered' | 'closed'>((r) => {
        let got = '';
        s.on('data', (d: Buffer) => {
          got += d.toString();
          if (got.startsWith('HTTP/1.1 200')) r('answered');
        });
        s.once('close', () => r(got.startsWith('HTTP/1.1 200') ? 'answered' : 'closed'));
        s.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
      });
    const outcomes = await Promise.all(many.map(outcome));
    expect(outcomes.filter((o) => o === 'answered').length).toBe(4);
    expect(outcomes.filter((o) => o === 'closed').length).toBe(4);
    for (const s of many) s.destroy();
  });
});

describe('start-up refusals name the config field', () => {
  const base = (extra: Record<string, unknown>, model: Record<string, unknown> = {}) =>
    parseConfig({
      listen: { host: '127.0.0.1', port: 0 },
      health: { interval_ms: 0 },
      ...extra,
      models: [{ name: 'm', layout: 'passthrough', workers: [{ url: 'http://127.0.0.1:9' }], ...model }],
    });

  it('auth: none on a non-loopback address unless listen.allow_unauthenticated', async () => {
    await expect(startGateway(base({ listen: { host: '0.0.0.0', port: 0 } }), { logger: false })).rejects.toMatchObject(
      { path: 'listen.allow_unauthenticated' },
    );
    const ok = await startGateway(base({ listen: { host: '0.0.0.0', port: 0, allow_unauthenticated: true } }), {
      logger: false,
    });
    await ok.close();
  });

  it('a port in use is a clean error naming listen.port', async () => {
    const first = await startGateway(base({}), { logger: false });
    const port = Number(new URL(first.url).port);
    const err = await startGateway(base({ listen: { host: '127.0.0.1', port } }), { logger: false }).catch(
      (e: unknown) => e,
    );
    await first.close();
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).path).toBe('listen.port');
    expect((err as Error).message).toContain('already in use');
  });

  it('an unknown tokenizer or unreadable chat template fails at start, not on every request', async () => {
    await expect(
      startAssembledGateway(base({}, { tokenizer: 'no-such-tokenizer' }), { logger: false, reporting: false }),
    ).rejects.toMatchObject({ path: 'models[0].tokenizer' });
    await expect(
      startAssembledGateway(base({}, { tokenizer: 'qwen3', chat_template: '/nonexistent/template.jinja' }), {
        logger: false,
        reporting: false,
      }),
    ).rejects.toMatchObject({ path: 'models[0].chat_template' });
  });
});
