// Two replicas of the gateway sharing one real redis-server agree on what is per tenant:
// - with no tenancy.cache_salt_secret configured, both send a tenant's requests upstream with the
//   same cache_salt (one secret created once in Redis, SET NX); a replica without Redis has its own;
// - limits.max_concurrent_per_tenant counts a tenant's requests in flight across both replicas
//   (429 on the second replica while the first holds the tenant's only slot; another tenant is
//   unaffected); a dead replica's slots come back when their lease runs out.
// Every replica here waits as long as Redis needs (redisTimeoutMs): the product's short timeouts
// would take a slow answer on a loaded machine for a failure and fall back to counting alone.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { parseConfig } from '../../gateway/config/load.ts';
import { INFLIGHT_KEY_PREFIX, SharedTenantConcurrency } from '../../gateway/limits/tenant-concurrency-redis.ts';
import { startGateway, type StartedGateway } from '../../gateway/server.ts';
import { redisSecret } from '../../gateway/tenancy/salt-secret.ts';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.ts';
import { until } from '../helpers/gateway.ts';
import { keyHash } from '../helpers/keys.ts';

const redisUrl = inject('redisUrl');
const KEYS = { a: 'sk-replica-a-0123456789', b: 'sk-replica-b-0123456789' };
const REDIS_TIMEOUT_MS = 30_000;
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
        keys: tenants.map((t) => ({ key: keyHash(KEYS[t as 'a' | 'b']), tenant: `${t}` })),
      },
      health: { interval_ms: 0 },
      models: [{ name: 'm', layout: 'passthrough', workers: [{ url: up.url, id: 'w' }] }],
      ...extra,
    },
    'test',
    {},
  );
  const gw = await startGateway(config, { logger: false, redisTimeoutMs: REDIS_TIMEOUT_MS });
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

  it("a dead replica's slots come back when their lease runs out, and a held one's is renewed", async () => {
    // Leases run on Redis's clock, so each outcome is checked against that clock read just before
    // (t0) and after (t1) the call, and the lease's expiry read before and after it: a refusal
    // means the lease had not run out at t0, an admission that it had by t1. No outcome depends on
    // how long the test slept.
    const tenant = `t-${randomUUID()}`;
    const key = INFLIGHT_KEY_PREFIX + tenant;
    const [r1, r2, r3, probe] = [0, 1, 2, 3].map(() => new Redis(redisUrl));
    const redisNow = async () => {
      const [s, us] = await probe.time();
      return Number(s) * 1000 + Math.floor(Number(us) / 1000);
    };
    /** Expiry (Redis ms) of each lease in the tenant's set. */
    const leases = async () => {
      const flat = await probe.zrange(key, 0, -1, 'WITHSCORES');
      return flat.filter((_, i) => i % 2 === 1).map(Number);
    };
    /** One acquire by `by`, its outcome checked against the (only) lease held before it. */
    const attempt = async (by: SharedTenantConcurrency) => {
      const [before] = await leases();
      const t0 = await redisNow();
      const got = await Promise.resolve(by.acquire(tenant)).catch((e: unknown) => e);
      const t1 = await redisNow();
      if (typeof got === 'function') {
        expect(t1).toBeGreaterThanOrEqual(before);
        return got as () => void;
      }
      expect(got).toMatchObject({ code: 'tenant_concurrency_exceeded' });
      const [after] = await leases();
      expect(t0).toBeLessThan(after);
      return undefined;
    };
    const LEASE = 1_500;
    const holder = new SharedTenantConcurrency(r3, 1, { leaseMs: 600_000 });
    const dead = new SharedTenantConcurrency(r1, 1, { leaseMs: LEASE });
    const live = new SharedTenantConcurrency(r2, 1, { leaseMs: LEASE });
    try {
      // While a lease runs, the slot is refused on every other replica.
      const letGo = await holder.acquire(tenant);
      expect(await attempt(live)).toBeUndefined();
      letGo();
      await until(async () => (await leases()).length === 0);
      // A lease ends LEASE ms (Redis time) after its acquire.
      const t0 = await redisNow();
      await dead.acquire(tenant); // never released
      const t1 = await redisNow();
      dead.close(); // and no longer renewed
      const [end] = await leases();
      expect(end).toBeGreaterThanOrEqual(t0 + LEASE);
      expect(end).toBeLessThanOrEqual(t1 + LEASE);
      // The dead replica's slot comes back: refused until `end`, admitted after.
      let release: (() => void) | undefined;
      await until(async () => (release = await attempt(live)) !== undefined, 60_000);
      expect(await redisNow()).toBeGreaterThanOrEqual(end);
      // The live replica renews what it holds (every LEASE / 3): its lease's end moves on.
      const [first] = await leases();
      await until(async () => ((await leases())[0] ?? first) > first, 60_000);
      const [renewed] = await leases();
      expect(renewed).toBeLessThanOrEqual((await redisNow()) + LEASE);
      // Renewals go on past the first term: the lease's end passes first + LEASE, which only a
      // renewal after `first` (Redis time) can set; one that stopped after its first renewal never
      // gets there and this wait fails (review s25 F8). Then the lease still holds the slot.
      await until(async () => ((await leases())[0] ?? 0) > first + LEASE, 60_000);
      expect(await leases()).toHaveLength(1);
      const back = await attempt(dead);
      back?.();
      release?.();
    } finally {
      holder.close();
      live.close();
      for (const r of [r1, r2, r3, probe]) r.disconnect();
    }
  });
});
