// Prefix index: which worker probably holds which KV blocks. Per worker a second-chance LRU over
// block hashes that evicts leaves first, as vLLM's free queue does (prefix-index-entry.ts), with
// capacity = kvTokens / blockSize blocks. Without leaf-first eviction a call that extends a held
// prefix, stamping only its new blocks (the prefix is re-stamped only once stale), would see that
// older prefix evicted first and its new tail listed past a hole that no engine can match. Held
// blocks thus stay a prefix of each chain, which lets matchLength binary-search: O(log n) Map
// lookups per worker (holes remain possible where evict() is told of single blocks: a KV event).
// A global table block -> holder bitmask (prefix-index-holders.ts: open addressing in one typed
// array, 64-bit keys) lets matchAll run every worker's binary search at once
// (prefix-index-match-all.ts): O(k log n) lookups, k the number of distinct depths (typically 2–3),
// no allocation; matchLength reads the same table (one row per lookup, not the entry's Map). With one worker slot (a gateway in front of one engine)
// there is nothing to batch: the masks stay off, matchAll is that worker's matchLength, and a
// stored or evicted block costs no mask update; a second slot starts them (O(first slot's blocks)).
// insert: O(log n + new blocks), O(n) when the held prefix is due a re-stamp; inserting() does
// the same work in bounded steps (a long chain, deferred-work.ts). evict(): the feedback path (a
// worker that reported fewer cached tokens than predicted loses the missing blocks, and the chains
// below them). Hashes are opaque strings: ctxgate indexes every 4th vLLM block hash of a chain.
import {
  emptyEntry,
  evictBlocks,
  heldInOrder,
  holds,
  newEntry,
  newSlotCounts,
  setEntryCapacity,
  shrink,
  stampDown,
  staleWithin,
  type WorkerEntry,
} from './prefix-index-entry.ts';
import { NOT_A_KEY } from './hash-keys.ts';
import { HolderMasks } from './prefix-index-holders.ts';
import { BatchedMatch } from './prefix-index-match-all.ts';

/** Most blocks one prepare() evicts when a worker's budget shrinks (the rest: later calls). */
export const PREPARE_SHRINK_STEP = 512;

/** Capacity when a worker's KV budget is unknown: 1M tokens at 16 tokens per block. */
export const DEFAULT_CAPACITY_BLOCKS = 65_536;

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
  /** block hash -> which slots hold it (bit s: slot s); inactive while there is one slot (matchAll
   *  then runs that worker's matchLength) */
  private readonly holders = new HolderMasks(false);
  private readonly batched = new BatchedMatch(this.holders);
  private readonly slotIds: string[] = [];
  private readonly bySlot: WorkerEntry[] = [];
  /** each slot's capacity and blocks held, dense (fillOfSlot, capacityOfSlot: every worker per decision) */
  private readonly counts = newSlotCounts();
  private readonly listeners: IndexListener[] = [];

  constructor(readonly defaultCapacity: number = DEFAULT_CAPACITY_BLOCKS) {}

  onChange(fn: IndexListener): void {
    this.listeners.push(fn);
  }

  private entry(workerId: string): WorkerEntry {
    let e = this.workers.get(workerId);
    if (!e) {
      e = newEntry(this.slotIds.length, this.defaultCapacity, this.counts);
      this.slotIds.push(workerId);
      this.bySlot.push(e);
      this.holders.fit(e.slot);
      this.workers.set(workerId, e);
      if (e.slot === 1) this.activateHolders();
    }
    return e;
  }

  /** A second slot: the holder masks start, with what the first slot's entry holds now (its
   *  stepped inserts in progress add the rest as they go). O(its records), once. */
  private activateHolders(): void {
    this.holders.activate();
    const first = this.bySlot[0];
    for (const h of first.recs.keys()) if (holds(first, h)) this.holders.add(h, first.slot);
  }

  setCapacity(workerId: string, blocks: number): void {
    const e = this.entry(workerId);
    const cap = Math.max(1, Math.floor(blocks));
    if (cap === e.capacity) return;
    setEntryCapacity(e, cap);
    shrink(e, this.holders);
  }

  capacity(workerId: string): number {
    return this.workers.get(workerId)?.capacity ?? this.defaultCapacity;
  }

  size(workerId: string): number {
    return this.workers.get(workerId)?.held ?? 0;
  }

  has(workerId: string, hash: string): boolean {
    const e = this.workers.get(workerId);
    return e !== undefined && holds(e, hash);
  }

  /**
   * Blocks of `hashes` held from the start (binary search: held blocks form a prefix). `hint`: the
   * likely answer (a session's previous prompt, whose chain this one extends); when right it costs
   * two lookups instead of log n, when wrong it narrows the search. Same result either way.
   * `keys`: the chain's keys (hash-keys.ts, aligned with `hashes`): the same answer, each lookup
   * reading its key there instead of the hash string.
   */
  matchLength(workerId: string, hashes: readonly string[], hint = 0, keys?: Int32Array): number {
    const e = this.workers.get(workerId);
    return e ? matchEntry(e, this.holders, hashes, hint, keys) : 0;
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
   * allocation after the scratch arrays reach their size. `keys` as matchLength's.
   */
  matchAll(hashes: readonly string[], out: number[], hint = 0, keys?: Int32Array): void {
    if (this.holders.isActive) {
      this.batched.run(hashes, out, hint, keys);
      return;
    }
    // one slot at most (no masks yet): its own search, the one the batched run would follow
    out.fill(0);
    if (this.bySlot.length === 1) out[0] = matchEntry(this.bySlot[0], this.holders, hashes, hint, keys);
  }

  /**
   * Slot of `workerId` (creating its entry), applying its KV budget when known. The budget can
   * follow a signal that swings (queued prefill): it grows at once, but shrinks by at most
   * PREPARE_SHRINK_STEP evictions per call, so the decision after a long queue drains does not
   * evict up to 3×KV of blocks on the event loop; later decisions finish the way down. A routing
   * decision's call only: an estimate that called it would evict, so how often one reads would
   * move later decisions (reads use slotOf).
   */
  prepare(workerId: string, capacityBlocks?: number): number {
    const e = this.entry(workerId);
    if (capacityBlocks === undefined || capacityBlocks <= 0) return e.slot;
    const cap = Math.max(1, Math.floor(capacityBlocks));
    if (cap === e.capacity) return e.slot;
    this.setCapacity(
      workerId,
      cap < e.capacity ? Math.min(e.capacity, Math.max(cap, e.held - PREPARE_SHRINK_STEP)) : cap,
    );
    return e.slot;
  }

  /** Share of its capacity a worker's entry fills (by slot, no id lookup). */
  fillOfSlot(slot: number): number {
    if (slot < 0 || slot >= this.slotIds.length) return 0;
    const c = this.counts;
    return c.held[slot] / c.capacity[slot];
  }

  /** Capacity in blocks (by slot). */
  capacityOfSlot(slot: number): number {
    return slot < 0 || slot >= this.slotIds.length ? this.defaultCapacity : this.counts.capacity[slot];
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
          newFrom = stampDown(e, this.holders, hashes, next, to, t, newFrom);
          left -= next - to + 1;
          next = to - 1;
        }
        if (next >= low) return false;
        if (staleChecked) break;
        staleChecked = true;
        // a hole the binary search stepped over (an eviction inside the chain) is filled as a new
        // block: queued and in the holder masks, so entry and masks keep listing the same blocks
        if (held > 0 && staleWithin(e, hashes, held, t)) low = 0;
      }
      if (!shrink(e, this.holders, left)) return false;
      if (notify) this.emit({ kind: 'insert', workerId, hashes, newFrom });
      return true;
    };
  }

  /** Forget the given blocks (hashes[from..]) on one worker (feedback correction or a remote
   *  eviction). `from` spares the caller a copy of a chain's tail (listeners get one, if any). */
  evict(workerId: string, hashes: readonly string[], notify = true, from = 0): number {
    const e = this.workers.get(workerId);
    if (!e) return 0;
    const n = evictBlocks(e, this.holders, hashes, from);
    if (notify && n > 0 && this.listeners.length > 0)
      this.emit({ kind: 'evict', workerId, hashes: from > 0 ? hashes.slice(from) : hashes });
    return n;
  }

  /** Forget everything one worker holds (its cache was flushed); listeners see one eviction. */
  clear(workerId: string, notify = true): number {
    const e = this.workers.get(workerId);
    if (!e) return 0;
    e.gen++;
    return this.evict(workerId, heldInOrder(e), notify);
  }

  removeWorker(workerId: string): void {
    const e = this.workers.get(workerId);
    if (!e) return;
    e.gen++;
    emptyEntry(e, this.holders);
  }

  workerIds(): string[] {
    return [...this.workers.keys()];
  }

  stats(): PrefixIndexStats {
    const perWorker: PrefixIndexStats['perWorker'] = {};
    let blocks = 0;
    let evictions = 0;
    for (const [id, e] of this.workers) {
      perWorker[id] = { blocks: e.held, capacity: e.capacity, evictions: e.evictions };
      blocks += e.held;
      evictions += e.evictions;
    }
    return { workers: this.workers.size, blocks, evictions, perWorker };
  }

  private emit(ev: IndexEvent): void {
    for (const l of this.listeners) l(ev);
  }
}

/** matchLength on one entry (see PrefixIndex.matchLength). */
function matchEntry(
  e: WorkerEntry,
  H: HolderMasks,
  hashes: readonly string[],
  hint: number,
  keys: Int32Array | undefined,
): number {
  if (hashes.length === 0 || !held(e, H, hashes, keys, 0)) return 0;
  let lo = 1; // hashes[0..lo) held
  let hi = hashes.length; // answer <= hi
  if (hint > 1 && hint <= hi) {
    if (held(e, H, hashes, keys, hint - 1)) {
      if (hint === hi || !held(e, H, hashes, keys, hint)) return hint;
      lo = hint + 1;
    } else hi = hint - 1;
  }
  if (held(e, H, hashes, keys, hi - 1)) return hi;
  hi -= 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (held(e, H, hashes, keys, mid - 1)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** Whether the entry holds block `i` of the chain: its bit in the holder table while the masks run
 *  (one row read, found by the block's key when the chain has keys; the masks list exactly what
 *  each entry holds), else the entry's own Map. */
function held(
  e: WorkerEntry,
  H: HolderMasks,
  hashes: readonly string[],
  keys: Int32Array | undefined,
  i: number,
): boolean {
  if (!H.isActive) return holds(e, hashes[i]);
  if (keys !== undefined) {
    const hi = keys[2 * i + 1];
    if (hi !== NOT_A_KEY) return H.hasKey(keys[2 * i], hi, e.slot);
  }
  return H.has(hashes[i], e.slot);
}
