// What: an LRU cache whose entries belong to tenants (the pipeline's kept last calls and resend
// hints). Bounded, as one LRU, by an entry count and a total weight. Eviction is the plain LRU's
// (least recently used entry first) with two exceptions, so that neither of these happens:
// - an active tenant starved by idle ones: a tenant with no get or set while the cache turned over
//   `idleTurnovers` times (by either bound: that many × max sets, or sets weighing that many ×
//   maxSize) keeps no reserve, and its entries go first (least recently active tenant first);
// - a quieter tenant's kept calls wiped by another's flood (many first calls, or a few huge ones):
//   each active tenant has a reserve, `reserveShare` of an even split of each bound over the active
//   tenants, and is not evicted from while losing its least recently used entry would leave it
//   under that reserve (in the bound exceeded). A victim's one heavy session is kept that way too.
// Above the reserves it is plain LRU, so one active tenant among idle ones gets the whole cache at
// once (at least 1 − reserveShare of it while the others still count as active), and with one
// tenant it is exactly the lru-cache it replaced. If every tenant is within its reserve, the least
// recently used entry goes anyway (the entry just set is never the one).
// Complexity: has O(1); get O(1) (O(log tenants) when it uses a tenant's oldest entry); set
// O(log tenants) plus, per eviction, O(1) when a tenant is idle, else O(log tenants): tenants sit
// in a treap by oldest entry (stamp-treap.ts), never scanned. Recency is kept in linked lists
// (recency-list.ts), not Map order, so the oldest entry is O(1) to find.
// Settings: max (entries), maxSize (weight), sizeOf (an entry's weight, ≥ 1), idleTurnovers
// (default DEFAULT_IDLE_TURNOVERS), reserveShare (default DEFAULT_RESERVE_SHARE).

import { type Linked, RecencyList } from './recency-list.ts';
import { StampTreap, type TreapNode } from './stamp-treap.ts';

/** Turnovers of the cache without a tenant's get or set after which it is idle: long enough that a
 * tenant calling again after minutes of other tenants' traffic still counts. A turnover is counted
 * in whichever bound binds first: `max` sets, or sets weighing `maxSize` in all (the pipeline's
 * kept calls are bounded by entries per tenant × tenants but by 16M tokens, so with agent-sized
 * calls the weight turns over hundreds of times before the count does once). */
export const DEFAULT_IDLE_TURNOVERS = 8;
/** An active tenant's reserve, as a share of an even split of each bound over the active tenants:
 * half leaves at least half of the cache to plain LRU, so a busy tenant is never held to 1/n. */
export const DEFAULT_RESERVE_SHARE = 0.5;

interface Entry<V> extends Linked<Entry<V>> {
  key: string;
  value: V;
  size: number;
  /** `TenantLru.clock` when last set or got: orders the oldest entries of different tenants. */
  stamp: number;
}

/** A tenant; in `TenantLru.byOldest` while it holds entries, under its oldest entry's stamp (`key`),
 * with `c` its entries but one and `w` its weight but its oldest entry's (what it keeps if it loses
 * its oldest entry: compared with the reserve). */
interface Bucket<V> extends Linked<Bucket<V>>, TreapNode<Bucket<V>> {
  tenant: string;
  entries: Map<string, Entry<V>>;
  /** The tenant's entries, least recently used first. */
  order: RecencyList<Entry<V>>;
  size: number;
  /** `TenantLru.sets` and `.setWeight` at the tenant's last get or set (the idle clock, in
   * operations and in weight set). */
  last: number;
  lastWeight: number;
  idle: boolean;
  indexed: boolean;
}

export interface TenantLruOptions<V> {
  max: number;
  maxSize: number;
  sizeOf: (v: V) => number;
  idleTurnovers?: number;
  reserveShare?: number;
}

export class TenantLru<V> {
  private readonly buckets = new Map<string, Bucket<V>>();
  /** Tenants used within the idle window, least recently used first. */
  private readonly active = new RecencyList<Bucket<V>>();
  /** Tenants holding entries but idle, in the order they went idle. */
  private readonly idle = new RecencyList<Bucket<V>>();
  /** Every tenant holding entries, by its oldest entry's stamp. */
  private readonly byOldest = new StampTreap<Bucket<V>>();
  private count = 0;
  private weight = 0;
  private clock = 0;
  private sets = 0;
  /** The weight of every set so far (exact while sizes are whole numbers, up to 2^53). */
  private setWeight = 0;
  private readonly idleSets: number;
  private readonly idleWeight: number;
  private readonly reserveShare: number;

  constructor(private readonly o: TenantLruOptions<V>) {
    const turnovers = o.idleTurnovers ?? DEFAULT_IDLE_TURNOVERS;
    this.idleSets = turnovers * o.max;
    this.idleWeight = turnovers * o.maxSize;
    this.reserveShare = o.reserveShare ?? DEFAULT_RESERVE_SHARE;
  }

  /** Entries held (all tenants). */
  get size(): number {
    return this.count;
  }

  /** Entries held by one tenant. */
  countOf(tenant: string): number {
    return this.buckets.get(tenant)?.entries.size ?? 0;
  }

  /** The value, now the tenant's most recently used; the tenant counts as active. */
  get(tenant: string, key: string): V | undefined {
    const b = this.buckets.get(tenant);
    if (b === undefined) return undefined;
    this.touch(b);
    const e = b.entries.get(key);
    if (e === undefined) return undefined;
    const oldest = b.order.head === e;
    b.order.touch(e);
    e.stamp = ++this.clock;
    if (oldest) this.index(b);
    return e.value;
  }

  /** Whether the key is held (recency and activity unchanged). */
  has(tenant: string, key: string): boolean {
    return this.buckets.get(tenant)?.entries.has(key) === true;
  }

  set(tenant: string, key: string, value: V): void {
    const size = Math.max(1, this.o.sizeOf(value));
    this.sets++;
    this.setWeight += size;
    let b = this.buckets.get(tenant);
    if (b === undefined) {
      b = {
        tenant,
        entries: new Map(),
        order: new RecencyList(),
        size: 0,
        last: this.sets,
        lastWeight: this.setWeight,
        idle: false,
        indexed: false,
        prev: undefined,
        next: undefined,
        key: 0,
        prio: this.byOldest.nextPrio(),
        left: undefined,
        right: undefined,
        c: 0,
        w: 0,
        maxC: 0,
        maxW: 0,
      };
      this.buckets.set(tenant, b);
      this.active.push(b);
    } else this.touch(b);
    const old = b.entries.get(key);
    if (old !== undefined) this.remove(b, old);
    if (size > this.o.maxSize) {
      if (b.entries.size === 0) this.drop(b);
      else this.index(b);
      return;
    }
    const e: Entry<V> = { key, value, size, stamp: ++this.clock, prev: undefined, next: undefined };
    b.entries.set(key, e);
    b.order.push(e);
    b.size += size;
    this.weight += size;
    this.count++;
    this.index(b);
    this.expire();
    while (this.count > this.o.max || this.weight > this.o.maxSize) {
      const victim = this.victim(b, e);
      this.remove(victim, victim.order.head as Entry<V>);
      if (victim.entries.size === 0) this.drop(victim);
      else this.index(victim);
    }
  }

  /** Puts `b`'s place in `byOldest` right after its entries changed. */
  private index(b: Bucket<V>): void {
    const head = b.order.head as Entry<V>;
    const c = b.entries.size - 1;
    const w = b.size - head.size;
    if (b.indexed && b.key === head.stamp) {
      if (b.c === c && b.w === w) return;
      b.c = c;
      b.w = w;
      this.byOldest.update(b);
      return;
    }
    if (b.indexed) this.byOldest.remove(b);
    b.key = head.stamp;
    b.c = c;
    b.w = w;
    this.byOldest.insert(b);
    b.indexed = true;
  }

  /** The tenant used now: most recently active, not idle. */
  private touch(b: Bucket<V>): void {
    b.last = this.sets;
    b.lastWeight = this.setWeight;
    if (b.idle) {
      this.idle.unlink(b);
      b.idle = false;
      this.active.push(b);
    } else this.active.touch(b);
  }

  /** Moves the tenants not used within the idle window to `idle` (amortised O(1): `active` is in
   * order of last use, and both clocks only grow). */
  private expire(): void {
    for (let b = this.active.head; b !== undefined && this.idleFor(b); b = this.active.head) {
      this.active.unlink(b);
      b.idle = true;
      this.idle.push(b);
    }
  }

  private idleFor(b: Bucket<V>): boolean {
    return this.sets - b.last > this.idleSets || this.setWeight - b.lastWeight > this.idleWeight;
  }

  private remove(b: Bucket<V>, e: Entry<V>): void {
    b.entries.delete(e.key);
    b.order.unlink(e);
    b.size -= e.size;
    this.weight -= e.size;
    this.count--;
  }

  /** Forgets a tenant holding nothing. */
  private drop(b: Bucket<V>): void {
    if (b.indexed) this.byOldest.remove(b);
    b.indexed = false;
    (b.idle ? this.idle : this.active).unlink(b);
    this.buckets.delete(b.tenant);
  }

  /** Whose least recently used entry goes: an idle tenant's, else the oldest among the active
   * tenants not held by their reserve, else the oldest of all. The entry just set never goes (some
   * tenant is always left: the bounds are ≥ 1 entry). With no idle tenant, every tenant holding
   * entries is active and in `byOldest`; the one holding only the entry just set has the largest
   * key, so it is found only where no other is (then it is `justSet`, as the scan's default was). */
  private victim(justSet: Bucket<V>, e: Entry<V>): Bucket<V> {
    if (this.idle.head !== undefined) return this.idle.head;
    const split = this.reserveShare / this.active.length;
    let oldest: Bucket<V> | undefined;
    if (this.count > this.o.max) oldest = this.byOldest.firstWith(true, this.o.max * split);
    if (this.weight > this.o.maxSize) {
      const w = this.byOldest.firstWith(false, this.o.maxSize * split);
      if (w !== undefined && (oldest === undefined || w.key < oldest.key)) oldest = w;
    }
    if (oldest !== undefined && oldest.order.head !== e) return oldest;
    return this.byOldest.first() ?? justSet;
  }
}
