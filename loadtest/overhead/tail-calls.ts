// The calls at and above a 1-connection row's p99, one by one, for `bench overhead`: what each
// held in its window (client send to answer read, on the epoch clock): the gateway's main-thread
// GC pauses (scavenge or marking, each clipped to the window), the fake upstream's handling of
// requests and its own pauses, the load generator's pauses, and the gateway's CPU for the call
// (body_parse to the next call's body_parse: its deferred work included, waiting for a core not).
// slow-calls.ts averages the slowest 2 %; this names the calls the p99 is read from, so a p99 can
// be told apart as GC (which pause, which process), more work (CPU above the middle calls') or
// the host (none of these: waiting for a core). A call may also fall inside a marking cycle of the
// gateway's old generation: from V8's first incremental marking step to the mark-compact's final
// pause its helper threads mark concurrently, on the cores the main thread, the upstream and the
// load generator share; such a call can be slow without a pause of its own. The share of all the
// row's calls inside a cycle is printed beside the tail's, so that an excess in the tail shows.
// Cost: O(tail × (pauses + spans) + calls × cycles + calls log calls).
import type { StageTrace } from '../../middleware/perf/stage-timers.ts';
import type { GcEvent } from './gc-pauses.ts';
import { rankFromSlowest } from './load.ts';
import { clip, lowerBound, type Outside } from './slow-calls.ts';

/** Calls listed one per line (the slowest); the rest of the tail is counted only. */
export const TAIL_LINES = 10;

export interface TailCall {
  /** 1 = the slowest call of the row. */
  rank: number;
  ms: number;
  /** The call's number in its session (1 = a session's first); NaN when unknown. */
  call: number;
  /** The gateway's pauses inside the window (ms each, clipped), scavenges and marking apart. */
  scavenges: number[];
  marking: number[];
  upstream_ms: number;
  upstream_gc_ms: number;
  loadgen_gc_ms: number;
  /** The gateway's CPU for this call (ms; all threads); NaN where no reading frames it. */
  cpu_ms: number;
  /** The window overlaps one of the gateway's marking cycles (markingCycles). */
  in_marking: boolean;
}

export interface TailCalls {
  /** The row's calls, and the rank its p99 is read at (the tail is ranks 1 to this). */
  of: number;
  p99_rank: number;
  calls: TailCall[];
  /** The gateway's marking cycles in the row, and the share of all its calls inside one. */
  marking_cycles: number;
  marking_share: number;
}

/**
 * The old generation's marking cycles among `gc`: from an incremental marking step to the end of
 * the mark-compact that follows it; a mark-compact with no step before it is a cycle of its own
 * pause. A step with no mark-compact after it (the row ended mid-cycle) runs to its last event.
 */
export function markingCycles(gc: readonly GcEvent[]): [number, number][] {
  const out: [number, number][] = [];
  let open: number | undefined;
  let last = 0;
  for (const g of [...gc].sort((a, b) => a.start - b.start)) {
    if (g.minor) continue;
    last = g.start + g.ms;
    if (g.major) {
      out.push([open ?? g.start, last]);
      open = undefined;
    } else if (open === undefined) open = g.start;
  }
  if (open !== undefined) out.push([open, last]);
  return out;
}

const overlaps = (cycles: readonly [number, number][], a: number, b: number): boolean =>
  cycles.some(([s, e]) => s < b && e > a);

const sum = (xs: readonly number[]): number => xs.reduce((a, x) => a + x, 0);

/** Time of `spans` inside [a, b) (spans in order of start, not overlapping each other). */
function within(spans: readonly [number, number][], a: number, b: number): number {
  let n = 0;
  for (const [s, e] of spans) {
    if (s >= b) break;
    const x = Math.max(s, a);
    const y = Math.min(e, b);
    if (y > x) n += y - x;
  }
  return n;
}

/** The row's p99 tail: its calls from the slowest to the one the p99 is read at. */
export function tailCalls(
  calls: { end: number[]; ms: number[] },
  gc: readonly GcEvent[],
  outside: Outside = {},
  laps?: StageTrace,
  callNo?: readonly number[],
): TailCalls {
  const n = calls.ms.length;
  const k = rankFromSlowest(n, 0.99);
  const order = calls.ms.map((_, i) => i).sort((a, b) => calls.ms[b] - calls.ms[a]);
  const parseEnds: number[] = [];
  if (laps)
    for (let j = 0; j < laps.end.length; j++)
      if (laps.stages[laps.stage[j]] === 'body_parse') parseEnds.push(laps.end[j]);
  const up = outside.upstream;
  const upSpans = up ? [...up.spans].sort((a, b) => a[0] - b[0]) : [];
  const upStarts = upSpans.map((x) => x[0]);
  const cycles = markingCycles(gc);
  let inCycles = 0;
  for (let i = 0; i < n; i++) if (overlaps(cycles, calls.end[i] - calls.ms[i], calls.end[i])) inCycles++;
  const out: TailCall[] = [];
  for (let r = 0; r < k; r++) {
    const i = order[r];
    const w1 = calls.end[i];
    const w0 = w1 - calls.ms[i];
    const scavenges: number[] = [];
    const marking: number[] = [];
    for (const g of gc) {
      const x = Math.max(g.start, w0);
      const y = Math.min(g.start + g.ms, w1);
      if (y > x) (g.minor ? scavenges : marking).push(y - x);
    }
    let cpu = Number.NaN;
    if (laps) {
      const j = lowerBound(parseEnds, w0);
      if (j + 1 < laps.parseCpu.length && parseEnds[j] <= w1) cpu = laps.parseCpu[j + 1] - laps.parseCpu[j];
    }
    // upstream spans that may reach into the window: those starting before its end, from one
    // before the first that starts inside it
    const from = Math.max(0, lowerBound(upStarts, w0) - 1);
    out.push({
      rank: r + 1,
      ms: calls.ms[i],
      call: callNo ? callNo[i] + 1 : Number.NaN,
      scavenges,
      marking,
      upstream_ms: up ? within(upSpans.slice(from), w0, w1) : 0,
      upstream_gc_ms: up ? sum(clip(up.gc, w0, w1).map(([a, b]) => b - a)) : 0,
      loadgen_gc_ms: outside.loadgenGc ? sum(clip(outside.loadgenGc, w0, w1).map(([a, b]) => b - a)) : 0,
      cpu_ms: cpu,
      in_marking: overlaps(cycles, w0, w1),
    });
  }
  return { of: n, p99_rank: k, calls: out, marking_cycles: cycles.length, marking_share: n > 0 ? inCycles / n : 0 };
}

/** Lines for the bench: the tail's counts by what its calls held, then the slowest `lines`.
 *  Without a gateway on the path (direct), its pauses and CPU are left out. */
export function formatTailCalls(
  label: string,
  t: TailCalls,
  o: { gateway: boolean; middleCpuMs?: number; lines?: number },
): string {
  const f = (x: number): string => (Number.isNaN(x) ? 'n/a' : x.toFixed(2));
  const c = t.calls;
  const gwGc = c.filter((x) => x.scavenges.length + x.marking.length > 0);
  const none = c.filter(
    (x) => x.scavenges.length + x.marking.length === 0 && x.upstream_gc_ms === 0 && x.loadgen_gc_ms === 0,
  );
  const mean = (xs: TailCall[], g: (x: TailCall) => number): number =>
    xs.length === 0 ? Number.NaN : sum(xs.map(g)) / xs.length;
  const gateway = o.gateway
    ? `${gwGc.length} held a gateway GC pause (${c.filter((x) => x.scavenges.length > 0).length} a scavenge, ` +
      `${c.filter((x) => x.marking.length > 0).length} marking; ${f(mean(gwGc, (x) => sum(x.scavenges) + sum(x.marking)))} ms of pauses a call among them), ` +
      `${c.filter((x) => x.in_marking).length} fell in one of the gateway's ${t.marking_cycles} marking cycles ` +
      `(${(t.marking_share * 100).toFixed(1)} % of all its calls did), `
    : '';
  const noneCpu = o.gateway
    ? `, gateway cpu ${f(mean(none, (x) => x.cpu_ms))} ms${o.middleCpuMs !== undefined ? ` vs the middle calls' ${f(o.middleCpuMs)}` : ''}`
    : '';
  const head =
    `${label}'s calls from the p99 up (the ${t.p99_rank} slowest of ${t.of}): ${gateway}` +
    `${c.filter((x) => x.upstream_gc_ms > 0).length} an upstream GC pause, ${c.filter((x) => x.loadgen_gc_ms > 0).length} a load generator pause, ` +
    `${none.length} none of these (wall ${f(mean(none, (x) => x.ms))} ms${noneCpu})`;
  const pauses = (xs: number[], tag: string): string => xs.map((x) => `${tag} ${f(x)}`).join(' ');
  const one = (x: TailCall): string =>
    `  #${String(x.rank).padEnd(3)} ${f(x.ms).padStart(7)} ms  call ${Number.isNaN(x.call) ? ' ?' : String(x.call).padStart(2)}  ` +
    (o.gateway
      ? `${x.in_marking ? 'M' : ' '} gateway gc [${[pauses(x.scavenges, 'scav'), pauses(x.marking, 'mark')].filter((s) => s).join(' ') || '-'}]  `
      : '') +
    `upstream ${f(x.upstream_ms)} (gc ${f(x.upstream_gc_ms)})  load generator gc ${f(x.loadgen_gc_ms)}` +
    (o.gateway ? `  cpu ${f(x.cpu_ms)}` : '');
  return [head, ...c.slice(0, o.lines ?? TAIL_LINES).map(one)].join('\n');
}
