// bench overhead's slow-call breakdown (loadtest/overhead/slow-calls.ts): a call's wall time laid
// over the gateway's stage laps and GC pauses, clipped to the call's window, no pause counted twice
// (a pause inside a lap is GC, not the lap's stage: said where it fell); and the stage trace that
// feeds it (middleware/perf/stage-timers.ts) keeps laps in order.
import { describe, expect, it } from 'vitest';
import type { StageTrace } from '../../middleware/perf/stage-timers.ts';
import type { GcEvent } from '../../loadtest/overhead/gc-pauses.ts';
import {
  formatGcInSections,
  formatSlowCalls,
  gcInSections,
  slowCallBreakdown,
} from '../../loadtest/overhead/slow-calls.ts';

/** 100 calls of 1 ms, 10 ms apart, each with a 0.1 ms `body_parse` lap (1 ms of CPU to the next
 *  one) and a 0.3 ms `tokens` lap; call 42 takes 8 ms and 7 ms of CPU and holds a 5 ms `ledger`
 *  lap, a 1 ms GC pause inside it and a 2 ms pause outside any lap. */
function run(): { calls: { end: number[]; ms: number[] }; laps: StageTrace; gc: GcEvent[]; callNo: number[] } {
  const t0 = 1.7e12;
  const calls = { end: [] as number[], ms: [] as number[] };
  const laps: StageTrace = { stages: ['tokens', 'ledger', 'body_parse'], stage: [], end: [], ms: [], parseCpu: [] };
  let cpu = 100;
  const gc: GcEvent[] = [];
  const callNo: number[] = [];
  for (let i = 0; i < 100; i++) {
    const start = t0 + i * 10;
    const slow = i === 42;
    const wall = slow ? 8 : 1;
    calls.end.push(start + wall);
    calls.ms.push(wall);
    callNo.push(slow ? 0 : (i % 29) + 1);
    laps.stage.push(2);
    laps.end.push(start + 0.1);
    laps.ms.push(0.1);
    laps.parseCpu.push(cpu);
    cpu += slow ? 7 : 1;
    laps.stage.push(0);
    laps.end.push(start + 0.5);
    laps.ms.push(0.3);
    if (slow) {
      laps.stage.push(1);
      laps.end.push(start + 6);
      laps.ms.push(5);
      gc.push({ start: start + 2, ms: 1, minor: true }, { start: start + 6.5, ms: 2, minor: false });
    }
  }
  return { calls, laps, gc, callNo };
}

describe('bench overhead: what the slowest calls spent their time on', () => {
  it('splits the slowest call into its stages, GC outside them and the rest', () => {
    const { calls, laps, gc, callNo } = run();
    const r = slowCallBreakdown(calls, laps, gc, callNo, 0.01);
    expect(r.slow.calls).toBe(1);
    expect(r.slow.wall_ms).toBe(8);
    // the 5 ms ledger lap holds a 1 ms pause: 4 ms of the ledger's own, 1 ms of GC where it fell
    expect(r.slow.stages.ledger).toBeCloseTo(4, 3);
    expect(r.slow.stages.tokens).toBeCloseTo(0.3, 3);
    expect(r.slow.timed_ms).toBeCloseTo(4.4, 3);
    expect(r.slow.cpu_ms).toBeCloseTo(7, 3);
    expect(r.middle.cpu_ms).toBeCloseTo(1, 3);
    // both pauses are GC: 1 ms inside the lap + the 2 ms one clipped at the call's end (6.5 → 8)
    expect(r.slow.gc_ms).toBeCloseTo(2.5, 3);
    expect(r.slow.gc_in).toEqual({ ledger: expect.closeTo(1, 3) });
    expect(r.slow.gc_pauses).toBe(2);
    // of them, the scavenge (the 1 ms one) and the mark-compact's clipped 1.5 ms, apart
    expect(r.slow.gc_scavenges).toBe(1);
    expect(r.slow.gc_scavenge_ms).toBeCloseTo(1, 3);
    expect(r.middle.gc_scavenges).toBe(0);
    expect(r.slow.other_ms).toBeCloseTo(8 - 4.4 - 2.5, 3);
    expect(r.slow.first_call_share).toBe(1);
    expect(r.slow.mean_call).toBe(1);
    expect(r.middle.calls).toBe(10);
    expect(r.middle.wall_ms).toBe(1);
    expect(r.middle.stages.ledger).toBeUndefined();
    expect(r.middle.stages.tokens).toBeCloseTo(0.3, 3);
    expect(r.middle.gc_ms).toBe(0);
    expect(r.middle.gc_in).toEqual({});
    expect(r.middle.first_call_share).toBe(0);
    const text = formatSlowCalls(r);
    expect(text).toMatch(/grew most[^\n]*ledger \+4\.00/);
    expect(text).toMatch(/slowest 2 %[^\n]*\+ gc {2}2\.50 \(2 pauses: 1 scavenges 1\.00, 1 marking 1\.50\)/);
    expect(text).toMatch(/middle[^\n]*\+ gc {2}0\.00 \(0 pauses\)/);
    expect(text).toMatch(/inside timed sections[^\n]*slowest ledger 1\.00; middle none/);
  });

  it('a pause covering a whole lap leaves the stage nothing and the timed total less that lap', () => {
    // one 4 ms call: a 1 ms `render` lap at 1-2 ms, a 2 ms pause at 0.5-2.5 ms
    const laps: StageTrace = { stages: ['render'], stage: [0], end: [1002], ms: [1], parseCpu: [] };
    const gc: GcEvent[] = [{ start: 1000.5, ms: 2, minor: true }];
    const r = slowCallBreakdown({ end: [1004], ms: [4] }, laps, gc, undefined, 1);
    expect(r.slow.stages.render).toBeCloseTo(0, 6);
    expect(r.slow.timed_ms).toBeCloseTo(0, 6);
    expect(r.slow.gc_ms).toBeCloseTo(2, 6);
    expect(r.slow.gc_in.render).toBeCloseTo(1, 6);
    expect(r.slow.other_ms).toBeCloseTo(2, 6);
  });

  it('clips a lap that straddles a window to the part inside it', () => {
    const laps: StageTrace = { stages: ['render'], stage: [0], end: [1000.5], ms: [2], parseCpu: [] };
    const r = slowCallBreakdown({ end: [1001], ms: [1] }, laps, [], undefined, 1);
    // the lap runs 998.5-1000.5; the call 1000-1001
    expect(r.slow.stages.render).toBeCloseTo(0.5, 3);
    expect(r.slow.other_ms).toBeCloseTo(0.5, 3);
    expect(Number.isNaN(r.slow.first_call_share)).toBe(true);
    expect(Number.isNaN(r.slow.cpu_ms)).toBe(true);
  });

  it("splits the rest into the upstream's handling and the load generator's pauses, each counted once", () => {
    // one 10 ms call (1000-1010): a 1 ms `render` lap at 1001-1002 with a 0.5 ms gateway pause in
    // it; the upstream handles the request 1003-1007 (its own 1 ms pause at 1004-1005 inside) and
    // a second span 1008.5-1012 (clipped at the call's end); the load generator pauses 1006-1008:
    // its first ms overlaps the upstream's span, so only 1007-1008 is its own
    const laps: StageTrace = { stages: ['render'], stage: [0], end: [1002], ms: [1], parseCpu: [] };
    const gc: GcEvent[] = [{ start: 1001.25, ms: 0.5, minor: true }];
    const outside = {
      upstream: {
        spans: [
          [1003, 1007],
          [1008.5, 1012],
        ] as [number, number][],
        gc: [{ start: 1004, ms: 1, minor: true }],
      },
      loadgenGc: [{ start: 1006, ms: 2, minor: true }],
    };
    const r = slowCallBreakdown({ end: [1010], ms: [10] }, laps, gc, undefined, 1, outside);
    expect(r.slow.timed_ms).toBeCloseTo(0.5, 6);
    expect(r.slow.gc_ms).toBeCloseTo(0.5, 6);
    expect(r.slow.upstream_ms).toBeCloseTo(4 + 1.5, 6);
    expect(r.slow.upstream_gc_ms).toBeCloseTo(1, 6);
    expect(r.slow.loadgen_gc_ms).toBeCloseTo(1, 6);
    // the parts add up to the wall time: 10 - 0.5 - 0.5 - 5.5 - 1
    expect(r.slow.other_ms).toBeCloseTo(2.5, 6);
    // without the outside processes the same call leaves all of it to "other"
    const bare = slowCallBreakdown({ end: [1010], ms: [10] }, laps, gc, undefined, 1);
    expect(bare.slow.upstream_ms).toBe(0);
    expect(bare.slow.other_ms).toBeCloseTo(9, 6);
    // direct's calls: no gateway laps, the same split
    const none: StageTrace = { stages: [], stage: [], end: [], ms: [], parseCpu: [] };
    const d = slowCallBreakdown({ end: [1010], ms: [10] }, none, [], undefined, 1, outside);
    expect(d.slow.upstream_ms).toBeCloseTo(5.5, 6);
    expect(d.slow.loadgen_gc_ms).toBeCloseTo(1, 6);
    expect(d.slow.other_ms).toBeCloseTo(3.5, 6);
    const text = formatSlowCalls(r, 6, d);
    expect(text).toMatch(/\+ upstream {2}5\.50 \(its gc 1\.00\) \+ load generator gc 1\.00 \+ other {3}2\.50/);
    expect(text).toMatch(
      /direct's own slowest[^\n]*\n[^\n]*= upstream {2}5\.50 \(its gc 1\.00\) \+ load generator gc 1\.00 \+ other {3}3\.50/,
    );
  });

  it("the stage table's footnote: the pause time inside each stage's laps over the whole trace", () => {
    const { laps, gc } = run();
    // only call 42's 1 ms pause lies in a lap (its ledger lap); the 2 ms one lies in none
    const inside = gcInSections(laps, gc);
    expect(Object.keys(inside)).toEqual(['ledger']);
    expect(inside.ledger).toBeCloseTo(1, 6);
    // a pause straddling two laps is split between them
    const two: StageTrace = { stages: ['a', 'b'], stage: [0, 1], end: [10, 12], ms: [2, 2], parseCpu: [] };
    const split = gcInSections(two, [{ start: 9, ms: 2, minor: true }]);
    expect(split.a).toBeCloseTo(1, 6);
    expect(split.b).toBeCloseTo(1, 6);
    expect(formatGcInSections(inside, 100)).toMatch(/µs per request\): ledger 10$/);
    expect(formatGcInSections({}, 100)).toMatch(/: none$/);
  });
});
