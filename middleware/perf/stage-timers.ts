// Per-request time by stage of the hot path (body parse, session, each pipeline stage, render,
// tokens, block hashes, routing, store, usage, metrics), for `bench overhead`. Off in production:
// every site costs one test of a module constant. `CTXGATE_STAGE_TIMERS=1` in the gateway's
// environment turns them on (the bench sets it on its own gateway process only).
// The sections timed are synchronous, so their wall time is the CPU they take on the event loop;
// `store.get`/`store.put` are awaited and include any wait on Redis.

export const STAGE_TIMERS_ENV = 'CTXGATE_STAGE_TIMERS';
export const stageTimersOn = process.env[STAGE_TIMERS_ENV] === '1';

export interface StageTime {
  /** Total milliseconds spent in the stage since the last reset. */
  ms: number;
  /** Times the stage ran. */
  n: number;
}

const totals = new Map<string, StageTime>();

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
  return t;
}

export function stageTimes(): Record<string, StageTime> {
  return Object.fromEntries([...totals].map(([k, v]) => [k, { ...v }]));
}

export function resetStageTimes(): void {
  totals.clear();
}
