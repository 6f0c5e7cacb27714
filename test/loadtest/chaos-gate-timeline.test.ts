import { describe, expect, it } from 'vitest';
import { formatTimeline, type GateTick, parseGateMetrics } from '../../loadtest/chaos/gate-timeline.ts';

const PAGE = [
  '# HELP ctxgate_admission_held Late binding: calls held at the gateway now',
  '# TYPE ctxgate_admission_held gauge',
  'ctxgate_admission_held{model="m"} 7',
  'ctxgate_admission_held{model="n"} 2',
  'ctxgate_admission_outcomes_total{model="m",outcome="queued"} 12',
  'ctxgate_admission_outcomes_total{model="n",outcome="queued"} 3',
  'ctxgate_admission_outcomes_total{model="m",outcome="spilled_deadline"} 1',
  'ctxgate_admission_wait_seconds_bucket{model="m",outcome="released",le="1"} 4',
].join('\n');

describe('bench chaos gate timeline', () => {
  it('sums the held gauge and the outcome counters over models, and reads nothing else', () => {
    expect(parseGateMetrics(PAGE)).toEqual({ held: 9, outcomes: { queued: 15, spilled_deadline: 1 } });
    expect(parseGateMetrics('ctxgate_requests_total{model="m"} 3')).toEqual({ held: undefined, outcomes: {} });
  });

  it('prints the ticks in the window with outcomes new since the tick before and each worker', () => {
    const w = (inFlight: number, healthy = true) => ({
      id: 'w0',
      healthy,
      inFlight,
      waiting: 0,
      running: 1,
      kvUsage: 0.25,
    });
    const ticks: GateTick[] = [
      { atMs: 500, held: 1, outcomes: { queued: 2 }, workers: [w(3)] },
      {
        atMs: 1000,
        held: 4,
        outcomes: { queued: 5, released: 1 },
        workers: [w(2), { id: 'w1', healthy: false, inFlight: 0 }],
      },
      { atMs: 9000, held: 0, outcomes: { queued: 5, released: 5 }, workers: [w(0)] },
    ];
    expect(formatTimeline(ticks, 800, 2000)).toEqual([
      '    1.0s held 4 (queued 3, released 1): w0 f2 w0/r1 kv25% | w1(out) f0 -',
    ]);
    expect(formatTimeline(ticks, 0, 10_000)).toHaveLength(3);
    expect(formatTimeline(ticks, 0, 10_000)[2]).toBe('    9.0s held 0 (released 4): w0 f0 w0/r1 kv25%');
  });
});
