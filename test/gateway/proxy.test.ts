import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRig, until, type TestRig } from '../helpers/gateway.ts';

describe('gateway proxy (openai SDK client)', () => {
  let rig: TestRig;
  beforeAll(async () => {
    rig = await startRig();
  });
  afterAll(async () => rig.close());

  it('answers a non-stream chat with the worker body, usage and gateway headers', async () => {
    const { data, response } = await rig
      .client()
      .chat.completions.create({ model: 'm1', messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    expect(data.choices[0].message.content).toMatch(/^hello from (a|b)/);
    expect(data.usage?.prompt_tokens).toBeGreaterThan(0);
    expect(data.usage?.prompt_tokens_details?.cached_tokens).toBe(0);
    expect(response.headers.get('x-ctxgate-worker')).toMatch(/^(a|b)$/);
    expect(response.headers.get('x-ctxgate-attempts')).toBe('1');
    expect(response.headers.get('x-request-id')).toBeTruthy();
  });

  it('keeps the client request id and forwards fields it does not own untouched', async () => {
    const extra = {
      tools: [
        {
          type: 'function' as const,
          function: { name: 'read_file', parameters: { type: 'object', properties: { path: { type: 'string' } } } },
        },
      ],
      tool_choice: 'auto' as const,
      response_format: { type: 'json_object' as const },
      logprobs: true,
      n: 1,
      seed: 7,
    };
    const { data, response } = await rig
      .client()
      .chat.completions.create(
        {
          model: 'm1',
          messages: [{ role: 'user', content: 'read a.txt' }],
          ...extra, // vendor extra the SDK passes through
          ...({ top_k: 20, chat_template_kwargs: { enable_thinking: false } } as object),
        },
        { headers: { 'x-request-id': 'req-fixed-1' } },
      )
      .withResponse();
    expect(response.headers.get('x-request-id')).toBe('req-fixed-1');
    const calls = data.choices[0].message.tool_calls;
    expect(calls?.[0]).toMatchObject({
      id: 'call_1',
      type: 'function',
      function: { name: 'read_file', arguments: '{"path":"a.txt"}' },
    });
    const seen = rig.ups
      .flatMap((u) => u.requests)
      .find((b) => (b.messages as { content: string }[])[0].content === 'read a.txt');
    expect(seen).toMatchObject({ ...extra, top_k: 20, chat_template_kwargs: { enable_thinking: false } });
  });

  it('streams deltas, asks upstream for usage, and hides the usage chunk the client did not ask for', async () => {
    const stream = await rig
      .client()
      .chat.completions.create({ model: 'm1', messages: [{ role: 'user', content: 'stream me' }], stream: true });
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
    expect(text).toMatch(/^hello from (a|b) w1 w2/);
    expect(chunks.every((c) => c.choices.length === 1 && !('usage' in c))).toBe(true);
    const sent = rig.ups
      .flatMap((u) => u.requests)
      .find((b) => (b.messages as { content: string }[])[0].content === 'stream me') as { stream_options?: unknown };
    expect(sent.stream_options).toEqual({ include_usage: true });
    await until(() => rig.usage.some((u) => u.stream && u.usageReported && u.ttftMs !== undefined));
    const ev = rig.usage.filter((u) => u.stream).at(-1)!;
    expect(ev.promptTokens).toBeGreaterThan(0);
    expect(ev.outputTokens).toBe(8);
    expect(ev.ttftMs).toBeLessThanOrEqual(ev.totalMs);
  });

  it('keeps the usage chunk when the client asked for it', async () => {
    const stream = await rig.client().chat.completions.create({
      model: 'm1',
      messages: [{ role: 'user', content: 'with usage' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage?.completion_tokens).toBe(8);
  });

  it('streams tool-call deltas and assembles them for the pipeline', async () => {
    const stream = await rig.client().chat.completions.create({
      model: 'm1',
      messages: [{ role: 'user', content: 'tool stream' }],
      tools: [{ type: 'function', function: { name: 'grep', parameters: { type: 'object' } } }],
      stream: true,
    });
    let args = '';
    let name = '';
    for await (const c of stream) {
      const tc = c.choices[0]?.delta?.tool_calls?.[0];
      if (tc?.function?.name) name += tc.function.name;
      if (tc?.function?.arguments) args += tc.function.arguments;
    }
    expect(name).toBe('grep');
    expect(JSON.parse(args)).toEqual({ path: 'a.txt' });
  });

  it('serves text completions, streaming and not', async () => {
    const c = await rig.client().completions.create({ model: 'm1', prompt: 'once upon' });
    expect(c.choices[0].text).toMatch(/^hello from/);
    const s = await rig.client().completions.create({ model: 'm1', prompt: 'once upon', stream: true });
    let text = '';
    for await (const ch of s) text += ch.choices[0]?.text ?? '';
    expect(text).toMatch(/^hello from (a|b) w1/);
  });

  it('lists configured models and records requests for their tenant', async () => {
    const models = await rig.client().models.list();
    expect(models.data.map((m) => m.id)).toEqual(['m1']);
    const { response } = await rig
      .client()
      .chat.completions.create({ model: 'm1', messages: [{ role: 'user', content: 'rec' }] })
      .withResponse();
    const id = response.headers.get('x-request-id')!;
    await until(() => rig.usage.some((u) => u.requestId === id));
    const rec = (await fetch(`${rig.gw.url}/v1/gateway/requests/${id}`).then((r) => r.json())) as {
      usage: { usageReported: boolean };
    };
    expect(rec).toMatchObject({ id, tenant: 'default', model: 'm1', attempts: 1, status: 200 });
    expect(rec.usage.usageReported).toBe(true);
  });

  it('exposes ctxgate_ metrics', async () => {
    const text = await fetch(`${rig.gw.url}/metrics`).then((r) => r.text());
    expect(text).toMatch(/ctxgate_requests_total\{model="m1",tenant="default",status="2xx",api="openai-chat"\} \d+/);
    expect(text).toContain('ctxgate_ttft_seconds_bucket');
    expect(text).toMatch(/ctxgate_routing_decisions_total\{model="m1",policy="round_robin",branch="rotate"\}/);
  });
});
