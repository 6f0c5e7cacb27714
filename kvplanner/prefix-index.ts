// Prefix index: which worker probably holds which KV blocks. Per worker an approximate LRU over
// block hashes (CLOCK / second chance: a touch is one Map.set of a stamp, eviction pops the oldest
// queue entry and re-queues it if it was touched since), capacity = kvTokens / blockSize blocks.
// Chains are inserted tail-first so that, like vLLM (which frees a request's blocks in reverse),
// the tail of a prompt is evicted before its root; held blocks then stay a prefix of each chain,
// which lets matchLength binary-search: O(log n) Map lookups per worker. A global map block ->
// holder slots lets matchAll find every worker's depth at once in O(k log n) lookups, k the number
// of distinct depths (typically 2–3: the shared root on all workers, a conversation on one).
// insert: O(log n + new blocks), O(n) when the held prefix is due a re-stamp. evict(): the
// feedback path (a worker that reported fewer cached tokens than predicted loses the missing
// blocks). Hashes are opaque strings: ctxgate indexes every 4th vLLM block hash of a chain.

const EMPTY: number[] = [];
/** A held prefix is re-stamped once this share of the capacity was inserted since its stamp. */
const TOUCH_SLACK = 0.25;
/** Evenly spaced held-prefix stamps checked per insert (plus the first block). */
const STALE_SAMPLES = 4;

/** Capacity when a worker's KV budget is unknown: 1M tokens at 16 tokens per block. */
export const DEFAULT_CAPACITY_BLOCKS = 65_536;

interface WorkerEntry {
  slot: number;
  /** logical clock: advances by the blocks inserted on this worker */
  clock: number;
  /** hash -> clock at last touch */
  blocks: Map<string, number>;
  /** eviction candidates in (approximate) age order; parallel arrays, head index. */
  qHash: string[];
  qTick: number[];
  head: number;
  capacity: number;
  evictions: number;
}

export interface PrefixIndexStats {
  workers: number;
  blocks: number;
  evictions: number;
  perWorker: Record<string, { blocks: number; capacity: number; evictions: number }>;
}

/** Callback for index changes made locally (used by the Redis replica sync). */
export interface IndexEvent {
  kind: 'insert' | 'evict';
  workerId: string;
  hashes: readonly string[];
  /** insert: index of the first block that was not held before (hashes.length: none new) */
  newFrom?: number;
}
export type IndexListener = (ev: IndexEvent) => void;

export class PrefixIndex {
  private readonly workers = new Map<string, WorkerEntry>();
  /** block hash -> slots of the workers holding it */
  private readonly holders = new Map<string, number[]>();
  private readonly slotIds: string[] = [];
  private readonly bySlot: WorkerEntry[] = [];
  private readonly stack: number[] = [];
  private readonly sets: number[][] = [];
  /** matchAll scratch: mark[slot] === epoch while that slot is in the set being excluded */
  private mark = new Int32Array(16);
  private epoch = 0;
  private readonly listeners: IndexListener[] = [];

  constructor(readonly defaultCapacity: number = DEFAULT_CAPACITY_BLOCKS) {}

  onChange(fn: IndexListener): void {
    this.listeners.push(fn);
  }

  private entry(workerId: string): WorkerEntry {
    let e = this.workers.get(workerId);
    if (!e) {
      e = {
        slot: this.slotIds.length,
        clock: 0,
        blocks: new Map(),
        qHash: [],
        qTick: [],
        head: 0,
        capacity: this.defaultCapacity,
        evictions: 0,
      };
      this.slotIds.push(workerId);
      this.bySlot.push(e);
      this.workers.set(workerId, e);
    }
    return e;
  }

  setCapacity(workerId: string, blocks: number): void {
    const e = this.entry(workerId);
    const cap = Math.max(1, Math.floor(blocks));
    if (cap === e.capacity) return;
    e.capacity = cap;
    this.shrink(e);
  }

  capacity(workerId: string): number {
    return this.workers.get(workerId)?.capacity ?? this.defaultCapacity;
  }

  size(workerId: string): number {
    return this.workers.get(workerId)?.blocks.size ?? 0;
  }

  has(workerId: string, hash: string): boolean {
    return this.workers.get(workerId)?.blocks.has(hash) ?? false;
  }

  /**
   * Blocks of `hashes` held from the start (binary search: held blocks form a prefix). `hint`: the
   * likely answer (a session's previous prompt, whose chain this one extends); when right it costs
   * two lookups instead of log n, when wrong it narrows the search. Same result either way.
   */
  matchLength(workerId: string, hashes: readonly string[], hint = 0): number {
    const e = this.workers.get(workerId);
    if (!e || hashes.length === 0 || !e.blocks.has(hashes[0])) return 0;
    const b = e.blocks;
    let lo = 1; // hashes[0..lo) held
    let hi = hashes.length; // answer <= hi
    if (hint > 1 && hint <= hi) {
      if (b.has(hashes[hint - 1])) {
        if (hint === hi || !b.has(hashes[hint])) return hint;
        lo = hint + 1;
      } else hi = hint - 1;
    }
    if (b.has(hashes[hi - 1])) return hi;
    hi -= 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (b.has(hashes[mid - 1])) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** Slot of a worker (dense small integer), -1 when the index has never seen it. */
  slotOf(workerId: string): number {
    return this.workers.get(workerId)?.slot ?? -1;
  }

  /**
   * Depth (blocks held from the start) of `hashes` on every worker, written into `out[slot]`
   * (zeroed first; size it to slotCount()). Divide and conquer over the nested holder sets.
   */
  matchAll(hashes: readonly string[], out: number[]): void {
    out.fill(0);
    const n = hashes.length;
    if (n === 0) return;
    const first = this.holders.get(hashes[0]) ?? EMPTY;
    if (first.length === 0) return;
    const last = n === 1 ? first : (this.holders.get(hashes[n - 1]) ?? EMPTY);
    for (const s of last) out[s] = n;
    if (n === 1) return;
    // explicit stack of [lo, hi] with holder sets g(lo) ⊇ g(hi), g(k) = holders of block k-1
    const stack = this.stack;
    const sets = this.sets;
    stack.length = 0;
    sets.length = 0;
    stack.push(1, n);
    sets.push(first, last);
    while (stack.length > 0) {
      const hi = stack.pop()!;
      const lo = stack.pop()!;
      const ghi = sets.pop()!;
      const glo = sets.pop()!;
      if (glo.length === ghi.length) continue; // nested and equal: nobody stops in between
      if (hi === lo + 1) {
        // slots that hold block lo-1 but not block lo stop at lo: O(|glo| + |ghi|) with a mark
        // array (ghi.includes per slot was O(|glo|·|ghi|): 64 workers sharing a root = 4,096)
        const e = this.nextEpoch();
        const mark = this.mark;
        for (const s of ghi) mark[s] = e;
        for (const s of glo) if (out[s] === 0 && mark[s] !== e) out[s] = lo;
        continue;
      }
      const mid = (lo + hi) >>> 1;
      const gm = this.holders.get(hashes[mid - 1]) ?? EMPTY;
      stack.push(lo, mid, mid, hi);
      sets.push(glo, gm, gm, ghi);
    }
  }

  private nextEpoch(): number {
    if (this.mark.length < this.slotIds.length) this.mark = new Int32Array(this.slotIds.length * 2);
    if (++this.epoch === 0x7fffffff) {
      this.mark.fill(0);
      this.epoch = 1;
    }
    return this.epoch;
  }

  /** Slot of `workerId` (creating its entry), applying its KV budget when known. */
  prepare(workerId: string, capacityBlocks?: number): number {
    const e = this.entry(workerId);
    if (capacityBlocks !== undefined && capacityBlocks > 0 && Math.floor(capacityBlocks) !== e.capacity)
      this.setCapacity(workerId, capacityBlocks);
    return e.slot;
  }

  /** Share of its capacity a worker's entry fills (by slot, no id lookup). */
  fillOfSlot(slot: number): number {
    const e = this.bySlot[slot];
    return e ? e.blocks.size / e.capacity : 0;
  }

  /** Capacity in blocks (by slot). */
  capacityOfSlot(slot: number): number {
    return this.bySlot[slot]?.capacity ?? this.defaultCapacity;
  }

  slotCount(): number {
    return this.slotIds.length;
  }

  /**
   * Record that `workerId` now holds the chain `hashes`: adds the blocks past the held prefix and
   * re-stamps the held prefix only when its stamp has aged by more than capacity·TOUCH_SLACK new
   * blocks (recency at that granularity is all eviction needs), so a sticky call costs
   * O(log n + new blocks) instead of O(n) cache-missing Map writes. `heldHint`: matchLength of
   * this chain on this worker, when the caller just computed it.
   */
  insert(workerId: string, hashes: readonly string[], notify = true, heldHint?: number): void {
    if (hashes.length === 0) return;
    const e = this.entry(workerId);
    const held = heldHint ?? this.matchLength(workerId, hashes);
    const t = e.clock + 1;
    let newFrom = hashes.length;
    // tail first: within one stamp, queue order decides, and the root must outlive the tail
    for (let i = hashes.length - 1; i >= held; i--) {
      const h = hashes[i];
      if (e.blocks.get(h) === undefined) {
        e.qHash.push(h);
        e.qTick.push(t);
        newFrom = i;
        this.addHolder(h, e.slot);
      }
      e.blocks.set(h, t);
    }
    e.clock += Math.max(1, hashes.length - held);
    if (held > 0 && this.staleWithin(e, hashes, held, t)) {
      for (let i = held - 1; i >= 0; i--) e.blocks.set(hashes[i], t);
    }
    this.shrink(e);
    if (notify) this.emit({ kind: 'insert', workerId, hashes, newFrom });
  }

  /**
   * Whether some block of the held prefix is due a re-stamp. Stamps rise along a chain's own blocks
   * (each call stamps only its new tail) while a shared root is refreshed by other chains, so the
   * oldest block can sit anywhere: five evenly spaced samples find it to within 1/4 of the chain,
   * inside the 3/4-capacity margin left before eviction reaches it.
   */
  private staleWithin(e: WorkerEntry, hashes: readonly string[], held: number, now: number): boolean {
    const limit = e.capacity * TOUCH_SLACK;
    for (let k = 0; k <= STALE_SAMPLES; k++) {
      const i = Math.min(held - 1, Math.floor((k * (held - 1)) / STALE_SAMPLES));
      if (now - (e.blocks.get(hashes[i]) ?? 0) > limit) return true;
    }
    return false;
  }

  /** Forget the given blocks on one worker (feedback correction or a remote eviction). */
  evict(workerId: string, hashes: readonly string[], notify = true): number {
    const e = this.workers.get(workerId);
    if (!e) return 0;
    let n = 0;
    for (const h of hashes) {
      if (e.blocks.delete(h)) {
        this.dropHolder(h, e.slot);
        n++;
      }
    }
    e.evictions += n;
    this.compact(e);
    if (notify && n > 0) this.emit({ kind: 'evict', workerId, hashes });
    return n;
  }

  /** Forget everything one worker holds (its cache was flushed); listeners see one eviction. */
  clear(workerId: string, notify = true): number {
    const e = this.workers.get(workerId);
    return e ? this.evict(workerId, [...e.blocks.keys()], notify) : 0;
  }

  removeWorker(workerId: string): void {
    const e = this.workers.get(workerId);
    if (!e) return;
    for (const h of e.blocks.keys()) this.dropHolder(h, e.slot);
    e.blocks.clear();
    e.qHash = [];
    e.qTick = [];
    e.head = 0;
  }

  private addHolder(h: string, slot: number): void {
    const a = this.holders.get(h);
    if (a) a.push(slot);
    else this.holders.set(h, [slot]);
  }

  private dropHolder(h: string, slot: number): void {
    const a = this.holders.get(h);
    if (!a) return;
    const i = a.indexOf(slot);
    if (i >= 0) {
      a[i] = a[a.length - 1];
      a.pop();
    }
    if (a.length === 0) this.holders.delete(h);
  }

  workerIds(): string[] {
    return [...this.workers.keys()];
  }

  stats(): PrefixIndexStats {
    const perWorker: PrefixIndexStats['perWorker'] = {};
    let blocks = 0;
    let evictions = 0;
    for (const [id, e] of this.workers) {
      perWorker[id] = { blocks: e.blocks.size, capacity: e.capacity, evictions: e.evictions };
      blocks += e.blocks.size;
      evictions += e.evictions;
    }
    return { workers: this.workers.size, blocks, evictions, perWorker };
  }

  private emit(ev: IndexEvent): void {
    for (const l of this.listeners) l(ev);
  }

  private shrink(e: WorkerEntry): void {
    while (e.blocks.size > e.capacity && e.head < e.qHash.length) {
      const h = e.qHash[e.head];
      const t = e.qTick[e.head];
      e.head++;
      const cur = e.blocks.get(h);
      if (cur === undefined) continue; // already evicted
      if (cur !== t) {
        // touched since queued: second chance at its current age
        e.qHash.push(h);
        e.qTick.push(cur);
        continue;
      }
      e.blocks.delete(h);
      this.dropHolder(h, e.slot);
      e.evictions++;
    }
    this.compact(e);
  }

  private compact(e: WorkerEntry): void {
    // drop consumed head and stale entries once the queue is mostly garbage
    if (e.head > 1024 && e.head * 2 > e.qHash.length) {
      e.qHash = e.qHash.slice(e.head);
      e.qTick = e.qTick.slice(e.head);
      e.head = 0;
    }
    if (e.qHash.length - e.head > 4 * e.blocks.size + 1024) {
      // too many stale entries (evicted or re-queued blocks): rebuild from the live blocks in stamp
      // order; the sort is stable and a Map iterates in insertion order, so tails stay first
      const live = [...e.blocks].sort((a, b) => a[1] - b[1]);
      e.qHash = live.map((x) => x[0]);
      e.qTick = live.map((x) => x[1]);
      e.head = 0;
    }
  }
}
