// Render pool robustness: threads are started and test-rendered at start (a thread that cannot
// render fails start-up naming the field); a job whose thread dies runs again on a fresh thread;
// a failed tokenizer load does not stick to a thread; a full queue admits by share, not by
// arrival (over real sockets: tenant B's big prompt gets in while tenant A filled the queue).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { startAssembledGateway } from '../../gateway/assemble.ts';
import { ConfigError } from '../../gateway/config/load.ts';
import { createRenderPool, FAILURE_WINDOW_MS, type RenderPool } from '../../gateway/workers-pool/pool.ts';
import { DEFAULT_HASH_SEED } from '../../kvplanner/block-hash.ts';
import { GatewayError } from '../../middleware/errors.ts';
import type { OffloadJob } from '../../middleware/tokens/render-tokens.ts';
import { poolGatewaysPerTest } from '../helpers/pool-gateway.ts';

function text(n: number, seed: number): string {
  const words = ['def ', 'return x', ' = 1;\n', 'src/app.py:12 ', '{"k": [1, 2]} ', 'naïve ', '\t\tif ok:\n'];
  let s = '';
  for (let i = seed; s.length < n; i = (i * 31 + 7) % 9973) s += words[i % words.length];
  return s;
}

function job(chars: number, seed: number, chatTemplateFile?: string): OffloadJob {
  const messages = [
    { role: 'system' as const, content: 'You are a coding agent.' },
    { role: 'user' as const, content: text(chars, seed) },
  ];
  return {
    tokenizer: 'qwen3',
    chatTemplateFile,
    input: { messages, hashes: ['h0', `h${seed}`], rootEnd: 1, stableEnd: 2, render: { contextKey: 'k' } },
    blockSize: 16,
    seed: DEFAULT_HASH_SEED,
  };
}

/** A thread entry that ends its thread on a prompt containing END-THIS-THREAD. */
const DYING = new URL('../fixtures/render-pool/dying-thread.mjs', import.meta.url).href;

const settle = async <T>(p: Promise<T>): Promise<string> => {
  try {
    const r = (await p) as { ok?: boolean };
    return r.ok ? 'ok' : 'not-ok';
  } catch (err) {
    return err instanceof GatewayError ? err.code : `error:${(err as Error).message}`;
  }
};

let pools: RenderPool[] = [];
let dirs: string[] = [];
afterEach(async () => {
  await Promise.all(pools.map((p) => p.close()));
  pools = [];
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs = [];
});

/** `entry`: the threads' entry (default: the product's). */
const pool = (
  o: Partial<{ threads: number; max_queue: number; max_per_tenant: number; max_failures_per_tenant: number }> = {},
  entry?: string,
) => {
  const p = createRenderPool(
    { threads: 1, min_chars: 0, max_queue: 8, max_per_tenant: 8, nice: 0, max_failures_per_tenant: 8, ...o },
    entry,
  )!;
  pools.push(p);
  return p;
};

/** A 1,000-character job whose prompt ends the DYING entry's thread. */
const poisoned = (seed: number): OffloadJob => {
  const j = job(1_000, seed);
  j.input.messages[1].content += ' END-THIS-THREAD';
  return j;
};

describe('render pool robustness', () => {
  it('warm() test-renders on every thread; a thread that cannot fails with a ConfigError naming the field', async () => {
    const p = pool({ threads: 2 });
    await p.warm([{ model: 'm', field: 'models[0].tokenizer', tokenizer: 'qwen3' }]);
    expect(p.workers().length).toBe(2);
    const err = await p
      .warm([{ model: 'bad', field: 'models[1].tokenizer', tokenizer: 'no-such-tokenizer-xyz' }])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).path).toBe('render_pool.threads');
    expect((err as Error).message).toContain("model 'bad'");
  }, 120_000);

  it('a job whose thread dies runs again on a fresh thread instead of failing', async () => {
    const p = pool();
    await p.warm([{ model: 'm', field: 'models[0].tokenizer', tokenizer: 'qwen3' }]);
    const [thread] = p.workers();
    const big = p.run(job(200_000, 3), { tenant: 'a', affinity: 's' });
    // The job is on its way to (or running on) the only thread; end that thread.
    await new Promise((r) => setImmediate(r));
    await thread.terminate();
    const r = await big;
    expect(r.ok).toBe(true);
    expect(r.ok && r.ids.length).toBeGreaterThan(10_000);
    expect(p.retries()).toBe(1);
  }, 120_000);

  it('a job that ends its thread runs once more, then fails with render_failed; the same job again takes no thread', async () => {
    const p = pool({}, DYING);
    const poison = poisoned(5);
    expect(await settle(p.run(poison, { tenant: 'a', affinity: 's' }))).toBe('render_failed');
    expect(p.retries()).toBe(1); // the first death is retried on a fresh thread
    expect(await settle(p.run(poison, { tenant: 'a', affinity: 's' }))).toBe('render_failed_before');
    expect(p.retries()).toBe(1); // a known poison job is refused before it takes a thread
    // another tenant's same prompt is its own (one retry), and a harmless job still renders
    expect(await settle(p.run(poison, { tenant: 'b', affinity: 's' }))).toBe('render_failed');
    expect(p.retries()).toBe(2);
    expect(await settle(p.run(job(1_000, 6), { tenant: 'a', affinity: 's' }))).toBe('ok');
  }, 120_000);

  it("a tenant's failure budget counts distinct crashing prompts once each, resends not at all", async () => {
    const p = pool({ max_failures_per_tenant: 2 }, DYING);
    // One prompt (two thread deaths: the job and its retry), resent five times: one of a's two.
    expect(await settle(p.run(poisoned(5), { tenant: 'a', affinity: 's' }))).toBe('render_failed');
    for (let i = 0; i < 5; i++)
      expect(await settle(p.run(poisoned(5), { tenant: 'a', affinity: 's' }))).toBe('render_failed_before');
    expect(await settle(p.run(job(1_000, 6), { tenant: 'a', affinity: 's' }))).toBe('ok');
    // A second distinct crashing prompt spends the budget.
    expect(await settle(p.run(poisoned(7), { tenant: 'a', affinity: 's' }))).toBe('render_failed');
    expect(await settle(p.run(job(1_000, 8), { tenant: 'a', affinity: 's' }))).toBe('tenant_render_failures');
    expect(await settle(p.run(job(1_000, 9), { tenant: 'b', affinity: 's' }))).toBe('ok');
  }, 120_000);

  it('jobs waiting behind a job that ends its thread still run (Piscina starts no thread by itself)', async () => {
    const p = pool({}, DYING);
    const poison = poisoned(5);
    const runs = [
      p.run(poison, { tenant: 'a', affinity: 's' }),
      p.run(job(1_000, 6), { tenant: 'a', affinity: 's' }),
      p.run(job(1_000, 7), { tenant: 'b', affinity: 's' }),
    ].map((r) => settle(r));
    expect(await Promise.all(runs)).toEqual(['render_failed', 'ok', 'ok']);
  }, 120_000);

  it("a tenant whose jobs ended its failure budget of threads gets 429; its waiting jobs go without taking a thread; others' run", async () => {
    const p = pool({ max_failures_per_tenant: 1 }, DYING);
    const poison = poisoned(5);
    // The poison job takes the idle lane; two harmless jobs of the same tenant wait behind it.
    const runs = [poison, job(1_000, 6), job(1_000, 7)].map((j) => settle(p.run(j, { tenant: 'a', affinity: 's' })));
    // Its one death spends a's budget: no retry, and the waiting jobs are dropped, not run.
    expect(await Promise.all(runs)).toEqual(['render_failed', 'tenant_render_failures', 'tenant_render_failures']);
    expect(p.retries()).toBe(0);
    const refused = await p.run(job(1_000, 8), { tenant: 'a', affinity: 's' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(GatewayError);
    expect((refused as GatewayError).code).toBe('tenant_render_failures');
    const after = Number((refused as GatewayError).headers?.['retry-after']);
    expect(after).toBeGreaterThanOrEqual(1);
    expect(after).toBeLessThanOrEqual(FAILURE_WINDOW_MS / 1000);
    expect(await settle(p.run(job(1_000, 9), { tenant: 'b', affinity: 's' }))).toBe('ok');
  }, 120_000);

  it('a failed tokenizer load does not stick to the thread', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ctxgate-pool-'));
    dirs.push(dir);
    const template = join(dir, 'template.jinja');
    const p = pool();
    // The template is not there yet: both the job and its retry fail.
    const first = await settle(p.run(job(100, 1, template), { tenant: 'a', affinity: 's' }));
    expect(first).toBe('render_failed');
    writeFileSync(
      template,
      '{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}',
    );
    const second = await p.run(job(100, 2, template), { tenant: 'a', affinity: 's' });
    expect(second.ok).toBe(true);
  }, 120_000);

  it('a full queue admits by share: the tenant holding it gives up its newest waiting job', async () => {
    const p = pool({ max_queue: 2 });
    await p.warm([{ model: 'm', field: 'models[0].tokenizer', tokenizer: 'qwen3' }]);
    // Admission is decided synchronously in run(): a1 runs, a2 and a3 wait (the queue is full).
    const a = [1, 2, 3, 4].map((i) => settle(p.run(job(50_000, i), { tenant: 'a', affinity: `a${i}` })));
    const b = settle(p.run(job(50_000, 9), { tenant: 'b', affinity: 'b1' }));
    // a4 finds the queue full and no other tenant over its share: refused. b1 evicts a3.
    expect(await Promise.all([...a, b])).toEqual(['ok', 'ok', 'tenant_render_queue_full', 'render_queue_full', 'ok']);
  }, 120_000);
});

describe('render pool admission over sockets', () => {
  const gateways = poolGatewaysPerTest();

  it("tenant B's big prompt is admitted while tenant A's fill the render queue", async () => {
    const keys = { a: 'sk-robust-tenant-a-0123456789', b: 'sk-robust-tenant-b-0123456789' };
    const { gw } = await gateways.start({
      renderPool: { threads: 1, max_queue: 2, max_per_tenant: 8 },
      tenants: keys,
    });
    const url = gw.url;
    const post = async (key: string, seed: number): Promise<number> => {
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({
          model: 'm',
          max_tokens: 4,
          messages: [{ role: 'user', content: text(400_000, seed) }],
        }),
      });
      await res.text();
      return res.status;
    };
    const pool = gw.assembled.renderPool!;
    const a = [1, 2, 3, 4, 5].map((i) => post(keys.a, i));
    // Wait until A's prompts fill the pool (one rendering, two waiting). Should A's first render end
    // before that, B simply finds room: it must get in either way.
    const deadline = Date.now() + 60_000;
    while (pool.pending() < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    const b = await post(keys.b, 9);
    expect(b).toBe(200);
    const as = await Promise.all(a);
    // A is refused only for its own excess (429 over its share, or 503 while it alone fills the queue).
    expect(as.every((s) => s === 200 || s === 429 || s === 503)).toBe(true);
    expect(as.filter((s) => s === 200).length).toBeGreaterThanOrEqual(1);
  }, 180_000);

  it('a prompt that ends its render thread gets render_failed; a tenant that spent its thread budget gets 429, the other tenant 200', async () => {
    const keys = { a: 'sk-crash-tenant-a-0123456789', b: 'sk-crash-tenant-b-0123456789' };
    const { up, gw } = await gateways.start({
      renderPool: { threads: 1, max_failures_per_tenant: 2 },
      tenants: keys,
      assemble: { renderThread: DYING },
    });
    const url = gw.url;
    const post = async (key: string, content: string) => {
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ model: 'm', max_tokens: 4, messages: [{ role: 'user', content }] }),
      });
      const body = (await res.json()) as { error?: { code?: string; type?: string; message?: string } };
      return {
        status: res.status,
        code: body.error?.code,
        type: body.error?.type,
        retry: res.headers.get('retry-after'),
      };
    };
    // A's prompt ends its thread, and the fresh thread's retry too: a shaped error of its own.
    const poison = await post(keys.a, `${text(100_000, 1)} END-THIS-THREAD`);
    expect(poison).toMatchObject({ status: 422, code: 'render_failed', type: 'invalid_request_error' });
    expect(gw.assembled.renderPool!.retries()).toBe(1);
    // Resent, it is refused without a thread; a second distinct crashing prompt spends A's budget.
    expect(await post(keys.a, `${text(100_000, 1)} END-THIS-THREAD`)).toMatchObject({
      status: 422,
      code: 'render_failed_before',
    });
    expect(gw.assembled.renderPool!.retries()).toBe(1);
    expect(await post(keys.a, `${text(100_000, 4)} END-THIS-THREAD`)).toMatchObject({ status: 422 });
    // A's budget is spent, so even a harmless big prompt of A's is refused ...
    const refused = await post(keys.a, text(100_000, 2));
    expect(refused).toMatchObject({ status: 429, code: 'tenant_render_failures' });
    expect(Number(refused.retry)).toBeGreaterThanOrEqual(1);
    // ... while B's big prompt renders on the pool as before, and A's small calls stay inline.
    expect(await post(keys.b, text(100_000, 3))).toMatchObject({ status: 200 });
    expect(await post(keys.a, 'a small question')).toMatchObject({ status: 200 });
    expect(up.received).toBe(2);
  }, 180_000);

  it("a crashing prompt resent by the OpenAI SDK (default retries) costs its tenant one budget unit: the tenant's other big prompts and other tenants still run", async () => {
    const keys = { a: 'sk-sdk-tenant-a-0123456789', b: 'sk-sdk-tenant-b-0123456789' };
    // max_failures_per_tenant at its default (4)
    const { up, gw } = await gateways.start({
      renderPool: { threads: 1 },
      tenants: keys,
      assemble: { renderThread: DYING },
    });
    // Every HTTP answer the SDK sees, retries included.
    const seen: number[] = [];
    const recording: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      seen.push(res.status);
      return res;
    };
    const client = (key: string) => new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, fetch: recording });
    const ask = async (key: string, content: string): Promise<string> => {
      try {
        await client(key).chat.completions.create({ model: 'm', max_tokens: 4, messages: [{ role: 'user', content }] });
        return 'ok';
      } catch (err) {
        return err instanceof OpenAI.APIError ? `${err.status} ${err.code}` : `error:${(err as Error).message}`;
      }
    };
    const poison = `${text(100_000, 1)} END-THIS-THREAD`;
    expect(await ask(keys.a, poison)).toBe('422 render_failed');
    // The agent resends it, as agents do; each is refused without a thread, and never retried.
    expect(await ask(keys.a, poison)).toBe('422 render_failed_before');
    expect(await ask(keys.a, poison)).toBe('422 render_failed_before');
    expect(seen).toEqual([422, 422, 422]);
    expect(gw.assembled.renderPool!.retries()).toBe(1);
    // Tenant a's other big prompts (other sessions, other users) still render; so do b's.
    for (let i = 2; i < 6; i++) expect(await ask(keys.a, text(100_000, i))).toBe('ok');
    expect(await ask(keys.b, text(100_000, 9))).toBe('ok');
    expect(await ask(keys.b, poison)).toBe('422 render_failed');
    expect(seen.slice(3)).toEqual([200, 200, 200, 200, 200, 422]);
    expect(up.received).toBe(5);
  }, 240_000);

  it('start-up warms the pool: threads are running when the gateway listens; a thread that cannot render fails start naming render_pool.threads and the model', async () => {
    const { gw, config } = await gateways.start({ renderPool: { threads: 1 }, model: 'warm-model' });
    expect(gw.assembled.renderPool!.workers().length).toBe(1);
    await gw.close();
    const broken = new URL('../fixtures/render-pool/broken-thread.mjs', import.meta.url).href;
    const err = await startAssembledGateway(config, { logger: false, reporting: false, renderThread: broken }).then(
      (g) => {
        gateways.closeAfter(g);
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).message).toMatch(/render_pool\.threads.*'warm-model'.*models\[0\]\.tokenizer/);
  }, 180_000);
});
