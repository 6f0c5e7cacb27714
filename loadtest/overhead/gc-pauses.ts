// Main-thread GC pauses of the process this runs in, by kind (perf_hooks 'gc' entries), for
// `bench overhead`'s gateway child: how much of a request's CPU is the collector's. Scavenges
// are young-generation collections; marking counts full mark-compacts and the incremental marking
// steps that lead to them. Durations are the pauses as the main thread saw them (wall clock, so
// a loaded host inflates them); the helper threads' share shows in the process's non-main CPU.
// Each pause is also kept (the last GC_EVENTS_MAX, epoch-based start) for the slow-call breakdown.
// O(1) per GC.
import { type PerformanceEntry, PerformanceObserver, constants } from 'node:perf_hooks';

export interface GcPauses {
  scavenges: number;
  scavenge_ms: number;
  /** Mark-compacts (full GCs). */
  mark_compacts: number;
  /** Mark-compact and incremental marking pauses. */
  mark_ms: number;
}

/** One main-thread GC pause: start (ms since the epoch), duration (ms), and whether it was a
 *  scavenge or a mark-compact's final pause (neither: an incremental marking step, which opens a
 *  marking cycle: the helper threads mark concurrently from there to the mark-compact). */
export interface GcEvent {
  start: number;
  ms: number;
  minor: boolean;
  major?: boolean;
}

/** GC pauses kept for the slow-call breakdown (the most recent). */
export const GC_EVENTS_MAX = 65_536;

/** Starts counting; the returned function reads the totals so far, `events()` the pauses kept. */
export function watchGc(): (() => GcPauses) & { events(): GcEvent[] } {
  const t: GcPauses = { scavenges: 0, scavenge_ms: 0, mark_compacts: 0, mark_ms: 0 };
  const kept: GcEvent[] = [];
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind;
      if (kept.length >= GC_EVENTS_MAX) kept.splice(0, GC_EVENTS_MAX / 2);
      kept.push({
        start: performance.timeOrigin + e.startTime,
        ms: e.duration,
        minor: kind === constants.NODE_PERFORMANCE_GC_MINOR,
        major: kind === constants.NODE_PERFORMANCE_GC_MAJOR,
      });
      if (kind === constants.NODE_PERFORMANCE_GC_MINOR) {
        t.scavenges++;
        t.scavenge_ms += e.duration;
      } else if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) {
        t.mark_compacts++;
        t.mark_ms += e.duration;
      } else if (kind === constants.NODE_PERFORMANCE_GC_INCREMENTAL) t.mark_ms += e.duration;
    }
  }).observe({ entryTypes: ['gc'] });
  return Object.assign(() => ({ ...t }), { events: () => [...kept] });
}

/** What `b` counted since `a`. */
export function gcDelta(a: GcPauses, b: GcPauses): GcPauses {
  return {
    scavenges: b.scavenges - a.scavenges,
    scavenge_ms: b.scavenge_ms - a.scavenge_ms,
    mark_compacts: b.mark_compacts - a.mark_compacts,
    mark_ms: b.mark_ms - a.mark_ms,
  };
}
