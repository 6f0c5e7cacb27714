// bench overhead's slow-call breakdown (loadtest/overhead/slow-calls.ts): a call's wall time laid
// over the gateway's stage laps and GC pauses, clipped to the call's window, no pause counted twice;
// and the stage trace that feeds it (middleware/perf/stage-timers.ts) keeps laps in order.
import { describe, expect, it } from 'vitest';
import type { StageTrace } from '../../middleware/perf/stage-timers.ts';
import type { GcEvent } from '../../loadtest/overhead/gc-pauses.ts';
import { formatSlowCalls, slowCallBreakdown } from '../../loadtest/overhead/slow-calls.ts';

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
    expect(r.slow.stages.ledger).toBeCloseTo(5, 3);
    expect(r.slow.stages.tokens).toBeCloseTo(0.3, 3);
    expect(r.slow.timed_ms).toBeCloseTo(5.4, 3);
    expect(r.slow.cpu_ms).toBeCloseTo(7, 3);
    expect(r.middle.cpu_ms).toBeCloseTo(1, 3);
    // the pause inside the ledger lap is the lap's time; only the one outside counts as GC
    expect(r.slow.gc_ms).toBeCloseTo(1.5, 3); // 2 ms pause clipped at the call's end (6.5 → 8)
    expect(r.slow.gc_pauses).toBe(2);
    expect(r.slow.other_ms).toBeCloseTo(8 - 5.4 - 1.5, 3);
    expect(r.slow.first_call_share).toBe(1);
    expect(r.slow.mean_call).toBe(1);
    expect(r.middle.calls).toBe(10);
    expect(r.middle.wall_ms).toBe(1);
    expect(r.middle.stages.ledger).toBeUndefined();
    expect(r.middle.stages.tokens).toBeCloseTo(0.3, 3);
    expect(r.middle.gc_ms).toBe(0);
    expect(r.middle.first_call_share).toBe(0);
    const text = formatSlowCalls(r);
    expect(text).toMatch(/ledger \+5\.00/);
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
});
