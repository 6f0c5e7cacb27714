// Late binding in the fleet simulator (dispatch 'admission'): the simulator's invariants still
// hold (every request completes once, KV never over capacity, identical arrivals), a held call
// only goes to a worker that can admit it, a call one worker's cache holds goes at arrival, and
// dispatch 'arrival' is what the simulator did before (the default).
import { describe, expect, it } from 'vitest';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ADMISSION_DEFAULTS } from '../../kvplanner/admission/admission-defaults.ts';
import { run } from '../../loadtest/fleet/command.ts';
import { simulateFleet } from '../../loadtest/fleet/simulator.ts';
import { SDK_TIMEOUT_MS, summarize } from '../../loadtest/fleet/summary.ts';
import type { MooncakeRecord } from '../../loadtest/fleet/trace.ts';
import { captureOutput } from '../helpers/capture-output.ts';
import { fleetConfig as cfg } from '../helpers/fleet-config.ts';
import { conversationTrace, load } from '../helpers/fleet-conversations.ts';

/** Prompts that share nothing (no worker ever holds a call's prefix), arriving faster than 4
 *  engines serve them. */
function unrelated(count: number, gapMs: number): MooncakeRecord[] {
  return Array.from({ length: count }, (_, i) => ({
    timestamp: i * gapMs,
    input_length: 4 * 512 + (i % 7) * 300,
    output_length: 50 + (i % 5) * 40,
    hash_ids: [10 * i + 1, 10 * i + 2, 10 * i + 3, 10 * i + 4],
  }));
}

function meanWait(res: ReturnType<typeof simulateFleet>): number {
  return res.outcomes.reduce((a, o) => a + o.firstScheduledMs - o.arrivalMs, 0) / res.outcomes.length;
}

describe('fleet simulator: dispatch admission (late binding)', () => {
  const conv = load(conversationTrace(24, 6, 7), 3);
  const flat = load(unrelated(400, 20));

  it.each(
    ['ctxgate', 'round_robin', 'least_load', 'llmd_precise'].flatMap((p) => [
      [p, 'vllm'],
      [p, 'sglang'],
    ]) as [string, 'vllm' | 'sglang'][],
  )('%s on %s: every request completes exactly once, KV never over capacity, arrivals as without', (policy, engine) => {
    for (const reqs of [conv, flat]) {
      const res = simulateFleet(reqs, cfg(policy, { dispatch: 'admission', engine }));
      expect(res.rejected).toBe(0);
      expect(res.outcomes.length).toBe(reqs.length);
      expect(new Set(res.outcomes.map((o) => o.id)).size).toBe(reqs.length);
      expect(res.duplicateFinishes).toBe(0);
      for (const w of res.perWorker) expect(w.peakUsedBlocks).toBeLessThanOrEqual(w.capacityBlocks);
      expect(res.arrivals).toEqual(reqs.map((r) => r.arrivalMs));
      // TTFT and queue wait count from the call's arrival at the gateway, its hold included:
      // each outcome keeps the arrival the trace (or, closed loop, its predecessor's finish
      // plus think time) gave it, never the time the gateway released it
      const byId = new Map(res.outcomes.map((o) => [o.id, o]));
      for (const o of res.outcomes) {
        const r = reqs[o.id];
        const sent = r.after === undefined ? r.arrivalMs : byId.get(r.after)!.finishMs + (r.thinkMs ?? 0);
        expect(o.arrivalMs).toBe(sent);
        expect(o.firstScheduledMs).toBeGreaterThanOrEqual(o.arrivalMs);
        expect(o.finishMs).toBeGreaterThanOrEqual(o.firstTokenMs);
      }
      // each call bound or passed at arrival, or held (sim-gate.ts, as the gate)
      expect(res.gatewayQueued + res.boundAtArrival + res.passedAtArrival).toBe(reqs.length);
    }
  });

  it('holds calls at the gateway: no engine ever has more than max_waiting waiting', () => {
    // KV to spare: nothing is preempted (a preempted request goes back to its engine's waiting
    // queue), so the engines' queues are what the gateway sent them
    const kvTokens = 400_000;
    const arrival = simulateFleet(flat, cfg('ctxgate', { kvTokens }));
    for (const maxWaiting of [1, 2, 3]) {
      const res = simulateFleet(
        flat,
        cfg('ctxgate', { kvTokens, dispatch: 'admission', admission: { max_waiting: maxWaiting } }),
      );
      expect(res.perWorker.reduce((a, w) => a + w.preemptions, 0)).toBe(0);
      expect(res.boundAtArrival).toBe(0); // nothing is shared: no worker holds any call
      // held unless nothing was held and a worker was free (the gate's pass)
      expect(res.gatewayQueued + res.passedAtArrival).toBe(flat.length);
      expect(res.gatewayQueued).toBeGreaterThan(flat.length / 2);
      expect(res.gatewayPeak).toBeGreaterThan(10); // saturated: the queue is at the gateway ...
      for (const w of res.perWorker) expect(w.peakWaiting).toBeLessThanOrEqual(maxWaiting);
      // ... where without late binding it is in the engines
      expect(Math.max(...arrival.perWorker.map((w) => w.peakWaiting))).toBeGreaterThan(10);
      // and the wait moved, it did not vanish: queue wait (first scheduled − gateway arrival)
      // counts the hold, so it stays near the engine-queue wait of dispatch at arrival (the
      // same work on the same engines); were it counted from the release, only the engines'
      // max_waiting-deep queues would show
      expect(meanWait(res)).toBeGreaterThan(0.8 * meanWait(arrival));
    }
  });

  it.each(['vllm', 'sglang'] as const)(
    '%s: an idle worker whose cache is full of finished prompts admits again (no held call is lost)',
    (engine) => {
      // each prompt nearly fills a worker's KV; once it finishes, its blocks are cached (evictable),
      // which must not read as "full" to the admission check
      const big = load(
        Array.from({ length: 6 }, (_, i) => ({
          timestamp: i * 1_000_000,
          input_length: 58 * 512 - 100,
          output_length: 10,
          hash_ids: Array.from({ length: 58 }, (_, b) => 1000 * (i + 1) + b),
        })),
      );
      // one worker: a call it could not admit would wait for nothing (held, or never passed)
      const res = simulateFleet(big, cfg('ctxgate', { dispatch: 'admission', engine, kvTokens: 30_000, workers: 1 }));
      expect(res.outcomes.length).toBe(big.length);
      // each went through the admission check (nothing shared: none bound at arrival)
      expect(res.boundAtArrival).toBe(0);
      expect(res.passedAtArrival + res.gatewayQueued).toBe(big.length);
      // and none waited out max_wait_ms (a spill would hide a worker that never admits again)
      expect(res.spilledDeadline).toBe(0);
    },
  );

  it('release order (release-order.ts): held calls with little to prefill go first, within release_max_slack_ms', () => {
    // a burst of unrelated prompts, long (16 blocks) and short (2 blocks) in turn, 4 workers
    // saturated: the gate holds most of them, and the order it releases them in decides the waits
    const recs: MooncakeRecord[] = Array.from({ length: 120 }, (_, i) => {
      const blocks = i % 2 === 0 ? 16 : 2;
      return {
        timestamp: i * 20,
        input_length: blocks * 512,
        output_length: 200,
        hash_ids: Array.from({ length: blocks }, (_, b) => 100 * i + b + 1),
      };
    });
    const reqs = load(recs);
    const at = (admission: Record<string, number>) =>
      simulateFleet(
        reqs,
        cfg('ctxgate', { dispatch: 'admission', admission: { max_wait_ms: Infinity, ...admission } }),
      );
    const fifo = at({ release_ms_per_token: 0 });
    const uncapped = { release_ms_per_token: 1, release_max_slack_ms: 60_000, release_ms_per_held: 0 };
    const order = at({ ...uncapped, release_slack_per_drain: 0 });
    const waits = (r: typeof fifo, long: boolean) => {
      const w = r.outcomes.filter((o) => (o.id % 2 === 0) === long).map((o) => o.firstScheduledMs - o.arrivalMs);
      return w.reduce((a, x) => a + x, 0) / w.length;
    };
    for (const r of [fifo, order]) {
      expect(r.outcomes.length).toBe(reqs.length);
      expect(new Set(r.outcomes.map((o) => o.id)).size).toBe(reqs.length);
      expect(r.gatewayQueued).toBeGreaterThan(reqs.length / 2);
    }
    // the short calls overtake: their mean wait falls to under half; the long ones pay for it
    expect(waits(order, false)).toBeLessThan(waits(fifo, false) / 2);
    expect(waits(order, true)).toBeGreaterThan(waits(fifo, true));
    // a slack shorter than the gap between arrivals reorders nothing: the arrival-order outcomes
    const tiny = at({ release_ms_per_token: 1, release_max_slack_ms: 19 });
    expect(tiny.outcomes.map((o) => [o.id, o.worker, o.firstScheduledMs])).toEqual(
      fifo.outcomes.map((o) => [o.id, o.worker, o.firstScheduledMs]),
    );
    expect(order.outcomes.map((o) => [o.id, o.firstScheduledMs])).not.toEqual(
      fifo.outcomes.map((o) => [o.id, o.firstScheduledMs]),
    );
    // release_ms_per_held caps each slack at the held calls × it: at 20 ms per held call (peak
    // ~90 held, so at most ~1.8 s against the long calls' 8.2 s) the order moves back towards
    // arrival order: the long calls wait less than uncapped, the short ones more; a cap above
    // every slack changes nothing
    const capped = at({ ...uncapped, release_ms_per_held: 20, release_slack_per_drain: 0 });
    expect(waits(capped, true)).toBeLessThan(waits(order, true));
    expect(waits(capped, false)).toBeGreaterThan(waits(order, false));
    const loose = at({ ...uncapped, release_ms_per_held: 1e9, release_slack_per_drain: 0 });
    expect(loose.outcomes.map((o) => [o.id, o.worker, o.firstScheduledMs])).toEqual(
      order.outcomes.map((o) => [o.id, o.worker, o.firstScheduledMs]),
    );
    // release_slack_per_drain caps each slack at k × held × the mean interval between releases
    // (the drain time): a small k moves the order back towards arrival order (the long calls
    // wait less than uncapped, the short ones more), a k above every slack changes nothing
    const drained = at({ ...uncapped, release_slack_per_drain: 0.05 });
    expect(waits(drained, true)).toBeLessThan(waits(order, true));
    expect(waits(drained, false)).toBeGreaterThan(waits(order, false));
    const wide = at({ ...uncapped, release_slack_per_drain: 1e9 });
    expect(wide.outcomes.map((o) => [o.id, o.worker, o.firstScheduledMs])).toEqual(
      order.outcomes.map((o) => [o.id, o.worker, o.firstScheduledMs]),
    );
  });

  it('a call still held when the fleet goes idle is an error, never a silent loss', () => {
    // no worker can ever admit (KV usage 0 is not under 0) and no deadline: every call stays held
    expect(() =>
      simulateFleet(
        flat.slice(0, 5),
        cfg('ctxgate', { dispatch: 'admission', admission: { max_kv_usage: 0, max_wait_ms: Infinity } }),
      ),
    ).toThrow(/5 calls still held at the gateway/);
  });

  it('a held call spills at its max_wait_ms exactly: dispatched as at arrival, never lost', () => {
    // no worker can ever admit: every call is held until its deadline, then goes to an engine
    const five = flat.slice(0, 5);
    const maxWaitMs = 60_000;
    const res = simulateFleet(
      five,
      cfg('ctxgate', { dispatch: 'admission', admission: { max_kv_usage: 0, max_wait_ms: maxWaitMs } }),
    );
    expect(res.outcomes.length).toBe(five.length);
    expect(res.gatewayQueued).toBe(five.length);
    expect(res.spilledDeadline).toBe(five.length);
    expect(res.spilledFull).toBe(0);
    // the fleet is idle when the first deadline passes: the engine schedules that call at once
    // (the later ones may wait for a step of the engine they share)
    const first = (r: typeof res) => r.outcomes.find((o) => o.id === 0)!;
    expect(first(res).firstScheduledMs).toBe(five[0].arrivalMs + maxWaitMs);
    for (const o of res.outcomes) expect(o.firstScheduledMs).toBeGreaterThanOrEqual(o.arrivalMs + maxWaitMs);
    // the default deadline is the product's (ADMISSION_DEFAULTS.max_wait_ms)
    const byDefault = simulateFleet(five, cfg('ctxgate', { dispatch: 'admission', admission: { max_kv_usage: 0 } }));
    expect(first(byDefault).firstScheduledMs).toBe(five[0].arrivalMs + ADMISSION_DEFAULTS.max_wait_ms);
    expect(byDefault.spilledDeadline).toBe(five.length);
  });

  it('the summary counts the calls whose first token came after the SDK timeout (600 s), and only those', () => {
    // no worker admits until each call's deadline: held 500 s, the first token a few seconds
    // later (under 600 s); held 700 s, past it
    const five = flat.slice(0, 5);
    const over = (maxWaitMs: number) => {
      const res = simulateFleet(
        five,
        cfg('ctxgate', { dispatch: 'admission', admission: { max_kv_usage: 0, max_wait_ms: maxWaitMs } }),
      );
      const ttft = res.outcomes.map((o) => o.firstTokenMs - o.arrivalMs);
      const e2e = res.outcomes.map((o) => o.finishMs - o.arrivalMs);
      const ctx = { preset: 'p', rateScale: 1, index: 'approx', wallS: 0, requests: five.length };
      const sum = summarize(res, ctx);
      return { n: sum.ttft_over_sdk_timeout, nE2e: sum.e2e_over_sdk_timeout, ttft, e2e };
    };
    const under = over(500_000);
    expect(under.n).toBe(0);
    expect(Math.max(...under.ttft)).toBeLessThan(SDK_TIMEOUT_MS);
    expect(under.nE2e).toBe(0);
    expect(Math.max(...under.e2e)).toBeLessThan(SDK_TIMEOUT_MS);
    const past = over(700_000);
    expect(past.n).toBe(five.length);
    expect(Math.min(...past.ttft)).toBeGreaterThan(SDK_TIMEOUT_MS);
    expect(past.nE2e).toBe(five.length);
    // between the two: first token before 600 s, the end after it (a non-streaming client's timeout)
    const mid = over(598_000);
    expect(mid.n).toBe(0);
    expect(mid.nE2e).toBe(mid.e2e.filter((ms) => ms > SDK_TIMEOUT_MS).length);
    expect(mid.nE2e).toBeGreaterThan(0);
    expect(mid.nE2e).toBeLessThan(five.length);
    expect(SDK_TIMEOUT_MS).toBe(600_000);
  });

  it("a full queue spills the tenant's oldest held call (dispatched as at arrival) and holds the newcomer", () => {
    // no worker ever admits and the tenant's share is 1: each arrival spills the call before it
    const five = flat.slice(0, 5);
    const res = simulateFleet(
      five,
      cfg('ctxgate', {
        dispatch: 'admission',
        admission: { max_kv_usage: 0, max_queued_per_tenant: 1, max_wait_ms: 60_000 },
      }),
    );
    expect(res.outcomes.length).toBe(five.length);
    expect(res.gatewayPeak).toBe(1);
    expect(res.spilledFull).toBe(4);
    expect(res.spilledDeadline).toBe(1);
    const byId = new Map(res.outcomes.map((o) => [o.id, o]));
    // call i (i < 4) went when call i + 1 arrived (not at its own deadline: the newest never
    // overtakes the held ones); the last one at its deadline
    for (let i = 0; i < 4; i++) expect(byId.get(i)!.firstScheduledMs).toBe(five[i + 1].arrivalMs);
    expect(byId.get(4)!.firstScheduledMs).toBe(five[4].arrivalMs + 60_000);
    // the total bound spills the same way (one tenant here)
    const total = simulateFleet(
      five,
      cfg('ctxgate', { dispatch: 'admission', admission: { max_kv_usage: 0, max_queued: 2, max_wait_ms: 60_000 } }),
    );
    expect(total.gatewayPeak).toBe(2);
    expect(total.spilledFull).toBe(3);
    expect(total.outcomes.length).toBe(five.length);
  });

  it("the product's bounds by default: a saturated fleet holds at most max_queued_per_tenant, every call completes", () => {
    const perTenant = 8;
    const res = simulateFleet(
      flat,
      cfg('ctxgate', { dispatch: 'admission', admission: { max_queued_per_tenant: perTenant } }),
    );
    expect(res.gatewayPeak).toBe(perTenant);
    expect(res.spilledFull).toBeGreaterThan(0);
    expect(res.outcomes.length).toBe(flat.length);
    expect(res.duplicateFinishes).toBe(0);
    expect(new Set(res.outcomes.map((o) => o.id)).size).toBe(flat.length);
    // unbounded (as before this gate had bounds): the same trace holds more than that
    const unbounded = simulateFleet(
      flat,
      cfg('ctxgate', {
        dispatch: 'admission',
        admission: { max_queued: Infinity, max_queued_per_tenant: Infinity, max_wait_ms: Infinity },
      }),
    );
    expect(unbounded.gatewayPeak).toBeGreaterThan(perTenant);
    expect(unbounded.spilledFull + unbounded.spilledDeadline).toBe(0);
  });

  it('sends a call one worker holds at arrival, to that worker', () => {
    const res = simulateFleet(conv, cfg('ctxgate', { dispatch: 'admission' }));
    expect(res.boundAtArrival).toBeGreaterThan(0);
    const rr = simulateFleet(conv, cfg('round_robin'));
    const hits = (r: typeof res) => r.outcomes.reduce((a, o) => a + o.cachedTokens, 0);
    expect(hits(res)).toBeGreaterThan(hits(rr));
    // with the holder check off (min tokens out of reach) every call is held
    const off = simulateFleet(
      conv,
      cfg('ctxgate', { dispatch: 'admission', admission: { locality_min_tokens: 1e12 } }),
    );
    expect(off.boundAtArrival).toBe(0);
  });

  it("dispatch 'arrival' is the default and holds nothing; the summary says which ran", () => {
    const a = simulateFleet(conv, cfg('ctxgate'));
    const b = simulateFleet(conv, cfg('ctxgate', { dispatch: 'arrival' }));
    expect(b.outcomes).toEqual(a.outcomes);
    expect(a.gatewayQueued).toBe(0);
    const ctx = { preset: 'x', rateScale: 1, index: 'approx', wallS: 0, requests: conv.length };
    expect(summarize(a, ctx).config.dispatch).toBe('arrival');
    expect(summarize(a, ctx).gateway_queue).toBeUndefined();
    const adm = summarize(simulateFleet(conv, cfg('ctxgate', { dispatch: 'admission' })), ctx);
    expect(adm.config.dispatch).toBe('admission');
    expect(adm.gateway_queue!.bound_at_arrival + adm.gateway_queue!.passed_at_arrival + adm.gateway_queue!.held).toBe(
      conv.length,
    );
    expect(adm.gateway_queue!.spilled_full).toBe(0);
    expect(adm.gateway_queue!.spilled_deadline).toBe(0);
  });

  it('is deterministic', () => {
    const a = simulateFleet(conv, cfg('ctxgate', { dispatch: 'admission' }));
    const b = simulateFleet(conv, cfg('ctxgate', { dispatch: 'admission' }));
    expect(b.outcomes).toEqual(a.outcomes);
  });

  it('bench fleet --dispatch admission says how the baselines dispatch, and that Dynamo queues by default but is not modelled', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'fleet-admission-'));
    try {
      const trace = join(dir, 'trace.jsonl');
      const lines = conversationTrace(4, 2, 3).map((r) => JSON.stringify(r));
      await writeFile(trace, lines.join('\n') + '\n');
      const args = [trace, '--workers', '2', '--kv-tokens', '20000', '--policies', 'dynamo_kv,llmd_precise,ctxgate'];
      const { rc, out } = await captureOutput(() => run([...args, '--dispatch', 'admission']));
      expect(rc).toBe(0);
      const note = out.split('\n').find((l) => l.startsWith('dispatch: ctxgate admission'));
      expect(note).toMatch(/llm-d's default \(its flow control is opt-in\)/);
      expect(note).toMatch(/Dynamo's router queue \(router_queue_threshold 4\.0 by default\) is not modelled/);
      expect(note).not.toMatch(/as its source does/);
      // admission is the product's default for vLLM engines: bench fleet's default too
      const byDefault = await captureOutput(() => run(args));
      expect(byDefault.out).toMatch(/^dispatch: ctxgate admission/m);
      const arrival = await captureOutput(() => run([...args, '--dispatch', 'arrival']));
      expect(arrival.out).toMatch(
        /^dispatch: every policy at arrival \(--dispatch arrival; .*not the product as deployed\)$/m,
      );
      const sglang = await captureOutput(() => run([...args, '--engine', 'sglang']));
      expect(sglang.out).toMatch(/^dispatch: every policy at arrival \(ctxgate's default for SGLang engines\)$/m);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("a call whose prefix one worker holds goes at arrival only while no other tenant holds calls (the gate's rule)", () => {
    // no worker ever admits (max_kv_usage 0): held calls spill at max_wait_ms (1 s). d1 spills at
    // 1 s and leaves its prefix on a worker; p (another tenant, cold) is held from 5 s to 6 s; d2
    // (d1's prefix + 4 blocks) arrives at 5.5 s
    const recs: MooncakeRecord[] = [
      { timestamp: 0, input_length: 8 * 512, output_length: 8, hash_ids: [1, 2, 3, 4, 5, 6, 7, 8], tenant: 'd' },
      {
        timestamp: 5_000,
        input_length: 8 * 512,
        output_length: 8,
        hash_ids: [21, 22, 23, 24, 25, 26, 27, 28],
        tenant: 'p',
      },
      {
        timestamp: 5_500,
        input_length: 12 * 512,
        output_length: 8,
        hash_ids: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
        tenant: 'd',
      },
    ];
    const reqs = load(recs);
    const run = (tenants: number) =>
      simulateFleet(
        reqs,
        cfg('ctxgate', {
          workers: 2,
          dispatch: 'admission',
          tenants,
          admission: { max_kv_usage: 0, max_wait_ms: 1_000 },
        }),
      );
    const d2 = (r: ReturnType<typeof simulateFleet>) => r.outcomes.find((o) => o.id === 2)!;
    // one tenant: d2 goes at arrival to the worker holding its prefix
    const one = run(1);
    expect(one.boundAtArrival).toBe(1);
    expect(d2(one).firstScheduledMs).toBeLessThan(6_000);
    // two tenants: p is held, so d2 is held too (and spills at its deadline)
    const two = run(2);
    expect(two.boundAtArrival).toBe(0);
    expect(d2(two).firstScheduledMs).toBeGreaterThanOrEqual(6_500);
  });
});
