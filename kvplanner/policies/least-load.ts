// least_load: the worker with the least outstanding work, counted as prompt tokens still to
// prefill plus a token-equivalent per in-flight request (decode slots and engine queue). O(n).
// Settings: request_token_equiv (default 512), uses scraped engine.waiting when present.
// Ties rotate so equal workers share traffic instead of the first one taking it all.
import { num } from '../policy-options.ts';
import type { Choice, Policy, PolicyOptions, RouteInfo, WorkerView } from '../types.ts';

/** Token-equivalent cost of one in-flight request (≈ a short prompt's prefill). */
export const DEFAULT_REQUEST_TOKEN_EQUIV = 512;
export const LEAST_LOAD_BRANCHES = ['least_load'] as const;

export function workLoad(w: WorkerView, requestTokenEquiv: number): number {
  return w.queuedPrefillTokens + (w.inFlight + (w.engine?.waiting ?? 0)) * requestTokenEquiv;
}

export class LeastLoadPolicy implements Policy {
  readonly name = 'least_load';
  private readonly equiv: number;
  private rot = 0;

  constructor(opts: PolicyOptions = {}) {
    this.equiv = num(opts, 'request_token_equiv', DEFAULT_REQUEST_TOKEN_EQUIV, 0);
  }

  select(workers: readonly WorkerView[], _info: RouteInfo): Choice | null {
    const n = workers.length;
    if (n === 0) return null;
    const start = this.rot++ % n;
    let best = workers[start];
    let bestLoad = workLoad(best, this.equiv);
    for (let k = 1; k < n; k++) {
      const w = workers[(start + k) % n];
      const l = workLoad(w, this.equiv);
      if (l < bestLoad) {
        best = w;
        bestLoad = l;
      }
    }
    return { worker: best, branch: 'least_load' };
  }
}
