// What: an LRU cache whose entries belong to tenants (the pipeline's kept last calls, LocalCall).
// Bounded, as one LRU, by an entry count and a total weight; when a set goes over either bound it
// evicts the least recently used entry of the tenant that holds the most (entries, or weight, for
// the bound exceeded). A tenant is never evicted from by another while it holds less than the
// other: a tenant flooding the cache with first calls, or a few huge sessions, evicts its own
// entries, not another tenant's (review s37 F3: the victim's next call took the O(history) path).
// With one tenant it is the plain LRU it replaces. The entry just set is kept unless it alone is
// over the weight bound (then it is not stored, as lru-cache's default maxEntrySize).
// Complexity: get / has O(1); set O(1) plus O(tenants holding entries) per eviction (tenants come
// from configured keys).
// Settings: max (entries), maxSize (weight), sizeOf (an entry's weight, ≥ 1).

interface Entry<V> {
  value: V;
  size: number;
}

interface Bucket<V> {
  tenant: string;
  /** Insertion order is recency order: least recently used first. */
  entries: Map<string, Entry<V>>;
  size: number;
}

export interface TenantLruOptions<V> {
  max: number;
  maxSize: number;
  sizeOf: (v: V) => number;
}

export class TenantLru<V> {
  private readonly buckets = new Map<string, Bucket<V>>();
  private count = 0;
  private weight = 0;

  constructor(private readonly o: TenantLruOptions<V>) {}

  /** Entries held (all tenants). */
  get size(): number {
    return this.count;
  }

  /** Entries held by one tenant. */
  countOf(tenant: string): number {
    return this.buckets.get(tenant)?.entries.size ?? 0;
  }

  /** The value, now the tenant's most recently used. */
  get(tenant: string, key: string): V | undefined {
    const b = this.buckets.get(tenant);
    const e = b?.entries.get(key);
    if (b === undefined || e === undefined) return undefined;
    b.entries.delete(key);
    b.entries.set(key, e);
    return e.value;
  }

  /** Whether the key is held (recency unchanged). */
  has(tenant: string, key: string): boolean {
    return this.buckets.get(tenant)?.entries.has(key) === true;
  }

  set(tenant: string, key: string, value: V): void {
    const size = Math.max(1, this.o.sizeOf(value));
    let b = this.buckets.get(tenant);
    if (b === undefined) {
      b = { tenant, entries: new Map(), size: 0 };
      this.buckets.set(tenant, b);
    }
    this.remove(b, key);
    if (size > this.o.maxSize) {
      if (b.entries.size === 0) this.buckets.delete(tenant);
      return;
    }
    b.entries.set(key, { value, size });
    b.size += size;
    this.weight += size;
    this.count++;
    while (this.count > this.o.max || this.weight > this.o.maxSize) {
      const victim = this.largest(this.weight > this.o.maxSize, b, key);
      this.remove(victim, victim.entries.keys().next().value as string);
      if (victim.entries.size === 0) this.buckets.delete(victim.tenant);
    }
  }

  private remove(b: Bucket<V>, key: string): void {
    const old = b.entries.get(key);
    if (old === undefined) return;
    b.entries.delete(key);
    b.size -= old.size;
    this.weight -= old.size;
    this.count--;
  }

  /** The tenant holding the most (by weight, or by entries), skipping `justSet`'s tenant while the
   * entry just set is all it holds. Some tenant is always left: the bounds are ≥ 1 entry. */
  private largest(byWeight: boolean, justSet: Bucket<V>, key: string): Bucket<V> {
    let best: Bucket<V> | undefined;
    let most = -1;
    for (const b of this.buckets.values()) {
      if (b === justSet && b.entries.size === 1 && b.entries.has(key)) continue;
      const m = byWeight ? b.size : b.entries.size;
      if (m > most) {
        best = b;
        most = m;
      }
    }
    return best ?? justSet;
  }
}
