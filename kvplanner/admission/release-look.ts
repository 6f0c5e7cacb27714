// One look at the calls late binding holds: which held calls leave now and among which workers
// they are routed, written once for the gateway's gate (gateway/admission/admission-gate.ts) and
// the fleet simulator (loadtest/fleet/simulator.ts), so the two release in the same order (review
// s36 F3: they had two loops that differed in four places).
// A free worker (one that can admit a call) takes the first of the next locality_window held calls
// (fair-queue.ts takeFirst: per-tenant round robin, release order) that it holds, or that no worker
// holds; a call whose holder cannot admit is passed over for up to locality_wait_ms from when it is
// first looked at (delay scheduling), then goes to any free worker. A released call is routed
// among the free workers (its holder alone when that one is free).
// The free workers are read once per look and the one that took a call leaves them (its home, else
// the first: routing picks later, after the look), since the gate's views show a released call only
// once the proxy has sent it: at most one call per worker a look. Each held call's holder
// (`holderOf`: its index in the views, -1 none) is read at most once per look and kept for routing
// it (a call taken after its locality wait goes to its holder as read in this look). The simulator
// routes the calls a look released after it, as the gate does, and looks again at once until a look
// releases nothing (s39 F2: it once re-read the views after each release, so a worker with
// two free places took two calls in one look).
// Views (the gate's count calls sent since the last scrape as waiting) and when a caller looks
// (the gate: attempt ends, scrape rounds, a fallback timer; the simulator: every arrival and step
// end) stay the callers'.
// Cost: O(releases · (workers + window · holder read)); a holder read is O(workers) index reads.
// Settings: locality_wait_ms, locality_window, max_waiting, max_kv_usage (ADMISSION_DEFAULTS).
import type { WorkerView } from '../types.ts';
import type { AdmissionSettings } from './admission-defaults.ts';
import { admissibleWorkers } from './can-admit.ts';
import type { FairQueue } from './fair-queue.ts';

/** What a look needs of a held call: when it was first looked at (its locality wait's start), -1
 *  before that; the look sets it. */
export interface LookedAt {
  consideredMs: number;
}

export interface LookOptions<T> {
  /** the workers, healthy ones only, as the caller's views show them now */
  views: readonly WorkerView[];
  settings: Pick<AdmissionSettings, 'locality_wait_ms' | 'locality_window' | 'max_waiting' | 'max_kv_usage'>;
  nowMs: number;
  /** index in `views` of the worker the call waits for (arrival.ts localityHome), -1 when none */
  holderOf: (item: T) => number;
  /** the call leaves, routed among `only` (its holder alone when that one is free, else every
   *  free worker; a fresh array) */
  release: (item: T, only: WorkerView[]) => void;
  /** false: no worker is looked at as free (the gate before its first scrape round) */
  signalsKnown?: boolean;
}

/** Releases held calls while a worker is free; returns how many left. */
export function releaseLook<T extends LookedAt>(queue: FairQueue<T>, o: LookOptions<T>): number {
  const { views, settings: s, nowMs } = o;
  if (o.signalsKnown === false) return 0;
  let free = admissibleWorkers(views, s);
  const homes = new Map<T, number>();
  const home = (h: T): number => {
    let i = homes.get(h);
    if (i === undefined) homes.set(h, (i = o.holderOf(h)));
    return i;
  };
  let released = 0;
  while (free.length > 0 && queue.size > 0) {
    const able = free;
    const taken = queue.takeFirst(
      (h) => {
        if (h.consideredMs < 0) h.consideredMs = nowMs;
        if (nowMs - h.consideredMs >= s.locality_wait_ms) return true;
        const i = home(h);
        return i < 0 || able.includes(views[i]);
      },
      nowMs,
      s.locality_window,
    );
    if (!taken) break;
    released++;
    const i = home(taken);
    const at = i >= 0 && able.includes(views[i]) ? views[i] : undefined;
    o.release(taken, at ? [at] : able.slice());
    const used = at ?? able[0];
    free = able.filter((v) => v !== used);
  }
  return released;
}
