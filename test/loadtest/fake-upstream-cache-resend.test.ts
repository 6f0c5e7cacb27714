// The fake upstream's prefix cache never counts a prompt's last token as cached (the engine
// recomputes it for the first logits: vLLM caps a hit at num_tokens - 1), which shows exactly on an
// identical resend whose prompt fills whole blocks: cached = prompt - block size, as the reference
// worker (vLLM flavour, same tokenizer and block size) reports. ctxgate's own retries and failover
// resend the same body, so this is the case the bench meets.
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_BLOCK_SIZE } from '../../kvplanner/block-hash.ts';
import { startFakeUpstream, type FakeUpstream } from '../../loadtest/fake-upstream.ts';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';

const MODEL = 'sim';
const ANSWER = 'hello from fake';
type Usage = { prompt_tokens: number; prompt_tokens_details?: { cached_tokens?: number } };

let fake: FakeUpstream;
let ref: SimWorker;
afterAll(async () => {
  await fake?.close();
  await ref?.close();
});

async function usage(url: string, body: Record<string, unknown>): Promise<[number, number]> {
  const r = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(r.status).toBe(200);
  const u = ((await r.json()) as { usage: Usage }).usage;
  return [u.prompt_tokens, u.prompt_tokens_details?.cached_tokens ?? -1];
}

const body = (pad: number): Record<string, unknown> => ({
  model: MODEL,
  max_tokens: 8,
  messages: [
    { role: 'system', content: 'You are a careful assistant. '.repeat(20) },
    { role: 'user', content: `Explain the build.${' again'.repeat(pad)}` },
  ],
});

describe('fake upstream prefix cache: the last prompt token', () => {
  it('an identical resend of a prompt of whole blocks: cached = prompt - block size, equal to the reference worker', async () => {
    fake = await startFakeUpstream({
      name: 'fake',
      record: false,
      knobs: { words: 3 },
      prefixCache: { tokenizer: 'qwen3', kvTokens: 1_000_000 },
    });
    ref = await startSimWorker({ model: MODEL, tokenizer: 'qwen3', flavor: 'vllm', kvTokens: 1_000_000, seed: 1 });
    const bs = DEFAULT_BLOCK_SIZE;
    // a user message padded until the rendered prompt fills whole blocks (a pad of one word each)
    let pad = 0;
    let first = await usage(fake.url, body(pad));
    while (first[0] % bs !== 0 && pad < 4 * bs) first = await usage(fake.url, body(++pad));
    const prompt = first[0];
    expect(prompt % bs).toBe(0);
    const again = await usage(fake.url, body(pad));
    expect(again).toEqual([prompt, prompt - bs]);
    // the reference worker, sent the same body twice (answering what the fake answered)
    const forced = { ...body(pad), sim_output: { content: ANSWER } };
    await usage(ref.url, forced);
    expect(await usage(ref.url, forced)).toEqual(again);
    // a prompt that ends inside a block, resent: every whole block hits (the cap cuts nothing)
    await usage(fake.url, body(pad + 1));
    const off = await usage(fake.url, body(pad + 1));
    expect(off[0] % bs).not.toBe(0);
    expect(off[1]).toBe(Math.floor(off[0] / bs) * bs);
  }, 60_000);
});
