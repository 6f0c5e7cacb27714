// The fake upstream with a prefix cache reports what the reference worker (vLLM flavour, same
// tokenizer, KV size and block size) reports on the same calls: prompt_tokens and cached_tokens
// equal call by call, over real sockets. The reference worker is told to answer what the fake
// answers (its sim_output), so both cache the same answer. Without a cache the fake still reports
// its knob (a never-caching worker).
import { afterAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../../loadtest/fake-upstream.ts';
import { sessionBodies } from '../../loadtest/overhead/growing-sessions.ts';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';

const MODEL = 'sim';
const WORDS = 8;
const ANSWER = Array.from({ length: WORDS }, (_, i) => (i === 0 ? 'hello from fake' : ` w${i}`)).join('');

type Usage = { prompt_tokens: number; prompt_tokens_details?: { cached_tokens?: number } };
const stops: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const s of stops) await s();
});

async function pair(kvTokens: number): Promise<{ fake: FakeUpstream; ref: SimWorker }> {
  const fake = await startFakeUpstream({
    name: 'fake',
    record: false,
    knobs: { words: WORDS },
    prefixCache: { tokenizer: 'qwen3', kvTokens },
  });
  const ref = await startSimWorker({ model: MODEL, tokenizer: 'qwen3', flavor: 'vllm', kvTokens, seed: 1 });
  stops.push(
    () => fake.close(),
    () => ref.close(),
  );
  return { fake, ref };
}

async function post(url: string, path: string, body: Record<string, unknown>): Promise<Usage> {
  const r = await fetch(url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(r.status).toBe(200);
  return ((await r.json()) as { usage: Usage }).usage;
}

/** The fake's answer to a chat body, as the reference worker's forced output. */
function forced(body: Record<string, unknown>): Record<string, unknown> {
  const tools = body.tools as { function: { name: string } }[] | undefined;
  if (tools?.length && body.tool_choice !== 'none')
    return {
      content: null,
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: tools[0].function.name, arguments: '{"path":"a.txt"}' } },
      ],
    };
  return { content: ANSWER };
}

/** Sends each body to both; returns [fake, reference] (prompt, cached) per call. */
async function compare(
  p: { fake: FakeUpstream; ref: SimWorker },
  calls: { path: string; body: Record<string, unknown> }[],
): Promise<{ fake: [number, number][]; ref: [number, number][] }> {
  const fake: [number, number][] = [];
  const ref: [number, number][] = [];
  for (const c of calls) {
    const a = await post(p.fake.url, c.path, c.body);
    const extra = c.path === '/v1/chat/completions' ? { sim_output: forced(c.body) } : {};
    const b = await post(p.ref.url, c.path, { ...c.body, ...extra });
    fake.push([a.prompt_tokens, a.prompt_tokens_details?.cached_tokens ?? -1]);
    ref.push([b.prompt_tokens, b.prompt_tokens_details?.cached_tokens ?? -1]);
  }
  return { fake, ref };
}

/** The overhead bench's growing sessions, `slots` of them interleaved call by call. */
function growing(slots: number, calls: number): { path: string; body: Record<string, unknown> }[] {
  const per = Array.from({ length: slots }, (_, s) =>
    sessionBodies(s, { slots, calls, model: MODEL }).map(([h, t]) => JSON.parse(`${h}${s}-0${t}`)),
  );
  const out: { path: string; body: Record<string, unknown> }[] = [];
  for (let k = 0; k < calls; k++)
    for (let s = 0; s < slots; s++) out.push({ path: '/v1/chat/completions', body: per[s][k] });
  return out;
}

describe('fake upstream prefix cache vs the reference worker', () => {
  it('growing agent sessions (the overhead bench traffic): equal prompt and cached tokens on every call', async () => {
    const p = await pair(1_000_000);
    const calls = growing(3, 12);
    const { fake, ref } = await compare(p, calls);
    expect(fake).toEqual(ref);
    // every call but the very first reuses something (the sessions share their system prompt), and
    // a session's later calls nearly all of its previous prompt
    const hits = fake.filter(([, c]) => c > 0).length;
    expect(hits).toBe(calls.length - 1);
    expect(fake[fake.length - 1][1]).toBeGreaterThan(fake[fake.length - 4][0] - 64);
    // and the fake resumed each session's later calls from its previous prompt (the memo is what
    // was compared here, not only the full path)
    expect(p.fake.cache!.resumed).toBe(calls.length - 3);
  }, 60_000);

  it('a KV budget smaller than the sessions: equal under LRU eviction', async () => {
    const p = await pair(12_000);
    const { fake, ref } = await compare(p, growing(3, 10));
    expect(fake).toEqual(ref);
    expect(p.fake.cache!.pool.evictions).toBeGreaterThan(0);
    expect(p.fake.cache!.resumed).toBeGreaterThan(0);
    // some session lost part of its previous prompt to the others
    expect(fake.some(([, c], i) => i >= 3 && c < fake[i - 3][0] - 64)).toBe(true);
  }, 60_000);

  it('answers resent in the history (the cached answer blocks hit), cache_salt, text prompts', async () => {
    const p = await pair(1_000_000);
    const messages: Record<string, unknown>[] = [
      { role: 'system', content: 'You are a careful assistant. '.repeat(30) },
      { role: 'user', content: 'Explain the build.' },
    ];
    const calls: { path: string; body: Record<string, unknown> }[] = [];
    for (let k = 0; k < 5; k++) {
      calls.push({ path: '/v1/chat/completions', body: { model: MODEL, messages: [...messages] } });
      messages.push({ role: 'assistant', content: ANSWER }, { role: 'user', content: `And step ${k}? `.repeat(k + 1) });
    }
    calls.push({ path: '/v1/chat/completions', body: { model: MODEL, messages, cache_salt: 'tenant-b' } });
    calls.push({ path: '/v1/chat/completions', body: { model: MODEL, messages, cache_salt: 'tenant-b' } });
    const doc = 'def handler(event):\n    return validate(event)\n'.repeat(40);
    calls.push({ path: '/v1/completions', body: { model: MODEL, prompt: doc, max_tokens: 8 } });
    calls.push({ path: '/v1/completions', body: { model: MODEL, prompt: `${doc}# more\n`, max_tokens: 8 } });
    const ids = Array.from({ length: 100 }, (_, i) => 1000 + i);
    calls.push({ path: '/v1/completions', body: { model: MODEL, prompt: ids, max_tokens: 8 } });
    calls.push({ path: '/v1/completions', body: { model: MODEL, prompt: [...ids, 7, 8, 9], max_tokens: 8 } });
    const { fake, ref } = await compare(p, calls);
    expect(fake).toEqual(ref);
    expect(fake[5][1]).toBe(0); // a new salt: nothing shared
    expect(fake[6][1]).toBeGreaterThan(0);
    expect(fake[10][1]).toBe(96);
  }, 60_000);

  it('without a cache the fake reports its knob (a never-caching worker)', async () => {
    const up = await startFakeUpstream({ record: false, knobs: { cachedTokens: 0 } });
    stops.push(() => up.close());
    const [body] = growing(1, 1);
    const a = await post(up.url, body.path, body.body);
    const b = await post(up.url, body.path, body.body);
    expect(a.prompt_tokens_details?.cached_tokens).toBe(0);
    expect(b.prompt_tokens_details?.cached_tokens).toBe(0);
  });
});
