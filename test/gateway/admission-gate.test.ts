// The admission gate's decisions (gateway/admission/admission-gate.ts) on worker views whose
// engine signals the test sets, with a policy whose expectedCachedTokens is a table: the holder
// bind-at-arrival only while no other tenant waits (fairness), a released call routed among the
// workers that could admit it (its holder alone when it could), and the events that wake the gate
// at once (an attempt's end, a scrape, a client abort) instead of its fallback timer.
import { afterEach, describe, expect, it } from 'vitest';
import { AdmissionGate, PUMP_FALLBACK_MS, type Release } from '../../gateway/admission/admission-gate.ts';
import { parseConfig } from '../../gateway/config/load.ts';
import type { Policy, RouteInfo, WorkerView } from '../../kvplanner/types.ts';

function worker(id: string, waiting: number): WorkerView {
  return {
    id,
    url: `http://${id}`,
    healthy: true,
    inFlight: 0,
    queuedPrefillTokens: 0,
    maxInFlight: 0,
    engine: { waiting, running: 0 },
  };
}

/** `cached[session][worker]`: what the policy expects each worker to hold of that session's prompt. */
function policy(cached: Record<string, Record<string, number>>): Policy {
  return {
    name: 'table',
    select: (ws) => (ws[0] ? { worker: ws[0], branch: 'first' } : null),
    expectedCachedTokens: (ws, info) => cached[info.sessionId ?? '']?.[ws[0].id] ?? 0,
  } as Policy;
}

const info = (tenant: string, sessionId: string): RouteInfo => ({ model: 'm', tenant, sessionId });
const turn = () => new Promise((r) => setImmediate(r));
/** Whether the promise settled by now (after the pending immediates). */
async function settled<T>(p: Promise<T>): Promise<{ done: boolean; value?: T; err?: unknown }> {
  const out: { done: boolean; value?: T; err?: unknown } = { done: false };
  p.then(
    (v) => Object.assign(out, { done: true, value: v }),
    (e) => Object.assign(out, { done: true, err: e }),
  );
  await turn();
  await turn();
  return out;
}

/** The call was held: its release (a promise), not an answer now. */
function held(a: Release | Promise<Release>): Promise<Release> {
  expect(a).toBeInstanceOf(Promise);
  return a as Promise<Release>;
}

let gates: AdmissionGate[] = [];
afterEach(() => {
  for (const g of gates) g.close(new Error('test over'));
  gates = [];
});

/** A gate over `ws` that the test's afterEach closes; the clock stands still unless given. */
function gate(
  ws: WorkerView[],
  p: Policy,
  settings: ConstructorParameters<typeof AdmissionGate>[3],
  clock: () => number = () => 0,
): AdmissionGate {
  const g = new AdmissionGate('m', () => ws.map((w) => ({ view: () => w })), p, settings, clock);
  gates.push(g);
  return g;
}

/** One worker that is full until release(n) frees it, then n wakes 1 s apart; the caps off, so
 *  the release order's slacks alone (40 ms per uncached token) order the held calls. */
function slacksOnly(): { g: AdmissionGate; release: (wakes: number) => Promise<void> } {
  const ws = [worker('w0', 1)];
  let t = 0;
  const g = gate(
    ws,
    policy({}),
    { max_waiting: 1, release_ms_per_token: 40, release_ms_per_held: 0, release_slack_per_drain: 0 },
    () => t,
  );
  const release = async (wakes: number) => {
    ws[0].engine = { waiting: 0, running: 0 };
    for (let i = 0; i < wakes; i++) {
      t += 1000;
      g.wake();
      await settled(Promise.resolve());
    }
  };
  return { g, release };
}

function make(ws: WorkerView[], cached: Record<string, Record<string, number>> = {}): AdmissionGate {
  // a clock that stands still: only events release calls, never the fallback look's deadlines
  return gate(ws, policy(cached), { max_waiting: 1 });
}

describe('AdmissionGate', () => {
  it('before the first scrape round lands, calls are held (and the round asked for), then released by its wake', async () => {
    const ws = [worker('w0', 0)];
    const g = make(ws);
    let pending = true;
    let asked = 0;
    g.signalsPending = () => pending;
    g.onPending = () => asked++;
    const p = held(g.admit(info('a', 's1'), new AbortController().signal));
    expect(asked).toBe(1);
    g.wake();
    expect((await settled(p)).done).toBe(false);
    pending = false;
    g.wake();
    expect(await settled(p)).toMatchObject({ done: true, value: ['w0'] });
    expect(g.admit(info('a', 's2'), new AbortController().signal)).toBeUndefined();
    expect(asked).toBe(1);
  });

  it('nothing held and every worker able: the call goes to any worker with no holder lookup (the per-call path)', () => {
    const ws = [worker('w0', 0), worker('w1', 0)];
    let lookups = 0;
    const p = policy({ s: { w0: 5000 } });
    const counted: Policy = {
      ...p,
      expectedCachedTokens: (v, i) => {
        lookups++;
        return p.expectedCachedTokens!(v, i);
      },
    };
    const g = gate(ws, counted, { max_waiting: 1 });
    for (let i = 0; i < 3; i++) expect(g.admit(info('a', 's'), new AbortController().signal)).toBeUndefined();
    expect(lookups).toBe(0);
    expect(g.stats).toMatchObject({ passed: 3, bound: 0 });
    // one worker busy: the holder is looked up and the call bound to it
    ws[1].engine = { waiting: 1, running: 0 };
    expect(g.admit(info('a', 's'), new AbortController().signal)).toBeUndefined();
    expect(lookups).toBe(2);
    expect(g.stats.bound).toBe(1);
  });

  it('close (drain start): held calls get the error now, a call that would be held gets it too, one that can go still goes', async () => {
    const ws = [worker('w0', 1)];
    const g = make(ws);
    const p = held(g.admit(info('a', 's1'), new AbortController().signal));
    const shut = () => new Error('shutting down');
    g.close(shut);
    expect(await settled(p)).toMatchObject({ done: true, err: { message: 'shutting down' } });
    expect(g.size).toBe(0);
    const later = held(g.admit(info('b', 's2'), new AbortController().signal));
    expect(await settled(later)).toMatchObject({ done: true, err: { message: 'shutting down' } });
    expect(g.size).toBe(0);
    ws[0].engine = { waiting: 0, running: 0 };
    expect(g.admit(info('a', 's3'), new AbortController().signal)).toBeUndefined();
    expect(g.stats).toMatchObject({ queued: 1, shutdown: 2, passed: 1 });
  });

  it('no healthy worker: a call is not held (routing answers no_healthy_worker), and held calls go when all fail', async () => {
    const ws = [worker('w0', 1)];
    const g = make(ws);
    const p = g.admit(info('a', 's'), new AbortController().signal) as Promise<Release>;
    expect(p).toBeInstanceOf(Promise);
    ws[0].healthy = false;
    expect(g.admit(info('a', 's2'), new AbortController().signal)).toBeUndefined();
    g.wake();
    expect(await settled(p)).toMatchObject({ done: true, value: undefined });
    expect(g.size).toBe(0);
  });

  it("binds a continuation to its busy holder at arrival only while no other tenant's calls are held", async () => {
    const ws = [worker('w0', 1), worker('w1', 1)]; // both full (waiting 1 = max_waiting)
    const g = make(ws, { a1: { w0: 5000 }, a2: { w0: 5000 } });
    // nothing held: tenant a's continuation goes to its holder at once (the simulator's rule)
    expect(g.admit(info('a', 'a1'), new AbortController().signal)).toBeUndefined();
    expect(g.stats.bound).toBe(1);
    // tenant b's new session must wait
    const b = held(g.admit(info('b', 'b1'), new AbortController().signal));

    // now a's next continuation waits too, behind b
    const a = held(g.admit(info('a', 'a2'), new AbortController().signal));

    expect(g.stats.bound).toBe(1);
    expect(g.size).toBe(2);
    // w1 frees a place: b (first in the round) goes there, a still waits for its holder w0
    ws[1].engine = { waiting: 0, running: 0 };
    g.observer.onEnd();
    expect((await settled(b)).value).toEqual(['w1']);
    expect((await settled(a)).done).toBe(false);
    // w0 frees: a goes to its holder alone
    ws[0].engine = { waiting: 0, running: 0 };
    g.wake();
    expect((await settled(a)).value).toEqual(['w0']);
  });

  it('routes a released call among the workers that could admit it', async () => {
    const ws = [worker('w0', 1), worker('w1', 1), worker('w2', 1)];
    const g = make(ws);
    const p = held(g.admit(info('a', 's'), new AbortController().signal));
    ws[0].engine = { waiting: 0, running: 0 };
    ws[2].engine = { waiting: 0, running: 0 };
    g.wake();
    expect((await settled(p)).value).toEqual(['w0', 'w2'] satisfies Release);
    expect(g.stats.released).toBe(1);
  });

  it("releases a tenant's held calls in the simulator's release order (release-order.ts): least to prefill first, arrival order without slack, the slack capped by release_ms_per_held × the calls held", async () => {
    // two busy workers; three calls held in turn: a 40k-token prompt nobody holds, a 2k one, and
    // a 40k one both workers hold 39k of (no holder: nothing beyond the runner-up)
    const cached = { c: { w0: 39_000, w1: 39_000 } };
    // all held at 0 ms; the clock moves 1 s before each release (the drain bound's interval)
    const three = [
      ['long', 40_000],
      ['short', 2_000],
      ['c', 40_000],
    ] as const;
    const order = async (
      settings: Record<string, number>,
      calls: readonly (readonly [string, number])[] = three,
    ): Promise<string[]> => {
      const ws = [worker('w0', 1), worker('w1', 1)];
      let t = 0;
      const g = gate(ws, policy(cached), settings, () => t);
      const out: string[] = [];
      for (const [s, promptTokens] of calls)
        void held(g.admit({ ...info('a', s), promptTokens }, new AbortController().signal)).then(() => out.push(s));
      // one worker able: each look releases one call
      ws[0].engine = { waiting: 0, running: 0 };
      for (let i = 0; i < calls.length; i++) {
        t += 1000;
        g.wake();
        await settled(Promise.resolve());
        expect(out.length).toBe(i + 1);
      }
      return out;
    };
    // arrival order, explicitly: release_ms_per_token 0 (the default until session 33)
    expect(await order({ max_waiting: 1, release_ms_per_token: 0 })).toEqual(['long', 'short', 'c']);
    // slacks 40 ms/token on the size class (the uncached tokens rounded down to a power of two):
    // long 32,768 → 1,311 s, short 1,024 → 41 s, c 512 → 20.5 s (39k of its 40k cached)
    expect(
      await order({ max_waiting: 1, release_ms_per_token: 40, release_ms_per_held: 0, release_slack_per_drain: 0 }),
    ).toEqual(['c', 'short', 'long']);
    // release_ms_per_held caps each slack at each release: 15 s × 3 held = 45 s (c goes), then
    // 15 s × 2 = 30 s for both long and short, so arrival order between them
    expect(
      await order({
        max_waiting: 1,
        release_ms_per_token: 40,
        release_max_slack_ms: 1_800_000,
        release_ms_per_held: 15_000,
        release_slack_per_drain: 0,
      }),
    ).toEqual(['c', 'long', 'short']);
    // release_slack_per_drain caps each slack at k × held × the mean interval between releases:
    // none known at the first release (arrival order: long), then 1 s, so k 100 × 2 held × 1 s =
    // 200 s, over c's 40 s and short's 80 s (c, short); k 10: 20 s, under both (arrival order)
    const drain = { max_waiting: 1, release_ms_per_token: 40, release_ms_per_held: 0 };
    expect(await order({ ...drain, release_slack_per_drain: 100 })).toEqual(['long', 'c', 'short']);
    expect(await order({ ...drain, release_slack_per_drain: 10 })).toEqual(['long', 'short', 'c']);
    // the defaults (the release order is on: 40 ms/token, held cap 8 s, drain bound 16): none known
    // at the first release (long), then the caps, 8 s × 2 held = 16 s and 16 × 2 × 1 s = 32 s,
    // under both slacks left (80 s, 40 s): equal, so arrival order between short and c. Few calls
    // held and a fast drain keep the default close to arrival order
    expect(await order({ max_waiting: 1 })).toEqual(['long', 'short', 'c']);
    // ... but the default is not arrival order: with a fourth call of 100 tokens (slack 4 s), at
    // the second release the caps are 8 s × 3 held = 24 s and 16 × 3 × 1 s = 48 s, so short and c
    // wait as if 24 s later and the small call (4 s) overtakes them; then 16 s for short and c
    const four = [...three, ['tiny', 100] as const];
    expect(await order({ max_waiting: 1 }, four)).toEqual(['long', 'tiny', 'short', 'c']);
    expect(await order({ max_waiting: 1, release_ms_per_token: 0 }, four)).toEqual(['long', 'short', 'c', 'tiny']);
    expect(await order({ max_waiting: 1, release_ms_per_token: 40 })).toEqual(['long', 'short', 'c']);
  });

  it("charges a held call's prompt once (review s35 F2): a conversation's next turn, held behind its previous turn, is priced at its own new blocks and released right after it", async () => {
    // nothing cached anywhere; 512-token blocks; the caps off, so the slacks alone order the calls
    const { g, release } = slacksOnly();
    const blocks = (p: string, n: number) => Array.from({ length: n }, (_, i) => `${p}${i}`);
    const out: string[] = [];
    const send = (name: string, promptTokens: number, blockHashes?: string[]) =>
      void held(g.admit({ ...info('a', name), promptTokens, blockHashes }, new AbortController().signal)).then(() =>
        out.push(name),
      );
    // slacks on the size class (the uncached tokens rounded down to a power of two): turn 1: 2,000
    // tokens in 4 blocks (1,024: 41 s); another call: 2,250 (2,048: 82 s); turn 2 = turn 1 + 512:
    // 82 s if turn 1's prompt were charged again (after the other call, which came first), 20.5 s
    // (and never before turn 1) as it is
    send('turn1', 2_000, blocks('c', 4));
    send('other', 2_250, blocks('o', 4));
    send('turn2', 2_512, blocks('c', 5));
    await release(3);
    expect(out).toEqual(['turn1', 'turn2', 'other']);
  });

  it('a held call without block hashes (a text-only prompt) is priced at its whole uncached prompt, as before', async () => {
    const { g, release } = slacksOnly();
    const out: string[] = [];
    for (const [name, promptTokens] of [
      ['turn1', 2_048],
      ['other', 2_250],
      ['turn2', 2_560],
    ] as const)
      void held(g.admit({ ...info('a', name), promptTokens }, new AbortController().signal)).then(() => out.push(name));
    await release(3);
    expect(out).toEqual(['turn1', 'other', 'turn2']);
  });

  it('a held call waits for an event, not a polling timer: an end, a scrape round or an abort wakes it', async () => {
    const ws = [worker('w0', 1)];
    const g = make(ws);
    const p = held(g.admit(info('a', 's'), new AbortController().signal));
    ws[0].engine = { waiting: 0, running: 0 };
    // no event: nothing looks before the fallback interval
    expect((await settled(p)).done).toBe(false);
    g.observer.onEnd();
    expect((await settled(p)).done).toBe(true);
    // an abort: the call leaves at once (routing then sees the abort), nothing else is released
    ws[0].engine = { waiting: 1, running: 0 };
    const ac = new AbortController();
    const q = held(g.admit(info('a', 's2'), ac.signal));
    expect((await settled(q)).done).toBe(false);
    ac.abort();
    expect((await settled(q)).value).toBeUndefined();
    expect(await settled(q)).toMatchObject({ done: true });
    expect(g.stats.aborted).toBe(1);
    expect(g.size).toBe(0);
  });

  it('the fallback look still runs (deadlines) while calls are held', async () => {
    const ws = [worker('w0', 1)];
    let now = 0;
    const g = gate(ws, policy({}), { max_waiting: 1, max_wait_ms: 10 }, () => now);
    const p = held(g.admit(info('a', 's'), new AbortController().signal));
    now = 50;
    // past max_wait_ms the call spills: it goes on as at arrival (to any worker: undefined), not refused
    const out = await new Promise<unknown>((r) => {
      p.then(
        (v) => r({ released: v }),
        (e: unknown) => r({ refused: e }),
      );
      setTimeout(() => r('still held'), PUMP_FALLBACK_MS * 5);
    });
    expect(out).toEqual({ released: undefined });
    expect(g.stats).toMatchObject({ queued: 1, spilledDeadline: 1, released: 0 });
    expect(g.size).toBe(0);
  });

  it("a full queue with one tenant spills (the tenant's oldest goes on as at arrival); with several it refuses by share", async () => {
    const ws = [worker('w0', 1)]; // full: every call is held
    const g = gate(ws, policy({}), { max_waiting: 1, max_queued: 3, max_queued_per_tenant: 2 });
    const a1 = held(g.admit(info('a', 'a1'), new AbortController().signal));
    const a2 = held(g.admit(info('a', 'a2'), new AbortController().signal));
    expect(await settled(a1)).toEqual({ done: false });
    // a alone, its share (2) full: a1 spills (any worker), a3 is held
    const a3 = held(g.admit(info('a', 'a3'), new AbortController().signal));
    expect(await settled(a1)).toEqual({ done: true, value: undefined });
    expect(await settled(a2)).toEqual({ done: false });
    const b1 = held(g.admit(info('b', 'b1'), new AbortController().signal));
    expect(g.size).toBe(3);
    // the total (3) full, b holding calls: c holds nothing, a holds 2 = 0 + 2: a's newest (a3) is
    // refused 429, c1 is held
    const c1 = held(g.admit(info('c', 'c1'), new AbortController().signal));
    const r3 = await settled(a3);
    expect(r3.done).toBe(true);
    expect(r3.err).toMatchObject({ code: 'tenant_admission_queue_full', status: 429 });
    expect(g.size).toBe(3);
    // full again, each tenant holding 1: the newcomer is refused 503 (nobody holds 2 more)
    const a4 = held(g.admit(info('a', 'a4'), new AbortController().signal));
    expect((await settled(a4)).err).toMatchObject({ code: 'admission_queue_full', status: 503 });
    expect(g.stats).toMatchObject({ queued: 5, spilledFull: 1, refused: 2, released: 0 });
    // the held ones leave in turn when the worker frees: a2, b1, c1
    ws[0].engine = { waiting: 0, running: 0 };
    const order: string[] = [];
    for (const [name, p] of [
      ['a2', a2],
      ['b1', b1],
      ['c1', c1],
    ] as const)
      void p.then(() => order.push(name));
    for (let i = 0; i < 3; i++) {
      g.wake();
      await turn();
      await turn();
    }
    expect(order).toEqual(['a2', 'b1', 'c1']);
    expect(g.size).toBe(0);
  });

  it("a flooding tenant's spills never keep another tenant's held call waiting (review s30 F9): over its share it is refused while others hold calls", async () => {
    // one worker, one call at a time; its engine queue is what the gate sent and did not finish
    const w = worker('w0', 0);
    const engine: string[] = [];
    const sync = () => {
      w.engine = { waiting: engine.length, running: 1 };
    };
    sync();
    const g = new AdmissionGate(
      'm',
      () => [{ view: () => w }],
      policy({}),
      { max_waiting: 2, max_queued: 64, max_queued_per_tenant: 4, locality_wait_ms: 0 },
      () => 0,
    );
    gates.push(g);
    const outcome: Record<string, string> = {};
    const sent: string[] = [];
    let sentBeforeB = -1;
    const arrive = (id: string, tenant: string) => {
      const r = g.admit(info(tenant, id), new AbortController().signal);
      const send = () => {
        sent.push(id);
        engine.push(id);
        sync();
      };
      if (r instanceof Promise)
        r.then(send, (e: { code: string }) => {
          outcome[id] = e.code;
        });
      else send();
    };
    // a floods: 3 calls per tick, the engine finishes one per tick; b sends one call at tick 5
    for (let t = 0; t < 60; t++) {
      engine.shift();
      sync();
      if (t === 5) {
        // what a spilled before is in `sent` already (the last tick's turns ran its sends)
        sentBeforeB = sent.length;
        arrive('b', 'b');
      }
      for (let k = 0; k < 3; k++) arrive(`a${t}-${k}`, 'a');
      g.pump();
      await turn();
      await turn();
    }
    // b was sent (the clock stands still: no deadline spill), and of the calls sent after it
    // arrived only a's oldest held one went before it (per-tenant round robin)
    expect(sent).toContain('b');
    const between = sent.slice(sentBeforeB, sent.indexOf('b'));
    expect(between.length).toBeLessThanOrEqual(1);
    // meanwhile a's calls beyond its share were refused 429, not spilled into the engine
    const refusedA = Object.entries(outcome).filter(
      ([id, c]) => id.startsWith('a') && c === 'tenant_admission_queue_full',
    );
    expect(refusedA.length).toBeGreaterThan(0);
    expect(g.stats.refused).toBe(refusedA.length);
    expect(outcome.b).toBeUndefined();
  });

  it("another tenant's sequential session does better than under arrival dispatch while one tenant floods (review s30 F9, several workers, deadlines running)", async () => {
    // 4 workers, each finishing one call per 100 ms tick (FIFO engine queue); tenant a sends 12 calls
    // per tick (3x what the fleet serves); tenant b runs a session from tick 20: its next call when
    // its last is done. The same model without the gate is arrival dispatch. Counts of virtual ticks,
    // no wall time.
    const model = async (withGate: boolean) => {
      let t = 0;
      const engines: string[][] = [[], [], [], []];
      const ws = engines.map((_, i) => worker(`w${i}`, 0));
      const sync = () =>
        ws.forEach((w, i) => {
          w.engine = { waiting: engines[i].length, running: 1 };
        });
      const waiting = (w: WorkerView) => w.engine?.waiting ?? 0;
      const least = (vs: WorkerView[]) => vs.reduce((m, w) => (waiting(w) < waiting(m) ? w : m));
      const leastPolicy = { name: 'least', select: (vs: WorkerView[]) => ({ worker: least(vs), branch: 'least' }) };
      const g = withGate
        ? new AdmissionGate(
            'm',
            () => ws.map((w) => ({ view: () => w })),
            leastPolicy as unknown as Policy,
            { max_waiting: 2, max_queued: 64, max_queued_per_tenant: 8, max_wait_ms: 6_000, locality_wait_ms: 0 },
            () => t * 100,
          )
        : undefined;
      if (g) gates.push(g);
      const send = (id: string) => {
        engines[ws.indexOf(least(ws))].push(id);
        sync();
      };
      const arrive = (id: string, tenant: string) => {
        const r = g?.admit(info(tenant, id), new AbortController().signal);
        if (r instanceof Promise)
          r.then(
            () => send(id),
            () => {},
          );
        else send(id);
      };
      const latency: number[] = [];
      let bAt = -1;
      let bPending = false;
      for (t = 0; t < 200; t++) {
        for (const e of engines)
          if (e.shift()?.startsWith('b')) {
            latency.push(t - bAt);
            bPending = false;
          }
        sync();
        for (let k = 0; k < 12; k++) arrive(`a${t}-${k}`, 'a');
        if (t >= 20 && !bPending) {
          bPending = true;
          bAt = t;
          arrive(`b${t}`, 'b');
        }
        g?.pump();
        await turn();
        await turn();
      }
      return { latency, refused: g?.stats.refused ?? 0 };
    };
    const gated = await model(true);
    const arrival = await model(false);
    const mean = (xs: number[]) => xs.reduce((x, y) => x + y, 0) / xs.length;
    // arrival dispatch: b's calls queue behind a's whole backlog, which grows every tick
    expect(arrival.latency.length).toBeGreaterThan(0);
    // the gate: b's calls are served many times over, each quicker on average than at arrival, and
    // none slower than arrival's slowest; a's excess was refused, not spilled into the engines
    expect(gated.latency.length).toBeGreaterThan(5 * arrival.latency.length);
    expect(mean(gated.latency)).toBeLessThan(mean(arrival.latency) / 4);
    expect(Math.max(...gated.latency)).toBeLessThanOrEqual(Math.max(...arrival.latency));
    expect(gated.refused).toBeGreaterThan(0);
  });

  it("counts as waiting at an engine only its calls without a first byte that the engine's prefill does not cover: an answered call still in flight (a slow reader, a store) never counts (review s35 F5)", () => {
    // max_waiting 1 here; the engine reports nothing waiting
    const admitWith = (inFlight: number, awaitingFirstByte: number | undefined, running: number) => {
      const w = { ...worker('w0', 0), inFlight, awaitingFirstByte, engine: { waiting: 0, running } };
      const a = make([w]).admit(info('a', 's1'), new AbortController().signal);
      // a held call is answered 'test over' when its gate closes after the test
      if (a instanceof Promise) a.catch(() => undefined);
      return a;
    };
    // two answered streams the engine finished, still relayed to a client that does not read
    expect(admitWith(2, 0, 0)).not.toBeInstanceOf(Promise);
    // one sent since the scrape, not yet answering: waiting there until the engine says otherwise
    expect(admitWith(2, 1, 0)).toBeInstanceOf(Promise);
    // two answering and running, one more running in prefill: that one covers the call sent
    expect(admitWith(3, 1, 3)).not.toBeInstanceOf(Promise);
    // two answering and running, nothing in prefill: the call sent is not covered
    expect(admitWith(3, 1, 2)).toBeInstanceOf(Promise);
    // a view without the count: every call in flight beyond the running ones counts, as before
    expect(admitWith(1, undefined, 0)).toBeInstanceOf(Promise);
    expect(admitWith(1, undefined, 1)).not.toBeInstanceOf(Promise);
  });

  it('a call whose client already left is never held (an abort listener added now would never fire)', async () => {
    const ws = [worker('w0', 1)];
    const g = make(ws);
    const ac = new AbortController();
    ac.abort();
    const p = g.admit(info('a', 's1'), ac.signal);
    // answered now (routing sees the abort and ends it): not queued, not counted toward the tenant
    expect(await settled(Promise.resolve(p))).toEqual({ done: true, value: undefined });
    expect(g.size).toBe(0);
    expect(g.stats).toMatchObject({ aborted: 1, queued: 0 });
  });

  it('nothing held: a call goes at once among the workers that can admit it, not any worker with room', () => {
    const ws = [worker('w0', 1), worker('w1', 0), worker('w2', 0)];
    const g = make(ws);
    expect(g.admit(info('a', 's'), new AbortController().signal)).toEqual(['w1', 'w2']);
    expect(g.stats.passed).toBe(1);
  });

  it('a client that leaves while held is out of the queue at once, the others keep their place', async () => {
    const ws = [worker('w0', 1)];
    const g = make(ws);
    const ac = new AbortController();
    const p = held(g.admit(info('a', 's1'), ac.signal));
    const q = held(g.admit(info('a', 's2'), new AbortController().signal));
    expect(g.size).toBe(2);
    ac.abort();
    // no look needed (no queue scan per abort): gone before this turn ends
    expect(g.size).toBe(1);
    expect(g.stats.aborted).toBe(1);
    expect(await settled(p)).toMatchObject({ done: true, value: undefined });
    ws[0].engine = { waiting: 0, running: 0 };
    g.wake();
    expect((await settled(q)).value).toEqual(['w0']);
    expect(g.stats.aborted).toBe(1);
  });
});

describe('config: dispatch admission', () => {
  const model = (over: Record<string, unknown>) => ({
    models: [{ name: 'm', workers: [{ url: 'http://127.0.0.1:1' }], dispatch: 'admission', ...over }],
  });

  it('needs scrape_metrics_ms (without engine signals every worker looks able and nothing is held)', () => {
    expect(() => parseConfig(model({ scrape_metrics_ms: 0 }))).toThrow(
      /models\[0\]\.scrape_metrics_ms: dispatch admission needs the engine signals/,
    );
    expect(parseConfig(model({ scrape_metrics_ms: 500 })).models[0].dispatch).toBe('admission');
  });

  it('is refused in front of SGLang engines (their own prefix-ordered queue does better unheld)', () => {
    expect(() => parseConfig(model({ scrape_metrics_ms: 500, flavor: 'sglang' }))).toThrow(
      /models\[0\]\.dispatch: admission is for vLLM engines/,
    );
    expect(parseConfig(model({ scrape_metrics_ms: 500, flavor: 'vllm' })).models[0].dispatch).toBe('admission');
    expect(
      parseConfig({ models: [{ name: 'm', workers: [{ url: 'http://127.0.0.1:1' }], flavor: 'sglang' }] }).models[0]
        .dispatch,
    ).toBe('arrival');
  });
});
