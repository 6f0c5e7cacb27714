// Per-request time by stage of the hot path (body parse, session, each pipeline stage, render,
// tokens, block hashes, routing, store, usage, metrics), for `bench overhead`. Off in production:
// every site costs one test of a module constant. `CTXGATE_STAGE_TIMERS=1` in the gateway's
// environment turns them on (the bench sets it on its own gateway process only).
// The sections timed are synchronous, so their wall time is the CPU they take on the event loop;
// `store.get`/`store.put` are awaited and include any wait on Redis.
// Each lap is also kept in order (the first STAGE_TRACE_MAX after a reset, with its end time on the
// epoch clock) so that the bench can say what its slowest calls spent their time on, and the
// process's CPU at each request's body_parse (one getrusage a request, with the timers on only).

export const STAGE_TIMERS_ENV = 'CTXGATE_STAGE_TIMERS';
export const stageTimersOn = process.env[STAGE_TIMERS_ENV] === '1';

export interface StageTime {
  /** Total milliseconds spent in the stage since the last reset. */
  ms: number;
  /** Times the stage ran. */
  n: number;
}

const totals = new Map<string, StageTime>();

/** Laps kept in order for `bench overhead`'s slow-call breakdown (the first this many after a reset). */
export const STAGE_TRACE_MAX = 1 << 17;

/** The laps since the last reset, in order: stage, end (ms since the epoch, the clock other
 *  processes on the host read) and duration in ms. */
export interface StageTrace {
  stages: string[];
  /** Index into `stages` of each lap. */
  stage: number[];
  end: number[];
  ms: number[];
  /** The process's CPU (user + system, ms) at each `body_parse` lap (one a request), in order:
   *  a request's CPU is the next one's reading minus its own. */
  parseCpu: number[];
}

// Allocated on the first lap (only ever with the timers on): ~2.3 MB of typed arrays.
let traceStage: Uint16Array | undefined;
let traceEnd: Float64Array | undefined;
let traceMs: Float64Array | undefined;
let traceN = 0;
const traceIds = new Map<string, number>();
let parseCpu: number[] = [];

function record(stage: string, end: number, ms: number): void {
  if (traceN >= STAGE_TRACE_MAX) return;
  if (!traceStage) {
    traceStage = new Uint16Array(STAGE_TRACE_MAX);
    traceEnd = new Float64Array(STAGE_TRACE_MAX);
    traceMs = new Float64Array(STAGE_TRACE_MAX);
  }
  let id = traceIds.get(stage);
  if (id === undefined) traceIds.set(stage, (id = traceIds.size));
  traceStage[traceN] = id;
  traceEnd![traceN] = end;
  traceMs![traceN] = ms;
  traceN++;
  if (stage === 'body_parse') {
    const c = process.cpuUsage();
    parseCpu.push((c.user + c.system) / 1000);
  }
}

/** A timestamp to pass to lap(); 0 when the timers are off. */
export function tick(): number {
  return stageTimersOn ? performance.now() : 0;
}

/** Adds the time since `t0` to `stage`; returns now, the start of the next section. */
export function lap(stage: string, t0: number): number {
  if (!stageTimersOn) return 0;
  const t = performance.now();
  const s = totals.get(stage);
  if (s) {
    s.ms += t - t0;
    s.n++;
  } else totals.set(stage, { ms: t - t0, n: 1 });
  record(stage, t, t - t0);
  return t;
}

export function stageTimes(): Record<string, StageTime> {
  return Object.fromEntries([...totals].map(([k, v]) => [k, { ...v }]));
}

/** The laps since the last reset (at most STAGE_TRACE_MAX), with epoch-based end times. */
export function stageTrace(): StageTrace {
  const origin = performance.timeOrigin;
  const stage: number[] = [];
  const end: number[] = [];
  const ms: number[] = [];
  for (let i = 0; i < traceN; i++) {
    stage.push(traceStage![i]);
    end.push(origin + traceEnd![i]);
    ms.push(traceMs![i]);
  }
  return { stages: [...traceIds.keys()], stage, end, ms, parseCpu: [...parseCpu] };
}

export function resetStageTimes(): void {
  totals.clear();
  traceN = 0;
  parseCpu = [];
}
