// The gateway-side queue of late binding: calls wait here until a worker can admit them, then
// leave in per-tenant round robin (one tenant's burst never holds another's calls back), each
// tenant's own calls in arrival order. Bounded in total and per tenant, and every entry carries a
// deadline (expire() hands back the ones past it, so none waits forever). A full queue never
// refuses: push holds the newcomer and hands back one held call that spills (the caller sends it
// on at once, as at arrival): the tenant's oldest when its share is full; when the total is full,
// the oldest of the tenant holding the most if it holds at least two more than the newcomer's
// tenant (a tenant holding nothing is held before a tenant at its share spills), else the
// newcomer's tenant's oldest. The oldest, not the newcomer: a spilled call queues at an engine, and
// spilling newcomers would let later calls overtake the held ones there.
// Spilling is for one tenant alone (the fleet simulator's case, a single-tenant deployment): a
// spilled call bypasses the gate, so with other tenants holding calls a flooding tenant's spills
// would keep every engine at max_waiting and the others' held calls would wait out max_wait_ms.
// While another tenant holds calls, roomFor (called before push) refuses instead: a tenant at its
// share is refused; a full total takes out the newest call of a tenant holding at least two more
// than the newcomer's (refused, the newcomer held: fair by share), else refuses the newcomer.
// Cost: push / shift O(1) amortised (O(tenants) when the total is full); expire O(expired +
// tenants) (deadlines are arrival time + one constant, so each tenant's queue is in deadline order
// and only its head is looked at); remove O(the tenant's calls + tenants).
// Settings: maxQueued, maxPerTenant, maxWaitMs (ADMISSION_DEFAULTS in admission-defaults.ts).

interface Entry<T> {
  item: T;
  atMs: number;
  deadlineMs: number;
}

/** FIFO with an O(1) shift: a head index, compacted when half is consumed. */
class Fifo<T> {
  private items: Entry<T>[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(e: Entry<T>): void {
    this.items.push(e);
  }

  peek(): Entry<T> | undefined {
    return this.items[this.head];
  }

  /** The i-th waiting entry (0: the head). */
  at(i: number): Entry<T> | undefined {
    return this.items[this.head + i];
  }

  /** Takes the i-th waiting entry (O(length) unless it is the head). */
  removeAt(i: number): Entry<T> {
    if (i === 0) return this.shift()!;
    return this.items.splice(this.head + i, 1)[0];
  }

  shift(): Entry<T> | undefined {
    if (this.head >= this.items.length) return undefined;
    const e = this.items[this.head++];
    if (this.head > 64 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return e;
  }
}

export interface FairQueueLimits {
  /** Calls waiting over all tenants. */
  maxQueued: number;
  /** Calls one tenant may have waiting. */
  maxPerTenant: number;
  /** How long a call may wait, ms (Infinity: no deadline). */
  maxWaitMs: number;
}

/** What roomFor decided: the newcomer is refused (its share full, or the total full and its tenant
 *  among those holding the most), or another tenant's newest call was taken out to be refused. */
export type Refusal<T> = { refuse: 'tenant_full' | 'queue_full' } | { evicted: T; tenant: string };

export class FairQueue<T> {
  private readonly tenants = new Map<string, Fifo<T>>();
  /** Tenants with calls waiting, in the order they are served (the head goes next). */
  private readonly order: string[] = [];
  private total = 0;

  constructor(private readonly limits: FairQueueLimits) {}

  get size(): number {
    return this.total;
  }

  sizeOf(tenant: string): number {
    return this.tenants.get(tenant)?.length ?? 0;
  }

  /** Holds `item` (deadline nowMs + maxWaitMs). Returns the call that spilled to make room (see
   *  the header; `item` itself when no call can be held at all), or undefined. */
  push(tenant: string, item: T, nowMs: number): T | undefined {
    const { maxQueued, maxPerTenant } = this.limits;
    if (maxQueued < 1 || maxPerTenant < 1) return item;
    let spilled: T | undefined;
    const own = this.tenants.get(tenant)?.length ?? 0;
    if (own >= maxPerTenant) spilled = this.takeOldest(tenant);
    else if (this.total >= maxQueued) {
      const { top, most } = this.busiest(tenant, own);
      if (most >= own + 2) spilled = this.takeOldest(top);
      else if (own > 0) spilled = this.takeOldest(tenant);
      else return item;
    }
    let q = this.tenants.get(tenant);
    if (!q) {
      q = new Fifo<T>();
      this.tenants.set(tenant, q);
    }
    if (q.length === 0) this.order.push(tenant);
    q.push({ item, atMs: nowMs, deadlineMs: nowMs + this.limits.maxWaitMs });
    this.total++;
    return spilled;
  }

  /** The tenant holding the most calls (the first in round-robin order among equals), or `tenant`
   *  itself (holding `own`) when none holds more. O(tenants). */
  private busiest(tenant: string, own: number): { top: string; most: number } {
    let top = tenant;
    let most = own;
    for (const t of this.order) {
      const n = this.tenants.get(t)!.length;
      if (n > most) {
        most = n;
        top = t;
      }
    }
    return { top, most };
  }

  /** With other tenants holding calls, a full queue refuses rather than spills (see the header):
   *  undefined when push may hold `tenant`'s newcomer without displacing anyone, or when no other
   *  tenant holds calls (push spills then). O(tenants) when the total is full, else O(1). */
  roomFor(tenant: string): Refusal<T> | undefined {
    const { maxQueued, maxPerTenant } = this.limits;
    if (maxQueued < 1 || maxPerTenant < 1 || !this.othersWaiting(tenant)) return undefined;
    const own = this.tenants.get(tenant)?.length ?? 0;
    if (own >= maxPerTenant) return { refuse: 'tenant_full' };
    if (this.total < maxQueued) return undefined;
    const { top, most } = this.busiest(tenant, own);
    if (most < own + 2) return { refuse: 'queue_full' };
    return { evicted: this.takeNewest(top), tenant: top };
  }

  /** Takes the tenant's newest call (it holds one; its older ones keep their places). */
  private takeNewest(tenant: string): T {
    const q = this.tenants.get(tenant)!;
    const e = q.removeAt(q.length - 1);
    this.total--;
    if (q.length === 0) {
      this.tenants.delete(tenant);
      this.order.splice(this.order.indexOf(tenant), 1);
    }
    return e.item;
  }

  /** Takes the tenant's oldest call (it holds one); the tenant keeps its place in the round
   *  unless that was its last. */
  private takeOldest(tenant: string): T {
    const q = this.tenants.get(tenant)!;
    const e = q.shift()!;
    this.total--;
    if (q.length === 0) {
      this.tenants.delete(tenant);
      this.order.splice(this.order.indexOf(tenant), 1);
    }
    return e.item;
  }

  /** Whether a tenant other than `tenant` has calls waiting (O(1)). */
  othersWaiting(tenant: string): boolean {
    return this.order.length > 1 || (this.order.length === 1 && this.order[0] !== tenant);
  }

  /** Takes `item` out of `tenant`'s calls (a client that left); false when it is not there.
   *  O(the tenant's calls + tenants). */
  remove(tenant: string, item: T): boolean {
    const q = this.tenants.get(tenant);
    if (!q) return false;
    for (let i = 0; i < q.length; i++) {
      if (q.at(i)!.item !== item) continue;
      q.removeAt(i);
      this.total--;
      if (q.length === 0) {
        this.tenants.delete(tenant);
        this.order.splice(this.order.indexOf(tenant), 1);
      }
      return true;
    }
    return false;
  }

  /** The call that leaves next (without taking it). */
  peek(): T | undefined {
    const t = this.order[0];
    return t === undefined ? undefined : this.tenants.get(t)!.peek()!.item;
  }

  /** Takes the call that leaves next; its tenant goes to the back of the round. */
  shift(): T | undefined {
    const t = this.order.shift();
    if (t === undefined) return undefined;
    const q = this.tenants.get(t)!;
    const e = q.shift()!;
    this.total--;
    if (q.length > 0) this.order.push(t);
    else this.tenants.delete(t);
    return e.item;
  }

  /**
   * Takes the first call, in serving order, that `accept` takes (item, ms it has waited), looking
   * at up to `window` calls of each tenant (tenants in their round order); undefined when none.
   * A call passed over keeps its place. O(tenants · window) calls of `accept`.
   */
  takeFirst(accept: (item: T, waitedMs: number) => boolean, nowMs: number, window: number): T | undefined {
    for (let k = 0; k < this.order.length; k++) {
      const t = this.order[k];
      const q = this.tenants.get(t)!;
      const n = Math.min(window, q.length);
      for (let i = 0; i < n; i++) {
        const e = q.at(i)!;
        if (!accept(e.item, nowMs - e.atMs)) continue;
        q.removeAt(i);
        this.total--;
        this.order.splice(k, 1);
        if (q.length > 0) this.order.push(t);
        else this.tenants.delete(t);
        return e.item;
      }
    }
    return undefined;
  }

  /** Takes and returns every call whose deadline is before `nowMs`. */
  expire(nowMs: number): T[] {
    const out: T[] = [];
    for (let k = 0; k < this.order.length; ) {
      const t = this.order[k];
      const q = this.tenants.get(t)!;
      while (q.length > 0 && q.peek()!.deadlineMs < nowMs) {
        out.push(q.shift()!.item);
        this.total--;
      }
      if (q.length === 0) {
        this.tenants.delete(t);
        this.order.splice(k, 1);
      } else k++;
    }
    return out;
  }

  /** Takes every call (shutdown: each is answered, none is dropped silently). */
  drain(): T[] {
    const out: T[] = [];
    for (let x = this.shift(); x !== undefined; x = this.shift()) out.push(x);
    return out;
  }
}
