// bench overhead names the calls a 1-connection row's p99 is read from (loadtest/overhead/tail-calls.ts):
// each with the gateway's GC pauses in its window, the upstream's handling and pauses, the load
// generator's pauses and the gateway's CPU; and a row by count sends exactly that many calls and
// reads its rate over the time they took (loadtest/overhead/load.ts).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StageTrace } from '../../middleware/perf/stage-timers.ts';
import type { GcEvent } from '../../loadtest/overhead/gc-pauses.ts';
import { load, rankFromSlowest } from '../../loadtest/overhead/load.ts';
import { formatTailCalls, markingCycles, tailCalls } from '../../loadtest/overhead/tail-calls.ts';

/** 1,000 calls of 1 ms, 100 ms apart (1 ms of gateway CPU each); calls 100..109 are the slow ones,
 *  10 + j ms long (j = 0..9): 100 holds a 2 ms scavenge and a 1 ms incremental marking step (a
 *  marking cycle opens, closed by a mark-compact in call 120: calls 100..120 lie in it), 101 an
 *  upstream pause, 102 a load generator pause, 103 nothing but 6 ms of gateway CPU; one more
 *  scavenge sits in a middle call (500), outside the tail. */
function row(): {
  calls: { end: number[]; ms: number[] };
  laps: StageTrace;
  gc: GcEvent[];
  upGc: GcEvent[];
  genGc: GcEvent[];
  spans: [number, number][];
} {
  const t0 = 1.7e12;
  const calls = { end: [] as number[], ms: [] as number[] };
  const laps: StageTrace = { stages: ['body_parse'], stage: [], end: [], ms: [], parseCpu: [] };
  const spans: [number, number][] = [];
  let cpu = 0;
  for (let i = 0; i < 1000; i++) {
    const start = t0 + i * 100;
    const wall = i >= 100 && i < 110 ? 10 + (i - 100) : 1;
    calls.end.push(start + wall);
    calls.ms.push(wall);
    laps.stage.push(0);
    laps.end.push(start + 0.1);
    laps.ms.push(0.1);
    laps.parseCpu.push(cpu);
    cpu += i === 103 ? 6 : 1;
    spans.push([start + 0.5, start + 0.8]);
  }
  const at = (i: number, dt: number): number => t0 + i * 100 + dt;
  const gc: GcEvent[] = [
    { start: at(100, 2), ms: 2, minor: true },
    { start: at(100, 5), ms: 1, minor: false },
    { start: at(500, 0.2), ms: 0.5, minor: true },
    { start: at(120, 0.2), ms: 0.4, minor: false, major: true },
  ];
  return {
    calls,
    laps,
    gc,
    upGc: [{ start: at(101, 3), ms: 4, minor: true }],
    genGc: [{ start: at(102, 1), ms: 3, minor: false }],
    spans,
  };
}

describe('bench overhead: the calls from the p99 up', () => {
  it('lists the p99 tail slowest first, each with what its window held', () => {
    const r = row();
    const callNo = r.calls.ms.map((_, i) => i % 30);
    const t = tailCalls(
      r.calls,
      r.gc,
      { upstream: { spans: r.spans, gc: r.upGc }, loadgenGc: r.genGc },
      r.laps,
      callNo,
    );
    expect(t.of).toBe(1000);
    expect(t.p99_rank).toBe(rankFromSlowest(1000, 0.99));
    expect(t.calls).toHaveLength(10);
    // slowest first: call 109 (19 ms) ... call 100 (10 ms) is the 10th
    expect(t.calls.map((c) => c.ms)).toEqual([19, 18, 17, 16, 15, 14, 13, 12, 11, 10]);
    const c100 = t.calls[9];
    expect(c100.scavenges).toEqual([2]);
    expect(c100.marking).toEqual([1]);
    expect(c100.call).toBe((100 % 30) + 1);
    expect(c100.cpu_ms).toBeCloseTo(1, 3);
    expect(c100.upstream_ms).toBeCloseTo(0.3, 3);
    const c101 = t.calls[8];
    expect(c101.scavenges).toEqual([]);
    expect(c101.upstream_gc_ms).toBeCloseTo(4, 3);
    expect(t.calls[7].loadgen_gc_ms).toBeCloseTo(3, 3);
    expect(t.calls[6].cpu_ms).toBeCloseTo(6, 3);
    // the middle call's scavenge is nobody's in the tail
    expect(t.calls.flatMap((c) => c.scavenges)).toEqual([2]);
    const text = formatTailCalls('ctxgate', t, { gateway: true, middleCpuMs: 1 });
    expect(text).toMatch(
      /^ctxgate's calls from the p99 up \(the 10 slowest of 1000\): 1 held a gateway GC pause \(1 a scavenge, 1 marking; 3\.00 ms of pauses a call among them\), 10 fell in one of the gateway's 1 marking cycles \(2\.1 % of all its calls did\), 1 an upstream GC pause, 1 a load generator pause, 7 none of these \(wall 16\.00 ms, gateway cpu 1\.71 ms vs the middle calls' 1\.00\)/,
    );
    expect(t.calls.every((c) => c.in_marking)).toBe(true);
    expect(t.marking_share).toBeCloseTo(21 / 1000, 6);
    expect(text).toMatch(
      /#10 {4}10\.00 ms {2}call 11 {2}M gateway gc \[scav 2\.00 mark 1\.00\] {2}upstream 0\.30 \(gc 0\.00\)/,
    );
    expect(text.split('\n')).toHaveLength(11);
    // direct: no gateway on the path, no gateway columns
    const d = formatTailCalls('direct', tailCalls(r.calls, [], { upstream: { spans: r.spans, gc: r.upGc } }), {
      gateway: false,
    });
    expect(d).not.toMatch(/gateway/);
    expect(d).toMatch(/1 an upstream GC pause, 0 a load generator pause, 9 none of these/);
    expect(d).toMatch(/call {2}\?/);
  });
});

describe("bench overhead: the gateway's marking cycles", () => {
  it('run from an incremental marking step to the mark-compact after it; a lone mark-compact is its own', () => {
    const ev = (start: number, ms: number, kind: 'scav' | 'step' | 'mc'): GcEvent => ({
      start,
      ms,
      minor: kind === 'scav',
      major: kind === 'mc',
    });
    const gc = [
      ev(10, 1, 'step'),
      ev(15, 1, 'scav'),
      ev(20, 1, 'step'),
      ev(40, 2, 'mc'),
      ev(60, 3, 'mc'),
      ev(80, 1, 'step'),
    ];
    // a second step inside an open cycle does not open another; the last step never closed runs to its own end
    expect(markingCycles(gc)).toEqual([
      [10, 42],
      [60, 63],
      [80, 81],
    ]);
    expect(markingCycles([ev(1, 1, 'scav')])).toEqual([]);
  });
});

describe('bench overhead: a row by count', () => {
  let url = '';
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => setTimeout(() => res.end('{}'), 2));
  });
  beforeAll(async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('sends exactly `amount` calls and reads the rate over the time they took, not the nominal duration', async () => {
    let sent = 0;
    const r = await load({
      url,
      durationS: 1000,
      amount: 60,
      connections: 1,
      body: () => `{"n":${sent++}}`,
      keepCalls: true,
    });
    expect(r.requests).toBe(60);
    expect(r.calls?.ms).toHaveLength(60);
    // each call waits 2 ms for its answer: 60 calls take at least 0.12 s, so at most 500 req/s;
    // over the nominal 1,000 s it would read 0.06
    expect(r.rps).toBeLessThanOrEqual(500);
    expect(r.rps).toBeGreaterThan(1);
  });
});
