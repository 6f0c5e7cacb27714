// Late binding, the product's default for vLLM models, over real sockets: reference workers, the
// assembled gateway (no `dispatch` in the config: the default), the official openai SDK, API keys
// for three tenants. (1) One tenant floods: alone, beyond its share of the queue its oldest held
// calls spill (sent on as at arrival: here every worker is at max_in_flight, so they get arrival's
// 503 worker_capacity_exhausted); once another tenant holds calls, its calls beyond its share are
// refused 429 tenant_admission_queue_full (spills would keep the engines busy past the others'
// turn: review s30 F9); a tenant holding nothing that finds the whole queue full is held while the
// flooding tenant's newest held calls are refused 429 (fair by share), then 503
// admission_queue_full when nobody holds two more; and a quiet tenant's calls are released in
// per-tenant round robin, not behind the flood. (2) Drain: the calls held when the gateway begins
// to shut down are answered 503 shutting_down at once and never sent; the ones sent finish.
// Nothing is scraped at start: each test's first call waits for the first round (a warm-up).
// Robust under load: the gate's looks are paused while calls arrive (the test holds `pump`, the
// one place held calls are released), so what is held, spilled and released, and in which order, does not
// depend on timing; the assertions are on outcomes and order, never on durations.
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import type { AdmissionGate } from '../../gateway/admission/admission-gate.ts';
import { gateFor } from '../../gateway/admission/gates.ts';
import { keysAuth } from '../helpers/keys.ts';
import { type SimGateway, startSimGateway } from '../helpers/sim-gateway.ts';
import { until } from '../helpers/until.ts';

let rig: SimGateway | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

const KEYS = { a: 'key-tenant-a', b: 'key-tenant-b', c: 'key-tenant-c' } as const;
type Tenant = keyof typeof KEYS;

type Outcome =
  | { ok: true }
  | { ok: false; status: number; code: string | null | undefined; type: string | undefined; retryAfter: string | null };

function send(r: SimGateway, tenant: Tenant, n: number): Promise<Outcome>[] {
  const client = new OpenAI({ baseURL: `${r.gw.url}/v1`, apiKey: KEYS[tenant], maxRetries: 0 });
  return Array.from({ length: n }, async (_, i): Promise<Outcome> => {
    try {
      const res = await client.chat.completions.create(
        {
          model: 'm',
          max_tokens: 4,
          // prompts that share nothing: no worker holds any of them, so none is bound at arrival
          messages: [{ role: 'user', content: `${tenant} asks ${i}: ${'word '.repeat(8 + i)}` }],
        },
        { headers: { 'x-session-id': `${tenant}-${i}` } },
      );
      expect(res.choices[0].message.content?.length).toBeGreaterThan(0);
      return { ok: true };
    } catch (err) {
      if (!(err instanceof OpenAI.APIError)) throw err;
      return {
        ok: false,
        status: err.status ?? 0,
        code: err.code,
        type: (err.error as { type?: string } | undefined)?.type,
        retryAfter: err.headers?.get?.('retry-after') ?? null,
      };
    }
  });
}

async function start(admission: Record<string, unknown>): Promise<SimGateway> {
  rig = await startSimGateway({
    workers: 2,
    config: { auth: keysAuth(KEYS), upstream: { max_in_flight: 1 } },
    // no dispatch: the default for a vLLM model is admission (with scraping)
    modelConfig: { layout: 'passthrough', policy: 'ctxgate', admission },
  });
  expect(rig.gw.ctx.fleet.get('m')!.config.dispatch).toBe('admission');
  // nothing is scraped at start: the first call waits for the first round of engine signals
  const [first] = await Promise.all(send(rig, 'a', 1));
  expect(first).toEqual({ ok: true });
  return rig;
}

/** The gate's stats since `base` (the warm-up call is not the test's). */
function since(g: AdmissionGate, base: AdmissionGate['stats']): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(g.stats)) out[k] = v - base[k as keyof typeof base];
  return out;
}

/** While calls arrive, the calls sent hang on the workers (so none frees a worker and lets a later
 *  arrival pass); `resume` lets the gate look again and the workers answer at once from then on. */
const HANG_MS = 8_000;

/** Counts each tenant's calls at the gate and records the tenant of each release, in order. */
function watch(g: AdmissionGate, r: SimGateway) {
  for (const wk of r.workers) wk.setFault({ hangMs: HANG_MS });
  const atGate: Record<string, number> = {};
  // releases (calls that leave once the gate looks again); a call that spills leaves while the
  // calls arrive, before resume, and is not one
  const released: string[] = [];
  let resumed = false;
  const admit = g.admit.bind(g);
  g.admit = (info, signal) => {
    atGate[info.tenant] = (atGate[info.tenant] ?? 0) + 1;
    const a = admit(info, signal);
    return a instanceof Promise
      ? a.then((only) => {
          if (resumed) released.push(info.tenant);
          return only;
        })
      : a;
  };
  // held calls leave only through pump (events and the fallback timer both call it): paused, the
  // queue's state depends on the arrivals alone
  const pump = g.pump.bind(g);
  g.pump = () => {};
  const resume = (): void => {
    resumed = true;
    for (const wk of r.workers) wk.setFault({ hangMs: 0 });
    g.pump = pump;
    pump();
  };
  return { atGate, released, resume };
}

const refusals = (out: Outcome[]) => out.filter((o): o is Extract<Outcome, { ok: false }> => !o.ok);

describe('late binding by default: tenants and drain over real sockets', () => {
  it("one tenant floods: alone its oldest spill; once others hold calls it is refused beyond its share, a tenant holding nothing is held before it, another tenant's calls go in turn", async () => {
    const r = await start({ max_queued: 10, max_queued_per_tenant: 6, locality_wait_ms: 0 });
    const g = gateFor(r.gw.ctx.fleet.get('m')!)!;
    const base = { ...g.stats };
    const w = watch(g, r);
    // tenant a alone: 20 at once; the two workers (max_in_flight 1) take 2, its share holds 6, and
    // each of the other 12 spills a's oldest held call
    const a = send(r, 'a', 20);
    await until(() => w.atGate.a === 20);
    expect(g.size).toBe(6);
    // tenant b: 3 calls, held behind nobody's flood (its own share)
    const b = send(r, 'b', 3);
    await until(() => w.atGate.b === 3);
    expect(g.size).toBe(9);
    // a again, b holding calls: a's share is full, so its 2 new calls are refused 429 (not spilled)
    const a2 = send(r, 'a', 2);
    await until(() => w.atGate.a === 22);
    // tenant c: 6 calls; the queue (10) has room for one; then c holds 1 and 2 while a holds 6 and
    // 5 (>= 2 more): a's newest is refused 429 and c's call held; then a holds 4, c 3: c's newcomers
    // are refused 503 admission_queue_full (3 calls)
    const c = send(r, 'c', 6);
    await until(() => w.atGate.c === 6);
    expect(g.size).toBe(10);
    expect(since(g, base)).toMatchObject({ passed: 2, queued: 24, spilledFull: 12, refused: 7, released: 0 });
    w.resume();
    const [outA, outA2, outB, outC] = await Promise.all([
      Promise.all(a),
      Promise.all(a2),
      Promise.all(b),
      Promise.all(c),
    ]);
    // round robin over tenants (a 4, b 3, c 3 held), each tenant's calls in arrival order
    expect(w.released).toEqual(['a', 'b', 'c', 'a', 'b', 'c', 'a', 'b', 'c', 'a']);
    expect(outB.every((o) => o.ok)).toBe(true);
    // spilled calls went on as at arrival and met arrival's answer with both workers at max_in_flight
    const capacity = {
      ok: false,
      status: 503,
      code: 'worker_capacity_exhausted',
      type: 'server_error',
      retryAfter: '1',
    };
    const share = {
      ok: false,
      status: 429,
      code: 'tenant_admission_queue_full',
      type: 'rate_limit_error',
      retryAfter: '1',
    };
    const full = { ok: false, status: 503, code: 'admission_queue_full', type: 'server_error', retryAfter: '1' };
    const notOkA = refusals(outA);
    expect(notOkA.filter((o) => o.code === 'worker_capacity_exhausted')).toHaveLength(12);
    for (const o of notOkA.filter((x) => x.code !== 'worker_capacity_exhausted')) expect(o).toEqual(share);
    expect(notOkA).toHaveLength(14);
    for (const o of notOkA.filter((x) => x.code === 'worker_capacity_exhausted')) expect(o).toEqual(capacity);
    expect(outA2).toEqual([share, share]);
    const notOkC = refusals(outC);
    expect(notOkC).toHaveLength(3);
    for (const o of notOkC) expect(o).toEqual(full);
    expect(since(g, base)).toMatchObject({
      passed: 2,
      queued: 24,
      released: 10,
      spilledFull: 12,
      spilledDeadline: 0,
      refused: 7,
    });
    // the workers got every call that was neither spilled into a full fleet nor refused (and the warm-up call)
    expect(r.workers.reduce((n, wk) => n + wk.stats().requests, 0)).toBe(1 + 2 + 10);
  });

  it('drain: held calls are answered 503 shutting_down at once and never sent; sent calls finish', async () => {
    const r = await start({});
    const g = gateFor(r.gw.ctx.fleet.get('m')!)!;
    const base = { ...g.stats };
    const w = watch(g, r);
    const calls = send(r, 'a', 6);
    await until(() => w.atGate.a === 6);
    expect(g.size).toBe(4);
    const closing = r.gw.close();
    // the gate looks again (as it would when the sent calls end): nothing is left to release
    w.resume();
    const out = await Promise.all(calls);
    await closing;
    const refused = refusals(out);
    expect(refused).toHaveLength(4);
    for (const o of refused)
      expect(o).toEqual({ ok: false, status: 503, code: 'shutting_down', type: 'server_error', retryAfter: '1' });
    expect(out.filter((o) => o.ok)).toHaveLength(2);
    expect(since(g, base)).toMatchObject({ passed: 2, queued: 4, released: 0, shutdown: 4 });
    expect(g.size).toBe(0);
    expect(r.workers.reduce((n, wk) => n + wk.stats().requests, 0)).toBe(1 + 2);
  });
});
