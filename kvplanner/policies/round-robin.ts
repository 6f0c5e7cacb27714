// round_robin: the baseline every other policy is compared with. O(1) per decision.
import type { Choice, Policy, RouteInfo, WorkerView } from '../types.ts';

export class RoundRobinPolicy implements Policy {
  readonly name = 'round_robin';
  private next = 0;

  select(workers: readonly WorkerView[], _info: RouteInfo): Choice | null {
    if (workers.length === 0) return null;
    const worker = workers[this.next % workers.length];
    this.next = (this.next + 1) % 1_000_000_007;
    return { worker, branch: 'rotate' };
  }
}
