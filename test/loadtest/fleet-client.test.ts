// The fleet simulator's client model (client-model.ts: clients that give up after a timeout and
// resend, as the official SDKs do) and its tenants (tenants.ts): without them nothing changes;
// with them every trace call is answered once or fails, a call given up on while held leaves the
// gateway's queue and one given up on at an engine is computed for nobody, resends come at the
// SDKs' delays, TTFT counts from the first send; tenants are a stable hash of the conversation.
import { describe, expect, it } from 'vitest';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { retryDelayMs, SDK_RETRIES } from '../../loadtest/fleet/client-model.ts';
import { run } from '../../loadtest/fleet/command.ts';
import { simulateFleet } from '../../loadtest/fleet/simulator.ts';
import { summarize } from '../../loadtest/fleet/summary.ts';
import { tenantOf } from '../../loadtest/fleet/tenants.ts';
import type { MooncakeRecord } from '../../loadtest/fleet/trace.ts';
import { captureOutput } from '../helpers/capture-output.ts';
import { fleetConfig as cfg } from '../helpers/fleet-config.ts';
import { conversationTrace, load } from '../helpers/fleet-conversations.ts';

/** Unrelated prompts arriving faster than the engines serve them. */
function unrelated(count: number, gapMs: number): MooncakeRecord[] {
  return Array.from({ length: count }, (_, i) => ({
    timestamp: i * gapMs,
    input_length: 8 * 512,
    output_length: 300,
    hash_ids: Array.from({ length: 8 }, (_, b) => 100 * i + b + 1),
  }));
}

const ctx = (requests: number) => ({ preset: 'p', rateScale: 1, index: 'approx', wallS: 0, requests });

describe('fleet simulator: client timeouts and resends', () => {
  const conv = load(conversationTrace(16, 5, 11), 3);
  const flat = load(unrelated(200, 20));

  /** Five calls no worker ever admits, with 30 s streaming clients and the given gateway deadline. */
  const HELD_TIMEOUT_MS = 30_000;
  function heldFive(maxWaitMs: number) {
    const five = flat.slice(0, 5);
    const res = simulateFleet(
      five,
      cfg('ctxgate', {
        dispatch: 'admission',
        admission: { max_kv_usage: 0, max_wait_ms: maxWaitMs },
        client: { timeoutMs: HELD_TIMEOUT_MS, retries: 2, stream: true },
      }),
    );
    return { five, res };
  }

  it('the SDK delays: 0.5 s, then doubling, at most 8 s; 2 retries', () => {
    expect([0, 1, 2, 3, 4, 5].map(retryDelayMs)).toEqual([500, 1000, 2000, 4000, 8000, 8000]);
    expect(SDK_RETRIES).toBe(2);
  });

  it('clients that wait longer than any call takes change nothing', () => {
    for (const dispatch of ['arrival', 'admission'] as const) {
      const base = simulateFleet(conv, cfg('ctxgate', { dispatch }));
      const res = simulateFleet(
        conv,
        cfg('ctxgate', { dispatch, client: { timeoutMs: 1e9, retries: 2, stream: false } }),
      );
      expect(res.outcomes).toEqual(base.outcomes);
      expect(res.client).toEqual({
        timeouts: 0,
        resent: 0,
        failed: 0,
        droppedHeld: 0,
        abandonedAtEngine: 0,
        wastedPrefillTokens: 0,
      });
    }
  });

  it('a call given up on while held leaves the queue, is resent at the SDK delays, and fails when its retries are spent', () => {
    // no worker ever admits and the deadline is far: every call stays held until its client leaves
    const { five, res } = heldFive(3_600_000);
    expect(res.outcomes).toEqual([]);
    expect(res.client).toMatchObject({ timeouts: 15, droppedHeld: 15, resent: 10, failed: 5, abandonedAtEngine: 0 });
    expect(res.spilledDeadline).toBe(0);
    expect(res.perWorker.reduce((a, w) => a + w.prefillTokens, 0)).toBe(0);
    // each call's sends: at its arrival, then timeout + 0.5 s later, then timeout + 1 s after that
    const t0 = five[0].arrivalMs;
    const sends = res.arrivals.filter((t) => t === t0 || t === t0 + 30_500 || t === t0 + 61_500);
    expect(sends).toEqual([t0, t0 + 30_500, t0 + 61_500]);
    expect(res.arrivals.length).toBe(15);
    const sum = summarize(res, ctx(five.length));
    expect(sum.client).toMatchObject({ failed: 5, dropped_held: 15, ttft_p90_ms_failed_last: null });
  });

  it("a client's timeout at the same instant as the gateway's deadline wins: the call is dropped, not spilled", () => {
    // a client's timer starts before the gateway sees the call, so at equal times the client has
    // already left; the README's arrival-order-gate row (max_wait_ms 600 s, 600 s clients) rests on it
    const { res } = heldFive(HELD_TIMEOUT_MS);
    expect(res.client).toMatchObject({ timeouts: 15, droppedHeld: 15, failed: 5, abandonedAtEngine: 0 });
    expect(res.spilledDeadline).toBe(0);
  });

  it.each([true, false])(
    'stream %s: every trace call is answered exactly once or fails; abandoned sends at an engine are computed for nobody',
    (stream) => {
      // one engine, a burst of 40 calls faster than it serves them, at arrival dispatch: the last
      // ones wait past the timeout, the engine keeps the abandoned sends, and the resends queue
      // behind them, answered while the burst drains
      const burst = flat.slice(0, 40);
      const timeoutMs = 20_000;
      const res = simulateFleet(
        burst,
        cfg('round_robin', { workers: 1, kvTokens: 400_000, client: { timeoutMs, retries: 2, stream } }),
      );
      const c = res.client!;
      expect(c.timeouts).toBeGreaterThan(0);
      expect(c.abandonedAtEngine).toBe(c.timeouts); // nothing is held at arrival dispatch
      expect(c.droppedHeld).toBe(0);
      expect(c.wastedPrefillTokens).toBeGreaterThan(0);
      expect(c.resent + c.failed).toBe(c.timeouts);
      expect(res.outcomes.length + c.failed).toBe(burst.length);
      expect(new Set(res.outcomes.map((o) => o.id)).size).toBe(res.outcomes.length);
      expect(res.duplicateFinishes).toBe(0);
      // the engine did all the sends it got: the answered ones and the abandoned ones
      expect(res.perWorker[0].requests).toBe(burst.length + c.resent);
      for (const o of res.outcomes) {
        // the user's wait: from the call's first send
        expect(o.arrivalMs).toBe(burst[o.id].arrivalMs);
        expect(o.firstScheduledMs).toBeGreaterThanOrEqual(o.arrivalMs);
      }
      // some answered calls were resent: their TTFT covers the sends that timed out
      expect(res.outcomes.some((o) => o.firstTokenMs - o.arrivalMs > timeoutMs)).toBe(true);
      // and none answered in time was given up on: its response head came within the timeout
      // of the send that got it (the last one)
      const head = (o: (typeof res.outcomes)[number]) => (stream ? o.firstTokenMs : o.finishMs);
      const maxSends = 1 + 2;
      let span = 0;
      for (let n = 0; n < maxSends; n++) span += timeoutMs + (n < maxSends - 1 ? retryDelayMs(n) : 0);
      for (const o of res.outcomes) expect(head(o) - o.arrivalMs).toBeLessThanOrEqual(span);
    },
  );

  it('is deterministic', () => {
    const c = cfg('ctxgate', { dispatch: 'admission', client: { timeoutMs: 5_000, retries: 1, stream: false } });
    const a = simulateFleet(flat, c);
    const b = simulateFleet(flat, c);
    expect(b.outcomes).toEqual(a.outcomes);
    expect(b.client).toEqual(a.client);
  });
});

describe('fleet simulator: tenants', () => {
  const conv = load(conversationTrace(16, 5, 11), 3);

  it("a call's tenant follows its session, else its first two blocks; one tenant by default", () => {
    for (const r of conv) expect(tenantOf(r, 1)).toBe('fleet');
    const k = 4;
    const byPrefix = new Map<string, string>();
    for (const r of conv) {
      const t = tenantOf(r, k);
      expect(t).toMatch(/^t[0-3]$/);
      const key = r.hashes[1];
      if (key === undefined) continue;
      if (byPrefix.has(key)) expect(byPrefix.get(key)).toBe(t);
      byPrefix.set(key, t);
    }
    expect(new Set(conv.map((r) => tenantOf(r, k))).size).toBeGreaterThan(1);
    // prompts of one block (all share the root) spread over the tenants, one per call
    const one = Array.from({ length: 40 }, (_, i) => ({
      ...conv[0],
      id: i,
      keys: conv[0].keys.slice(0, 1),
      hashes: conv[0].hashes.slice(0, 1),
    }));
    expect(new Set(one.map((r) => tenantOf(r, k))).size).toBe(k);
    const withSession = { ...conv[0], sessionId: 's1' };
    expect(tenantOf(withSession, k)).toBe(tenantOf({ ...conv[5], sessionId: 's1' }, k));
  });

  it('each tenant gets its own TTFT p90; every call completes once', () => {
    const res = simulateFleet(conv, cfg('ctxgate', { dispatch: 'admission', tenants: 4 }));
    expect(res.outcomes.length).toBe(conv.length);
    expect(new Set(res.outcomes.map((o) => o.id)).size).toBe(conv.length);
    for (const o of res.outcomes) expect(o.tenant).toBe(tenantOf(conv[o.id], 4));
    const sum = summarize(res, ctx(conv.length));
    const t = sum.tenants!;
    expect(t.count).toBe(4);
    expect(Object.values(t.per_tenant).reduce((a, x) => a + x.requests, 0)).toBe(conv.length);
    expect(t.p90_min_ms).toBeLessThanOrEqual(t.p90_median_ms);
    expect(t.p90_median_ms).toBeLessThanOrEqual(t.p90_max_ms);
    expect(t.spread).toBeCloseTo(t.p90_max_ms / t.p90_min_ms, 2);
    // one tenant: no per-tenant figures, and the outcomes carry none
    const one = simulateFleet(conv, cfg('ctxgate', { dispatch: 'admission' }));
    expect(summarize(one, ctx(conv.length)).tenants).toBeUndefined();
    expect(one.outcomes.every((o) => o.tenant === undefined)).toBe(true);
  });
});

describe('bench fleet: --client-timeout-s, --client-retries, --client-mode, --tenants', () => {
  it('prints what the clients and tenants saw, and refuses the client flags without a timeout', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'fleet-client-'));
    try {
      const trace = join(dir, 'trace.jsonl');
      await writeFile(
        trace,
        unrelated(60, 20)
          .map((r) => JSON.stringify(r))
          .join('\n') + '\n',
      );
      const args = [trace, '--workers', '1', '--kv-tokens', '400000', '--policies', 'round_robin'];
      const ok = await captureOutput(() =>
        run([...args, '--client-timeout-s', '5', '--client-mode', 'non-stream', '--tenants', '3', '--json']),
      );
      expect(ok.rc).toBe(0);
      const r = JSON.parse(ok.out).runs[0];
      expect(r.client).toMatchObject({ timeout_s: 5, retries: 2, stream: false });
      expect(r.client.timeouts).toBeGreaterThan(0);
      expect(r.completed + r.client.failed).toBe(60);
      expect(r.tenants.count).toBe(3);
      const text = await captureOutput(() => run([...args, '--client-timeout-s', '5', '--tenants', '3']));
      expect(text.out).toMatch(/clients \(stream, timeout 5 s, 2 retries\): \d+ sends timed out/);
      // each tenant's p90 is printed, not only the min / median / max
      expect(text.out).toMatch(/each tenant's TTFT p90: t0 \d+\.\d, t1 \d+\.\d, t2 \d+\.\d s/);
      const bad = await captureOutput(() => run([...args, '--client-retries', '1']));
      expect(bad.rc).toBe(2);
      const mode = await captureOutput(() => run([...args, '--client-timeout-s', '5', '--client-mode', 'x']));
      expect(mode.rc).toBe(2);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
