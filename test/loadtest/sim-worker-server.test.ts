// The reference worker over real sockets, with the official openai SDK as the client.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';

const tools = [
  {
    type: 'function' as const,
    function: {
      name: 'run',
      description: 'run a command',
      parameters: {
        type: 'object',
        properties: {
          command: { type: 'string' },
          timeout: { type: 'integer' },
          mode: { type: 'string', enum: ['a', 'b'] },
        },
        required: ['command', 'timeout', 'mode'],
      },
    },
  },
];
const history = [
  { role: 'system' as const, content: 'You are a careful coding agent. '.repeat(40) },
  { role: 'user' as const, content: 'List the files in the repository and explain the layout.' },
];

let vllm: SimWorker;
let sglang: SimWorker;
let client: OpenAI;

beforeAll(async () => {
  vllm = await startSimWorker({ model: 'sim', tokenizer: 'qwen3', flavor: 'vllm', seed: 7 });
  sglang = await startSimWorker({ model: 'sim', tokenizer: 'qwen3', flavor: 'sglang', seed: 7 });
  client = new OpenAI({ baseURL: vllm.url + '/v1', apiKey: 'x', maxRetries: 0 });
});
afterAll(async () => {
  await vllm?.close();
  await sglang?.close();
});

describe('sim-worker API', () => {
  it('non-stream chat: OpenAI shape, exact max_tokens, cached tokens rise on the 2nd call', async () => {
    const first = await client.chat.completions.create({ model: 'sim', messages: history, max_tokens: 12 });
    expect(first.object).toBe('chat.completion');
    expect(first.choices[0].finish_reason).toBe('length');
    expect(first.usage?.completion_tokens).toBe(12);
    expect(first.usage?.prompt_tokens_details?.cached_tokens).toBe(0);
    const messages = [
      ...history,
      { role: 'assistant' as const, content: first.choices[0].message.content ?? '' },
      { role: 'user' as const, content: 'Now the tests.' },
    ];
    const second = await client.chat.completions.create({ model: 'sim', messages });
    const cached = second.usage?.prompt_tokens_details?.cached_tokens ?? 0;
    expect(cached).toBeGreaterThan(first.usage!.prompt_tokens - 16);
    expect(cached % 16).toBe(0);
    expect(cached).toBeLessThan(second.usage!.prompt_tokens);
    const again = await client.chat.completions.create({ model: 'sim', messages: history, max_tokens: 12 });
    expect(again.choices[0].message.content).toBe(first.choices[0].message.content); // deterministic
  });

  it('stream: role first, content deltas, finish chunk, usage chunk, [DONE]', async () => {
    const stream = await client.chat.completions.create({
      model: 'sim',
      messages: history,
      max_tokens: 9,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const c of stream) chunks.push(c);
    expect(chunks[0].choices[0].delta.role).toBe('assistant');
    const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
    const full = await client.chat.completions.create({ model: 'sim', messages: history, max_tokens: 9 });
    expect(text).toBe(full.choices[0].message.content);
    const finish = chunks.find((c) => c.choices[0]?.finish_reason);
    expect(finish?.choices[0].finish_reason).toBe('length');
    const last = chunks[chunks.length - 1];
    expect(last.choices).toEqual([]);
    expect(last.usage?.completion_tokens).toBe(9);
    expect(last.usage?.prompt_tokens_details?.cached_tokens).toBeGreaterThan(0);
  });

  it('tool calls: forced by name and by required, arguments are JSON with the required keys', async () => {
    for (const tool_choice of ['required', { type: 'function', function: { name: 'run' } }] as const) {
      const r = await client.chat.completions.create({ model: 'sim', messages: history, tools, tool_choice });
      const call = r.choices[0].message.tool_calls?.[0];
      expect(r.choices[0].finish_reason).toBe('tool_calls');
      expect(call?.type).toBe('function');
      const fn = (call as { function: { name: string; arguments: string } }).function;
      expect(fn.name).toBe('run');
      const args = JSON.parse(fn.arguments) as Record<string, unknown>;
      expect(typeof args.command).toBe('string');
      expect(Number.isInteger(args.timeout)).toBe(true);
      expect(['a', 'b']).toContain(args.mode);
    }
    const stream = await client.chat.completions.create({
      model: 'sim',
      messages: history,
      tools,
      tool_choice: 'required',
      stream: true,
    });
    let args = '';
    let name = '';
    for await (const c of stream)
      for (const t of c.choices[0]?.delta?.tool_calls ?? []) {
        name += t.function?.name ?? '';
        args += t.function?.arguments ?? '';
      }
    expect(name).toBe('run');
    expect(Object.keys(JSON.parse(args))).toEqual(['command', 'timeout', 'mode']);
  });

  it('tool-call answer sent back: the prompt blocks hit', async () => {
    const r = await client.chat.completions.create({ model: 'sim', messages: history, tools, tool_choice: 'required' });
    const msg = r.choices[0].message;
    const next = [
      ...history,
      { role: 'assistant' as const, content: msg.content, tool_calls: msg.tool_calls },
      { role: 'tool' as const, tool_call_id: msg.tool_calls![0].id, content: 'ok' },
    ];
    const r2 = await client.chat.completions.create({ model: 'sim', messages: next, tools, max_tokens: 1 });
    // Qwen3 renders the empty <think></think> only on the final turn, so what the model
    // generated and what history repeats diverge right after the prompt — as on a real engine.
    expect(r2.usage!.prompt_tokens_details!.cached_tokens).toBe(Math.floor(r.usage!.prompt_tokens / 16) * 16);
  });

  it('errors mirror vLLM: 404 unknown model, 400 bad body', async () => {
    const bad = await fetch(vllm.url + '/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'nope', messages: history }),
    });
    expect(bad.status).toBe(404);
    expect(await bad.json()).toMatchObject({ object: 'error', type: 'NotFoundError', code: 404 });
    await expect(client.chat.completions.create({ model: 'sim', messages: [] })).rejects.toMatchObject({ status: 400 });
    const notJson = await fetch(vllm.url + '/v1/chat/completions', { method: 'POST', body: '{' });
    expect(notJson.status).toBe(400);
  });

  it('completions, models, tokenize, health, timing header', async () => {
    const c = await client.completions.create({ model: 'sim', prompt: 'Once upon a time', max_tokens: 5 });
    expect(c.object).toBe('text_completion');
    expect(c.usage?.completion_tokens).toBe(5);
    const ids = await client.completions.create({ model: 'sim', prompt: [1, 2, 3, 4], max_tokens: 2 });
    expect(ids.usage?.prompt_tokens).toBe(4);
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['sim']);
    const tok = (await (
      await fetch(vllm.url + '/tokenize', { method: 'POST', body: JSON.stringify({ model: 'sim', messages: history }) })
    ).json()) as { count: number; tokens: number[]; max_model_len: number };
    expect(tok.count).toBe(tok.tokens.length);
    const chat = await client.chat.completions.create({ model: 'sim', messages: history, max_tokens: 1 });
    expect(tok.count).toBe(chat.usage?.prompt_tokens);
    expect((await fetch(vllm.url + '/health')).status).toBe(200);
    const raw = await client.chat.completions.create({ model: 'sim', messages: history, max_tokens: 3 }).withResponse();
    expect(raw.response.headers.get('x-sim-timing')).toMatch(
      /^queue_ms=[\d.]+;prefill_ms=[\d.]+;decode_ms=[\d.]+;ttft_ms=[\d.]+$/,
    );
  });

  it('metrics are named as vLLM and SGLang name them', async () => {
    const text = await (await fetch(vllm.url + '/metrics')).text();
    for (const name of [
      'vllm:prefix_cache_queries_total',
      'vllm:prefix_cache_hits_total',
      'vllm:time_to_first_token_seconds_bucket',
      'vllm:num_requests_running',
      'vllm:num_requests_waiting',
      'vllm:kv_cache_usage_perc',
      'vllm:prompt_tokens_total',
      'vllm:generation_tokens_total',
    ]) {
      expect(text).toContain(`${name}{`);
    }
    expect(text).toMatch(/vllm:prefix_cache_hits_total\{model_name="sim"\} [1-9]/);
    const s = vllm.stats();
    expect(text).toContain(`vllm:prefix_cache_queries_total{model_name="sim"} ${s.promptTokens}`);

    const sg = new OpenAI({ baseURL: sglang.url + '/v1', apiKey: 'x', maxRetries: 0 });
    await sg.chat.completions.create({ model: 'sim', messages: history, max_tokens: 4 });
    const r2 = await sg.chat.completions.create({ model: 'sim', messages: history, max_tokens: 4 });
    expect(r2.usage?.prompt_tokens_details?.cached_tokens).toBe(r2.usage!.prompt_tokens - 1); // radix: token granularity
    const gen = (await (
      await fetch(sglang.url + '/generate', {
        method: 'POST',
        body: JSON.stringify({ text: 'hello world, hello world', sampling_params: { max_new_tokens: 3 } }),
      })
    ).json()) as { meta_info: { cached_tokens: number; completion_tokens: number } };
    expect(gen.meta_info.completion_tokens).toBe(3);
    const sgText = await (await fetch(sglang.url + '/metrics')).text();
    for (const name of [
      'sglang:cache_hit_rate',
      'sglang:time_to_first_token_seconds_bucket',
      'sglang:num_queue_reqs',
      'sglang:num_running_reqs',
      'sglang:token_usage',
    ])
      expect(sgText).toContain(`${name}{`);
    expect((await fetch(sglang.url + '/get_server_info')).status).toBe(200);
    expect((await fetch(sglang.url + '/flush_cache', { method: 'POST' })).status).toBe(200);
    const r3 = await sg.chat.completions.create({ model: 'sim', messages: history, max_tokens: 4 });
    expect(r3.usage?.prompt_tokens_details?.cached_tokens).toBe(0);
  });

  it('SGLang /generate streams cumulative text with meta_info and ends with [DONE]', async () => {
    const req = { text: 'stream me a few tokens, stream me a few tokens', sampling_params: { max_new_tokens: 6 } };
    const plain = (await (
      await fetch(sglang.url + '/generate', { method: 'POST', body: JSON.stringify(req) })
    ).json()) as { text: string; meta_info: { prompt_tokens: number } };
    const res = await fetch(sglang.url + '/generate', {
      method: 'POST',
      body: JSON.stringify({ ...req, stream: true }),
    });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const raw = await res.text();
    expect(raw.endsWith('data: [DONE]\n\n')).toBe(true);
    const events = raw
      .split('\n\n')
      .filter((l) => l.startsWith('data: {'))
      .map(
        (l) =>
          JSON.parse(l.slice(6)) as {
            text: string;
            meta_info: {
              prompt_tokens: number;
              completion_tokens: number;
              cached_tokens: number;
              finish_reason: { type: string; length?: number } | null;
            };
          },
      );
    expect(events.length).toBeGreaterThan(1);
    for (let i = 1; i < events.length; i++) {
      expect(events[i].text.startsWith(events[i - 1].text)).toBe(true); // cumulative, not deltas
      expect(events[i].meta_info.completion_tokens).toBeGreaterThanOrEqual(events[i - 1].meta_info.completion_tokens);
    }
    const last = events[events.length - 1];
    expect(events.slice(0, -1).every((e) => e.meta_info.finish_reason === null)).toBe(true);
    expect(last.meta_info.finish_reason).toEqual({ type: 'length', length: 6 });
    expect(last.text).toBe(plain.text);
    expect(last.meta_info.completion_tokens).toBe(6);
    expect(last.meta_info.prompt_tokens).toBe(plain.meta_info.prompt_tokens);
    // The same prompt just ran: the radix cache serves all but the last prompt token.
    expect(last.meta_info.cached_tokens).toBe(plain.meta_info.prompt_tokens - 1);
  });

  it('flushCache empties the vLLM cache', async () => {
    await client.chat.completions.create({ model: 'sim', messages: history, max_tokens: 2 });
    vllm.flushCache();
    const r = await client.chat.completions.create({ model: 'sim', messages: history, max_tokens: 2 });
    expect(r.usage?.prompt_tokens_details?.cached_tokens).toBe(0);
  });
});
