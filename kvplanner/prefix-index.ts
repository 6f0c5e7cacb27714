// Prefix index: which worker probably holds which KV blocks. Per worker a second-chance LRU over
// block hashes: a block's stamp (one Map.set) and one queue entry, made when it is first held;
// eviction pops the oldest entry, skips it when the block is gone, sends it to the back at its
// current stamp when it was stamped again since (so a block used again outlives blocks used once,
// measured on agent recordings: strict LRU by stamp kept fewer of a busy home's hot histories),
// and evicts leaves first, as vLLM's free queue does (a request frees its blocks tail first, so
// its cache never holds a block without its parent): a block with a child still held goes back to
// the queue instead. Capacity = kvTokens / blockSize blocks. Each block's children (the next block
// of the chains through it, one string or, at a branch point, a list swept of gone ones as it
// doubles) are kept per entry with a capacity of its own; an entry without one (a precise index:
// its engine's events say what left) keeps none. Without leaf-first eviction a call that extends a
// held prefix, stamping only its new blocks (the prefix is re-stamped only once stale), would see
// that older prefix evicted first and its new tail listed past a hole that no engine can match.
// Held blocks thus stay a prefix of each chain, which lets matchLength binary-search: O(log n) Map
// lookups per worker (holes remain possible where evict() is told of single blocks: a KV event).
// A global map block -> holder bitmask (one bit per worker slot, 32 slots a word, in one shared
// Int32Array) lets matchAll run every worker's binary search at once: the workers whose searches
// are still at the same step share one lookup and split by a mask AND, so a call costs
// O(k log n) lookups and O(k log n · slots/32) word operations, k the number of distinct depths
// (typically 2–3: the shared root on all workers, a conversation on one), with no allocation. Each
// worker's result is exactly its matchLength (the same search path), even where evictions left
// holes in a chain.
// insert: O(log n + new blocks), O(n) when the held prefix is due a re-stamp; inserting() does
// the same work in bounded steps (a long chain, deferred-work.ts). An eviction: amortised O(1)
// queue entries (a block passed over for its child is evicted once that child went). evict(): the
// feedback path (a worker that reported fewer cached tokens than predicted loses the missing
// blocks, and the chains below them). Hashes are opaque strings: ctxgate indexes every 4th vLLM
// block hash of a chain.

/** A held prefix is re-stamped once this share of the capacity was inserted since its stamp. */
const TOUCH_SLACK = 0.25;
/** Evenly spaced held-prefix stamps checked per insert (plus the first block). */
const STALE_SAMPLES = 4;

/** Most blocks one prepare() evicts when a worker's budget shrinks (the rest: later calls). */
export const PREPARE_SHRINK_STEP = 512;

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
  /** advances when the entry is emptied (clear, removeWorker): a stepped insert begun before stops */
  gen: number;
  /** block -> its children (next block of a chain through it), with a capacity of its own only */
  kids: Map<string, string | string[]>;
}

/** Entries with at least this capacity (a precise index's, unbounded) keep no children. */
const KIDS_BELOW_CAPACITY = 2 ** 32;

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
  /** block hash -> record number of its holder bitmask in `masks` */
  private readonly holders = new Map<string, number>();
  /** holder bitmasks, `words` 32-bit words per record (bit s of the mask: slot s holds the block) */
  private masks = new Int32Array(1024);
  private words = 1;
  /** records in use or freed; freed ones are reused (`free`) */
  private records = 0;
  private readonly free: number[] = [];
  private readonly slotIds: string[] = [];
  private readonly bySlot: WorkerEntry[] = [];
  /** matchAll's search stack: interval [lo, hi] per entry and the mask of the workers in it */
  private stackLo = new Int32Array(64);
  private stackHi = new Int32Array(64);
  private stackMask = new Int32Array(64);
  /** mask of the block just looked up (matchAll scratch) */
  private probe = new Int32Array(1);
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
        gen: 0,
        kids: new Map(),
      };
      this.slotIds.push(workerId);
      this.bySlot.push(e);
      if (e.slot >= this.words * 32) this.widen();
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

  /** Worker id of a slot (undefined for a slot not handed out). */
  idOfSlot(slot: number): string | undefined {
    return this.slotIds[slot];
  }

  /** Slot of a worker (dense small integer), -1 when the index has never seen it. */
  slotOf(workerId: string): number {
    return this.workers.get(workerId)?.slot ?? -1;
  }

  /**
   * Depth (blocks held from the start) of `hashes` on every worker, written into `out[slot]`
   * (zeroed first; size it to slotCount()): each worker's matchLength(workerId, hashes, hint), all
   * run at once. `hint` must come from the request (or be 0), never from an earlier call: where a
   * worker's blocks have a hole, the answer depends on the hint, and routing must stay a function of
   * the index and the request (not of another tenant's previous call). The workers whose searches
   * stand at the same interval form one group (a bitmask): one lookup of the interval's probe block
   * splits the group by a mask AND into the workers that hold it and those that do not. No
   * allocation after the scratch arrays reach their size.
   */
  matchAll(hashes: readonly string[], out: number[], hint = 0): void {
    out.fill(0);
    const n = hashes.length;
    if (n === 0) return;
    const r0 = this.holders.get(hashes[0]);
    if (r0 === undefined) return;
    const W = this.words;
    this.reserve(4);
    for (let w = 0; w < W; w++) this.stackMask[w] = this.masks[r0 * W + w];
    let top: number;
    // the first steps of matchLength(hashes, hint): entry 0 searches [1, hint-1] (or [1, n]
    // without a hint), entry 1 [hint+1, n]; each first probes its last block
    if (hint > 1 && hint <= n) {
      const f = this.split(0, hashes[hint - 1]);
      let upper = (f & 2) !== 0;
      if (upper && hint === n) {
        this.take(1, undefined, n, out);
        upper = false;
      } else if (upper) upper = this.take(1, hashes[hint], hint, out, true) && this.take(1, hashes[n - 1], n, out);
      const lower = (f & 1) !== 0 && this.take(0, hashes[hint - 2], hint - 1, out);
      top = 0;
      if (lower) {
        this.stackLo[0] = 1;
        this.stackHi[0] = hint - 2;
        top = 1;
      }
      if (upper) {
        if (top === 0) for (let w = 0; w < W; w++) this.stackMask[w] = this.stackMask[W + w];
        this.stackLo[top] = hint + 1;
        this.stackHi[top] = n - 1;
        top++;
      }
    } else {
      top = this.take(0, n === 1 ? undefined : hashes[n - 1], n, out) ? 1 : 0;
      this.stackLo[0] = 1;
      this.stackHi[0] = n - 1;
    }
    const probe = this.probe;
    while (top > 0) {
      top--;
      const lo = this.stackLo[top];
      const hi = this.stackHi[top];
      const at = top * W;
      if (lo >= hi) {
        this.take(top, undefined, lo, out);
        continue;
      }
      const mid = (lo + hi + 1) >>> 1;
      const r = this.holders.get(hashes[mid - 1]);
      if (r === undefined) probe.fill(0);
      else for (let w = 0; w < W; w++) probe[w] = this.masks[r * W + w];
      // split in place: the entry at `top` keeps the workers without the block ([lo, mid-1]),
      // the next one takes those with it ([mid, hi])
      this.reserve(top + 2);
      const m = this.stackMask;
      let left = 0;
      let right = 0;
      for (let w = 0; w < W; w++) {
        const cur = m[at + w];
        const yes = cur & probe[w];
        m[at + W + w] = yes;
        m[at + w] = cur & ~yes;
        left |= cur & ~yes;
        right |= yes;
      }
      if (left !== 0) {
        this.stackHi[top] = mid - 1;
        top++;
        if (right !== 0) {
          this.stackLo[top] = mid;
          this.stackHi[top] = hi;
          top++;
        }
      } else if (right !== 0) {
        for (let w = 0; w < W; w++) m[at + w] = m[at + W + w];
        this.stackLo[top] = mid;
        top++;
      }
    }
  }

  /** Splits stack entry `at` by the holders of `hash`: those without stay, those with go to entry
   *  at+1. Bit 1 of the result: some stayed; bit 2: some moved. */
  private split(at: number, hash: string): number {
    const W = this.words;
    const r = this.holders.get(hash);
    const m = this.stackMask;
    let left = 0;
    let right = 0;
    for (let w = 0; w < W; w++) {
      const cur = m[at * W + w];
      const yes = r === undefined ? 0 : cur & this.masks[r * W + w];
      m[(at + 1) * W + w] = yes;
      m[at * W + w] = cur & ~yes;
      left |= cur & ~yes;
      right |= yes;
    }
    return (left !== 0 ? 1 : 0) | (right !== 0 ? 2 : 0);
  }

  /** The workers of stack entry `at` that hold `hash` (all of them when undefined; with
   *  `missing`, those that do not) stop at `depth` and leave the entry. Whether any remain. */
  private take(at: number, hash: string | undefined, depth: number, out: number[], missing = false): boolean {
    const W = this.words;
    const r = hash === undefined ? undefined : this.holders.get(hash);
    const m = this.stackMask;
    let rest = 0;
    for (let w = 0; w < W; w++) {
      const cur = m[at * W + w];
      const held = hash === undefined ? cur : r === undefined ? 0 : cur & this.masks[r * W + w];
      const stop = missing ? cur & ~held : held;
      if (stop !== 0) this.assign(stop, w, depth, out);
      m[at * W + w] = cur & ~stop;
      rest |= cur & ~stop;
    }
    return rest !== 0;
  }

  /** out[slot] = depth for every slot whose bit is set in word `w` of a mask. */
  private assign(bits: number, w: number, depth: number, out: number[]): void {
    let m = bits;
    while (m !== 0) {
      const low = m & -m;
      out[w * 32 + 31 - Math.clz32(low)] = depth;
      m ^= low;
    }
  }

  /** matchAll's stack holds at least `entries` entries. */
  private reserve(entries: number): void {
    if (this.stackLo.length >= entries && this.stackMask.length >= entries * this.words) return;
    const size = Math.max(entries * 2, this.stackLo.length);
    const lo = new Int32Array(size);
    lo.set(this.stackLo);
    const hi = new Int32Array(size);
    hi.set(this.stackHi);
    const m = new Int32Array(size * this.words);
    m.set(this.stackMask.subarray(0, Math.min(this.stackMask.length, m.length)));
    this.stackLo = lo;
    this.stackHi = hi;
    this.stackMask = m;
  }

  /** One more word per holder mask (a 33rd, 65th… worker slot): O(records) copy, rare. */
  private widen(): void {
    const W = this.words;
    const next = new Int32Array(Math.max(1024, this.records * 2) * (W + 1));
    for (let r = 0; r < this.records; r++) for (let w = 0; w < W; w++) next[r * (W + 1) + w] = this.masks[r * W + w];
    this.masks = next;
    this.words = W + 1;
    this.probe = new Int32Array(W + 1);
    this.stackMask = new Int32Array(this.stackLo.length * (W + 1));
  }

  /**
   * Slot of `workerId` (creating its entry), applying its KV budget when known. The budget can
   * follow a signal that swings (queued prefill): it grows at once, but shrinks by at most
   * PREPARE_SHRINK_STEP evictions per call, so the decision after a long queue drains does not
   * evict up to 3×KV of blocks on the event loop; later decisions finish the way down.
   */
  prepare(workerId: string, capacityBlocks?: number): number {
    const e = this.entry(workerId);
    if (capacityBlocks === undefined || capacityBlocks <= 0) return e.slot;
    const cap = Math.max(1, Math.floor(capacityBlocks));
    if (cap === e.capacity) return e.slot;
    this.setCapacity(
      workerId,
      cap < e.capacity ? Math.min(e.capacity, Math.max(cap, e.blocks.size - PREPARE_SHRINK_STEP)) : cap,
    );
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
    this.inserting(workerId, hashes, notify, heldHint)(Number.POSITIVE_INFINITY);
  }

  /**
   * insert() in steps, for a chain long enough to hold the event loop: the held prefix and the
   * stamp are fixed now (the clock advances now, as insert's does); each call of the returned
   * function does up to `blocks` more blocks of the work (stamping, tail first, then the evictions
   * back to capacity) and returns true once the chain is in (listeners hear of it then). Between
   * two steps the entry lists a tail without the middle below it (a lookup sees a hole, as after an
   * eviction) and may exceed its capacity. Steps with nothing else in between end exactly as
   * insert() does.
   */
  inserting(
    workerId: string,
    hashes: readonly string[],
    notify = true,
    heldHint?: number,
  ): (blocks: number) => boolean {
    if (hashes.length === 0) return () => true;
    const e = this.entry(workerId);
    const held = heldHint ?? this.matchLength(workerId, hashes);
    const t = e.clock + 1;
    e.clock += Math.max(1, hashes.length - held);
    let newFrom = hashes.length;
    // tail first: within one stamp, queue order decides, and the root must outlive the tail
    let next = hashes.length - 1;
    let low = held;
    let staleChecked = false;
    const gen = e.gen;
    return (blocks: number): boolean => {
      // emptied since (its events are back in step, its cache was flushed or forgotten): the rest
      // of this guess would list blocks nobody reported, in an entry that may never evict them
      if (e.gen !== gen) return true;
      let left = blocks;
      for (;;) {
        if (next >= low && left > 0) {
          const to = Math.max(low, next - left + 1);
          newFrom = this.stampDown(e, hashes, next, to, t, newFrom);
          left -= next - to + 1;
          next = to - 1;
        }
        if (next >= low) return false;
        if (staleChecked) break;
        staleChecked = true;
        // a hole the binary search stepped over (an eviction inside the chain) is filled as a new
        // block: queued and in the holder masks, so entry and masks keep listing the same blocks
        if (held > 0 && this.staleWithin(e, hashes, held, t)) low = 0;
      }
      if (!this.shrink(e, left)) return false;
      if (notify) this.emit({ kind: 'insert', workerId, hashes, newFrom });
      return true;
    };
  }

  /** Stamps hashes[from] down to hashes[to] with tick t; a block not held yet is queued and added
   *  to the holder masks. Returns the lowest new index (or newFrom if none was new). */
  private stampDown(
    e: WorkerEntry,
    hashes: readonly string[],
    from: number,
    to: number,
    t: number,
    newFrom: number,
  ): number {
    for (let i = from; i >= to; i--) {
      const h = hashes[i];
      if (e.blocks.get(h) === undefined) {
        newFrom = i;
        this.addHolder(h, e.slot);
        if (i > 0 && e.capacity < KIDS_BELOW_CAPACITY) this.addKid(e, hashes[i - 1], h);
        e.qHash.push(h);
        e.qTick.push(t);
      }
      e.blocks.set(h, t);
    }
    return newFrom;
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
      if (e.kids.size > 0) n += this.dropBelow(e, h);
    }
    e.evictions += n;
    this.compact(e);
    if (notify && n > 0) this.emit({ kind: 'evict', workerId, hashes });
    return n;
  }

  /** Forget everything one worker holds (its cache was flushed); listeners see one eviction. */
  clear(workerId: string, notify = true): number {
    const e = this.workers.get(workerId);
    if (!e) return 0;
    e.gen++;
    return this.evict(workerId, [...e.blocks.keys()], notify);
  }

  removeWorker(workerId: string): void {
    const e = this.workers.get(workerId);
    if (!e) return;
    e.gen++;
    for (const h of e.blocks.keys()) this.dropHolder(h, e.slot);
    e.blocks.clear();
    e.qHash = [];
    e.qTick = [];
    e.head = 0;
    e.kids.clear();
  }

  private addHolder(h: string, slot: number): void {
    let r = this.holders.get(h);
    const W = this.words;
    if (r === undefined) {
      if (this.free.length > 0) r = this.free.pop()!;
      else {
        r = this.records++;
        if ((r + 1) * W > this.masks.length) {
          const next = new Int32Array(this.masks.length * 2);
          next.set(this.masks);
          this.masks = next;
        }
      }
      this.holders.set(h, r);
    }
    this.masks[r * W + (slot >>> 5)] |= 1 << (slot & 31);
  }

  private dropHolder(h: string, slot: number): void {
    const r = this.holders.get(h);
    if (r === undefined) return;
    const W = this.words;
    const o = r * W;
    this.masks[o + (slot >>> 5)] &= ~(1 << (slot & 31));
    for (let w = 0; w < W; w++) if (this.masks[o + w] !== 0) return;
    this.holders.delete(h);
    this.free.push(r);
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

  /** Evicts back to capacity, oldest first (at most `steps` queue entries looked at); true when done. */
  private shrink(e: WorkerEntry, steps = Number.POSITIVE_INFINITY): boolean {
    let left = steps;
    while (e.blocks.size > e.capacity && e.head < e.qHash.length) {
      if (left-- <= 0) return false;
      const h = e.qHash[e.head];
      const t = e.qTick[e.head];
      e.head++;
      const cur = e.blocks.get(h);
      if (cur === undefined) continue; // evicted already
      if (cur !== t) {
        // stamped again since: a second pass at its current stamp, from the back of the queue
        e.qHash.push(h);
        e.qTick.push(cur);
        continue;
      }
      if (e.kids.size > 0 && this.hasKid(e, h)) {
        // a child still held: leaves first (the block stays as recent as its stamp)
        e.qHash.push(h);
        e.qTick.push(t);
        continue;
      }
      e.blocks.delete(h);
      this.dropHolder(h, e.slot);
      e.evictions++;
    }
    this.compact(e);
    return true;
  }

  /** Records `kid` as a child of `parent` (a branch point's list is swept of gone children each
   *  time it doubles: bounded by twice the children held, amortised O(1)). */
  private addKid(e: WorkerEntry, parent: string, kid: string): void {
    const v = e.kids.get(parent);
    if (v === undefined) e.kids.set(parent, kid);
    else if (typeof v === 'string') {
      if (v !== kid) e.kids.set(parent, [v, kid]);
    } else {
      if (v.length >= 8 && (v.length & (v.length - 1)) === 0) {
        let k = 0;
        for (const x of v) if (e.blocks.has(x)) v[k++] = x;
        v.length = k;
      }
      if (v[v.length - 1] !== kid) v.push(kid);
    }
  }

  /** Whether a child of `h` is still held (gone children are dropped from its list on the way). */
  private hasKid(e: WorkerEntry, h: string): boolean {
    const v = e.kids.get(h);
    if (v === undefined) return false;
    if (typeof v === 'string') {
      if (e.blocks.has(v)) return true;
    } else {
      while (v.length > 0) {
        if (e.blocks.has(v[v.length - 1])) return true;
        v.pop();
      }
    }
    e.kids.delete(h);
    return false;
  }

  /** Evicts what hangs below the evicted block `h` (unusable without it): the blocks evicted. */
  private dropBelow(e: WorkerEntry, h: string): number {
    let n = 0;
    const todo = [h];
    for (let b = todo.pop(); b !== undefined; b = todo.pop()) {
      const v = e.kids.get(b);
      if (v === undefined) continue;
      e.kids.delete(b);
      for (const k of typeof v === 'string' ? [v] : v) {
        if (e.blocks.delete(k)) {
          this.dropHolder(k, e.slot);
          n++;
        }
        todo.push(k); // a child gone already may still have some below it (a hole)
      }
    }
    return n;
  }

  private compact(e: WorkerEntry): void {
    // drop consumed head and stale entries once the queue is mostly garbage
    if (e.head > 1024 && e.head * 2 > e.qHash.length) {
      e.qHash = e.qHash.slice(e.head);
      e.qTick = e.qTick.slice(e.head);
      e.head = 0;
    }
    if (e.qHash.length - e.head > 4 * e.blocks.size + 1024) {
      // too many stale entries (evicted or stamped again): rebuild from the live blocks in stamp
      // order; the sort is stable and a Map iterates in insertion order, so tails stay first
      const live = [...e.blocks].sort((a, b) => a[1] - b[1]);
      e.qHash = live.map((x) => x[0]);
      e.qTick = live.map((x) => x[1]);
      e.head = 0;
    }
  }
}
