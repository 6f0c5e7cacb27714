// A stalled Redis (SIGSTOP: the connection stays up, nothing answers) must not hang requests:
// the replica-shared session home lookup (before routing) and store (after) sit in the request
// path, so they time out and routing goes on with this replica's view; the failures are counted.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startAssembledGateway } from '../../gateway/assemble.ts';
import { parseConfig } from '../../gateway/config/load.ts';
import { startSimWorker } from '../../loadtest/sim-worker/index.ts';
import { startOwnRedis, type OwnRedis } from '../helpers/own-redis.ts';

const M = 'qwen3-32b';
let url = '';
let redis: OwnRedis;
let close: () => Promise<void> = async () => undefined;

beforeAll(async () => {
  redis = await startOwnRedis();
  const ws = await Promise.all(
    [0, 1].map((i) =>
      startSimWorker({ port: 0, model: M, tokenizer: 'qwen3', kvTokens: 400_000, timeScale: 0, seed: i }),
    ),
  );
  const config = parseConfig(
    {
      listen: { host: '127.0.0.1', port: 0 },
      health: { interval_ms: 0 },
      redis: { url: redis.url },
      models: [
        {
          name: M,
          tokenizer: 'qwen3',
          layout: 'ctxgate',
          policy: 'ctxgate',
          workers: ws.map((w, i) => ({ url: w.url, id: `w${i}` })),
        },
      ],
    },
    'redis-stall',
  );
  const gw = await startAssembledGateway(config, { logger: false, reporting: false });
  url = gw.url;
  close = async () => {
    await gw.close();
    await Promise.all(ws.map((w) => w.close()));
  };
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
