// Late binding over real sockets (models[].dispatch: admission): reference workers that run one
// request at a time and report vllm:num_requests_waiting, the assembled gateway scraping them,
// the official openai SDK. More calls than the workers can run are held at the gateway (not queued
// in an engine) and all answered; a tiny queue spills (the oldest held call goes on as at
// arrival, queueing at an engine) and a call held past max_wait_ms spills too: every call is
// still answered 200, none refused; the defaults by engine flavor.
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { gateFor } from '../../gateway/admission/gates.ts';
import { DEFAULT_ADMISSION_SCRAPE_MS } from '../../gateway/config/schema.ts';
import { ADMISSION_DEFAULTS, DEFAULT_DISPATCH_BY_ENGINE } from '../../kvplanner/admission/admission-defaults.ts';
import { type SimGateway, startSimGateway } from '../helpers/sim-gateway.ts';

let rig: SimGateway | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

async function start(dispatch: string, admission: Record<string, unknown> = {}): Promise<SimGateway> {
  rig = await startSimGateway({
    workers: 2,
    // one request at a time, a tenth of its modeled time slept for real (~0.2 s a call)
    sim: { maxRunning: 1, timeScale: 0.1 },
    modelConfig: { layout: 'passthrough', policy: 'ctxgate', scrape_metrics_ms: 10, dispatch, admission },
  });
  return rig;
}

type Outcome = { ok: true } | { ok: false; status: number; code: string | null | undefined; type: string | undefined };

async function burst(r: SimGateway, n: number, tenant = 'default'): Promise<Outcome[]> {
  const client = new OpenAI({ baseURL: `${r.gw.url}/v1`, apiKey: 'none', maxRetries: 0 });
  return Promise.all(
    Array.from({ length: n }, async (_, i): Promise<Outcome> => {
      try {
        const res = await client.chat.completions.create(
          {
            model: 'm',
            max_tokens: 6,
            // prompts that share nothing: no worker holds any of them
            messages: [{ role: 'user', content: `${tenant} question ${i}: ${'word '.repeat(10 + i)}` }],
          },
          { headers: { 'x-session-id': `${tenant}-s${i}` } },
        );
        expect(res.choices[0].message.content?.length).toBeGreaterThan(0);
        return { ok: true };
      } catch (err) {
        const e = err as InstanceType<typeof OpenAI.APIError>;
        if (!(err instanceof OpenAI.APIError)) throw err;
        return { ok: false, status: e.status ?? 0, code: e.code, type: (e.error as { type?: string })?.type };
      }
    }),
  );
}

const gate = (r: SimGateway) => gateFor(r.gw.ctx.fleet.get('m')!)!;

describe('models[].dispatch: admission', () => {
  it('holds what the workers cannot admit at the gateway and answers every call', async () => {
    const r = await start('admission', { max_waiting: 1 });
    const out = await burst(r, 10);
    expect(out.filter((o) => o.ok).length).toBe(10);
    const s = gate(r).stats;
    expect(s.queued).toBeGreaterThan(0);
    expect(s.released).toBe(s.queued);
    expect(s.passed + s.bound + s.queued).toBe(10);
    expect(gate(r).size).toBe(0);
    // and /metrics shows it to operators
    const text = await (await fetch(`${r.gw.url}/metrics`)).text();
    const value = (series: string): number => {
      const line = text.split('\n').find((l) => l.startsWith(`${series} `));
      return line === undefined ? Number.NaN : Number(line.slice(series.length + 1));
    };
    expect(value('ctxgate_admission_outcomes_total{model="m",outcome="queued"}')).toBe(s.queued);
    expect(value('ctxgate_admission_outcomes_total{model="m",outcome="released"}')).toBe(s.released);
    expect(value('ctxgate_admission_wait_seconds_count{model="m",outcome="released"}')).toBe(s.released);
    expect(value('ctxgate_admission_held{model="m"}')).toBe(0);
  });

  it('a tiny queue spills instead of refusing: every call is answered 200, the spilled ones counted', async () => {
    const r = await start('admission', { max_waiting: 1, max_queued: 2, max_queued_per_tenant: 1 });
    const out = await burst(r, 10);
    expect(out.filter((o) => o.ok).length).toBe(10);
    const s = gate(r).stats;
    expect(s.spilledFull).toBeGreaterThan(0);
    expect(s.released + s.spilledFull + s.spilledDeadline).toBe(s.queued);
    expect(s.passed + s.bound + s.queued).toBe(10);
    expect(gate(r).size).toBe(0);
    // every call reached a worker once
    expect(r.workers.reduce((a, w) => a + w.stats().requests, 0)).toBe(10);
    const text = await (await fetch(`${r.gw.url}/metrics`)).text();
    expect(text).toContain(`ctxgate_admission_outcomes_total{model="m",outcome="spilled_full"} ${s.spilledFull}\n`);
  });

  it('a call held past max_wait_ms spills: sent on as at arrival and answered 200', async () => {
    const r = await start('admission', { max_waiting: 1, max_wait_ms: 1, locality_wait_ms: 0 });
    const out = await burst(r, 8);
    expect(out.filter((o) => o.ok).length).toBe(8);
    const s = gate(r).stats;
    expect(s.spilledDeadline).toBeGreaterThan(0);
    expect(s.released + s.spilledFull + s.spilledDeadline).toBe(s.queued);
    expect(r.workers.reduce((a, w) => a + w.stats().requests, 0)).toBe(8);
  });

  it('the first routing decision is limited to the workers the gate names', async () => {
    const r = await start('admission', { max_waiting: 1 });
    const g = gate(r);
    let asked = 0;
    const admit = g.admit.bind(g);
    // the gate's own answer, then narrowed to w1 (as a release to w1 alone would be)
    g.admit = (info, signal) => {
      const a = admit(info, signal);
      const narrow = () => {
        asked++;
        return ['w1'];
      };
      return a instanceof Promise ? a.then(narrow) : narrow();
    };
    const client = new OpenAI({ baseURL: `${r.gw.url}/v1`, apiKey: 'none', maxRetries: 0 });
    for (let i = 0; i < 4; i++) {
      const { response } = await client.chat.completions
        .create({ model: 'm', max_tokens: 4, messages: [{ role: 'user', content: `pin ${i}` }] })
        .withResponse();
      expect(response.headers.get('x-ctxgate-worker')).toBe('w1');
    }
    expect(asked).toBe(4);
  });

  it('a client that leaves while its call is held: out of the queue, nothing sent upstream, its session free', async () => {
    const r = await start('admission', { max_waiting: 1 });
    const g = gate(r);
    const until = async (ok: () => boolean, what: string) => {
      for (let i = 0; i < 2000 && !ok(); i++) await new Promise((res) => setTimeout(res, 2));
      if (!ok()) throw new Error(`timed out waiting for ${what} ${JSON.stringify(g.stats)} ${g.size}`);
    };
    const busy = burst(r, 6);
    await until(() => g.stats.passed + g.stats.bound + g.stats.queued === 6, 'the burst to reach the gate');
    expect(g.size).toBeGreaterThan(0);
    const queued = g.stats.queued;
    const client = new OpenAI({ baseURL: `${r.gw.url}/v1`, apiKey: 'none', maxRetries: 0 });
    const ac = new AbortController();
    const left = client.chat.completions
      .create(
        { model: 'm', max_tokens: 4, messages: [{ role: 'user', content: 'a question nobody waits for' }] },
        { signal: ac.signal, headers: { 'x-session-id': 'leaver' } },
      )
      .then(
        () => 'answered',
        (e: unknown) => (e instanceof OpenAI.APIUserAbortError ? 'aborted' : e),
      );
    await until(() => g.stats.queued === queued + 1, 'the call to be held');
    ac.abort();
    expect(await left).toBe('aborted');
    await until(() => g.stats.aborted === 1, 'the gateway to see the client leave');
    expect((await busy).filter((o) => o.ok).length).toBe(6);
    expect(g.size).toBe(0);
    // the workers got the burst only
    expect(r.workers.reduce((a, w) => a + w.stats().requests, 0)).toBe(6);
    // and the session's lock is free: its next call is answered
    const again = await client.chat.completions.create(
      { model: 'm', max_tokens: 4, messages: [{ role: 'user', content: 'a question nobody waits for' }] },
      { headers: { 'x-session-id': 'leaver' } },
    );
    expect(again.choices[0].message.content?.length).toBeGreaterThan(0);
  });

  it('defaults by flavor: admission with scraping for vLLM, arrival for SGLang and openai; explicit config wins', async () => {
    const { parseConfig } = await import('../../gateway/config/load.ts');
    const model = (m: Record<string, unknown>) =>
      parseConfig({ models: [{ name: 'm', workers: [{ url: 'http://127.0.0.1:1' }], ...m }] }).models[0];
    const vllm = model({});
    expect(vllm.dispatch).toBe(DEFAULT_DISPATCH_BY_ENGINE.vllm);
    expect(vllm.dispatch).toBe('admission');
    expect(vllm.scrape_metrics_ms).toBe(DEFAULT_ADMISSION_SCRAPE_MS);
    expect(vllm.admission.max_waiting).toBe(ADMISSION_DEFAULTS.max_waiting);
    expect(model({ flavor: 'vllm', scrape_metrics_ms: 40 })).toMatchObject({
      dispatch: 'admission',
      scrape_metrics_ms: 40,
    });
    expect(model({ flavor: 'sglang' })).toMatchObject({ dispatch: 'arrival', scrape_metrics_ms: 0 });
    expect(model({ flavor: 'openai' })).toMatchObject({ dispatch: 'arrival', scrape_metrics_ms: 0 });
    expect(model({ dispatch: 'arrival' })).toMatchObject({ dispatch: 'arrival', scrape_metrics_ms: 0 });
    expect(model({ flavor: 'openai', dispatch: 'admission' })).toMatchObject({
      dispatch: 'admission',
      scrape_metrics_ms: DEFAULT_ADMISSION_SCRAPE_MS,
    });
    // scraping set off: no signals to admit by, so no late binding unless asked for, and then an error
    expect(model({ scrape_metrics_ms: 0 })).toMatchObject({ dispatch: 'arrival', scrape_metrics_ms: 0 });
    expect(() => model({ dispatch: 'admission', scrape_metrics_ms: 0 })).toThrow(
      /scrape_metrics_ms.*needs the engine/s,
    );
    const cfg = model({ dispatch: 'arrival' });
    const route = { config: cfg, workers: [], byId: new Map(), policy: { name: 'x', select: () => null } };
    expect(gateFor(route)).toBeUndefined();
    expect(gateFor({ ...route, config: vllm })).toBeDefined();
  });
});
