// Hostile input: thousands of random and malformed bodies (wrong types, huge strings, deep
// nesting, invalid UTF-8, broken tool-call pairs, wrong content types, numbers for strings)
// against a running gateway with a reference worker behind it. Every answer must be a 2xx (valid
// input) or a 4xx with an error body — OpenAI-shaped when the gateway itself answered — never a
// 5xx, and the gateway must still serve normally afterwards.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../gateway/config/load.ts';
import { startGateway, type StartedGateway } from '../../gateway/server.ts';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';

let worker: SimWorker;
let gw: StartedGateway;
const seen = { total: 0, byStatus: new Map<number, number>() };

beforeAll(async () => {
  worker = await startSimWorker({ model: 'fz', tokenizer: 'qwen3', timeScale: 0, maxModelLen: 32_768 });
  const config = parseConfig({
    listen: { host: '127.0.0.1', port: 0 },
    health: { interval_ms: 0 },
    limits: { max_body_bytes: 2 * 1024 * 1024, max_messages: 200, max_json_depth: 64 },
    models: [{ name: 'fz', layout: 'passthrough', workers: [{ url: worker.url, id: 'w' }] }],
  });
  gw = await startGateway(config, { logger: false });
});
afterAll(async () => {
  await gw?.close();
  await worker?.close();
});

interface Shot {
  contentType?: string;
  body: Uint8Array | string;
  path?: string;
}

async function shoot(s: Shot): Promise<void> {
  const headers: Record<string, string> = {};
  if (s.contentType !== undefined) headers['content-type'] = s.contentType;
  const res = await fetch(`${gw.url}${s.path ?? '/v1/chat/completions'}`, { method: 'POST', headers, body: s.body });
  const text = await res.text();
  seen.total++;
  seen.byStatus.set(res.status, (seen.byStatus.get(res.status) ?? 0) + 1);
  const where = `${res.status} for ${String(typeof s.body === 'string' ? s.body : Buffer.from(s.body).toString('latin1')).slice(0, 200)} -> ${text.slice(0, 300)}`;
  expect(res.status, where).toBeLessThan(500);
  if (res.status < 300) return;
  expect(res.status, where).toBeGreaterThanOrEqual(400);
  const body = JSON.parse(text) as { error?: { message?: unknown; type?: unknown; code?: unknown }; message?: unknown };
  if (res.headers.get('x-ctxgate-worker')) {
    // Relayed from the worker untouched (vLLM's own error shape): it must at least say why.
    expect(typeof (body.error?.message ?? body.message), where).toBe('string');
    return;
  }
  expect(typeof body.error?.message, where).toBe('string');
  expect(typeof body.error?.type, where).toBe('string');
  expect(typeof body.error?.code, where).toBe('string');
}

const json = (v: unknown): Shot => ({ contentType: 'application/json', body: JSON.stringify(v) ?? 'null' });

// Anything in a slot where a string, number or array is expected.
const junk = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.oneof(fc.string({ maxLength: 8 }), fc.integer()), { maxLength: 4 }),
  fc.dictionary(fc.string({ maxLength: 6 }), fc.oneof(fc.string({ maxLength: 8 }), fc.integer()), { maxKeys: 3 }),
);
const role = fc.oneof(fc.constantFrom('system', 'user', 'assistant', 'tool', 'developer', 'function', ''), junk);
const content = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.string({ unit: 'binary', maxLength: 60 }),
  fc.array(
    fc.record(
      {
        type: fc.oneof(fc.constantFrom('text', 'image_url', 'input_audio'), junk),
        text: fc.oneof(fc.string({ maxLength: 30 }), junk),
      },
      { requiredKeys: [] },
    ),
    { maxLength: 3 },
  ),
  junk,
);
const toolCall = fc.record(
  {
    id: fc.oneof(fc.string({ maxLength: 12 }), junk),
    type: fc.oneof(fc.constant('function'), junk),
    function: fc.oneof(
      fc.record(
        {
          name: fc.oneof(fc.string({ maxLength: 12 }), junk),
          arguments: fc.oneof(fc.json({ maxDepth: 2 }), fc.string({ maxLength: 20 }), junk),
        },
        { requiredKeys: [] },
      ),
      junk,
    ),
  },
  { requiredKeys: [] },
);
const message = fc.record(
  {
    role,
    content,
    tool_calls: fc.oneof(fc.array(toolCall, { maxLength: 3 }), junk),
    tool_call_id: fc.oneof(fc.string({ maxLength: 12 }), junk),
    name: junk,
  },
  { requiredKeys: ['role'] },
);
const tool = fc.oneof(
  fc.record({
    type: fc.constant('function'),
    function: fc.record(
      {
        name: fc.string({ minLength: 1, maxLength: 12 }),
        description: fc.string({ maxLength: 30 }),
        parameters: fc.json({ maxDepth: 3 }).map((s) => JSON.parse(s) as unknown),
      },
      { requiredKeys: ['name'] },
    ),
  }),
  junk,
);
const chatBody = fc.record(
  {
    model: fc.oneof(fc.constant('fz'), fc.constant('nope'), junk),
    messages: fc.oneof(fc.array(message, { maxLength: 6 }), junk),
    stream: fc.oneof(fc.boolean(), junk),
    stream_options: fc.oneof(fc.record({ include_usage: fc.oneof(fc.boolean(), junk) }, { requiredKeys: [] }), junk),
    max_tokens: fc.oneof(fc.integer({ min: -5, max: 40 }), fc.constant(1e12), fc.double(), junk),
    temperature: fc.oneof(fc.double(), junk),
    tools: fc.oneof(fc.array(tool, { maxLength: 3 }), junk),
    tool_choice: fc.oneof(fc.constantFrom('auto', 'none', 'required'), junk),
    n: fc.oneof(fc.integer({ min: -1, max: 3 }), junk),
  },
  { requiredKeys: [] },
);
// A well-formed conversation whose tool-call pairs are broken in one of several ways.
const brokenPairs = fc
  .record({
    drop: fc.constantFrom('result', 'call', 'id', 'swap', 'dup'),
    stream: fc.boolean(),
    id: fc.string({ maxLength: 10 }),
  })
  .map(({ drop, stream, id }) => {
    const call = { id: id || 'c1', type: 'function', function: { name: 'read', arguments: '{"path":"a"}' } };
    const msgs: Record<string, unknown>[] = [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'go' },
    ];
    if (drop !== 'call')
      msgs.push({ role: 'assistant', content: null, tool_calls: drop === 'dup' ? [call, call] : [call] });
    if (drop !== 'result') msgs.push({ role: 'tool', tool_call_id: drop === 'id' ? 'other' : call.id, content: 'out' });
    if (drop === 'swap') msgs.reverse();
    return json({ model: 'fz', stream, max_tokens: 8, messages: msgs });
  });

const shots = fc.oneof(
  { weight: 5, arbitrary: chatBody.map(json) },
  { weight: 2, arbitrary: brokenPairs },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }).map(json) },
  // Raw bytes, invalid UTF-8 included, labelled JSON.
  {
    weight: 1,
    arbitrary: fc.uint8Array({ maxLength: 300 }).map((b): Shot => ({ contentType: 'application/json', body: b })),
  },
  // Valid JSON around an invalid UTF-8 sequence inside a string.
  {
    weight: 1,
    arbitrary: fc.uint8Array({ minLength: 1, maxLength: 12 }).map((bad): Shot => {
      const head = Buffer.from('{"model":"fz","max_tokens":4,"messages":[{"role":"user","content":"');
      return {
        contentType: 'application/json',
        body: Buffer.concat([
          head,
          Buffer.from(bad.map((x) => (x === 0x22 || x === 0x5c ? 0xff : x | 0x80))),
          Buffer.from('"}]}'),
        ]),
      };
    }),
  },
  // Wrong or missing content types.
  {
    weight: 1,
    arbitrary: fc
      .record({
        ct: fc.constantFrom(
          undefined,
          'text/plain',
          'multipart/form-data; boundary=x',
          'application/x-www-form-urlencoded',
          'application/jsonx',
          'application/json; charset=latin1',
        ),
        b: fc.string({ maxLength: 50 }),
      })
      .map(({ ct, b }): Shot => ({ contentType: ct, body: b })),
  },
  // Deep nesting just under and far over the limit.
  {
    weight: 1,
    arbitrary: fc.integer({ min: 1, max: 5000 }).map((d) => ({
      contentType: 'application/json',
      body: `{"model":"fz","messages":[{"role":"user","content":${'['.repeat(d)}"x"${']'.repeat(d)}}]}`,
    })),
  },
  // The legacy completions route with junk prompts.
  {
    weight: 1,
    arbitrary: fc
      .record(
        {
          model: fc.oneof(fc.constant('fz'), junk),
          prompt: fc.oneof(
            fc.string({ maxLength: 50 }),
            fc.array(fc.oneof(fc.integer({ min: 0, max: 150_000 }), junk), { maxLength: 5 }),
            junk,
          ),
          max_tokens: fc.oneof(fc.integer({ min: 0, max: 8 }), junk),
          stream: fc.oneof(fc.boolean(), junk),
        },
        { requiredKeys: [] },
      )
      .map((b): Shot => ({ ...json(b), path: '/v1/completions' })),
  },
);

describe('fuzzed request bodies', () => {
  it('never produce a 5xx or a crash over 1200 random and malformed bodies', async () => {
    await fc.assert(fc.asyncProperty(shots, shoot), { numRuns: 1200, seed: 9, endOnFailure: true });
  });

  it('handles huge strings and huge message counts within the limits', async () => {
    await shoot(
      json({ model: 'fz', max_tokens: 4, messages: [{ role: 'user', content: 'lorem ipsum '.repeat(30_000) }] }),
    );
    await shoot({
      contentType: 'application/json',
      body: `{"model":"fz","messages":[{"role":"user","content":"${'y'.repeat(3 * 1024 * 1024)}"}]}`,
    }); // over max_body_bytes
    await shoot(
      json({
        model: 'fz',
        max_tokens: 4,
        messages: Array.from({ length: 201 }, () => ({ role: 'user', content: 'hi' })),
      }),
    );
    await shoot(
      json({
        model: 'fz',
        max_tokens: 4,
        messages: [{ role: 'user', content: 'hi', extra: 'z'.repeat(100_000) }],
        ['k'.repeat(10_000)]: 1,
      }),
    );
    expect(seen.byStatus.get(413)).toBeGreaterThan(0);
  });

  it('still serves normally afterwards, and saw both accepted and rejected bodies', async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'fz', max_tokens: 8, messages: [{ role: 'user', content: 'still alive?' }] }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { choices: unknown[] }).choices).toHaveLength(1);
    expect((await fetch(`${gw.url}/health`)).status).toBe(200);
    expect(seen.total).toBeGreaterThanOrEqual(1200);
    const ok = [...seen.byStatus].filter(([s]) => s < 300).reduce((a, [, n]) => a + n, 0);
    expect(ok).toBeGreaterThan(20);
    expect(seen.total - ok).toBeGreaterThan(200);
  });
});
