// A stalled Redis (SIGSTOP: the connection stays up, nothing answers) must not hang requests:
// the replica-shared session home lookup (before routing) and store (after) sit in the request
// path, so they time out and routing goes on with this replica's view; the failures are counted.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startOwnRedis, type OwnRedis } from '../helpers/own-redis.ts';
import { startSimGateway } from '../helpers/sim-gateway.ts';

const M = 'qwen3-32b';
let url = '';
let redis: OwnRedis;
let close: () => Promise<void> = async () => undefined;

beforeAll(async () => {
  redis = await startOwnRedis();
  const rig = await startSimGateway({
    workers: 2,
    model: M,
    sim: { kvTokens: 400_000 },
    config: { redis: { url: redis.url } },
    modelConfig: { layout: 'ctxgate', policy: 'ctxgate' },
    source: 'redis-stall',
  });
  url = rig.gw.url;
  close = rig.close;
});

afterAll(async () => {
  redis?.resume();
  await close();
  await redis?.stop();
});

async function ask(session: string, text: string): Promise<number> {
  // generous: the point is "answers", not how fast (the machine is shared); without the fix it never does
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    signal: AbortSignal.timeout(20_000),
    headers: { 'content-type': 'application/json', 'x-session-id': session },
    body: JSON.stringify({ model: M, max_tokens: 4, messages: [{ role: 'user', content: text }] }),
  });
  await res.arrayBuffer();
  return res.status;
}

it('a session request answers while Redis is stalled, and the stall is counted', async () => {
  expect(await ask('sess-1', 'hello before')).toBe(200);
  redis.pause();
  try {
    // a known session (lookup) and a new one (lookup + store of its home)
    expect(await ask('sess-1', 'hello stalled')).toBe(200);
    expect(await ask('sess-2', 'a new session')).toBe(200);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toMatch(/ctxgate_shared_index_errors_total\{model="qwen3-32b",op="lookup"\} [1-9]/);
  } finally {
    redis.resume();
  }
  expect(await ask('sess-1', 'hello after')).toBe(200);
});
