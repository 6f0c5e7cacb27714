// A non-stream answer that breaks while its body is read (worker died after the headers) reached
// no client byte yet: the gateway retries it on another worker instead of failing the call.
import OpenAI from 'openai';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startGateway, type StartedGateway } from '../../gateway/server.ts';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';
import { pairConfig } from '../helpers/pair-config.ts';

let a: SimWorker;
let b: SimWorker;
let gw: StartedGateway;
beforeAll(async () => {
  [a, b] = await Promise.all([startSimWorker({ model: 'm' }), startSimWorker({ model: 'm' })]);
  a.setFault({ dieAfterChunks: 1 }); // non-stream: headers, half the body, then the socket dies
  gw = await startGateway(pairConfig(a, b), { logger: false });
});
afterAll(async () => {
  await gw?.close();
  await Promise.all([a?.close(), b?.close()]);
});

it('retries a non-stream call whose body broke mid-way on another worker', async () => {
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'x', maxRetries: 0 });
  for (let i = 0; i < 4; i++) {
    const { data, response } = await client.chat.completions
      .create({ model: 'm', max_tokens: 8, messages: [{ role: 'user', content: `hi ${i}` }] })
      .withResponse();
    expect(data.choices[0].message.content).toBeTruthy();
    expect(response.headers.get('x-ctxgate-worker')).toBe('b');
  }
  // Round robin sent half of the calls to a first: those were retried.
  const metrics = await (await fetch(`${gw.url}/metrics`)).text();
  expect(metrics).toMatch(/retries_total\{model="m"\} [2-4]/);
});

it('still fails cleanly when every worker breaks mid-body', async () => {
  b.setFault({ dieAfterChunks: 1 });
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }),
  });
  expect(res.status).toBe(502);
  expect(((await res.json()) as { error: { code: string } }).error.code).toBe('upstream_bad_response');
  expect(res.headers.get('x-ctxgate-attempts')).toBe('2');
  b.setFault({ dieAfterChunks: 0 });
});
