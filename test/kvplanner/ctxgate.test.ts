import { describe, expect, it } from 'vitest';
import { blockHashes } from '../../kvplanner/block-hash.ts';
import { CTXGATE_DEFAULTS, CtxgatePolicy } from '../../kvplanner/policies/ctxgate.ts';
import { PREPARE_SHRINK_STEP } from '../../kvplanner/prefix-index.ts';
import type { Choice, RouteInfo, WorkerView } from '../../kvplanner/types.ts';
import { info, tokens, workers } from './fixtures.ts';

/** select, then report the call done (what the gateway does after the response) */
function route(p: CtxgatePolicy, ws: WorkerView[], req: RouteInfo): Choice {
  const c = p.select(ws, req)!;
  p.observe({ workerId: c.worker.id, info: req, ok: true });
  return c;
}

const ROOT = 512; // tokens shared by every session (system prompt + tools)

const chains = new Map<string, { ids: number[]; hashes: string[] }>();
function call(session: number, turn: number, sessionId = true): RouteInfo {
  const k = `${session}/${turn}`;
  let c = chains.get(k);
  if (!c) {
    const ids = tokens(ROOT, session, 64 + turn * 128);
    c = { ids, hashes: blockHashes(ids, 16) };
    chains.set(k, c);
  }
  return info({
    sessionId: sessionId ? `s${session}` : undefined,
    promptTokenIds: c.ids,
    blockHashes: c.hashes,
    promptTokens: c.ids.length,
  });
}

describe('ctxgate branches', () => {
  it('new sessions spread, later turns stick and predict their cached prefix', () => {
    const p = new CtxgatePolicy();
    const ws = workers(4);
    const first = [0, 1, 2, 3].map((s) => route(p, ws, call(s, 0)));
    expect(first.map((c) => c.branch)).toEqual(['new_session', 'new_session', 'new_session', 'new_session']);
    expect(new Set(first.map((c) => c.worker.id)).size).toBe(4);
    const next = route(p, ws, call(2, 1));
    expect(next.branch).toBe('sticky');
    expect(next.worker.id).toBe(first[2].worker.id);
    expect(next.predictedCachedTokens).toBe(ROOT + 64);
  });

  it('prefix_match follows a conversation without a session id; a root two workers hold does not pull', () => {
    const p = new CtxgatePolicy();
    const ws = workers(4);
    const a = route(p, ws, call(0, 0, false));
    expect(a.branch).toBe('balance');
    // while only a's worker holds the root (and has room), a second conversation starts there
    const b = route(p, ws, call(1, 0, false));
    expect([b.branch, b.worker.id]).toEqual(['prefix_match', a.worker.id]);
    const cont = route(p, ws, call(0, 2, false));
    expect(cont.branch).toBe('prefix_match');
    expect(cont.worker.id).toBe(a.worker.id);
    // over the load bound a's worker sends the next one elsewhere, which then holds the root too
    a.worker.inFlight = 5;
    const over = route(p, ws, call(2, 0, false));
    expect(over.branch).toBe('overflow');
    expect(over.worker.id).not.toBe(a.worker.id);
    a.worker.inFlight = 0;
    // a conversation holding only the root, now cached twice, is placed by load, not by the root
    expect(route(p, ws, call(7, 0, false)).branch).toBe('balance');
  });

  it('without a session, a history two prompts branch from is followed to the one worker holding it', () => {
    // a conversation's history (root + 256 tokens of its own), then three later turns that each
    // extend it differently (a Mooncake conversation trace has no session ids, and such branch
    // points are common): the history is held only where the first turn went, so the others
    // follow it there; a history the tracker saw branch used to count as a root "every worker
    // caches" and sent them to an empty worker to prefill it again
    const turn = (q: number): RouteInfo => {
      const ids = [...tokens(ROOT, 40, 256), ...Array.from({ length: 64 }, (_, i) => 50_000 + q * 997 + i)];
      return info({ promptTokenIds: ids, blockHashes: blockHashes(ids, 16), promptTokens: ids.length });
    };
    const p = new CtxgatePolicy();
    const ws = workers(4);
    const first = route(p, ws, turn(1));
    expect(first.branch).toBe('balance');
    for (const q of [2, 3, 4]) {
      const c = route(p, ws, turn(q));
      expect([c.branch, c.worker.id]).toEqual(['prefix_match', first.worker.id]);
      expect(c.predictedCachedTokens).toBe(ROOT + 256);
    }
    // with a session id the same shape is a new session: placed by session count, root or not
    const s = new CtxgatePolicy();
    const a = route(s, ws, { ...turn(1), sessionId: 'a' });
    const b = route(s, ws, { ...turn(2), sessionId: 'b' });
    expect([a.branch, b.branch]).toEqual(['new_session', 'new_session']);
    expect(b.worker.id).not.toBe(a.worker.id);
  });

  it('detours a pinned session whose worker is over the load bound, then moves it once the detour holds its conversation', () => {
    const p = new CtxgatePolicy({ epsilon: 0.25, sticky_slack: 0 });
    const ws = workers(4);
    const home = route(p, ws, call(0, 0)).worker;
    home.inFlight = 2; // total 2: bound floor(1.25·3/4 + 1) = 1.94 → 1 < 3
    const o = route(p, ws, call(0, 1));
    expect(o.branch).toBe('overflow');
    expect(o.worker.id).not.toBe(home.id);
    home.inFlight = 1; // total 1: bound floor(1.25·2/4 + 1) = 1 < 2 → over again
    // the first detour left the conversation on o.worker: the session moves rather than bounce
    expect([route(p, ws, call(0, 2)).branch, route(p, ws, call(0, 2)).worker.id]).toEqual(['migrate', o.worker.id]);
    home.inFlight = 0;
    const next = route(p, ws, call(0, 3));
    expect([next.branch, next.worker.id]).toEqual(['sticky', o.worker.id]);
  });

  it('a detour to a worker holding none of the conversation keeps the home pin', () => {
    const p = new CtxgatePolicy({ epsilon: 0.25, sticky_slack: 0 });
    const ws = workers(4);
    const home = route(p, ws, call(0, 0)).worker;
    home.inFlight = 2;
    const o = p.select(ws, call(0, 1))!; // not observed: the target learns nothing
    expect(o.branch).toBe('overflow');
    home.inFlight = 0;
    expect(route(p, ws, call(0, 2)).worker.id).toBe(home.id);
  });

  it('keeps a session home at low load when one more request stays within (1+ε)·mean + 1', () => {
    const p = new CtxgatePolicy({ epsilon: 0.25, sticky_slack: 0 });
    const ws = workers(4);
    const home = route(p, ws, call(0, 0)).worker;
    home.inFlight = 2;
    ws.find((w) => w !== home)!.inFlight = 3; // total 5: bound floor(1.25·6/4 + 1) = 2.875 → 2 < 3
    expect(route(p, ws, call(0, 1)).branch).toBe('overflow');
    ws.find((w) => w !== home && w.inFlight === 0)!.inFlight = 3; // total 8: bound 3.81 ≥ 3
    expect(route(p, ws, call(0, 2)).branch).toBe('sticky');
  });

  it('sticky_slack: the home keeps its session past the bound while it starts faster, up to the slack', () => {
    const p = new CtxgatePolicy({ epsilon: 0.25, sticky_slack: 2 });
    const ws = workers(4);
    const home = route(p, ws, call(0, 0)).worker;
    home.inFlight = 3; // total 3: bound floor(1.25·4/4 + 1) = 2; 4 ≤ 2 + 2 → within the slack
    expect([route(p, ws, call(0, 1)).branch, route(p, ws, call(0, 1)).worker.id]).toEqual(['sticky', home.id]);
    // the engine reports a queue at home: the detour starts sooner despite the re-prefill
    home.engine = { waiting: 4 };
    expect(route(p, ws, call(0, 2)).branch).not.toBe('sticky');
    home.engine = undefined;
    home.inFlight = 4; // total 4: bound floor(1.25·5/4 + 1) = 2; 5 > 2 + 2 → past the slack
    const far = p.select(ws, call(0, 3))!;
    expect(far.worker.id).not.toBe(home.id);
  });

  it("a session's home busy prefilling another tenant's huge prompt loses a small call to an idle worker; the pin stays", () => {
    // 3 workers, the default ε 0.75: with one request in flight the bound in requests is
    // floor(1.75·2/3 + 1) = 2, so the home has room by count while it prefills 240,000 tokens
    // (24 s at 10,000 tokens/s) and the call (704 tokens, 576 cached at home) would wait for them
    const p = new CtxgatePolicy();
    const ws = workers(3);
    const home = route(p, ws, call(0, 0)).worker;
    home.inFlight = 1;
    // a small queue stays within the bound in time: home 0.15 + 0.0128 + 0.002 s ≤ 1.75 × 0.0704
    // (an idle worker re-prefilling the whole prompt) + 0.0704 s (one prefill of the prompt)
    home.queuedPrefillTokens = 1_500;
    const near = route(p, ws, call(0, 1));
    expect([near.branch, near.worker.id]).toEqual(['sticky', home.id]);
    home.queuedPrefillTokens = 240_000;
    const busy = p.select(ws, call(0, 2))!;
    expect(busy.branch).toBe('overflow');
    expect(busy.worker.id).not.toBe(home.id);
    expect(busy.worker.queuedPrefillTokens).toBe(0);
    // the detour does not move the session: once the home's queue is gone it comes back
    home.queuedPrefillTokens = 0;
    home.inFlight = 0;
    const back = route(p, ws, call(0, 3));
    expect([back.branch, back.worker.id]).toEqual(['sticky', home.id]);
  });

  it('a new session is not placed on a worker busy prefilling a huge prompt, even one with the fewest sessions', () => {
    const p = new CtxgatePolicy();
    const ws = workers(3);
    ws[0].inFlight = 1; // within the bound in requests (2), but 24 s of prefill queued
    ws[0].queuedPrefillTokens = 240_000;
    const placed = [1, 2, 3, 4].map((s) => route(p, ws, call(s, 0)));
    expect(placed.map((c) => c.branch)).toEqual(['new_session', 'new_session', 'new_session', 'new_session']);
    expect(placed.filter((c) => c.worker.id === 'w0')).toEqual([]);
    // its queue drained, it is the one with the fewest sessions again
    ws[0].queuedPrefillTokens = 0;
    expect(route(p, ws, call(5, 0)).worker.id).toBe('w0');
  });

  it('balance prefers the worker whose queue clears first', () => {
    const p = new CtxgatePolicy({ prefill_tokens_per_s: 1000 });
    const ws = workers(3);
    ws[0].queuedPrefillTokens = 5000;
    ws[1].queuedPrefillTokens = 100;
    ws[2].queuedPrefillTokens = 3000;
    const c = p.select(ws, info({ text: 'no session here' }))!;
    expect([c.branch, c.worker.id]).toEqual(['balance', 'w1']);
    expect(p.ttft(ws[1], 1000, 0)).toBeCloseTo(1.1, 5);
    ws[1].engine = { waiting: 8 }; // 8 × 1024 assumed tokens queued inside the engine
    expect(p.select(ws, info({ text: 'no session here' }))!.worker.id).toBe('w2');
  });

  it('kv_pressure_s: a prompt that would not fit the KV left after the queue waits for running requests to free it', () => {
    const ws = workers(2, { kvTokens: 10_000 });
    ws[0].queuedPrefillTokens = 1000; // faster start by queue alone
    ws[0].engine = { kvUsage: 0.9 }; // but 9,000 of 10,000 tokens are held by running requests
    ws[1].queuedPrefillTokens = 3000;
    ws[1].engine = { kvUsage: 0.1 };
    const big = { text: 'x'.repeat(16_000) }; // ≈ 4,000 prompt tokens
    const off = new CtxgatePolicy({ prefill_tokens_per_s: 1000, kv_pressure_s: 0 });
    expect(off.select(ws, info(big))!.worker.id).toBe('w0');
    const on = new CtxgatePolicy({ prefill_tokens_per_s: 1000, kv_pressure_s: 100 });
    expect(on.select(ws, info(big))!.worker.id).toBe('w1');
    // w0: 0.9 + (1000 + 4000) / 10,000 − 1 = 0.4 of a cache to free → +40 s
    expect(on.ttft(ws[0], 4000, 0) - off.ttft(ws[0], 4000, 0)).toBeCloseTo(40, 5);
    expect(on.ttft(ws[1], 4000, 0)).toBe(off.ttft(ws[1], 4000, 0));
  });
});

describe('ctxgate bounded load', () => {
  /**
   * 40 sessions on one hot root over 4 workers, seeded arrivals: 1000 arrivals only (every
   * worker checked after every decision), then 1000 with random completions (every placement
   * checked). `slack`: what a session's home may go past (1+ε)·mean + 1 (sticky_slack).
   */
  const hotRoot = (p: CtxgatePolicy, eps: number, slack: number): void => {
    const ws = workers(4);
    let seed = 7;
    const rand = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const turns = new Map<number, number>();
    const next = (): RouteInfo => {
      const s = Math.floor(rand() * 40);
      const t = turns.get(s) ?? 0;
      turns.set(s, t + 1);
      return call(s, t % 20);
    };
    const bound = (): number => ((1 + eps) * ws.reduce((a, w) => a + w.inFlight, 0)) / ws.length + 1 + slack;
    for (let i = 0; i < 1000; i++) {
      p.select(ws, next())!.worker.inFlight++;
      expect(Math.max(...ws.map((w) => w.inFlight))).toBeLessThanOrEqual(bound());
    }
    for (const w of ws) w.inFlight = 0;
    for (let i = 0; i < 1000; i++) {
      const c = p.select(ws, next())!;
      c.worker.inFlight++;
      expect(c.worker.inFlight).toBeLessThanOrEqual(bound());
      for (const w of ws) if (w.inFlight > 0 && rand() < 0.2) w.inFlight--;
    }
    const st = p.stats();
    expect(st.branches.sticky).toBeGreaterThan(1000);
    expect(st.branches.new_session).toBeLessThanOrEqual(40);
    // the hot root did not pull the sessions onto one worker: each holds about a quarter
    const pinned = ws.map((w) => p.affinity.load(w.id).sessions);
    expect(pinned.reduce((a, b) => a + b, 0)).toBe(40);
    expect(Math.max(...pinned)).toBeLessThanOrEqual(14);
  };

  it('1000 decisions with every session on one hot root: max in-flight ≤ (1+ε)·mean + 1 (sticky_slack 0, ε 0.25)', () => {
    // sticky_slack 0: the hard bound
    hotRoot(new CtxgatePolicy({ epsilon: 0.25, sticky_slack: 0 }), 0.25, 0);
  });

  it('the same at the shipped defaults: no placement above (1+ε)·mean + 1 + sticky_slack (ε 0.75, sticky_slack 2)', () => {
    // a session's home, which the index knows holds the conversation, may go sticky_slack past
    // the bound while it is still the faster start
    expect(CTXGATE_DEFAULTS.epsilon).toBe(0.75);
    expect(CTXGATE_DEFAULTS.sticky_slack).toBe(2);
    hotRoot(new CtxgatePolicy(), CTXGATE_DEFAULTS.epsilon, CTXGATE_DEFAULTS.sticky_slack);
  });

  it('in front of SGLang engines the bound is tighter: ε 0.5 (engine_flavor sglang); an explicit epsilon wins', () => {
    expect(CTXGATE_DEFAULTS.epsilon_sglang).toBe(0.5);
    hotRoot(
      new CtxgatePolicy({ engine_flavor: 'sglang' }),
      CTXGATE_DEFAULTS.epsilon_sglang,
      CTXGATE_DEFAULTS.sticky_slack,
    );
    hotRoot(new CtxgatePolicy({ engine_flavor: 'sglang', epsilon: 0.25, sticky_slack: 0 }), 0.25, 0);
  });

  it('never puts more than maxInFlight on a worker while another has room', () => {
    const p = new CtxgatePolicy();
    const ws: WorkerView[] = workers(2, { maxInFlight: 2 });
    for (let i = 0; i < 4; i++) route(p, ws, call(0, i)).worker.inFlight++;
    expect(ws.map((w) => w.inFlight)).toEqual([2, 2]);
  });
});

describe('ctxgate feedback', () => {
  it('fewer reported cached tokens than predicted: a worker that caches recomputed the rest and holds it; one that never served a hit keeps what it reported', () => {
    // a worker whose cache works (it reported hits before) lost blocks, recomputed them for this
    // call and holds the whole chain again: forgetting it would send the next turn elsewhere
    const p = new CtxgatePolicy();
    const ws = workers(2);
    const first = call(0, 0);
    const c0 = p.select(ws, first)!;
    p.observe({ workerId: c0.worker.id, info: first, ok: true, reportedCachedTokens: 0 });
    const warm = call(0, 1);
    const c1 = p.select(ws, warm)!;
    p.observe({ workerId: c1.worker.id, info: warm, ok: true, reportedCachedTokens: c1.predictedCachedTokens });
    const req = call(0, 3);
    const c = p.select(ws, req)!;
    expect(c.worker.id).toBe(c0.worker.id);
    p.observe({ workerId: c.worker.id, info: req, ok: true, reportedCachedTokens: 128 });
    expect(p.stats().feedback[c.worker.id]).toMatchObject({
      calls: 3,
      reportedTokens: 128 + c1.predictedCachedTokens!,
      corrections: 1,
    });
    expect(p.select(ws, call(0, 3))!.predictedCachedTokens).toBe(ROOT + 64 + 384);

    // a worker that has never served a cached token (caching off, another tokenisation)
    const q = new CtxgatePolicy();
    const one = workers(1);
    const a = call(1, 0);
    q.select(one, a);
    q.observe({ workerId: 'w0', info: a, ok: true, reportedCachedTokens: 0 });
    const b = call(1, 3);
    const cb = q.select(one, b)!;
    expect(cb.predictedCachedTokens).toBe(ROOT + 64);
    q.observe({ workerId: 'w0', info: b, ok: true, reportedCachedTokens: 0 });
    expect(q.stats().feedback.w0.corrections).toBe(1);
    expect(q.select(one, call(1, 3))!.predictedCachedTokens).toBe(0);
  });

  it('a correction on a worker that serves hits keeps the other sessions branching below the blocks it lacked', () => {
    // the engine dropped the shared root and recomputed it for this call: the other session's
    // blocks below the root match again (block hashes chain by content), so the index keeps them
    const p = new CtxgatePolicy();
    const one = workers(1);
    const a = call(5, 0);
    p.observe({ workerId: 'w0', info: a, ok: true, reportedCachedTokens: p.select(one, a)!.predictedCachedTokens });
    const a1 = call(5, 1);
    p.observe({ workerId: 'w0', info: a1, ok: true, reportedCachedTokens: p.select(one, a1)!.predictedCachedTokens });
    const b = call(6, 0);
    expect(p.select(one, b)!.predictedCachedTokens).toBe(ROOT);
    p.observe({ workerId: 'w0', info: b, ok: true, reportedCachedTokens: ROOT });
    const a3 = call(5, 3);
    expect(p.select(one, a3)!.predictedCachedTokens).toBe(ROOT + 64 + 128);
    p.observe({ workerId: 'w0', info: a3, ok: true, reportedCachedTokens: 0 });
    expect(p.stats().feedback.w0.corrections).toBe(1);
    expect(p.select(one, call(6, 1))!.predictedCachedTokens).toBe(ROOT + 64);
    expect(p.select(one, call(5, 3))!.predictedCachedTokens).toBe(ROOT + 64 + 384);
  });

  it('a report within one block of the prediction is not a correction', () => {
    const p = new CtxgatePolicy();
    const ws = workers(2);
    route(p, ws, call(0, 0));
    const req = call(0, 1);
    const c = p.select(ws, req)!;
    p.observe({ workerId: c.worker.id, info: req, ok: true, reportedCachedTokens: c.predictedCachedTokens! - 16 });
    expect(p.stats().feedback[c.worker.id].corrections).toBe(0);
  });

  it('the index learns at selection (the engine caches while it prefills); a failed call takes it back', () => {
    const p = new CtxgatePolicy();
    const ws = workers(1);
    const failed = call(0, 0);
    const c = p.select(ws, failed)!;
    expect(p.index.size('w0')).toBe(Math.floor((ROOT + 64) / 64)); // visible to the next decision already
    p.observe({ workerId: c.worker.id, info: failed, ok: false });
    expect(p.index.size('w0')).toBe(0);
    const done = call(0, 0);
    p.observe({ workerId: p.select(ws, done)!.worker.id, info: done, ok: true, reportedCachedTokens: 0 });
    expect(p.index.size('w0')).toBe(Math.floor((ROOT + 64) / 64));
  });

  it('feedback without the RouteInfo object of the pick still corrects (predictedCachedTokens)', () => {
    const p = new CtxgatePolicy();
    const ws = workers(1);
    route(p, ws, call(0, 3));
    const c = p.select(ws, call(0, 3))!;
    expect(c.predictedCachedTokens).toBe(ROOT + 64 + 384);
    p.observe({
      workerId: 'w0',
      info: call(0, 3),
      ok: true,
      reportedCachedTokens: 256,
      predictedCachedTokens: c.predictedCachedTokens,
    });
    // w0 never reported a hit before: it keeps only what it reported
    expect(p.select(ws, call(0, 3))!.predictedCachedTokens).toBe(256);
  });

  it("a home whose sessions outgrew its KV is not predicted to hold an idle session's history", () => {
    // 1,600 KV tokens; seven sessions of 832 tokens (512 shared) pinned there, none queued: the
    // engine's LRU kept the root and the last ~1,100 tokens, not session 0's history
    const ws = workers(2, { kvTokens: 1600 });
    const p = new CtxgatePolicy();
    for (let s = 0; s < 7; s++) route(p, [ws[0]], call(s, 2));
    const c = p.select(ws, call(0, 3))!;
    expect(c.worker.id).toBe('w0');
    expect(c.predictedCachedTokens).toBe(ROOT); // was 832: the index remembered 4× the KV
  });

  it('the KV budget bounds the index (index_capacity_factor × kvTokens / block size)', () => {
    const ws = workers(1, { kvTokens: 1600 });
    const p = new CtxgatePolicy({ index_capacity_factor: 1 });
    for (let s = 0; s < 10; s++) route(p, ws, call(s, 2));
    expect(p.index.size('w0')).toBe(1600 / 64); // 16-token blocks, every 4th indexed
    const fine = new CtxgatePolicy({ index_stride: 1, index_capacity_factor: 1 });
    for (let s = 0; s < 10; s++) route(fine, ws, call(s, 2));
    expect(fine.index.size('w0')).toBe(100);
    // the default remembers the cache plus twice the prefill queued there, up to 4× the cache:
    // prompts still queued hold their blocks, an idle worker holds its KV's worth and no more
    const dflt = new CtxgatePolicy();
    for (let s = 0; s < 40; s++) route(dflt, ws, call(s, 2));
    expect(dflt.index.size('w0')).toBe(1600 / 64);
    ws[0].queuedPrefillTokens = 1600;
    for (let s = 40; s < 80; s++) route(dflt, ws, call(s, 2));
    expect(dflt.index.size('w0')).toBe((3 * 1600) / 64);
    ws[0].queuedPrefillTokens = 100_000;
    for (let s = 80; s < 120; s++) route(dflt, ws, call(s, 2));
    expect(dflt.index.size('w0')).toBe((4 * 1600) / 64);
  });

  it('calls without a session id let the index remember more of the queued prefill (index_queue_factor_no_session)', () => {
    // 1,600 KV tokens, 320 queued: with sessions KV + 2 × 320 = 2,240 tokens = 35 index blocks of 64
    // tokens; without them KV + 8 × 320 = 4,160 = 65 (under the 4 × KV cap of 100)
    const size = (sessionId: boolean, from: number, p = new CtxgatePolicy()): number => {
      const ws = workers(1, { kvTokens: 1600, queuedPrefillTokens: 320 });
      for (let s = from; s < from + 80; s++) route(p, ws, call(s, 2, sessionId));
      return p.index.size('w0');
    };
    expect(size(true, 0)).toBe(35);
    expect(size(false, 0)).toBe(65);
    expect(size(false, 0, new CtxgatePolicy({ index_queue_factor_no_session: 2 }))).toBe(35);
    // the factor follows the share of recent calls without one: once sessions are all that comes,
    // the entry shrinks back to what a session-only stream keeps
    const mixed = new CtxgatePolicy();
    expect(size(false, 0, mixed)).toBe(65);
    const ws = workers(1, { kvTokens: 1600, queuedPrefillTokens: 320 });
    for (let s = 100; s < 2_100; s++) route(mixed, ws, call(s % 300, 2));
    expect(mixed.index.size('w0')).toBe(35);
  });

  it("another tenant's calls without a session id change how much the index remembers for all (bounded by the no-session factor)", () => {
    // The index is one LRU per worker over every tenant's chains, its size set by the share of
    // recent calls without a session id across all tenants: a tenant whose calls carry none (in
    // the gateway: /v1/completions without a session header) makes it remember more for another
    // tenant's session calls too, up to KV + index_queue_factor_no_session × queue (65 blocks
    // here), never more; with sessions only it is KV + 2 × queue (35).
    const ws = workers(1, { kvTokens: 1600, queuedPrefillTokens: 320 });
    const p = new CtxgatePolicy();
    for (let s = 0; s < 80; s++) route(p, ws, call(s, 2));
    expect(p.index.size('w0')).toBe(35);
    const sizes: number[] = [];
    for (let s = 80; s < 480; s++) {
      route(p, ws, call(s % 40, 2));
      for (let k = 0; k < 3; k++) route(p, ws, { ...call(1000 + s * 3 + k, 1, false), tenant: 'other' });
      sizes.push(p.index.size('w0'));
    }
    expect(Math.max(...sizes)).toBeGreaterThan(35);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(65);
  });

  it('in front of SGLang engines the index remembers up to 8× the KV instead of 4× (engine_flavor)', () => {
    const size = (opts: Record<string, unknown>): number => {
      const ws = workers(1, { kvTokens: 1600, queuedPrefillTokens: 100_000 });
      const p = new CtxgatePolicy(opts);
      for (let s = 0; s < 200; s++) route(p, ws, call(s, 2));
      return p.index.size('w0');
    };
    expect(size({})).toBe((4 * 1600) / 64);
    expect(size({ engine_flavor: 'vllm' })).toBe((4 * 1600) / 64);
    expect(size({ engine_flavor: 'sglang' })).toBe((8 * 1600) / 64);
    // a factor set explicitly wins over the flavor's default
    expect(size({ engine_flavor: 'sglang', index_capacity_factor: 2 })).toBe((2 * 1600) / 64);
    expect(() => new CtxgatePolicy({ engine_flavor: 'trtllm' })).toThrow(
      /'engine_flavor' must be vllm, sglang or openai/,
    );
  });

  it('the index grows at once with queued prefill; when the queue drains it shrinks a bounded step per decision', () => {
    // 64k KV tokens = 4,096 blocks at stride 1; a 4×KV queue lets the entry hold 16,384
    const kv = 65_536;
    const ws = workers(1, { kvTokens: kv, queuedPrefillTokens: 4 * kv });
    const p = new CtxgatePolicy({ index_stride: 1 });
    const chain = (s: number, len: number): RouteInfo => {
      const hashes = Array.from({ length: len }, (_, i) => `s${s}b${i}`);
      return { model: 'm', tenant: 't', sessionId: `s${s}`, blockHashes: hashes, promptTokens: len * 16 };
    };
    for (let s = 0; s < 20; s++) route(p, ws, chain(s, 1_000));
    expect(p.index.size('w0')).toBe(4 * 4_096);
    ws[0].queuedPrefillTokens = 0;
    const before = p.index.size('w0');
    route(p, ws, chain(100, 8));
    // one decision evicts at most one step (plus room for its own 8 new blocks), not 12,288 blocks
    expect(before - p.index.size('w0')).toBeGreaterThan(0);
    expect(before - p.index.size('w0')).toBeLessThanOrEqual(PREPARE_SHRINK_STEP + 8);
    for (let s = 101; s < 140; s++) route(p, ws, chain(s, 8));
    expect(p.index.size('w0')).toBe(4_096);
    ws[0].queuedPrefillTokens = 4 * kv; // grows again at once
    route(p, ws, chain(200, 1_000));
    expect(p.index.capacity('w0')).toBe(4 * 4_096);
  });
});

describe('ctxgate memory', () => {
  it('an observed request is no longer referenced by the policy (its token ids and body can be collected)', () => {
    const p = new CtxgatePolicy();
    const ws = workers(4);
    const reqs = [0, 1, 2].map((s) => call(s, 0));
    for (const r of reqs) route(p, ws, r);
    const unanswered = call(3, 0);
    p.select(ws, unanswered);
    // the ring of pending picks is private; read it as the heap would see it
    const ring = (p as unknown as { pendingRing: (RouteInfo | undefined)[] }).pendingRing;
    for (const r of reqs) expect(ring.includes(r)).toBe(false);
    expect(ring.includes(unanswered)).toBe(true);
  });
});
