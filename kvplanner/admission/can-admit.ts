// Whether a worker can take one more call now, from the engine signals the gateway scrapes (or
// the simulator reads): fewer waiting requests than max_waiting and KV usage under max_kv_usage.
// A worker with no engine signals counts as able (nothing says otherwise); an unhealthy one never.
// Cost: O(1) per worker.
import type { WorkerView } from '../types.ts';
import type { AdmissionSettings } from './admission-defaults.ts';

export function canAdmit(w: WorkerView, s: Pick<AdmissionSettings, 'max_waiting' | 'max_kv_usage'>): boolean {
  if (!w.healthy) return false;
  if (w.maxInFlight > 0 && w.inFlight >= w.maxInFlight) return false;
  const e = w.engine;
  if (!e) return true;
  if (e.waiting !== undefined && e.waiting >= s.max_waiting) return false;
  if (e.kvUsage !== undefined && e.kvUsage >= s.max_kv_usage) return false;
  return true;
}

/** The workers of `all` that can admit a call now (a new array; empty when none can). */
export function admissibleWorkers(
  all: readonly WorkerView[],
  s: Pick<AdmissionSettings, 'max_waiting' | 'max_kv_usage'>,
): WorkerView[] {
  const out: WorkerView[] = [];
  for (const w of all) if (canAdmit(w, s)) out.push(w);
  return out;
}
