// Two gateway replicas sharing one real redis-server, four reference workers (vLLM flavour), the
// official openai SDK. One session's calls alternate between the replicas back to back (each call
// starts when the previous answer arrived): the session must stay on one worker (0 flips) and its
// hit rate must equal what one gateway alone gets on the same conversation. Before session homes
// were written to Redis at selection, the second replica placed the session afresh and the log
// caught up later: 14 flips in 28 calls. Each replica is a separately assembled gateway (its own
// policy, index and session table), as two processes would be.
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startAssembledGateway } from '../../gateway/assemble.ts';
import { parseConfig } from '../../gateway/config/load.ts';
import type { SharedIndexRedis } from '../../kvplanner/shared-index-redis.ts';
import { startSimWorker, type SimWorker } from '../../loadtest/sim-worker/index.ts';
import { until } from '../helpers/gateway.ts';
import { agentSession, type SessionRun } from '../helpers/agent-session.ts';

const redisUrl = inject('redisUrl');
const CALLS = 28;
const SALT_SECRET = randomUUID();
/** Redis answers count however late they come on a loaded machine (the product's 50–100 ms
 *  timeouts would take a slow answer for a failure, and the replica would route on its own). */
const REDIS_TIMEOUT_MS = 30_000;
type Gateway = Awaited<ReturnType<typeof startAssembledGateway>>;

let workers: SimWorker[] = [];
let replicas: Gateway[] = [];
const model = `m-${randomUUID().slice(0, 8)}`;

async function gateway(): Promise<Gateway> {
  const config = parseConfig({
    listen: { host: '127.0.0.1', port: 0 },
    health: { interval_ms: 0 },
    redis: { url: redisUrl },
    // replicas of one deployment share the salt secret (else each salts its tenants' prompts apart)
    tenancy: { cache_salt_secret: SALT_SECRET },
    models: [
      {
        name: model,
        tokenizer: 'qwen3',
        policy: 'ctxgate',
        workers: workers.map((w, i) => ({ url: w.url, id: `w${i}` })),
      },
    ],
  });
  const gw = await startAssembledGateway(config, { logger: false, reporting: false, redisTimeoutMs: REDIS_TIMEOUT_MS });
  // its shared index's link is up (before that the replica routes on its own view, by design)
  const shared = gw.ctx.fleet.get(model)?.placement as SharedIndexRedis;
  await until(() => shared.ready, 60_000);
  return gw;
}

beforeAll(async () => {
  workers = await Promise.all(
    [0, 1, 2, 3].map((i) => startSimWorker({ port: 0, model, tokenizer: 'qwen3', timeScale: 0, seed: i })),
  );
  replicas = [await gateway(), await gateway()];
});
afterAll(async () => {
  await Promise.all(replicas.map((g) => g.close()));
  await Promise.all(workers.map((w) => w.close()));
});

/** One agent-like session: a growing conversation, call i sent through via(i). */
const session = (via: (i: number) => Gateway): Promise<SessionRun> => agentSession((i) => via(i).url, model, CALLS);

describe('replicas agree on a session’s home', () => {
  it('has a real Redis', () => {
    expect(redisUrl).toMatch(/^redis:\/\//);
  });

  it('calls alternating between two replicas back to back: 0 flips, one gateway’s hit rate', async () => {
    // replicas differ in what they have seen (here: one call without a session on the first),
    // so left alone each would place a new session on a different worker
    await new OpenAI({ baseURL: `${replicas[0].url}/v1`, apiKey: 'none', maxRetries: 0 }).chat.completions.create({
      model,
      max_tokens: 4,
      messages: [{ role: 'user', content: 'warm-up without a session' }],
    });
    const two = await session((i) => replicas[i % 2]);
    for (const w of workers) w.flushCache();
    const one = await session(() => replicas[0]);
    expect(one.flips).toBe(0);
    expect(two.flips).toBe(0);
    expect(two.homes.size).toBe(1);
    expect(two.hitRate).toBeGreaterThan(0.8);
    expect(two.hitRate).toBeCloseTo(one.hitRate, 3);
  });

  it('a replica that never saw the session still sends it home (the pin is read before select)', async () => {
    const third = await gateway();
    try {
      // sessions placed through replica 0 only; then each continues through the fresh replica
      for (let s = 0; s < 3; s++) {
        const run = await session((i) => (i < 3 ? replicas[0] : third));
        expect(run.flips).toBe(0);
      }
    } finally {
      await third.close();
    }
  });
});
