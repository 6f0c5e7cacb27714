// Two replicas of the gateway sharing one real redis-server agree on what is per tenant:
// - with no tenancy.cache_salt_secret configured, both send a tenant's requests upstream with the
//   same cache_salt (one secret created once in Redis, SET NX); a replica without Redis has its own;
// - limits.max_concurrent_per_tenant counts a tenant's requests in flight across both replicas
//   (429 on the second replica while the first holds the tenant's only slot; another tenant is
//   unaffected); a dead replica's slots come back when their lease runs out.
import { createHash, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { parseConfig } from '../../gateway/config/load.ts';
import { SharedTenantConcurrency } from '../../gateway/limits/tenant-concurrency-redis.ts';
import { startGateway, type StartedGateway } from '../../gateway/server.ts';
import { redisSecret } from '../../gateway/tenancy/salt-secret.ts';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.ts';
import { until } from '../helpers/gateway.ts';

const redisUrl = inject('redisUrl');
const sha = (k: string) => `sha256:${createHash('sha256').update(k).digest('hex')}`;
const KEYS = { a: 'sk-replica-a-0123456789', b: 'sk-replica-b-0123456789' };
let ups: FakeUpstream[] = [];
let gws: StartedGateway[] = [];
afterEach(async () => {
  await Promise.all(gws.map((g) => g.close()));
  await Promise.all(ups.map((u) => u.close()));
  gws = [];
  ups = [];
});

async function replica(up: FakeUpstream, extra: Record<string, unknown> = {}, tenants = ['a', 'b']) {
  const config = parseConfig(
    {
      listen: { host: '127.0.0.1', port: 0 },
      auth: {
        mode: 'keys',
        keys: tenants.map((t) => ({ key: sha(KEYS[t as 'a' | 'b']), tenant: `${t}` })),
      },
      health: { interval_ms: 0 },
      models: [{ name: 'm', layout: 'passthrough', workers: [{ url: up.url, id: 'w' }] }],
      ...extra,
    },
    'test',
    {},
  );
  const gw = await startGateway(config, { logger: false });
  gws.push(gw);
  return gw;
}

const client = (gw: StartedGateway, key: string) =>
  new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0, timeout: 20_000 });
const ask = (gw: StartedGateway, key: string, stream = false) =>
  client(gw, key).chat.completions.create({
    model: 'm',
    messages: [{ role: 'user', content: 'hi' }],
    stream,
  } as never) as Promise<unknown>;

describe('replicas share per-tenant state through Redis', () => {
  it('two replicas without a configured secret send a tenant the same cache_salt; one without Redis does not', async () => {
    const up = await startFakeUpstream({ name: 'w' });
    ups.push(up);
    const r1 = await replica(up, { redis: { url: redisUrl } });
    const r2 = await replica(up, { redis: { url: redisUrl } });
    const alone = await replica(up);
    for (const gw of [r1, r2, alone]) await ask(gw, KEYS.a);
    await ask(r2, KEYS.b);
    const salts = up.requests.map((b) => b.cache_salt as string);
    expect(salts.every((s) => typeof s === 'string' && s.length > 0)).toBe(true);
    expect(salts[0]).toBe(salts[1]);
    expect(salts[2]).not.toBe(salts[0]);
    expect(salts[3]).not.toBe(salts[0]); // tenant b
    // The secret was created once: a second read returns the same value.
    expect(await redisSecret(redisUrl)).toBe(await redisSecret(redisUrl));
  });

  it('limits.max_concurrent_per_tenant counts across replicas (429 on the other replica), per tenant', async () => {
    // the stream holds the slot (after its first frame) until the test lets it go, however slow the machine
    let letGo!: () => void;
    const hold = new Promise<void>((r) => (letGo = r));
    const up = await startFakeUpstream({ name: 'w', knobs: { hold } });
    ups.push(up);
    const cfg = { redis: { url: redisUrl }, limits: { max_concurrent_per_tenant: 1 } };
    const r1 = await replica(up, cfg);
    const r2 = await replica(up, cfg);
    // both count in Redis from here (a replica whose link is not up yet counts on its own and admits)
    await until(() => r1.ctx.tenantSlots.linkUp?.() === true && r2.ctx.tenantSlots.linkUp?.() === true, 60_000);
    // Tenant a's only slot is held by a stream through replica 1.
    const stream = (await ask(r1, KEYS.a, true)) as AsyncIterable<unknown>;
    const held = (async () => {
      for await (const _ of stream);
    })();
    const second = await ask(r2, KEYS.a).catch((e: unknown) => e);
    expect(second).toMatchObject({ status: 429, code: 'tenant_concurrency_exceeded' });
    await expect(ask(r2, KEYS.b)).resolves.toBeDefined();
    letGo();
    await held;
    // Released: the slot is free again on either replica.
    await expect(ask(r2, KEYS.a)).resolves.toBeDefined();
  });

  it("a dead replica's slots come back when their lease runs out", async () => {
    const tenant = `t-${randomUUID()}`;
    const r1 = new Redis(redisUrl);
    const r2 = new Redis(redisUrl);
    // 1.5 s leases, renewed every 0.5 s: a loaded machine can delay a timer by a few hundred ms
    const dead = new SharedTenantConcurrency(r1, 1, { leaseMs: 1_500 });
    const live = new SharedTenantConcurrency(r2, 1, { leaseMs: 1_500 });
    try {
      await dead.acquire(tenant); // never released
      dead.close(); // and no longer renewed
      await expect(live.acquire(tenant)).rejects.toMatchObject({ code: 'tenant_concurrency_exceeded' });
      await new Promise((r) => setTimeout(r, 1_800));
      const release = await live.acquire(tenant);
      // A held lease is renewed past its first term.
      await new Promise((r) => setTimeout(r, 2_000));
      await expect(dead.acquire(tenant)).rejects.toMatchObject({ code: 'tenant_concurrency_exceeded' });
      release();
    } finally {
      live.close();
      r1.disconnect();
      r2.disconnect();
    }
  });
});
