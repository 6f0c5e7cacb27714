// The per-tenant in-flight cap across replicas (limits.max_concurrent_per_tenant with redis.url)
// survives a Redis stall: ACQUIREs that timed out (answered from the local count) still run when
// Redis wakes up, and must not leave leases nobody releases; otherwise the tenant, with nothing
// in flight, is refused 429 on every replica until the leases run out (30 s).
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { INFLIGHT_KEY_PREFIX } from '../../gateway/limits/tenant-concurrency-redis.ts';
import { startOwnRedis, type OwnRedis } from '../helpers/own-redis.ts';
import { startSimGateway } from '../helpers/sim-gateway.ts';

const M = 'qwen3-32b';
let url = '';
let redis: OwnRedis;
let close: () => Promise<void> = async () => undefined;

beforeAll(async () => {
  redis = await startOwnRedis();
  const rig = await startSimGateway({
    workers: 1,
    model: M,
    sim: { kvTokens: 400_000 },
    config: { redis: { url: redis.url }, limits: { max_concurrent_per_tenant: 2 } },
    modelConfig: { layout: 'passthrough' },
    source: 'lease-phantom',
  });
  url = rig.gw.url;
  close = rig.close;
});

afterAll(async () => {
  redis?.resume();
  await close();
  await redis?.stop();
});

async function ask(text: string): Promise<number> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    signal: AbortSignal.timeout(20_000),
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: M, max_tokens: 2, messages: [{ role: 'user', content: text }] }),
  });
  await res.arrayBuffer();
  return res.status;
}

it('a Redis stall leaves no phantom lease: the tenant is admitted right after', async () => {
  expect(await ask('before')).toBe(200);
  redis.pause();
  try {
    // twice the cap, one at a time: each ACQUIRE times out and the local count admits it
    for (let i = 0; i < 4; i++) expect(await ask(`during ${i}`)).toBe(200);
  } finally {
    redis.resume();
  }
  const probe = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  // Leases left in Redis, once they stop changing for the better: phantoms (never released) would
  // stay until they expire (30 s), far past this deadline.
  const settled = async (): Promise<number> => {
    const end = Date.now() + 15_000;
    let left = await probe.zcard(`${INFLIGHT_KEY_PREFIX}default`);
    while (left !== 0 && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 100));
      left = await probe.zcard(`${INFLIGHT_KEY_PREFIX}default`);
    }
    return left;
  };
  try {
    // the stalled commands (ACQUIREs and RELEASEs) run once Redis wakes up; wait for them, not a fixed time
    expect(await settled()).toBe(0);
    // nothing is in flight: every request must be admitted (phantoms would make these 429)
    for (let i = 0; i < 3; i++) expect(await ask(`after ${i}`)).toBe(200);
    expect(await settled()).toBe(0);
  } finally {
    probe.disconnect();
  }
});
