// The gateway-side queue of late binding: calls wait here until a worker can admit them, then
// leave in per-tenant round robin (one tenant's burst never holds another's calls back), each
// tenant's own calls in release order: by arrival + the slack push was given (release-order.ts:
// cheap prefills first within a bounded window; with no slack, arrival order), that slack capped at
// each release at msPerHeld × the calls the tenant then holds (a short queue leaves close to arrival
// order; a backlog gets the whole slack; a call deferred while the backlog was long moves up as it
// shrinks), and at slackPerDrain × the tenant's drain time (its held calls × the tenants in the
// round × the running mean interval between releases while calls were held: its own round-robin
// share, so a neighbour's backlog never loosens its order; arrival order until one is known). Bounded
// in total and per tenant, and every entry carries a
// deadline (expire() hands back the ones past it, so none waits forever). A full queue never
// refuses: push holds the newcomer and hands back one held call that spills (the caller sends it
// on at once, as at arrival): the tenant's oldest when its share is full; when the total is full,
// the oldest of the tenant holding the most if it holds at least two more than the newcomer's
// tenant (a tenant holding nothing is held before a tenant at its share spills), else the
// newcomer's tenant's oldest (oldest and newest by arrival, whatever the release order). The oldest, not the newcomer: a spilled call queues at an engine, and
// spilling newcomers would let later calls overtake the held ones there.
// Spilling is for one tenant alone (the fleet simulator's case, a single-tenant deployment): a
// spilled call bypasses the gate, so with other tenants holding calls a flooding tenant's spills
// would keep every engine at max_waiting and the others' held calls would wait out max_wait_ms.
// While another tenant holds calls, roomFor (called before push) refuses instead: a tenant at its
// share is refused; a full total takes out the newest call of a tenant holding at least two more
// than the newcomer's (refused, the newcomer held: fair by share), else refuses the newcomer.
// Cost: push O(log n) to find the place plus an array insert (n: the tenant's held calls; an
// append when the call's key is the latest, always with no slack), O(tenants) more when the total
// is full; shift O(n) array shift (a memmove; n ≤ max_queued_per_tenant), and with msPerHeld a
// merge of the key and arrival orders that may skip up to n calls (peek, shift; takeFirst to its
// window); expire O(expired ·
// (log n + n) + tenants): deadlines are arrival time + one constant, so each tenant's calls are
// also kept in arrival order and only the oldest is looked at; remove O(n + tenants). A held call
// may carry the last hash of its prompt's block chain (HeldChain): heldBasis finds the tenant's held
// call whose prompt a newcomer's extends furthest (O(min(its blocks, distinct held chain lengths))
// map reads; a map entry per held call that gave a chain), so release-order.ts charges a prompt's work once and keeps a
// conversation's turns in order.
// Settings: maxQueued, maxPerTenant, maxWaitMs, msPerHeld, slackPerDrain (ADMISSION_DEFAULTS in
// admission-defaults.ts); RELEASE_INTERVAL_WEIGHT.

interface Entry<T> {
  item: T;
  atMs: number;
  deadlineMs: number;
  /** release order: atMs + the call's slack (release-order.ts), ties by seq (arrival) */
  key: number;
  seq: number;
  /** taken out (it stays in `byAge` until that reaches it or is compacted) */
  gone: boolean;
  /** the last hash of its prompt's block chain, the chain's length and its prompt tokens
   *  (HeldChain), if given */
  end: string | undefined;
  blocks: number;
  tokens: number;
}

/** A held call's prompt as a later call of its tenant may extend it (release-order.ts): the last
 *  hash of its block chain, its prompt tokens, and the earliest key the call may have (the key of
 *  a held call whose prompt it extends: it never leaves before that one). */
export interface HeldChain {
  end: string;
  /** the chain's length (its blocks) */
  blocks: number;
  tokens: number;
  notBeforeKey: number;
}

/** The held call whose prompt a newcomer's extends furthest: its prompt tokens and its key. */
export interface HeldBasis {
  tokens: number;
  key: number;
}

const before = <T>(a: Entry<T>, b: Entry<T>): boolean => a.key < b.key || (a.key === b.key && a.seq < b.seq);

/** One tenant's held calls: in release order (`byKey`, sorted; with no slack that is arrival
 *  order and every push appends) and in arrival order (`byAge`: deadlines, oldest, newest; entries
 *  taken out elsewhere are skipped, and compacted once they outnumber the live ones). */
class TenantQueue<T> {
  private readonly byKey: Entry<T>[] = [];
  private byAge: Entry<T>[] = [];
  private ageHead = 0;
  private goneInAge = 0;
  /** the last chain hash of each held call that gave one → the keys of the calls holding it (a few:
   *  duplicates of one prompt), their prompt tokens and the latest of those keys (recomputed when
   *  the call that had it leaves, so a gone call's key never floors a later one: review s36 F2).
   *  Latest, not earliest (review s36 F2's open point; fleet simulator, policy ctxgate, default
   *  flags, 2026-12-02): of 23 runs (conversation half with 1 / 4 / 16 tenants at ×1 / ×2, 1 and 4
   *  tenants at ×0.9, two-kinds seeds 1–5 at ×1 / ×2, the synthetic trace with 1 / 4 tenants at
   *  ×1 / ×2 and 16 at ×1) 21 give byte-identical JSON either way (duplicates are held, e.g. 133
   *  at 4 tenants ×1, but rarely with different keys: 3 there); the two that move are worse with
   *  the earliest: the synthetic trace ×1 with 4 tenants p90 160.6 → 162.9 s, with 16 294.2 →
   *  299.4 s. */
  private readonly ends = new Map<string, { keys: number[]; tokens: number; key: number }>();
  /** the chain lengths of those calls → how many have each */
  private readonly lengths = new Map<number, number>();

  /** msPerHeld: each call's slack is at most this × the calls held here now (0: no such bound). */
  constructor(private readonly msPerHeld: number) {}

  get length(): number {
    return this.byKey.length;
  }

  push(e: Entry<T>): void {
    const k = this.byKey;
    let lo = 0;
    let hi = k.length;
    // common case first: no slack, or a later key than every held call
    if (hi === 0 || before(k[hi - 1], e)) lo = hi;
    else
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (before(k[mid], e)) lo = mid + 1;
        else hi = mid;
      }
    if (lo === k.length) k.push(e);
    else k.splice(lo, 0, e);
    this.byAge.push(e);
    if (e.end !== undefined) {
      const m = this.ends.get(e.end);
      if (m) {
        m.keys.push(e.key);
        m.key = Math.max(m.key, e.key);
      } else this.ends.set(e.end, { keys: [e.key], tokens: e.tokens, key: e.key });
      this.lengths.set(e.blocks, (this.lengths.get(e.blocks) ?? 0) + 1);
    }
  }

  /** The held call whose prompt is the longest prefix of `hashes` ending at block `fromBlock` or
   *  later (a chain hash names its whole prefix). O(min(hashes − fromBlock, distinct held chain
   *  lengths)) map reads: a long prompt among few held lengths looks only where one could end. */
  basis(hashes: readonly string[], fromBlock: number): HeldBasis | undefined {
    if (this.ends.size === 0) return undefined;
    const lo = Math.max(0, fromBlock);
    let m: { tokens: number; key: number } | undefined;
    if (this.lengths.size < hashes.length - lo) {
      let best = 0;
      for (const len of this.lengths.keys()) {
        if (len <= best || len - 1 < lo || len > hashes.length) continue;
        const hit = this.ends.get(hashes[len - 1]);
        if (hit) {
          m = hit;
          best = len;
        }
      }
    } else for (let i = hashes.length - 1; i >= lo && !m; i--) m = this.ends.get(hashes[i]);
    return m && { tokens: m.tokens, key: m.key };
  }

  /** Every held call, in no particular order. */
  all(): readonly Entry<T>[] {
    return this.byKey;
  }

  /**
   * The first `n` calls in release order (the first: the next to leave). With msPerHeld, a call's
   * slack is capped now at cap = msPerHeld × the calls held: the calls whose own slack is under
   * cap keep their key (byKey order), the others all count as arrival + cap (byAge order); the
   * two filtered lists are merged. O(held) at worst (the skipped ones), O(n) with no cap.
   * `capMs` caps the slack further (the queue's drain bound, FairQueue.drainCapMs).
   */
  front(n: number, capMs = Number.POSITIVE_INFINITY): Entry<T>[] {
    const k = this.byKey;
    const cap = Math.min(capMs, this.msPerHeld > 0 ? this.msPerHeld * k.length : Number.POSITIVE_INFINITY);
    if (!(cap < Number.POSITIVE_INFINITY) || n <= 0) return k.slice(0, n);
    const a = this.byAge;
    const out: Entry<T>[] = [];
    let i = 0;
    let j = this.ageHead;
    const nextKeyed = (): void => {
      while (i < k.length && k[i].key - k[i].atMs >= cap) i++;
    };
    const nextCapped = (): void => {
      while (j < a.length && (a[j].gone || a[j].key - a[j].atMs < cap)) j++;
    };
    nextKeyed();
    nextCapped();
    while (out.length < n && (i < k.length || j < a.length)) {
      const x = k[i];
      const y = a[j];
      const takeX =
        y === undefined || (x !== undefined && (x.key < y.atMs + cap || (x.key === y.atMs + cap && x.seq < y.seq)));
      if (takeX) {
        out.push(x);
        i++;
        nextKeyed();
      } else {
        out.push(y);
        j++;
        nextCapped();
      }
    }
    return out;
  }

  /** The call that arrived first (the earliest deadline). */
  oldest(): Entry<T> | undefined {
    const a = this.byAge;
    while (this.ageHead < a.length && a[this.ageHead].gone) {
      this.ageHead++;
      this.goneInAge--;
    }
    return a[this.ageHead];
  }

  /** The call that arrived last. */
  newest(): Entry<T> | undefined {
    const a = this.byAge;
    while (a.length > this.ageHead && a[a.length - 1].gone) {
      a.pop();
      this.goneInAge--;
    }
    return a.length > this.ageHead ? a[a.length - 1] : undefined;
  }

  /** Takes `e` (held here) out. */
  take(e: Entry<T>): void {
    const k = this.byKey;
    let lo = 0;
    let hi = k.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (before(k[mid], e)) lo = mid + 1;
      else hi = mid;
    }
    k.splice(lo, 1);
    this.markGone(e);
    if (e.end !== undefined) {
      const m = this.ends.get(e.end)!;
      const keys = m.keys;
      if (keys.length === 1) this.ends.delete(e.end);
      else {
        // swap-remove one occurrence of this call's key (keys are fixed at push)
        const i = keys.indexOf(e.key);
        keys[i] = keys[keys.length - 1];
        keys.pop();
        if (e.key === m.key) m.key = Math.max(...keys);
      }
      const n = this.lengths.get(e.blocks)! - 1;
      if (n === 0) this.lengths.delete(e.blocks);
      else this.lengths.set(e.blocks, n);
    }
  }

  private markGone(e: Entry<T>): void {
    e.gone = true;
    this.goneInAge++;
    if (this.goneInAge > 32 && this.goneInAge > this.byKey.length) {
      this.byAge = this.byAge.slice(this.ageHead).filter((x) => !x.gone);
      this.ageHead = 0;
      this.goneInAge = 0;
    }
  }
}

export interface FairQueueLimits {
  /** Calls waiting over all tenants. */
  maxQueued: number;
  /** Calls one tenant may have waiting. */
  maxPerTenant: number;
  /** How long a call may wait, ms (Infinity: no deadline). */
  maxWaitMs: number;
  /** Each call's slack (push) is at most this × the calls its tenant holds at the time of each
   *  release (release-order.ts; 0 or absent: the slack as pushed). */
  msPerHeld?: number;
  /** ... and at most this × the tenant's drain time at each release: its held calls × the tenants
   *  in the round × the recent mean interval between releases (0 or absent: no such bound;
   *  release_slack_per_drain). */
  slackPerDrain?: number;
}

/** Weight of each new interval between releases in their running mean (the drain bound's rate):
 *  about the last 32 releases count. */
const RELEASE_INTERVAL_WEIGHT = 1 / 32;

/** What roomFor decided: the newcomer is refused (its share full, or the total full and its tenant
 *  among those holding the most), or another tenant's newest call was taken out to be refused. */
export type Refusal<T> = { refuse: 'tenant_full' | 'queue_full' } | { evicted: T; tenant: string };

export class FairQueue<T> {
  private readonly tenants = new Map<string, TenantQueue<T>>();
  /** Tenants with calls waiting, in the order they are served (the head goes next). */
  private readonly order: string[] = [];
  private total = 0;
  private seq = 0;
  /** running mean of the time between releases while calls were held, ms (NaN: none seen yet) */
  private intervalMs = Number.NaN;
  /** the last release, or when the queue last became non-empty if later */
  private lastReleaseMs = Number.NEGATIVE_INFINITY;

  constructor(private readonly limits: FairQueueLimits) {}

  get size(): number {
    return this.total;
  }

  sizeOf(tenant: string): number {
    return this.tenants.get(tenant)?.length ?? 0;
  }

  /** Holds `item` (deadline nowMs + maxWaitMs; released among its tenant's calls as if it arrived
   *  `slackMs` later, release-order.ts). Returns the call that spilled to make room (see the
   *  header; `item` itself when no call can be held at all), or undefined. */
  push(tenant: string, item: T, nowMs: number, slackMs = 0, chain?: HeldChain): T | undefined {
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
      q = new TenantQueue<T>(this.limits.msPerHeld ?? 0);
      this.tenants.set(tenant, q);
    }
    if (q.length === 0) this.order.push(tenant);
    // an idle gate's gap is no interval between releases: count from the first held call on
    if (this.total === 0) this.lastReleaseMs = Math.max(this.lastReleaseMs, nowMs);
    const deadlineMs = nowMs + this.limits.maxWaitMs;
    q.push({
      item,
      atMs: nowMs,
      deadlineMs,
      key: Math.max(nowMs + slackMs, chain?.notBeforeKey ?? Number.NEGATIVE_INFINITY),
      seq: this.seq++,
      gone: false,
      end: chain?.end,
      blocks: chain?.blocks ?? 0,
      tokens: chain?.tokens ?? 0,
    });
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

  /** The held call of `tenant` whose prompt `hashes` extends furthest, looking only at prefixes of
   *  `fromBlock` + 1 blocks or more (release-order.ts); undefined when none. */
  heldBasis(tenant: string, hashes: readonly string[], fromBlock: number): HeldBasis | undefined {
    return this.tenants.get(tenant)?.basis(hashes, fromBlock);
  }

  /** Takes the tenant's newest call (it holds one; its older ones keep their places). */
  private takeNewest(tenant: string): T {
    return this.takeEnd(tenant, 'newest');
  }

  /** Takes the tenant's oldest call (it holds one); the tenant keeps its place in the round
   *  unless that was its last. */
  private takeOldest(tenant: string): T {
    return this.takeEnd(tenant, 'oldest');
  }

  /** Takes the tenant's newest or oldest call by arrival; the tenant leaves the round with its last. */
  private takeEnd(tenant: string, end: 'newest' | 'oldest'): T {
    const q = this.tenants.get(tenant)!;
    const e = end === 'newest' ? q.newest()! : q.oldest()!;
    q.take(e);
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
    for (const e of q.all()) {
      if (e.item !== item) continue;
      q.take(e);
      this.total--;
      if (q.length === 0) {
        this.tenants.delete(tenant);
        this.order.splice(this.order.indexOf(tenant), 1);
      }
      return true;
    }
    return false;
  }

  /** The drain bound on the slacks of a tenant holding `held` calls now: slackPerDrain × its own
   *  drain time, held × the tenants in the round × the mean interval between releases (tenants
   *  take turns, so that is about what arrival order would make the tenant's newcomer wait; its
   *  own share, so another tenant's backlog never loosens its order); 0 before the first interval
   *  is known (arrival order), Infinity with no such bound. O(1). */
  drainCapMs(held: number): number {
    const k = this.limits.slackPerDrain ?? 0;
    if (!(k > 0)) return Number.POSITIVE_INFINITY;
    return Number.isNaN(this.intervalMs) ? 0 : k * held * this.order.length * this.intervalMs;
  }

  /** A call was released at `nowMs`: the interval since the previous one enters the mean. */
  private released(nowMs: number): void {
    const gap = Math.max(0, nowMs - this.lastReleaseMs);
    if (Number.isFinite(gap))
      this.intervalMs = Number.isNaN(this.intervalMs)
        ? gap
        : this.intervalMs + (gap - this.intervalMs) * RELEASE_INTERVAL_WEIGHT;
    this.lastReleaseMs = Math.max(this.lastReleaseMs, nowMs);
  }

  /** The call that leaves next (without taking it). */
  peek(): T | undefined {
    const t = this.order[0];
    if (t === undefined) return undefined;
    const q = this.tenants.get(t)!;
    return q.front(1, this.drainCapMs(q.length))[0].item;
  }

  /** Takes the call that leaves next at `nowMs` (the drain bound's clock; omitted: the release
   *  is not counted in its rate); its tenant goes to the back of the round. */
  shift(nowMs?: number): T | undefined {
    const t = this.order[0];
    if (t === undefined) return undefined;
    const q = this.tenants.get(t)!;
    const e = q.front(1, this.drainCapMs(q.length))[0];
    this.order.shift();
    if (nowMs !== undefined) this.released(nowMs);
    q.take(e);
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
      for (const e of q.front(window, this.drainCapMs(q.length))) {
        if (!accept(e.item, nowMs - e.atMs)) continue;
        this.released(nowMs);
        q.take(e);
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
      for (let e = q.oldest(); e && e.deadlineMs < nowMs; e = q.oldest()) {
        q.take(e);
        out.push(e.item);
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
