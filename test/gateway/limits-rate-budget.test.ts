// Per-tenant rate limits (in-process and Redis-backed), daily budgets, message count and JSON
// depth limits, through a real gateway and the official SDK.
import { randomUUID } from 'node:crypto';
import OpenAI from 'openai';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { sha256Hex } from '../../gateway/config/load.ts';
import { startRig, type TestRig } from '../helpers/gateway.ts';

let rig: TestRig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

function keysFor(tenants: string[]): { keys: Record<string, unknown>[]; key: (t: string) => string } {
  const key = (t: string): string => `sk-${t}-secret`;
  return { keys: tenants.map((t) => ({ key: `sha256:${sha256Hex(key(t))}`, tenant: t })), key };
}

const ask = (c: OpenAI) => c.chat.completions.create({ model: 'm1', messages: [{ role: 'user', content: 'hi' }] });

async function expectError(p: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(OpenAI.APIError);
    return err as InstanceType<typeof OpenAI.APIError>;
  }
  throw new Error('expected the call to fail');
}

describe('per-tenant rate limit', () => {
  for (const backend of ['memory', 'redis'] as const) {
    it(`answers the N+1th request of a tenant in the window with 429 + retry-after (${backend})`, async () => {
      // Unique tenants: the Redis of the test run is shared by every test file.
      const a = `a-${randomUUID().slice(0, 8)}`;
      const b = `b-${randomUUID().slice(0, 8)}`;
      const { keys, key } = keysFor([a, b]);
      const redisUrl = inject('redisUrl');
      if (backend === 'redis') expect(redisUrl).not.toBe('');
      rig = await startRig({
        config: {
          auth: { mode: 'keys', keys },
          limits: { rate_limit: { per_minute: 3 } },
          ...(backend === 'redis' ? { redis: { url: redisUrl } } : {}),
        },
        // Redis counts however slowly it answers on a loaded machine (the limiter's 250 ms timeout
        // would let a request through uncounted, and its 1 s wait at start serve before the link)
        deps: { redisTimeoutMs: 30_000 },
      });
      const ca = rig.client(key(a));
      for (let i = 0; i < 3; i++) expect((await ask(ca)).choices[0].message.content).toContain('hello');
      const err = await expectError(ask(ca));
      expect(err.status).toBe(429);
      expect(err.code).toBe('rate_limited');
      expect(err.type).toBe('rate_limit_error');
      expect(Number(err.headers?.get('retry-after'))).toBeGreaterThan(0);
      expect(err.headers?.get('x-ratelimit-remaining')).toBe('0');
      // The key is the tenant: another tenant is not affected.
      expect((await ask(rig.client(key(b)))).choices[0].message.content).toContain('hello');
      // The refusal is counted, for that tenant only (the scrape goes over the same socket).
      const metrics = await (await fetch(`${rig.gw.url}/metrics`)).text();
      expect(metrics).toContain(`ctxgate_rate_limited_total{tenant="${a}"} 1`);
      expect(metrics).not.toContain(`ctxgate_rate_limited_total{tenant="${b}"}`);
      // Open routes are not counted.
      const res = await fetch(`${rig.gw.url}/health`);
      expect(res.status).toBe(200);
    });
  }

  it('lets requests through when the Redis behind the limiter is unreachable', async () => {
    const { keys, key } = keysFor(['t']);
    rig = await startRig({
      config: {
        auth: { mode: 'keys', keys },
        limits: { rate_limit: { per_minute: 2 } },
        redis: { url: 'redis://127.0.0.1:1' },
      },
    });
    const c = rig.client(key('t'));
    for (let i = 0; i < 4; i++) expect((await ask(c)).choices[0].message.content).toContain('hello');
  });
});

describe('per-tenant daily budget', () => {
  it('answers 429 budget_exceeded once spend reaches usd_per_day; other tenants pass; spend is cached', async () => {
    const { keys, key } = keysFor(['rich', 'poor', 'free']);
    const spent: Record<string, number> = { rich: 0.5, poor: 2 };
    const lookups: string[] = [];
    rig = await startRig({
      config: {
        auth: { mode: 'keys', keys },
        budgets: [
          { tenant: 'rich', usd_per_day: 1 },
          { tenant: 'poor', usd_per_day: 1 },
        ],
      },
      deps: {
        spendSince: (t, since) => {
          lookups.push(t);
          expect(since % 86_400_000).toBe(0); // start of the UTC day
          return spent[t] ?? 0;
        },
      },
    });
    expect((await ask(rig.client(key('rich')))).choices[0].message.content).toContain('hello');
    await ask(rig.client(key('rich')));
    const err = await expectError(ask(rig.client(key('poor'))));
    expect(err.status).toBe(429);
    expect(err.code).toBe('budget_exceeded');
    expect(Number(err.headers?.get('retry-after'))).toBeGreaterThan(0);
    expect(await (await fetch(`${rig.gw.url}/metrics`)).text()).toContain(
      'ctxgate_rate_limited_total{tenant="poor"} 1',
    );
    expect((await ask(rig.client(key('free')))).choices[0].message.content).toContain('hello');
    expect(lookups.filter((t) => t === 'rich')).toHaveLength(1);
    expect(lookups).not.toContain('free');
  });
});

describe('body limits', () => {
  it('rejects too many messages with a clear 400', async () => {
    rig = await startRig({ config: { limits: { max_messages: 3 } } });
    const messages = Array.from({ length: 4 }, () => ({ role: 'user' as const, content: 'x' }));
    const err = await expectError(rig.client().chat.completions.create({ model: 'm1', messages }));
    expect(err.status).toBe(400);
    expect(err.code).toBe('invalid_messages');
    expect(err.message).toContain('more than 3');
  });

  it('rejects nesting deeper than max_json_depth before parsing it, and accepts it at the limit', async () => {
    rig = await startRig({ config: { limits: { max_json_depth: 20 } } });
    const nest = (d: number): string => '['.repeat(d) + ']'.repeat(d);
    const body = (d: number) =>
      `{"model":"m1","messages":[{"role":"user","content":"x"}],"metadata":{"deep":${nest(d)}}}`;
    const post = (b: string) =>
      fetch(`${rig!.gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: b,
      });
    const deep = await post(body(100_000));
    expect(deep.status).toBe(400);
    expect(((await deep.json()) as { error: { code: string } }).error.code).toBe('invalid_request');
    // Brackets inside strings do not count.
    const inString = await post(`{"model":"m1","messages":[{"role":"user","content":"${'[{'.repeat(500)}"}]}`);
    expect(inString.status).toBe(200);
    const ok = await post(body(17)); // 17 + the 3 levels around it = 20
    expect(ok.status).toBe(200);
  });
});
