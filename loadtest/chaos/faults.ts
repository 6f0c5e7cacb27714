// bench chaos's fault schedule (pure): which fault hits which worker when, ms from the chaos's start,
// and --faults (a subset of the kinds, at the times the full schedule has them, so a run per kind
// bisects the full one). run() sets a timer per step. O(steps).
import type { FaultConfig } from '../sim-worker/faults.ts';

/** A killed worker is restarted this long after the kill. */
const RESTART_AFTER_MS = 2_000;
/** How long a hang, mid-stream death or 5xx burst lasts. */
const FAULT_MS = 3_000;
/** How long Redis stays down (--redis). */
const REDIS_DOWN_MS = 10_000;

/** The fault kinds of the schedule; --faults keeps a subset at the same times (the others skipped),
 *  so a run per kind bisects what the full schedule does. */
export const FAULT_KINDS = ['kill', 'hang', 'die-mid-stream', '5xx-burst', 'redis'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export type FaultOp =
  | { kind: 'kill' | 'restart'; worker: number }
  | { kind: 'fault'; worker: number; fault: Partial<FaultConfig> }
  | { kind: 'redis-kill' | 'redis-start' };

/** The chaos's fault steps, ms from its start (pure; run() sets a timer per step). Every
 *  killEveryS: a worker killed -9 at 30 % of the period and restarted RESTART_AFTER_MS later, then
 *  at 60 % another worker hangs, dies mid-stream or answers 503 (in turn) for FAULT_MS; with Redis,
 *  Redis killed at 40 % of the run for REDIS_DOWN_MS. `faults` keeps only those kinds, same times. */
export function faultSchedule(
  durationS: number,
  killEveryS: number,
  workers: number,
  faults: ReadonlySet<FaultKind> = new Set(FAULT_KINDS),
  redis = false,
): { atMs: number; what: string; op: FaultOp }[] {
  const steps: { atMs: number; what: string; op: FaultOp }[] = [];
  const period = killEveryS * 1000;
  const kinds = ['hang', 'die-mid-stream', '5xx-burst'] as const;
  for (let c = 0, base = 0; base + period * 0.3 < durationS * 1000; c++, base += period) {
    const victim = c % workers;
    if (faults.has('kill')) {
      steps.push({ atMs: base + period * 0.3, what: `kill -9 w${victim}`, op: { kind: 'kill', worker: victim } });
      steps.push({
        atMs: base + period * 0.3 + RESTART_AFTER_MS,
        what: `restart w${victim}`,
        op: { kind: 'restart', worker: victim },
      });
    }
    const other = (c + 1) % workers;
    const k = kinds[c % kinds.length];
    if (!faults.has(k) || workers < 2 || base + period * 0.6 + FAULT_MS > durationS * 1000) continue;
    const fault: Partial<FaultConfig> =
      k === 'hang'
        ? { hangMs: 8_000 }
        : k === 'die-mid-stream'
          ? { dieAfterChunks: 3 }
          : { failRate: 1, failStatus: 503 };
    const clear: Partial<FaultConfig> =
      k === 'hang' ? { hangMs: 0 } : k === 'die-mid-stream' ? { dieAfterChunks: 0 } : { failRate: 0 };
    steps.push({ atMs: base + period * 0.6, what: `${k} on w${other}`, op: { kind: 'fault', worker: other, fault } });
    steps.push({
      atMs: base + period * 0.6 + FAULT_MS,
      what: `${k} off w${other}`,
      op: { kind: 'fault', worker: other, fault: clear },
    });
  }
  if (redis && faults.has('redis')) {
    const downAt = Math.max(1000, durationS * 1000 * 0.4);
    steps.push({ atMs: downAt, what: 'kill -9 redis', op: { kind: 'redis-kill' } });
    steps.push({ atMs: downAt + REDIS_DOWN_MS, what: 'restart redis', op: { kind: 'redis-start' } });
  }
  return steps;
}

export function faultsOf(v: string | undefined): Set<FaultKind> {
  if (v === undefined) return new Set(FAULT_KINDS);
  const out = new Set<FaultKind>();
  for (const k of v.split(',').map((x) => x.trim())) {
    if (!(FAULT_KINDS as readonly string[]).includes(k))
      throw new Error(`--faults: ${k} is not one of ${FAULT_KINDS.join(', ')}`);
    out.add(k as FaultKind);
  }
  return out;
}
