// Late binding in the fleet simulator (dispatch 'admission'): the simulator's invariants still
// hold (every request completes once, KV never over capacity, identical arrivals), a held call
// only goes to a worker that can admit it, a call one worker's cache holds goes at arrival, and
// dispatch 'arrival' is what the simulator did before (the default).
import { describe, expect, it } from 'vitest';
import { fleetPolicyOptions } from '../../loadtest/fleet/command.ts';
import { simulateFleet, type FleetConfig } from '../../loadtest/fleet/simulator.ts';
import { summarize } from '../../loadtest/fleet/summary.ts';
import type { MooncakeRecord } from '../../loadtest/fleet/trace.ts';
import { PRESETS } from '../../loadtest/sim-worker/timing.ts';
import { conversationTrace, load } from '../helpers/fleet-conversations.ts';

const timing = PRESETS['qwen3-32b-h200'];

function cfg(policy: string, over: Partial<FleetConfig> = {}): FleetConfig {
  const kvTokens = over.kvTokens ?? 60_000;
  return {
    policy,
    policyOptions: fleetPolicyOptions(policy, timing, 512, kvTokens, 1),
    workers: 4,
    kvTokens,
    blockSize: 512,
    timing,
    ...over,
  };
}

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

describe('fleet simulator: dispatch admission (late binding)', () => {
  const conv = load(conversationTrace(24, 6, 7), 3);
  const flat = load(unrelated(400, 20));

  it.each(['ctxgate', 'round_robin', 'least_load', 'llmd_precise'])(
    '%s: every request completes exactly once, KV never over capacity, arrivals as without',
    (policy) => {
      for (const reqs of [conv, flat]) {
        const res = simulateFleet(reqs, cfg(policy, { dispatch: 'admission' }));
        expect(res.rejected).toBe(0);
        expect(res.outcomes.length).toBe(reqs.length);
        expect(new Set(res.outcomes.map((o) => o.id)).size).toBe(reqs.length);
        expect(res.duplicateFinishes).toBe(0);
        for (const w of res.perWorker) expect(w.peakUsedBlocks).toBeLessThanOrEqual(w.capacityBlocks);
        expect(res.arrivals).toEqual(reqs.map((r) => r.arrivalMs));
        for (const o of res.outcomes) {
          expect(o.firstScheduledMs).toBeGreaterThanOrEqual(o.arrivalMs);
          expect(o.finishMs).toBeGreaterThanOrEqual(o.firstTokenMs);
        }
        expect(res.gatewayQueued + res.boundAtArrival).toBe(reqs.length);
      }
    },
  );

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
      expect(res.gatewayQueued).toBe(flat.length);
      expect(res.gatewayPeak).toBeGreaterThan(10); // saturated: the queue is at the gateway ...
      for (const w of res.perWorker) expect(w.peakWaiting).toBeLessThanOrEqual(maxWaiting);
      // ... where without late binding it is in the engines
      expect(Math.max(...arrival.perWorker.map((w) => w.peakWaiting))).toBeGreaterThan(10);
    }
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
    expect(adm.gateway_queue!.bound_at_arrival + adm.gateway_queue!.held).toBe(conv.length);
  });

  it('is deterministic', () => {
    const a = simulateFleet(conv, cfg('ctxgate', { dispatch: 'admission' }));
    const b = simulateFleet(conv, cfg('ctxgate', { dispatch: 'admission' }));
    expect(b.outcomes).toEqual(a.outcomes);
  });
});
