// Piscina task queue that takes tenants in turn: each tenant has its own FIFO and shift() serves
// the next tenant in rotation that has work, so one tenant's burst of big prompts waits behind
// itself, not in front of everyone (at most one of its jobs ahead of another tenant's).
// push/shift O(1) amortised; remove O(queued of that tenant) (aborts are rare).
import { Piscina, type PiscinaTask, type TaskQueue } from 'piscina';

/** Options a task carries under Piscina.queueOptionsSymbol. */
export interface FairQueueOptions {
  tenant: string;
  /** Called when a thread takes the task from this queue (the pool then never evicts it). */
  onStart?: () => void;
}

type Task = PiscinaTask;

const optionsOf = (t: Task): FairQueueOptions =>
  (t as unknown as Record<symbol, FairQueueOptions | null>)[Piscina.queueOptionsSymbol] ?? { tenant: '' };
const tenantOf = (t: Task): string => optionsOf(t).tenant;

export class FairTaskQueue implements TaskQueue {
  private readonly byTenant = new Map<string, Task[]>();
  /** Tenants with queued work, in service order. */
  private readonly turn: string[] = [];
  private n = 0;

  get size(): number {
    return this.n;
  }

  /** Tasks of one tenant waiting here. */
  queuedOf(tenant: string): number {
    return this.byTenant.get(tenant)?.length ?? 0;
  }

  push(task: Task): void {
    const tenant = tenantOf(task);
    let q = this.byTenant.get(tenant);
    if (!q) {
      this.byTenant.set(tenant, (q = []));
      this.turn.push(tenant);
    }
    q.push(task);
    this.n++;
  }

  shift(): Task | null {
    const tenant = this.turn.shift();
    if (tenant === undefined) return null;
    const q = this.byTenant.get(tenant)!;
    const task = q.shift()!;
    this.n--;
    if (q.length > 0) this.turn.push(tenant);
    else this.byTenant.delete(tenant);
    optionsOf(task).onStart?.();
    return task;
  }

  remove(task: Task): void {
    const tenant = tenantOf(task);
    const q = this.byTenant.get(tenant);
    const i = q ? q.indexOf(task) : -1;
    if (!q || i < 0) return;
    q.splice(i, 1);
    this.n--;
    if (q.length === 0) {
      this.byTenant.delete(tenant);
      const k = this.turn.indexOf(tenant);
      if (k >= 0) this.turn.splice(k, 1);
    }
  }
}
