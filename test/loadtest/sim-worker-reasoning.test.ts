// The reference worker as a reasoning model (--reasoning, as an engine served with a reasoning
// parser): reasoning_content before the answer, whole and streamed, the same for the same prompt,
// and none when the request turns thinking off or the worker is not a reasoning model.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';

let thinker: SimWorker;
let plain: SimWorker;
beforeAll(async () => {
  [thinker, plain] = await Promise.all([
    startSimWorker({ model: 'm', reasoning: true }),
    startSimWorker({ model: 'm' }),
  ]);
});
afterAll(async () => {
  await Promise.all([thinker?.close(), plain?.close()]);
});

async function ask(w: SimWorker, extra: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const res = await fetch(`${w.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', max_tokens: 8, messages: [{ role: 'user', content: 'Which file?' }], ...extra }),
  });
  expect(res.status).toBe(200);
  if (extra.stream) {
    let reasoning = '';
    for (const line of (await res.text()).split('\n'))
      if (line.startsWith('data: {')) reasoning += JSON.parse(line.slice(6)).choices[0]?.delta?.reasoning_content ?? '';
    return { reasoning_content: reasoning || undefined };
  }
  return ((await res.json()) as { choices: { message: Record<string, unknown> }[] }).choices[0].message;
}

describe('sim-worker --reasoning', () => {
  it('answers with reasoning_content, the same whole and streamed', async () => {
    const m = await ask(thinker);
    expect(m.reasoning_content).toBe('The user asks: "Which file?". I can answer that directly.');
    expect((await ask(thinker, { stream: true })).reasoning_content).toBe(m.reasoning_content);
  });

  it('has none when thinking is off, or on a worker that is not a reasoning model', async () => {
    expect(
      (await ask(thinker, { chat_template_kwargs: { enable_thinking: false } })).reasoning_content,
    ).toBeUndefined();
    expect((await ask(plain)).reasoning_content).toBeUndefined();
  });
});
