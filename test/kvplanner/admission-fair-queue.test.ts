// The gateway-side queue of late binding: per-tenant round robin, each tenant's calls in order,
// bounds that never refuse (the newcomer is held, the oldest of a fair choice spills), deadlines that hand calls back, and a look past busy calls
// (takeFirst) that keeps the passed-over ones in place. Plus the worker check (canAdmit).
import { describe, expect, it } from 'vitest';
import { ADMISSION_DEFAULTS } from '../../kvplanner/admission/admission-defaults.ts';
import { admissibleWorkers, canAdmit } from '../../kvplanner/admission/can-admit.ts';
import { FairQueue } from '../../kvplanner/admission/fair-queue.ts';
import { releaseSlackMs, sizeClassTokens } from '../../kvplanner/admission/release-order.ts';
import { mulberry32 } from '../../kvplanner/rng.ts';
import type { WorkerView } from '../../kvplanner/types.ts';

const open = { maxQueued: 100, maxPerTenant: 100, maxWaitMs: Infinity };

describe('FairQueue', () => {
  it('serves tenants in turn, each tenant in arrival order', () => {
    const q = new FairQueue<string>(open);
    for (const x of ['a1', 'a2', 'a3', 'a4']) q.push('a', x, 0);
    q.push('b', 'b1', 1);
    q.push('c', 'c1', 2);
    q.push('b', 'b2', 3);
    expect(q.size).toBe(7);
    expect(q.peek()).toBe('a1');
    expect(q.drain()).toEqual(['a1', 'b1', 'c1', 'a2', 'b2', 'a3', 'a4']);
    expect(q.size).toBe(0);
    expect(q.shift()).toBeUndefined();
  });

  it('never refuses: beyond a bound it holds the newcomer and spills the oldest (the tenant, or a tenant holding 2 more)', () => {
    const q = new FairQueue<string>({ maxQueued: 5, maxPerTenant: 3, maxWaitMs: Infinity });
    expect(q.push('a', 'a1', 0)).toBeUndefined();
    expect(q.push('a', 'a2', 0)).toBeUndefined();
    expect(q.push('a', 'a3', 0)).toBeUndefined();
    // a's share full: a's oldest spills, the newcomer is held
    expect(q.push('a', 'a4', 0)).toBe('a1');
    expect(q.sizeOf('a')).toBe(3);
    expect(q.push('b', 'b1', 0)).toBeUndefined();
    expect(q.push('b', 'b2', 0)).toBeUndefined();
    expect(q.size).toBe(5);
    // the total full: c holds nothing, a holds 3 >= 0 + 2: a's oldest spills, c is held
    expect(q.push('c', 'c1', 0)).toBe('a2');
    // c holds 1, a 2, b 2: nobody holds 2 more than c: c's own oldest spills
    expect(q.push('c', 'c2', 0)).toBe('c1');
    // b holds 2, nobody 4: b's own oldest
    expect(q.push('b', 'b3', 0)).toBe('b1');
    expect(q.size).toBe(5);
    expect(q.drain()).toEqual(['a3', 'b2', 'c2', 'a4', 'b3']);
    // no call can be held at all: the newcomer itself comes back
    const none = new FairQueue<string>({ maxQueued: 0, maxPerTenant: 3, maxWaitMs: Infinity });
    expect(none.push('a', 'x', 0)).toBe('x');
    expect(none.size).toBe(0);
    const one = new FairQueue<string>({ maxQueued: 1, maxPerTenant: 1, maxWaitMs: Infinity });
    expect(one.push('a', 'x', 0)).toBeUndefined();
    expect(one.push('b', 'y', 0)).toBe('y'); // a holds 1, not 2 more than b: nothing to spill for b
    expect(one.drain()).toEqual(['x']);
  });

  it('roomFor (review s30 F9): no say for one tenant alone; with others holding, refuses by share and takes the newest of a tenant holding 2 more', () => {
    const q = new FairQueue<string>({ maxQueued: 5, maxPerTenant: 3, maxWaitMs: Infinity });
    for (const x of ['a1', 'a2', 'a3']) {
      expect(q.roomFor('a')).toBeUndefined();
      q.push('a', x, 0);
    }
    // a alone at its share: push spills a's oldest, roomFor does not refuse
    expect(q.roomFor('a')).toBeUndefined();
    expect(q.push('b', 'b1', 0)).toBeUndefined();
    // b holds a call: a at its share is refused, b below its share is not
    expect(q.roomFor('a')).toEqual({ refuse: 'tenant_full' });
    expect(q.roomFor('b')).toBeUndefined();
    q.push('b', 'b2', 0);
    // the total full: c holds nothing, a holds 3 >= 0 + 2: a's newest is taken out, its older keep their places
    expect(q.roomFor('c')).toEqual({ evicted: 'a3', tenant: 'a' });
    expect(q.size).toBe(4);
    expect(q.push('c', 'c1', 0)).toBeUndefined();
    // full again: a 2, b 2, c 1: nobody holds 2 more than c or b: the newcomer is refused
    expect(q.roomFor('c')).toEqual({ refuse: 'queue_full' });
    expect(q.roomFor('b')).toEqual({ refuse: 'queue_full' });
    expect(q.size).toBe(5);
    expect(q.drain()).toEqual(['a1', 'b1', 'c1', 'a2', 'b2']);
  });

  it('hands back the calls past their deadline, and only those', () => {
    const q = new FairQueue<string>({ maxQueued: 10, maxPerTenant: 10, maxWaitMs: 100 });
    q.push('a', 'a0', 0);
    q.push('b', 'b0', 10);
    q.push('a', 'a50', 50);
    q.push('b', 'b200', 200);
    expect(q.expire(100)).toEqual([]);
    expect(q.expire(111)).toEqual(['a0', 'b0']);
    expect(q.size).toBe(2);
    expect(q.expire(151)).toEqual(['a50']);
    expect(q.drain()).toEqual(['b200']);
  });

  it('takeFirst takes the first call accepted within the window; the passed-over keep their place', () => {
    const q = new FairQueue<number>(open);
    for (let i = 0; i < 6; i++) q.push('a', i, i * 10);
    q.push('b', 100, 0);
    const waits: number[] = [];
    expect(
      q.takeFirst(
        (x, waited) => {
          waits.push(waited);
          return x === 3;
        },
        70,
        4,
      ),
    ).toBe(3);
    expect(waits).toEqual([70, 60, 50, 40]); // a0..a3, in order, with how long each had waited
    // tenant a went to the back of the round after its take: tenant b is looked at first
    expect(q.takeFirst((x) => x === 5 || x === 100, 70, 3)).toBe(100);
    expect(q.takeFirst(() => false, 70, 10)).toBeUndefined();
    expect(q.drain()).toEqual([0, 1, 2, 4, 5]);
  });

  it('takeFirst serves tenants in turn when every call is acceptable (a, b, a, b)', () => {
    const q = new FairQueue<string>(open);
    for (const x of ['a1', 'a2', 'a3']) q.push('a', x, 0);
    for (const x of ['b1', 'b2', 'b3']) q.push('b', x, 0);
    const out: string[] = [];
    for (let x = q.takeFirst(() => true, 0, 4); x !== undefined; x = q.takeFirst(() => true, 0, 4)) out.push(x);
    expect(out).toEqual(['a1', 'b1', 'a2', 'b2', 'a3', 'b3']);
  });

  it('takeFirst: a tenant whose head is passed over but a later call taken goes to the back of the round', () => {
    const q = new FairQueue<string>(open);
    for (const x of ['a1', 'a2', 'a3']) q.push('a', x, 0);
    for (const x of ['b1', 'b2']) q.push('b', x, 0);
    // a1's holder is busy: a2 is taken instead, and tenant a has had its turn
    expect(q.takeFirst((x) => x !== 'a1', 0, 4)).toBe('a2');
    expect(q.takeFirst(() => true, 0, 4)).toBe('b1');
    expect(q.takeFirst(() => true, 0, 4)).toBe('a1');
    expect(q.drain()).toEqual(['b2', 'a3']);
  });

  it('matches a naive reference (per-tenant release order, tenant round robin, bounds, roomFor, expire, takeFirst) on random operations', () => {
    // each tenant's calls leave by key = arrival + slack (ties: arrival); spills and deadlines go
    // by arrival (oldest / newest). Even seeds push with no slack (arrival order, as before).
    // Seeds 3, 7, 11, ...: msPerHeld caps each slack, at each release, at msPerHeld × the calls its
    // tenant holds then (the reference re-sorts by arrival + min(slack, cap)).
    // Seeds 5, 11, 17, ...: slackPerDrain caps it also at k × the tenant's held calls × the tenants
    // in the round × the running mean interval between releases (arrival order until one interval
    // is known).
    type It = { id: number; at: number; key: number };
    const byKey = (a: It, b: It): number => a.key - b.key || a.id - b.id;
    const oldestOf = (pq: It[]): It => pq.reduce((m, x) => (x.id < m.id ? x : m));
    const newestOf = (pq: It[]): It => pq.reduce((m, x) => (x.id > m.id ? x : m));
    const takeOut = (pq: It[], x: It): It => pq.splice(pq.indexOf(x), 1)[0];
    // plain comparisons (one expect per step costs seconds over 90,000 steps)
    const diffs: string[] = [];
    const check = <V>(got: V, want: V, where: string): void => {
      if (got !== want) diffs.push(`${where}: ${String(got)} want ${String(want)}`);
    };
    for (let seed = 1; seed <= 60; seed++) {
      const rnd = mulberry32(seed);
      const lim = {
        maxQueued: 1 + Math.floor(rnd() * 40),
        maxPerTenant: 1 + Math.floor(rnd() * 15),
        maxWaitMs: 50 + Math.floor(rnd() * 200),
      };
      const msPerHeld = seed % 4 === 3 ? 1 + Math.floor(rnd() * 40) : 0;
      const slackPerDrain = seed % 6 === 5 ? 0.5 + rnd() * 8 : 0;
      const q = new FairQueue<It>({ ...lim, msPerHeld, slackPerDrain });
      const maxSlack = seed % 2 === 0 ? 0 : 1 + Math.floor(rnd() * 300);
      // the drain bound's clock: the mean interval between releases while calls were held
      let interval = Number.NaN;
      let lastRelease = Number.NEGATIVE_INFINITY;
      const drainCap = (held: number): number =>
        slackPerDrain === 0 ? Infinity : Number.isNaN(interval) ? 0 : slackPerDrain * held * order.length * interval;
      const releasedAt = (t: number): void => {
        const gap = Math.max(0, t - lastRelease);
        if (Number.isFinite(gap)) interval = Number.isNaN(interval) ? gap : interval + (gap - interval) * (1 / 32);
        lastRelease = Math.max(lastRelease, t);
      };
      // a tenant's calls in release order now
      const released = (pq: It[]): It[] => {
        if (msPerHeld === 0 && slackPerDrain === 0) return pq;
        const cap = Math.min(drainCap(pq.length), msPerHeld === 0 ? Infinity : msPerHeld * pq.length);
        const eff = (x: It): number => x.at + Math.min(x.key - x.at, cap);
        return [...pq].sort((a, b) => eff(a) - eff(b) || a.id - b.id);
      };
      const per = new Map<string, It[]>();
      const order: string[] = [];
      let total = 0;
      let now = 0;
      let id = 0;
      const served = (t: string, pq: It[]): void => {
        if (pq.length > 0) order.push(t);
        else per.delete(t);
      };
      for (let step = 0; step < 1500; step++) {
        now += Math.floor(rnd() * 5);
        const op = rnd();
        if (op < 0.5) {
          const t = `t${Math.floor(rnd() * 5)}`;
          const slack = maxSlack === 0 ? 0 : Math.floor(rnd() * maxSlack);
          const it = { id: id++, at: now, key: now + slack };
          let own = per.get(t)?.length ?? 0;
          // half the pushes go as the gate sends them: roomFor first (review s30 F9). With another
          // tenant holding calls: the tenant at its share is refused; a full total takes the newest
          // of the first tenant (in round order) holding the most if that is >= own + 2, else the
          // newcomer is refused; one tenant alone: no say (push spills)
          if (rnd() < 0.5) {
            let wantRoom = 'none';
            if (order.some((u) => u !== t)) {
              if (own >= lim.maxPerTenant) wantRoom = 'tenant_full';
              else if (total >= lim.maxQueued) {
                let top = t;
                for (const u of order) if (per.get(u)!.length > (per.get(top)?.length ?? 0)) top = u;
                if ((per.get(top)?.length ?? 0) < own + 2) wantRoom = 'queue_full';
                else {
                  const vq = per.get(top)!;
                  wantRoom = `${top}:${takeOut(vq, newestOf(vq)).id}`;
                  total--;
                  if (vq.length === 0) {
                    per.delete(top);
                    order.splice(order.indexOf(top), 1);
                  }
                }
              }
            }
            const room = q.roomFor(t);
            const gotRoom =
              room === undefined ? 'none' : 'refuse' in room ? room.refuse : `${room.tenant}:${room.evicted.id}`;
            check(gotRoom, wantRoom, `seed ${seed} step ${step} roomFor`);
            if (wantRoom === 'tenant_full' || wantRoom === 'queue_full') {
              check(q.size, total, `seed ${seed} step ${step} size`);
              continue;
            }
            own = per.get(t)?.length ?? 0;
          }
          // the spill rule: the tenant's oldest at its share; the total full: the oldest of the
          // first tenant (in round order) holding the most if that is >= own + 2, else own oldest
          let victim: string | undefined;
          let want: It | undefined;
          if (own >= lim.maxPerTenant) victim = t;
          else if (total >= lim.maxQueued) {
            let top = t;
            for (const u of order) if (per.get(u)!.length > (per.get(top)?.length ?? 0)) top = u;
            if ((per.get(top)?.length ?? 0) >= own + 2) victim = top;
            else if (own > 0) victim = t;
            else want = it;
          }
          if (victim !== undefined) {
            const vq = per.get(victim)!;
            want = takeOut(vq, oldestOf(vq));
            total--;
            if (vq.length === 0) {
              per.delete(victim);
              order.splice(order.indexOf(victim), 1);
            }
          }
          if (want !== it) {
            if (total === 0) lastRelease = Math.max(lastRelease, now);
            const pq = per.get(t);
            if (pq) {
              pq.push(it);
              pq.sort(byKey);
            } else {
              per.set(t, [it]);
              order.push(t);
            }
            total++;
          }
          check(q.push(t, it, now, slack)?.id, want?.id, `seed ${seed} step ${step} push`);
        } else if (op < 0.7) {
          const t = order[0];
          let want: It | undefined;
          if (t !== undefined) {
            const pq = per.get(t)!;
            want = takeOut(pq, released(pq)[0]); // the round still counts this tenant
            order.shift();
            releasedAt(now);
            total--;
            served(t, pq);
          }
          check(q.shift(now)?.id, want?.id, `seed ${seed} step ${step} shift`);
        } else if (op < 0.85) {
          const win = 1 + Math.floor(rnd() * 4);
          const mod = 2 + Math.floor(rnd() * 3);
          const acc = (x: It): boolean => x.id % mod === 0;
          let want: It | undefined;
          search: for (let k = 0; k < order.length; k++) {
            const t = order[k];
            const pq = per.get(t)!;
            const rel = released(pq);
            for (let i = 0; i < Math.min(win, rel.length); i++) {
              if (!acc(rel[i])) continue;
              releasedAt(now);
              want = takeOut(pq, rel[i]);
              total--;
              order.splice(k, 1);
              served(t, pq);
              break search;
            }
          }
          check(q.takeFirst(acc, now, win)?.id, want?.id, `seed ${seed} step ${step} takeFirst`);
        } else {
          const want: number[] = [];
          for (let k = 0; k < order.length; ) {
            const t = order[k];
            const pq = per.get(t)!;
            while (pq.length > 0 && oldestOf(pq).at + lim.maxWaitMs < now) {
              want.push(takeOut(pq, oldestOf(pq)).id);
              total--;
            }
            if (pq.length === 0) {
              per.delete(t);
              order.splice(k, 1);
            } else k++;
          }
          check(
            q
              .expire(now)
              .map((x) => x.id)
              .join(),
            want.join(),
            `seed ${seed} step ${step} expire`,
          );
        }
        check(q.size, total, `seed ${seed} step ${step} size`);
      }
    }
    expect(diffs.slice(0, 5)).toEqual([]);
  });

  it("the drain bound: a call whose cache was lost (a big slack) is not overtaken for long by a steady stream of cheap ones (bench chaos's hung calls in miniature)", () => {
    // one cheap call (slack 100 ms) arrives and one call leaves every 5 ms, 8 held: arrival order
    // makes a call wait ~40 ms. At 100 ms a call with a 400 s slack arrives (10k uncached tokens at
    // 40 ms per token).
    const waitOfBig = (slackPerDrain: number): number => {
      const q = new FairQueue<string>({ ...open, msPerHeld: 0, slackPerDrain });
      for (let i = 0; i < 8; i++) q.push('a', `c${i}`, 0, 100);
      for (let t = 5; t <= 600_000; t += 5) {
        q.push('a', `c${t}`, t, 100);
        if (t === 100) q.push('a', 'big', t, 400_000);
        if (q.shift(t) === 'big') return t - 100;
      }
      return Infinity;
    };
    // no drain bound: every cheap call that arrives up to 400 s after it goes first
    expect(waitOfBig(0)).toBeGreaterThan(399_000);
    // k 16: 16 × 9 held × 5 ms = 720 ms, so the cheap calls overtake it for under a second (not
    // for none: the order still works); k 1: about arrival order's wait
    const w16 = waitOfBig(16);
    expect(w16).toBeGreaterThan(500);
    expect(w16).toBeLessThan(1_000);
    expect(waitOfBig(1)).toBeLessThan(150);
  });

  it("the drain bound is each tenant's own (review s32 F3): another tenant's backlog does not loosen its order", () => {
    // One release every 50 ms, tenants in turn. Tenant b: 8 held, closed loop, cheap calls (slack
    // 400 ms); at release 2,000 a b call with an 80 s slack (its cache lost). Tenant a holds
    // `aHeld` (refilled as served). Arrival order makes b's newcomer wait ~8 b calls × 2 turns ×
    // 50 ms = 0.8 s whatever a holds; k 16 lets it be overtaken for ~16 × that, not for its 80 s.
    const waitOfBig = (aHeld: number): number => {
      const q = new FairQueue<{ id: string; t: string }>({
        maxQueued: 4096,
        maxPerTenant: 2048,
        maxWaitMs: 1_800_000,
        msPerHeld: 0,
        slackPerDrain: 16,
      });
      let t = 0;
      let n = 0;
      for (let i = 0; i < 8; i++) q.push('b', { id: `b${n++}`, t: 'b' }, t, 400);
      for (let i = 0; i < aHeld; i++) q.push('a', { id: `a${n++}`, t: 'a' }, t, 400);
      let bigAt = -1;
      for (let i = 0; i < 200_000; i++) {
        t += 50;
        const got = q.shift(t);
        if (got?.id === 'big') return t - bigAt;
        if (got) q.push(got.t, { id: `${got.t}${n++}`, t: got.t }, t, 400);
        if (i === 2000) {
          bigAt = t;
          q.push('b', { id: 'big', t: 'b' }, t, 80_000);
        }
      }
      return Infinity;
    };
    const alone = waitOfBig(0); // 16 × 9 × 50 ms = 7.2 s
    expect(alone).toBeGreaterThan(3_000);
    expect(alone).toBeLessThan(10_000);
    // with a neighbour: 16 × 9 held × 2 tenants × 50 ms = 14.4 s, whatever the neighbour holds (a
    // global cap, 16 × all held × 50 ms, let a's 100 or 1,000 held calls hold b's call its whole 80 s)
    for (const aHeld of [8, 100, 1000]) {
      const w = waitOfBig(aHeld);
      expect(w, `a holds ${aHeld}`).toBeGreaterThan(3_000);
      expect(w, `a holds ${aHeld}`).toBeLessThan(20_000);
    }
  });

  it('remove takes one call out (a client that left), keeping the others in order; othersWaiting', () => {
    const q = new FairQueue<string>(open);
    expect(q.othersWaiting('a')).toBe(false);
    for (const x of ['a1', 'a2']) q.push('a', x, 0);
    expect(q.othersWaiting('a')).toBe(false);
    expect(q.othersWaiting('b')).toBe(true);
    q.push('b', 'b1', 0);
    expect(q.othersWaiting('a')).toBe(true);
    expect(q.remove('a', 'a1')).toBe(true);
    expect(q.remove('a', 'a1')).toBe(false);
    expect(q.remove('b', 'a2')).toBe(false);
    expect(q.remove('b', 'b1')).toBe(true); // its last call: the tenant leaves the round
    expect(q.othersWaiting('a')).toBe(false);
    expect(q.size).toBe(1);
    q.push('b', 'b2', 0);
    expect(q.drain()).toEqual(['a2', 'b2']);
  });

  it('heldBasis: the held call whose prompt a newcomer extends furthest, of its own tenant, while held; a newcomer with it as its floor never leaves before it (review s35 F2)', () => {
    const q = new FairQueue<string>(open);
    // chain hashes h1, h2, … (a chain hash names its whole prefix): hN ends an N-block chain
    const chain = (end: string, tokens: number, notBeforeKey = Number.NEGATIVE_INFINITY) => ({
      end,
      blocks: Number(end.slice(1)),
      tokens,
      notBeforeKey,
    });
    // turn 1 of a conversation: 3 blocks, key 0 + 500 s
    q.push('a', 't1', 0, 500_000, chain('h3', 1_600));
    const turn2 = ['h1', 'h2', 'h3', 'h4', 'h5'];
    expect(q.heldBasis('a', turn2, 0)).toEqual({ tokens: 1_600, key: 500_000 });
    // only prefixes ending at fromBlock or later; only the tenant's own calls
    expect(q.heldBasis('a', turn2, 3)).toBeUndefined();
    expect(q.heldBasis('b', turn2, 0)).toBeUndefined();
    // a chain that shares blocks but not turn 1's whole prompt is no extension of it
    expect(q.heldBasis('a', ['h1', 'h2', 'x3', 'x4'], 0)).toBeUndefined();
    // turn 2 (own slack 20 s) with turn 1's key as its floor, then an unrelated call (slack 100 s)
    q.push('a', 't2', 10_000, 20_000, chain('h5', 2_600, 500_000));
    q.push('a', 'u', 20_000, 100_000);
    // the longest held prefix wins: turn 2's
    expect(q.heldBasis('a', [...turn2, 'h6'], 0)).toEqual({ tokens: 2_600, key: 500_000 });
    expect(q.drain()).toEqual(['u', 't1', 't2']);
    // gone with the calls that left
    expect(q.heldBasis('a', [...turn2, 'h6'], 0)).toBeUndefined();
    // two held calls with one prompt: it stays known until both have left
    q.push('a', 'd1', 0, 0, chain('h3', 1_600));
    q.push('a', 'd2', 0, 0, chain('h3', 1_600));
    expect(q.remove('a', 'd1')).toBe(true);
    expect(q.heldBasis('a', turn2, 0)?.tokens).toBe(1_600);
    expect(q.shift()).toBe('d2');
    expect(q.heldBasis('a', turn2, 0)).toBeUndefined();
  });

  it("heldBasis (review s36 F2): when the later-keyed of two held calls with one prompt leaves first, the floor falls back to the survivor's key", () => {
    const q = new FairQueue<string>(open);
    const chain = { end: 'h3', blocks: 3, tokens: 2_048, notBeforeKey: Number.NEGATIVE_INFINITY };
    const next = ['h1', 'h2', 'h3', 'h4'];
    q.push('t', 'A', 0, 10_000, chain); // key 10 s
    q.push('t', 'B', 1_000, 50_000, chain); // the same prompt, key 51 s
    expect(q.heldBasis('t', next, 0)).toEqual({ tokens: 2_048, key: 51_000 });
    expect(q.remove('t', 'B')).toBe(true); // B's client left
    expect(q.heldBasis('t', next, 0)).toEqual({ tokens: 2_048, key: 10_000 });
    q.push('t', 'C', 2_000, 5_000, chain); // key 7 s: A's 10 s stays the latest held
    expect(q.heldBasis('t', next, 0)?.key).toBe(10_000);
    expect(q.remove('t', 'A')).toBe(true);
    expect(q.heldBasis('t', next, 0)?.key).toBe(7_000);
  });

  it('heldBasis finds the longest held prefix whichever way it looks (by held chain lengths or down the chain), as a scan of every held call does', () => {
    const rnd = mulberry32(7);
    const q = new FairQueue<number>(open);
    // chains: prefixes of 4 conversations; a chain hash names conversation and length
    const chainOf = (c: number, n: number) => Array.from({ length: n }, (_, i) => `c${c}-${i + 1}`);
    const held = new Map<number, { c: number; n: number; key: number }>();
    let id = 0;
    for (let step = 0; step < 3_000; step++) {
      if (held.size > 0 && rnd() < 0.45) {
        const x = q.shift()!;
        expect(held.delete(x)).toBe(true);
        continue;
      }
      // a client that left: any held call, the later-keyed of two duplicates too (review s36 F2)
      if (held.size > 0 && rnd() < 0.15) {
        const ids = [...held.keys()];
        const x = ids[Math.floor(rnd() * ids.length)];
        expect(q.remove('a', x)).toBe(true);
        held.delete(x);
        continue;
      }
      const c = Math.floor(rnd() * 4);
      const n = 1 + Math.floor(rnd() * 40);
      const hashes = chainOf(c, n);
      const from = Math.floor(rnd() * n);
      // the scan: the longest held chain of the same conversation with from < its length <= n
      let want: { tokens: number; key: number } | undefined;
      let wantLen = 0;
      for (const h of held.values())
        if (h.c === c && h.n <= n && h.n - 1 >= from && h.n > wantLen) {
          wantLen = h.n;
          let key = Number.NEGATIVE_INFINITY;
          for (const g of held.values()) if (g.c === c && g.n === h.n) key = Math.max(key, g.key);
          want = { tokens: h.n * 100, key };
        }
      expect(q.heldBasis('a', hashes, from)).toEqual(want);
      const key = step * 10 + Math.floor(rnd() * 1_000);
      const spilled = q.push('a', id, step * 10, key - step * 10, {
        end: hashes[n - 1],
        blocks: n,
        tokens: n * 100,
        notBeforeKey: 0,
      });
      held.set(id++, { c, n, key });
      // the tenant's share full (100): its oldest call spilled
      if (spilled !== undefined) expect(held.delete(spilled)).toBe(true);
    }
  });

  it('stays in order over many pushes and shifts (the FIFO compacts)', () => {
    const q = new FairQueue<number>({ maxQueued: 1e6, maxPerTenant: 1e6, maxWaitMs: Infinity });
    const out: number[] = [];
    for (let i = 0; i < 1000; i++) {
      q.push('a', i, i);
      if (i % 3 === 2) out.push(q.shift()!, q.shift()!);
    }
    out.push(...q.drain());
    expect(out).toEqual(Array.from({ length: 1000 }, (_, i) => i));
  });
});

describe('canAdmit', () => {
  const view = (over: Partial<WorkerView>): WorkerView => ({
    id: 'w0',
    url: 'http://w0',
    healthy: true,
    inFlight: 0,
    queuedPrefillTokens: 0,
    maxInFlight: 0,
    ...over,
  });
  const s = { max_waiting: 2, max_kv_usage: 0.9 };

  it('admits below max_waiting and max_kv_usage, never an unhealthy or full worker', () => {
    expect(canAdmit(view({ engine: { waiting: 1, kvUsage: 0.5 } }), s)).toBe(true);
    expect(canAdmit(view({ engine: { waiting: 2, kvUsage: 0.5 } }), s)).toBe(false);
    expect(canAdmit(view({ engine: { waiting: 0, kvUsage: 0.9 } }), s)).toBe(false);
    expect(canAdmit(view({ healthy: false }), s)).toBe(false);
    expect(canAdmit(view({ maxInFlight: 3, inFlight: 3 }), s)).toBe(false);
    expect(canAdmit(view({}), s)).toBe(true); // no engine signals: nothing says no
    const ws = [view({ id: 'a', engine: { waiting: 5 } }), view({ id: 'b', engine: { waiting: 0 } })];
    expect(admissibleWorkers(ws, s).map((w) => w.id)).toEqual(['b']);
  });

  it('defaults are named once and sane', () => {
    expect(ADMISSION_DEFAULTS.max_waiting).toBeGreaterThanOrEqual(1);
    expect(ADMISSION_DEFAULTS.max_kv_usage).toBeLessThanOrEqual(1);
    expect(ADMISSION_DEFAULTS.max_queued_per_tenant).toBeLessThanOrEqual(ADMISSION_DEFAULTS.max_queued);
  });
});

describe('releaseSlackMs', () => {
  const s = { release_ms_per_token: 40, release_max_slack_ms: 1_800_000 };
  it('prices a call by its size class: uncached tokens rounded down to a power of two, so calls within 2× keep arrival order', () => {
    expect([0, 0.5, 1, 2, 3, 1_000, 1_024, 2_047, 2_048].map(sizeClassTokens)).toEqual([
      0, 0, 1, 2, 2, 512, 1_024, 1_024, 2_048,
    ]);
    // two cold prompts of 12k and 16k tokens: one class (arrival order between them); 24k: the next
    expect(releaseSlackMs(12_288, s)).toBe(8_192 * 40);
    expect(releaseSlackMs(16_383, s)).toBe(8_192 * 40);
    expect(releaseSlackMs(24_576, s)).toBe(16_384 * 40);
    // never above the unrounded slack, and still capped
    for (const u of [1, 7, 100, 5_000, 44_999]) expect(releaseSlackMs(u, s)).toBeLessThanOrEqual(u * 40);
    expect(releaseSlackMs(1_000_000, s)).toBe(1_800_000);
    expect(releaseSlackMs(-5, s)).toBe(0);
  });
});
