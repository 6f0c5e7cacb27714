// Per-engine usage and error shapes read by the engine adapter and reshaped by the ingress adapter,
// and the engines' native endpoints on the admin routes, against reference workers of each flavor.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../gateway/config/load.ts';
import { startGateway, type StartedGateway } from '../../gateway/server.ts';
import { ENGINES } from '../../gateway/upstream/engines.ts';
import type { CtxgatePolicy } from '../../kvplanner/policies/ctxgate.ts';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';
import { requestRecord } from '../helpers/request-record.ts';

describe('engine shapes', () => {
  const { vllm, sglang, openai } = ENGINES;
  const j = (o: unknown): string => JSON.stringify(o);

  it('reads vLLM errors, flat (object: error) and nested', () => {
    const flat = j({ object: 'error', message: 'too long', type: 'BadRequestError', param: 'messages', code: 400 });
    expect(vllm.error(flat)).toEqual({ message: 'too long', type: 'BadRequestError', param: 'messages', code: 400 });
    expect(vllm.error(j({ error: { message: 'm', type: 'BadRequestError', param: null, code: 400 } }))).toEqual({
      message: 'm',
      type: 'BadRequestError',
      code: 400,
    });
    expect(vllm.error(j({ detail: [{ loc: ['body', 'messages'], msg: 'field required' }] }))?.message).toContain(
      'field required',
    );
    expect(vllm.error('Internal Server Error')).toBeUndefined();
  });

  it("reads SGLang's OpenAI-route errors and its native routes' {error: {message}}", () => {
    expect(sglang.error(j({ object: 'error', message: 'x', type: 'BadRequestError', code: 400 }))?.message).toBe('x');
    expect(sglang.error(j({ error: { message: 'native failure' } }))).toEqual({ message: 'native failure' });
  });

  it("reads OpenAI's nested error", () => {
    expect(
      openai.error(j({ error: { message: 'bad', type: 'invalid_request_error', param: 'model', code: 'x' } })),
    ).toEqual({
      message: 'bad',
      type: 'invalid_request_error',
      param: 'model',
      code: 'x',
    });
  });

  it('reads each engine usage shape; cached tokens never exceed the prompt', () => {
    const u = { prompt_tokens: 100, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 64 } };
    for (const e of [vllm, sglang, openai])
      expect(e.usage({ usage: u })).toEqual({ promptTokens: 100, cachedTokens: 64, outputTokens: 5 });
    // vLLM without --enable-prompt-tokens-details: details null, nothing cached reported.
    expect(vllm.usage({ usage: { prompt_tokens: 10, completion_tokens: 1, prompt_tokens_details: null } })).toEqual({
      promptTokens: 10,
      cachedTokens: 0,
      outputTokens: 1,
    });
    // SGLang: top-level cached_tokens in usage, or native meta_info.
    expect(sglang.usage({ usage: { prompt_tokens: 10, completion_tokens: 1, cached_tokens: 8 } })?.cachedTokens).toBe(
      8,
    );
    const meta = { text: 'x', meta_info: { prompt_tokens: 30, completion_tokens: 2, cached_tokens: 16 } };
    expect(sglang.usage(meta)).toEqual({ promptTokens: 30, cachedTokens: 16, outputTokens: 2 });
    // Not an OpenAI shape: an OpenAI-compatible upstream reports no usage from it.
    expect(openai.usage(meta)).toBeUndefined();
    expect(
      vllm.usage({ usage: { prompt_tokens: 4, completion_tokens: 0, prompt_tokens_details: { cached_tokens: 9 } } })
        ?.cachedTokens,
    ).toBe(4);
  });
});

describe('through the gateway', () => {
  let v: SimWorker;
  let s: SimWorker;
  let gw: StartedGateway;
  beforeAll(async () => {
    [v, s] = await Promise.all([
      startSimWorker({ model: 'mv', flavor: 'vllm', maxModelLen: 256 }),
      startSimWorker({ model: 'ms', flavor: 'sglang', maxModelLen: 256 }),
    ]);
    const config = parseConfig({
      listen: { host: '127.0.0.1', port: 0 },
      health: { interval_ms: 0 },
      models: [
        { name: 'mv', flavor: 'vllm', layout: 'passthrough', policy: 'ctxgate', workers: [{ url: v.url, id: 'v' }] },
        { name: 'ms', flavor: 'sglang', layout: 'passthrough', policy: 'ctxgate', workers: [{ url: s.url, id: 's' }] },
      ],
    });
    gw = await startGateway(config, { logger: false });
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([v?.close(), s?.close()]);
  });

  const long = 'word '.repeat(400);

  it("an engine's 400 reaches an Anthropic client in Anthropic's shape, the engine's message kept", async () => {
    for (const model of ['mv', 'ms']) {
      const client = new Anthropic({ baseURL: gw.url, apiKey: 'x', maxRetries: 0 });
      const err = await client.messages
        .create({ model, max_tokens: 16, messages: [{ role: 'user', content: long }] })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Anthropic.BadRequestError);
      const body = (err as InstanceType<typeof Anthropic.BadRequestError>).error as {
        type: string;
        error: { type: string; message: string };
      };
      expect(body.type).toBe('error');
      expect(body.error.type).toBe('invalid_request_error');
      expect(body.error.message).toMatch(/maximum context length is 256 tokens/);
    }
  });

  it("an engine's 400 reaches an OpenAI client with the engine's message and parameter", async () => {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const err = await client.chat.completions
      .create({ model: 'mv', max_tokens: 16, messages: [{ role: 'user', content: long }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    const e = err as InstanceType<typeof OpenAI.BadRequestError>;
    expect(e.message).toMatch(/maximum context length/);
    expect(e.param).toBe('messages');
    expect(e.code).toBe('upstream_400');
  });

  it('the usage each flavor reports is what the request is accounted with', async () => {
    for (const model of ['mv', 'ms']) {
      const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'x', maxRetries: 0 });
      const body = {
        model,
        max_tokens: 4,
        messages: [{ role: 'user' as const, content: 'the same prompt '.repeat(8) }],
      };
      await client.chat.completions.create(body);
      const r = await client.chat.completions.create(body);
      expect(r.usage?.prompt_tokens_details?.cached_tokens).toBeGreaterThan(0);
    }
  });

  it('flush_cache reaches each flavor native endpoint and resets the routing index; the next call reads and predicts nothing cached', async () => {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'x', maxRetries: 0 });
    for (const model of ['mv', 'ms']) {
      const body = { model, max_tokens: 4, messages: [{ role: 'user' as const, content: 'flush me '.repeat(40) }] };
      await client.chat.completions.create(body);
      const worker = model === 'mv' ? 'v' : 's';
      // the routing policy (ctxgate) recorded the prompt on the worker
      const index = (gw.ctx.fleet.get(model)!.policy as unknown as CtxgatePolicy).index;
      expect(index.size(worker)).toBeGreaterThan(0);
      const res = await request(`${gw.url}/v1/gateway/models/${model}/flush_cache`, { method: 'POST' });
      expect(res.statusCode).toBe(200);
      expect(await res.body.json()).toMatchObject({
        ok: true,
        flavor: model === 'mv' ? 'vllm' : 'sglang',
        workers: [{ id: worker, status: 200, routing_index_reset: true }],
      });
      // ...and forgot it with the flush: the next call is predicted cold, as the engine reports it
      expect(index.size(worker)).toBe(0);
      const { data: after, response } = await client.chat.completions.create(body).withResponse();
      expect(after.usage?.prompt_tokens_details?.cached_tokens ?? 0).toBe(0);
      const id = response.headers.get('x-request-id')!;
      const rec = await requestRecord<{ routing?: { predictedCachedTokens?: number } }>(gw.url, id);
      expect(rec.routing?.predictedCachedTokens).toBe(0);
    }
  });

  it('server_info on SGLang; 404 naming the flavor on vLLM', async () => {
    const ok = await request(`${gw.url}/v1/gateway/models/ms/server_info`);
    expect(ok.statusCode).toBe(200);
    const info = (await ok.body.json()) as { workers: { id: string; status: number; body: Record<string, unknown> }[] };
    expect(info.workers[0]).toMatchObject({ id: 's', status: 200 });
    expect(info.workers[0].body.max_total_num_tokens).toBeGreaterThan(0);
    const none = await request(`${gw.url}/v1/gateway/models/mv/server_info`);
    expect(none.statusCode).toBe(404);
    expect(JSON.stringify(await none.body.json())).toContain("flavor 'vllm'");
    expect((await request(`${gw.url}/v1/gateway/models/nope/server_info`)).statusCode).toBe(404);
  });

  it('detokenize round-trips the engine tokenizer on both flavors (vLLM {prompt}, SGLang {text})', async () => {
    for (const [model, w] of [
      ['mv', v],
      ['ms', s],
    ] as const) {
      const t = await request(`${w.url}/tokenize`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model, prompt: 'hello detokenize', add_special_tokens: false }),
      });
      const { tokens } = (await t.body.json()) as { tokens: number[] };
      const d = await request(`${gw.url}/v1/gateway/models/${model}/detokenize`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ tokens }),
      });
      expect(d.statusCode).toBe(200);
      expect(await d.body.json()).toMatchObject({ text: 'hello detokenize' });
    }
    const bad = await request(`${gw.url}/v1/gateway/models/mv/detokenize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tokens: ['x'] }),
    });
    expect(bad.statusCode).toBe(400);
  });
});
