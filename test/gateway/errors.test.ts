// Every error of the registry that the core produces, as a client sees it.
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { gateFor } from '../../gateway/admission/gates.ts';
import type { ContextPipeline } from '../../middleware/types.ts';
import { startRig, type TestRig, until } from '../helpers/gateway.ts';

const msg = [{ role: 'user' as const, content: 'hi' }];
let rig: TestRig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

async function post(path: string, body: string, headers: Record<string, string> = {}) {
  const r = await fetch(`${rig!.gw.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  return {
    status: r.status,
    headers: r.headers,
    body: (await r.json()) as { error: { code: string; type: string; message: string; param: string | null } },
  };
}

async function sdkError(p: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await p;
  } catch (err) {
    if (err instanceof OpenAI.APIError) return err;
    throw err;
  }
  throw new Error('expected an API error');
}

describe('error registry', () => {
  it('400 invalid_json, invalid_model, invalid_messages, invalid_prompt with OpenAI shape', async () => {
    rig = await startRig();
    const bad = await post('/v1/chat/completions', '{"model": "m1", "messages": [');
    expect(bad.status).toBe(400);
    expect(bad.body.error).toEqual({
      message: expect.any(String),
      type: 'invalid_request_error',
      code: 'invalid_json',
      param: null,
    });
    const noModel = await post('/v1/chat/completions', JSON.stringify({ messages: msg }));
    expect([noModel.status, noModel.body.error.code, noModel.body.error.param]).toEqual([
      400,
      'invalid_model',
      'model',
    ]);
    const noMsgs = await post('/v1/chat/completions', JSON.stringify({ model: 'm1', messages: [] }));
    expect([noMsgs.status, noMsgs.body.error.code]).toEqual([400, 'invalid_messages']);
    const badRole = await post('/v1/chat/completions', JSON.stringify({ model: 'm1', messages: [{ content: 'x' }] }));
    expect([badRole.status, badRole.body.error.code]).toEqual([400, 'invalid_messages']);
    const noPrompt = await post('/v1/completions', JSON.stringify({ model: 'm1' }));
    expect([noPrompt.status, noPrompt.body.error.code]).toEqual([400, 'invalid_prompt']);
    expect(rig.ups.every((u) => u.received === 0)).toBe(true);
  });

  it('404 model_not_found through the SDK', async () => {
    rig = await startRig();
    const e = await sdkError(rig.client().chat.completions.create({ model: 'nope', messages: msg }));
    expect(e.status).toBe(404);
    expect(e.code).toBe('model_not_found');
    expect(e.param).toBe('model');
  });

  it('413 body_too_large above limits.max_body_bytes', async () => {
    rig = await startRig({ config: { limits: { max_body_bytes: 2048 } } });
    const e = await sdkError(
      rig.client().chat.completions.create({ model: 'm1', messages: [{ role: 'user', content: 'x'.repeat(4096) }] }),
    );
    expect(e.status).toBe(413);
    expect(e.code).toBe('body_too_large');
  });

  it('503 no_healthy_worker when every worker is ejected', async () => {
    rig = await startRig({ config: { health: { interval_ms: 0, eject_after: 1 } } });
    for (const u of rig.ups) u.knobs.healthy = false;
    await rig.gw.checkHealth();
    const e = await sdkError(rig.client().chat.completions.create({ model: 'm1', messages: msg }));
    expect(e.status).toBe(503);
    expect(e.code).toBe('no_healthy_worker');
  });

  it('504 upstream_timeout when no worker answers before headers_timeout_ms', async () => {
    rig = await startRig({
      upstreams: [{ name: 'a', knobs: { hang: true } }],
      config: { upstream: { headers_timeout_ms: 200, attempts: 1 } },
    });
    const e = await sdkError(rig.client().chat.completions.create({ model: 'm1', messages: msg }));
    expect(e.status).toBe(504);
    expect(e.code).toBe('upstream_timeout');
  });

  it('502 upstream_bad_response when the worker answers 200 with a body that is not JSON', async () => {
    rig = await startRig({ upstreams: [{ name: 'a', knobs: { badJson: true } }] });
    const e = await sdkError(rig.client().chat.completions.create({ model: 'm1', messages: msg }));
    expect(e.status).toBe(502);
    expect(e.code).toBe('upstream_bad_response');
  });

  it("passes an upstream 4xx on in the OpenAI shape, the engine's message kept, without retrying", async () => {
    rig = await startRig({
      upstreams: [
        { name: 'a', knobs: { status: 422 } },
        { name: 'b', knobs: { status: 422 } },
      ],
    });
    const r = await post('/v1/chat/completions', JSON.stringify({ model: 'm1', messages: msg }));
    expect(r.status).toBe(422);
    expect(r.body.error).toEqual({
      message: expect.stringMatching(/^fake (a|b) status 422$/),
      type: 'invalid_request_error',
      code: 'upstream_422',
      param: null,
    });
    expect(r.headers.get('x-ctxgate-attempts')).toBe('1');
  });

  it('500 internal_error without leaking internals when a pipeline throws', async () => {
    const boom: ContextPipeline = {
      process: async () => {
        throw new Error('secret stack detail /etc/passwd');
      },
    };
    rig = await startRig({ deps: { pipelineFor: () => boom } });
    const r = await post('/v1/chat/completions', JSON.stringify({ model: 'm1', messages: msg }));
    expect(r.status).toBe(500);
    expect(r.body.error.code).toBe('internal_error');
    expect(JSON.stringify(r.body)).not.toContain('secret');
  });

  it('404 not_found for unknown routes, OpenAI-shaped', async () => {
    rig = await startRig();
    const r = await fetch(`${rig.gw.url}/v1/nothing`);
    expect(r.status).toBe(404);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe('not_found');
  });
});

describe('capacity', () => {
  it('503 worker_capacity_exhausted when every healthy worker is at max_in_flight (dispatch arrival)', async () => {
    rig = await startRig({
      upstreams: [{ name: 'a', knobs: { hang: true } }],
      config: { upstream: { max_in_flight: 1 } },
      model: { dispatch: 'arrival' },
    });
    const ac = new AbortController();
    const first = rig
      .client()
      .chat.completions.create({ model: 'm1', messages: msg }, { signal: ac.signal })
      .catch((e) => e);
    await until(() => rig!.ups[0].received > 0);
    const e = await sdkError(rig.client().chat.completions.create({ model: 'm1', messages: msg }));
    expect(e.status).toBe(503);
    expect(e.code).toBe('worker_capacity_exhausted');
    ac.abort();
    await first;
  });

  it('with late binding (the vLLM default) the call waits at the gateway instead, and goes when a place frees', async () => {
    rig = await startRig({
      upstreams: [{ name: 'a', knobs: { hang: true } }],
      config: { upstream: { max_in_flight: 1 } },
    });
    expect(rig.gw.ctx.fleet.get('m1')!.config.dispatch).toBe('admission');
    const ac1 = new AbortController();
    const first = rig
      .client()
      .chat.completions.create({ model: 'm1', messages: msg }, { signal: ac1.signal })
      .catch((e) => e);
    await until(() => rig!.ups[0].received > 0);
    const ac2 = new AbortController();
    let settled = false;
    const second = rig
      .client()
      .chat.completions.create({ model: 'm1', messages: msg }, { signal: ac2.signal })
      .catch((e) => e)
      .finally(() => {
        settled = true;
      });
    const gate = gateFor(rig.gw.ctx.fleet.get('m1')!)!;
    await until(() => gate.size === 1);
    // held: not refused, not sent
    expect(settled).toBe(false);
    expect(rig.ups[0].received).toBe(1);
    // the first call ends: its place frees and the held call is sent
    ac1.abort();
    await first;
    await until(() => rig!.ups[0].received > 1);
    expect(gate.size).toBe(0);
    expect(settled).toBe(false);
    ac2.abort();
    await second;
  });
});

describe('malformed message shapes are client errors', () => {
  let r: Awaited<ReturnType<typeof startRig>> | undefined;
  afterEach(async () => {
    await r?.close();
    r = undefined;
  });
  it.each([
    [{ messages: [{ role: 'user', content: { foo: 1 } }] }, 'messages[0].content'],
    [{ messages: [{ role: 'user', content: 5 }] }, 'messages[0].content'],
    [{ messages: [{ role: 'user', content: [null] }] }, 'messages[0].content'],
    [{ messages: [{ role: 'assistant', content: '', tool_calls: [null] }] }, 'messages[0].tool_calls'],
    [{ messages: [{ role: 'user', content: 'hi' }], tools: {} }, 'tools'],
    [{ messages: [{ role: 'user', content: 'hi' }], tools: [null] }, 'tools'],
  ])('400 for %j', async (extra, param) => {
    r = await startRig({ upstreams: [{ name: 'a' }], model: { tokenizer: 'qwen3', layout: 'ctxgate' } });
    const res = await fetch(`${r.gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm1', ...extra }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { param: string; type: string } };
    expect(body.error.param).toBe(param);
  });
});
