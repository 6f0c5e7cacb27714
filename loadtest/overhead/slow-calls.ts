// What the slowest calls of a 1-connection run spent their time on, beside the middle ones, for
// `bench overhead`: each call's wall time as the client saw it (its end on the epoch clock and
// its latency) is laid over the gateway's stage laps (middleware/perf/stage-timers.ts, each lap's
// end on the same clock) and its main-thread GC pauses (gc-pauses.ts). Within a call's window:
// the time in timed sections by stage (a section of the previous call's deferred work that runs
// during this call counts: it held the loop this call needed), GC pauses, and the rest (HTTP in
// and out, the upstream's own time, the hops between processes, and waiting for a core on a
// loaded host); and the gateway's CPU per call, which waiting does not inflate. One connection
// only: windows of consecutive calls do not overlap.
// Beside the gateway, the bench can pass what the other two processes on the call's path did
// (Outside): the fake upstream's handling of each request (from its body's full arrival to the
// answer sent, its own GC pauses among it: a body still on its way is the sender's time) and the load generator's GC pauses, which stop the clock that reads
// every call's latency. They are counted in that order after the gateway's sections and pauses,
// each only where nothing before it already counted, so the parts still add up to the wall time;
// "other" is then HTTP in and out, the hops, and waiting for a core. Direct's calls (no gateway)
// get the same split, so the tails of both can be compared part by part.
// A pause that falls inside a timed section counts as GC, not as that section's time: a lap is
// wall time, and a collection the section happened to trigger is the heap's cost, not the stage's
// work. Counted in the stage, one such pause among the slowest 2 % read as "stage:ledger +4 ms"
// (s32's end run), a growth the ledger's code does not have. On this bench's c1 run the
// scavenges are V8's "external memory pressure" ones (--trace-gc): once young ArrayBuffers'
// backing stores reach 2 × V8's default max semi-space (32 MB on 64-bit; --max-semi-space-size
// does not move it), the next typed array allocated from JS runs a scavenge; the request bodies'
// buffers fill that budget, and the first typed array a request allocates is the ledger's packed
// token ids of the new tool output. Where the pauses fell is kept (gc_in) for that reason.
// Cost: O(calls × log laps + laps in the windows).
import type { StageTrace } from '../../middleware/perf/stage-timers.ts';
import type { GcEvent } from './gc-pauses.ts';

/** The share of calls, from the slowest, that the breakdown calls slow (at least one call). */
export const SLOW_CALLS_SHARE = 0.02;
/** The middle calls it compares them with: ranks from this share to 1 − it of the calls, by latency. */
export const MIDDLE_CALLS_FROM = 0.45;

/** What the other processes on a call's path did, on the same epoch clock (ms). */
export interface Outside {
  /** The upstream's handling of each request: [arrival, answer sent], in order of arrival. */
  upstream?: { spans: [number, number][]; gc: readonly GcEvent[] };
  /** The load generator's main-thread GC pauses. */
  loadgenGc?: readonly GcEvent[];
}

export interface CallGroup {
  calls: number;
  /** Mean latency (ms) as the client saw it. */
  wall_ms: number;
  /** Mean time in the gateway's timed sections within the call (ms), and by stage; GC pauses
   *  inside a section are not counted here but in gc_ms (and gc_in). */
  timed_ms: number;
  stages: Record<string, number>;
  /** Mean GC pause time within the call (ms; inside timed sections or not), and the pauses seen. */
  gc_ms: number;
  gc_pauses: number;
  /** Of gc_ms and gc_pauses, the scavenges' (young generation); the rest are mark-compacts and
   *  incremental marking steps (old generation). The two are cut by different means: scavenges by
   *  fewer bytes allocated per call or a larger young generation, marking by fewer objects kept. */
  gc_scavenge_ms: number;
  gc_scavenges: number;
  /** Of gc_ms, by the timed section the pause fell in (ms per call); absent: outside any. */
  gc_in: Record<string, number>;
  /** Mean time the upstream was handling a request within the call, where no gateway section or
   *  pause already counted (0 without Outside.upstream), and its own GC pauses in the window. */
  upstream_ms: number;
  upstream_gc_ms: number;
  /** Mean time of the load generator's GC pauses within the call not counted above. */
  loadgen_gc_ms: number;
  /** wall − timed − gc − upstream − loadgen gc: HTTP in/out, hops, waiting for a core. */
  other_ms: number;
  /** Mean CPU of the gateway process per call (ms; from the call's body_parse to the next call's:
   *  its deferred work included, waiting not), over the calls where both readings exist. Unlike
   *  wall time, a loaded host does not inflate it: more CPU in the slow calls is more work. */
  cpu_ms: number;
  /** Share of the calls that were a session's first, and the mean call number (1-based). */
  first_call_share: number;
  mean_call: number;
}

export interface SlowCalls {
  slow: CallGroup;
  middle: CallGroup;
}

/** Length of [a, b) covered by `iv` (disjoint intervals: the main thread's GC pauses). */
function covered(iv: readonly [number, number][], a: number, b: number): number {
  let n = 0;
  for (const [s, e] of iv) {
    const x = Math.max(s, a);
    const y = Math.min(e, b);
    if (y > x) n += y - x;
  }
  return n;
}

/** Total length of the union of intervals [s, e) (sorted in place by start). */
function unionLength(iv: [number, number][]): number {
  iv.sort((a, b) => a[0] - b[0]);
  let total = 0;
  let cs = -Infinity;
  let ce = -Infinity;
  for (const [s, e] of iv) {
    if (s > ce) {
      if (ce > cs) total += ce - cs;
      cs = s;
      ce = e;
    } else if (e > ce) ce = e;
  }
  if (ce > cs) total += ce - cs;
  return total;
}

/** First index of `xs` (ascending) whose value is >= x. */
export function lowerBound(xs: readonly number[], x: number): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** GC pauses clipped to [a, b) (those that overlap it). */
export function clip(gc: readonly GcEvent[], a: number, b: number): [number, number][] {
  const out: [number, number][] = [];
  for (const g of gc) {
    const x = Math.max(g.start, a);
    const y = Math.min(g.start + g.ms, b);
    if (y > x) out.push([x, y]);
  }
  return out;
}

/** The longest lap, which bounds how far before a window a lap overlapping it can end. */
const maxOf = (xs: readonly number[]): number => xs.reduce((m, x) => Math.max(m, x), 0);

function group(
  idx: readonly number[],
  calls: { end: number[]; ms: number[] },
  callNo: readonly number[] | undefined,
  laps: StageTrace,
  gc: readonly GcEvent[],
  outside: Outside,
): CallGroup {
  const longest = maxOf(laps.ms);
  const up = outside.upstream;
  const upEnds = up ? up.spans.map((x) => x[1]) : [];
  let upMs = 0;
  let upGc = 0;
  let genGc = 0;
  const parseEnds: number[] = [];
  for (let j = 0; j < laps.end.length; j++)
    if (laps.stages[laps.stage[j]] === 'body_parse') parseEnds.push(laps.end[j]);
  let cpu = 0;
  let cpuCalls = 0;
  const stages: Record<string, number> = {};
  let wall = 0;
  let timed = 0;
  let gcMs = 0;
  let pauses = 0;
  let scavMs = 0;
  let scavenges = 0;
  const gcIn: Record<string, number> = {};
  let first = 0;
  let callSum = 0;
  for (const i of idx) {
    const w1 = calls.end[i];
    const w0 = w1 - calls.ms[i];
    wall += calls.ms[i];
    // this call's GC pauses, clipped to its window
    const pauseSpans: [number, number][] = [];
    for (const g of gc) {
      const a = Math.max(g.start, w0);
      const b = Math.min(g.start + g.ms, w1);
      if (b <= a) continue;
      pauses++;
      pauseSpans.push([a, b]);
      if (g.minor) {
        scavenges++;
        scavMs += b - a;
      }
    }
    const spans: [number, number][] = [];
    for (let j = lowerBound(laps.end, w0); j < laps.end.length; j++) {
      const e = laps.end[j];
      const s = e - laps.ms[j];
      if (s >= w1) {
        if (e - longest >= w1) break;
        continue;
      }
      const a = Math.max(s, w0);
      const b = Math.min(e, w1);
      if (b <= a) continue;
      spans.push([a, b]);
      const name = laps.stages[laps.stage[j]];
      const inGc = pauseSpans.length > 0 ? covered(pauseSpans, a, b) : 0;
      stages[name] = (stages[name] ?? 0) + (b - a - inGc);
      if (inGc > 0) gcIn[name] = (gcIn[name] ?? 0) + inGc;
    }
    // this call's body_parse: the first that ends inside the window
    const k = lowerBound(parseEnds, w0);
    if (k + 1 < laps.parseCpu.length && parseEnds[k] <= w1) {
      cpu += laps.parseCpu[k + 1] - laps.parseCpu[k];
      cpuCalls++;
    }
    // timed = the sections' union less the pauses in it; gc = every pause in the window
    const inGc = unionLength(pauseSpans.map((x) => [x[0], x[1]]));
    const both = unionLength([...spans, ...pauseSpans]);
    timed += both - inGc;
    gcMs += inGc;
    // then the upstream's spans, then the load generator's pauses, each where nothing above counted
    const counted: [number, number][] = [...spans, ...pauseSpans];
    if (up) {
      for (let j = lowerBound(upEnds, w0); j < up.spans.length && up.spans[j][0] < w1; j++) {
        const a = Math.max(up.spans[j][0], w0);
        const b = Math.min(up.spans[j][1], w1);
        if (b > a) counted.push([a, b]);
      }
      upGc += covered(clip(up.gc, w0, w1), w0, w1);
    }
    const withUp = unionLength(counted.map((x) => [x[0], x[1]]));
    upMs += withUp - both;
    if (outside.loadgenGc) for (const x of clip(outside.loadgenGc, w0, w1)) counted.push(x);
    genGc += unionLength(counted) - withUp;
    if (callNo) {
      if (callNo[i] === 0) first++;
      callSum += callNo[i] + 1;
    }
  }
  const n = idx.length || 1;
  for (const k of Object.keys(stages)) stages[k] /= n;
  for (const k of Object.keys(gcIn)) gcIn[k] /= n;
  return {
    calls: idx.length,
    wall_ms: wall / n,
    timed_ms: timed / n,
    stages,
    gc_ms: gcMs / n,
    gc_pauses: pauses,
    gc_scavenge_ms: scavMs / n,
    gc_scavenges: scavenges,
    gc_in: gcIn,
    upstream_ms: upMs / n,
    upstream_gc_ms: upGc / n,
    loadgen_gc_ms: genGc / n,
    other_ms: (wall - timed - gcMs - upMs - genGc) / n,
    cpu_ms: cpuCalls > 0 ? cpu / cpuCalls : NaN,
    first_call_share: callNo ? first / n : NaN,
    mean_call: callNo ? callSum / n : NaN,
  };
}

/**
 * The slowest SLOW_CALLS_SHARE of `calls` (at least one) and the middle ones, each with what its
 * windows held. `callNo[i]`: call i's number in its session (0 = first), when known.
 */
export function slowCallBreakdown(
  calls: { end: number[]; ms: number[] },
  laps: StageTrace,
  gc: readonly GcEvent[],
  callNo?: readonly number[],
  share = SLOW_CALLS_SHARE,
  outside: Outside = {},
): SlowCalls {
  const order = calls.ms.map((_, i) => i).sort((a, b) => calls.ms[b] - calls.ms[a]);
  const nSlow = Math.max(1, Math.floor(order.length * share));
  const from = Math.floor(order.length * MIDDLE_CALLS_FROM);
  const to = Math.max(from + 1, order.length - from);
  return {
    slow: group(order.slice(0, nSlow), calls, callNo, laps, gc, outside),
    middle: group(order.slice(from, to), calls, callNo, laps, gc, outside),
  };
}

/**
 * GC pause time (ms, whole trace) inside each stage's laps: the part of the stage table's per-stage
 * wall time that was a pause landing there. O(pauses × log laps + the laps they overlap).
 */
export function gcInSections(laps: StageTrace, gc: readonly GcEvent[]): Record<string, number> {
  const longest = maxOf(laps.ms);
  const out: Record<string, number> = {};
  for (const g of gc) {
    const g1 = g.start + g.ms;
    for (let j = lowerBound(laps.end, g.start); j < laps.end.length; j++) {
      const e = laps.end[j];
      if (e - longest >= g1) break;
      const a = Math.max(e - laps.ms[j], g.start);
      const b = Math.min(e, g1);
      if (b <= a) continue;
      const name = laps.stages[laps.stage[j]];
      out[name] = (out[name] ?? 0) + (b - a);
    }
  }
  return out;
}

/** Where a group's pauses inside timed sections fell, largest first ("none" when none did). */
function landed(gcIn: Record<string, number>): string {
  const xs = Object.entries(gcIn).sort((a, b) => b[1] - a[1]);
  return xs.length === 0 ? 'none' : xs.map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ');
}

/** The stage table's footnote: GC pause time inside each stage's sections, per request (µs). */
export function formatGcInSections(gcMs: Record<string, number>, requests: number): string {
  const xs = Object.entries(gcMs)
    .map(([k, v]) => [k, requests > 0 ? (v / requests) * 1000 : 0] as const)
    .filter(([, v]) => v >= 0.5)
    .sort((a, b) => b[1] - a[1]);
  return `  GC pauses inside the sections above (counted in their rows, µs per request): ${xs.length === 0 ? 'none' : xs.map(([k, v]) => `${k} ${v.toFixed(0)}`).join(', ')}`;
}

/** Lines for the bench's output: both groups, then the stages that grew most in the slow calls
 *  (their own time, GC pauses inside them not counted) and where the pauses inside sections fell;
 *  with `direct`, the same split of direct's own slowest and middle calls (no gateway on its path). */
export function formatSlowCalls(r: SlowCalls, top = 6, direct?: SlowCalls): string {
  const f = (x: number): string => x.toFixed(2);
  const beside = (g: CallGroup): string =>
    ` + upstream ${f(g.upstream_ms).padStart(5)} (its gc ${f(g.upstream_gc_ms)}) + load generator gc ${f(g.loadgen_gc_ms)}`;
  // pause spans of one call do not overlap, so the scavenges' and the rest's times add up to gc_ms
  const pauses = (g: CallGroup): string =>
    g.gc_pauses === 0
      ? '0 pauses'
      : `${g.gc_pauses} pauses: ${g.gc_scavenges} scavenges ${f(g.gc_scavenge_ms)}, ` +
        `${g.gc_pauses - g.gc_scavenges} marking ${f(g.gc_ms - g.gc_scavenge_ms)}`;
  const line = (label: string, g: CallGroup): string =>
    `  ${label.padEnd(15)} ${String(g.calls).padStart(4)} calls  wall ${f(g.wall_ms).padStart(6)} ms = timed ${f(g.timed_ms).padStart(5)}` +
    ` + gc ${f(g.gc_ms).padStart(5)} (${pauses(g)})${beside(g)} + other ${f(g.other_ms).padStart(6)}; cpu ${f(g.cpu_ms).padStart(5)} ms` +
    `  first calls ${(g.first_call_share * 100).toFixed(0).padStart(3)} %, mean call #${g.mean_call.toFixed(1)}`;
  const directLine = (label: string, g: CallGroup): string =>
    `  ${label.padEnd(15)} ${String(g.calls).padStart(4)} calls  wall ${f(g.wall_ms).padStart(6)} ms =${beside(g).slice(2)} + other ${f(g.other_ms).padStart(6)}`;
  const names = new Set([...Object.keys(r.slow.stages), ...Object.keys(r.middle.stages)]);
  const grew = [...names]
    .map((k) => [k, (r.slow.stages[k] ?? 0) - (r.middle.stages[k] ?? 0)] as const)
    .sort((a, b) => b[1] - a[1])
    .slice(0, top);
  const slowLabel = `slowest ${(SLOW_CALLS_SHARE * 100).toFixed(0)} %`;
  const middleLabel = `middle ${(MIDDLE_CALLS_FROM * 100).toFixed(0)}-${((1 - MIDDLE_CALLS_FROM) * 100).toFixed(0)} %`;
  return [
    `ctxgate slowest calls vs middle calls (growing, 1 connection; upstream = the fake upstream handling the request where the gateway's sections and pauses do not already count; other = HTTP in/out, hops, waiting for a core):`,
    line(slowLabel, r.slow),
    line(middleLabel, r.middle),
    `  timed stages that grew most (slow − middle, ms per call; GC pauses not counted): ${grew.map(([k, v]) => `${k} ${v >= 0 ? '+' : ''}${f(v)}`).join(', ')}`,
    `  GC pauses inside timed sections (in gc above, ms per call): slowest ${landed(r.slow.gc_in)}; middle ${landed(r.middle.gc_in)}`,
    ...(direct
      ? [
          `direct's own slowest calls vs middle calls (the same split, no gateway on the path):`,
          directLine(slowLabel, direct.slow),
          directLine(middleLabel, direct.middle),
        ]
      : []),
  ].join('\n');
}
