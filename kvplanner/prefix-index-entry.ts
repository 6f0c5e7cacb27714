// One worker's entry of the prefix index: a second-chance LRU over block hashes. Each block the
// entry knows has one record (BlockRec: its stamp, the order it was first held in, its children),
// found by hash in one Map; the eviction queue and the children lists point at records, so a
// queue step reads fields instead of looking strings up in a Map. A block's stamp and one queue
// entry are made when it is first held; eviction pops the oldest entry, skips it when the block is
// gone, sends it to the back at its current stamp when it was stamped again since (a block used
// again outlives blocks used once: measured on agent recordings, strict LRU by stamp kept fewer of
// a busy home's hot histories), and evicts leaves first, as vLLM's free queue does (a request
// frees its blocks tail first, so its cache never holds a block without its parent): a block with
// a child still held goes back to the queue instead. Each block's children (the next block of the
// chains through it, one record or, at a branch point, a list swept of gone ones as it doubles)
// are kept with a capacity of its own; an entry without one (a precise index: its engine's events
// say what left) keeps none. A record leaves the Map once its block is neither held nor listed
// with children; a pointer to it (queue, children lists) then stands for its hash, looked up again
// (the block may be back, as a new record), so every answer is the one a hash-keyed entry gives.
// Tombstones: in an entry that keeps children, a record that an evict() takes out (the feedback, a
// KV event) stays in the Map marked gone (not held, no children: every lookup reads it as absent)
// and is revived when its hash comes back, so a chain evicted and inserted again (a worker that
// never caches: the feedback evicts each call's whole chain, the next call inserts it again) makes
// no new records and no Map growth or shrink. The LRU's own evictions (shrink: blocks least
// recently used, rarely back soon) delete at once: a tombstone there would only grow the Map.
// They are swept, out of the Map at once, when more than TOMB_SHARE of the capacity (+16): an
// O(records) walk per that many tombstones made. A precise entry deletes at once (its `holds` then
// answers from the Map alone).
// Cost: a stamped block O(1) Map operations; a queue step a few field reads and, for a block
// passed over for its child, one push to the back of a ring (prefix-index-queue.ts). A session
// whose chain grew turn by turn is evicted turn by turn, tail first: each pass of the queue passes
// over its older turns' blocks again (growing agent sessions at capacity: ~16 steps an eviction).
// The queue is rebuilt once mostly stale (O(blocks log blocks), amortised over as many operations).
// Cycle guard: chained block hashes cannot make a block a child of its own descendant, but a hash
// collision or a buggy or hostile engine's KV events can; then every block of the cycle keeps a
// held child and the leaves-first rule would send them back to the queue for ever. Without a
// cycle, some held block has no held child (a leaf) and its queue entry is met within two passes
// of the queue as it was at the last change (an entry met stamped again goes once more to the
// back): so 2·queue + 2 steps without an eviction and without a change of the entry mean a cycle.
// Then the block at hand is evicted despite its held child (counted: cycleBreaks), which opens the
// cycle. O(1) per queue step; answers without a cycle are unchanged.
import type { HolderMasks } from './prefix-index-holders.ts';
import { RingQueue } from './prefix-index-queue.ts';

/** A held prefix is re-stamped once this share of the capacity was inserted since its stamp. */
const TOUCH_SLACK = 0.25;
/** Evenly spaced held-prefix stamps checked per insert (plus the first block). */
const STALE_SAMPLES = 4;
/** Entries with at least this capacity (a precise index's, unbounded) keep no children. */
export const KIDS_BELOW_CAPACITY = 2 ** 32;
/** Tombstones an entry keeps before a sweep: this share of its capacity, plus TOMB_MIN. */
const TOMB_SHARE = 0.5;
const TOMB_MIN = 16;

/** Cycles broken by the guard (see above), all entries of this process: a metric reads it. */
export const cycleBreakCounts = { broken: 0 };

/** What an entry knows of one block hash. */
export class BlockRec {
  /** the block's children (next blocks of chains through it), undefined when none listed */
  kids: BlockRec | BlockRec[] | undefined = undefined;
  constructor(
    readonly h: string,
    /** > 0: held, the clock at its last touch; 0: not held, listed for its children (none listed: a
     *  tombstone, read as absent); -1: out of the Map */
    public t: number,
    /** order in which blocks became held (the order a Map keyed by held hash would iterate in) */
    public seq: number,
  ) {}
}

/** Every entry's capacity and blocks held, by slot, in two dense arrays shared by an index's entries
 *  (mirrors of the entries' own fields): a routing decision reads them for every worker, and 64
 *  typed-array reads stay in a few cache lines where 64 scattered entry objects miss on each. */
export interface SlotCounts {
  capacity: Float64Array;
  held: Float64Array;
}

export function newSlotCounts(): SlotCounts {
  return { capacity: new Float64Array(8), held: new Float64Array(8) };
}

export interface WorkerEntry {
  slot: number;
  /** the index's dense mirror of `capacity` and `held` (set through setEntryCapacity, and where held changes) */
  readonly counts: SlotCounts;
  /** logical clock: advances by the blocks inserted on this worker */
  clock: number;
  /** hash -> its record, for the blocks held or listed with children */
  recs: Map<string, BlockRec>;
  /** blocks held */
  held: number;
  /** next hold order (BlockRec.seq) */
  seq: number;
  /** records with children listed */
  kidLists: number;
  /** tombstones in the Map (records neither held nor listed with children, kept for reuse) */
  tombs: number;
  /** eviction candidates in (approximate) age order: each record with its tick when queued */
  queue: RingQueue<BlockRec>;
  capacity: number;
  evictions: number;
  /** queue steps shrink took since the last eviction or change of the entry (the cycle guard) */
  idle: number;
  /** steps allowed without an eviction: 2 · the queue at the first of them + 2 */
  idleLimit: number;
  /** blocks evicted despite a held child, to break a cycle of children (see above) */
  cycleBreaks: number;
  /** advances when the entry is emptied (clear, removeWorker): a stepped insert begun before stops */
  gen: number;
}

export function newEntry(slot: number, capacity: number, counts: SlotCounts): WorkerEntry {
  if (slot >= counts.capacity.length) {
    const size = Math.max(2 * counts.capacity.length, slot + 1);
    const c = new Float64Array(size);
    c.set(counts.capacity);
    const h = new Float64Array(size);
    h.set(counts.held);
    counts.capacity = c;
    counts.held = h;
  }
  counts.capacity[slot] = capacity;
  counts.held[slot] = 0;
  return {
    slot,
    counts,
    clock: 0,
    recs: new Map(),
    held: 0,
    seq: 0,
    kidLists: 0,
    tombs: 0,
    queue: new RingQueue<BlockRec>(),
    capacity,
    evictions: 0,
    idle: 0,
    idleLimit: 0,
    cycleBreaks: 0,
    gen: 0,
  };
}

/** Sets the entry's capacity (and its mirror in the index's SlotCounts); the caller shrinks. */
export function setEntryCapacity(e: WorkerEntry, capacity: number): void {
  e.capacity = capacity;
  e.counts.capacity[e.slot] = capacity;
}

/** Whether the entry holds `h`. */
export function holds(e: WorkerEntry, h: string): boolean {
  // a record of a block not held is kept only for its children: with no children lists (a precise
  // entry) every record is held, and the Map answers alone (no read of the record: a cache miss)
  if (e.kidLists === 0 && e.tombs === 0) return e.recs.has(h);
  const r = e.recs.get(h);
  return r !== undefined && r.t > 0;
}

/** The held blocks' hashes in the order they became held. O(blocks log blocks): clear, removal. */
export function heldInOrder(e: WorkerEntry): string[] {
  const live: BlockRec[] = [];
  for (const r of e.recs.values()) if (r.t > 0) live.push(r);
  live.sort((a, b) => a.seq - b.seq);
  return live.map((r) => r.h);
}

/** Empties the entry (a worker removed): its holder bits dropped in the order they were set. */
export function emptyEntry(e: WorkerEntry, holders: HolderMasks): void {
  for (const h of heldInOrder(e)) holders.drop(h, e.slot);
  for (const r of e.recs.values()) r.t = -1;
  e.recs.clear();
  e.held = 0;
  e.counts.held[e.slot] = 0;
  e.kidLists = 0;
  e.tombs = 0;
  e.queue = new RingQueue<BlockRec>();
  e.idle = 0;
}

/** Stamps hashes[from] down to hashes[to] with tick t; a block not held yet is queued and added
 *  to the holder masks. Returns the lowest new index (or newFrom if none was new). */
export function stampDown(
  e: WorkerEntry,
  holders: HolderMasks,
  hashes: readonly string[],
  from: number,
  to: number,
  t: number,
  newFrom: number,
): number {
  const recs = e.recs;
  // stamps and new blocks change what shrink will meet: its cycle guard counts afresh
  e.idle = 0;
  // the record addKid found for the parent: the next block stamped (tail first)
  let next: BlockRec | undefined;
  for (let i = from; i >= to; i--) {
    const h = hashes[i];
    let r = next ?? recs.get(h);
    next = undefined;
    if (r !== undefined && r.t > 0) {
      r.t = t;
      continue;
    }
    if (r === undefined) {
      r = new BlockRec(h, t, e.seq++);
      recs.set(h, r);
    } else {
      if (r.kids === undefined) e.tombs--; // a tombstone revived
      r.t = t;
      r.seq = e.seq++;
    }
    e.counts.held[e.slot] = ++e.held;
    newFrom = i;
    holders.add(h, e.slot);
    if (i > 0 && e.capacity < KIDS_BELOW_CAPACITY) next = addKid(e, hashes[i - 1], r);
    e.queue.push(r, t);
  }
  return newFrom;
}

/**
 * Whether some block of the held prefix is due a re-stamp. Stamps rise along a chain's own blocks
 * (each call stamps only its new tail) while a shared root is refreshed by other chains, so the
 * oldest block can sit anywhere: five evenly spaced samples find it to within 1/4 of the chain,
 * inside the 3/4-capacity margin left before eviction reaches it.
 */
export function staleWithin(e: WorkerEntry, hashes: readonly string[], held: number, now: number): boolean {
  const limit = e.capacity * TOUCH_SLACK;
  for (let k = 0; k <= STALE_SAMPLES; k++) {
    const i = Math.min(held - 1, Math.floor((k * (held - 1)) / STALE_SAMPLES));
    const r = e.recs.get(hashes[i]);
    if (now - (r !== undefined && r.t > 0 ? r.t : 0) > limit) return true;
  }
  return false;
}

/** Forgets hashes[from..] and what hangs below them: the blocks evicted. */
export function evictBlocks(e: WorkerEntry, holders: HolderMasks, hashes: readonly string[], from = 0): number {
  let n = 0;
  for (let i = from; i < hashes.length; i++) {
    const h = hashes[i];
    const r = e.recs.get(h);
    if (r !== undefined && r.t > 0) {
      release(e, holders, r, true);
      n++;
    }
    if (e.kidLists === 0) continue;
    n += dropBelow(e, holders, r, h);
    // the walk below h went down this chain: the blocks it reached are gone with their children
    // (nothing is added meanwhile), so their own turn would find nothing: skip them. Saves two
    // missing Map lookups per block of a chain evicted from its root (a correction, a take-back).
    for (let k = 1; k < walkedN && i + 1 < hashes.length && walked[k] === hashes[i + 1]; k++) i++;
  }
  walked.fill('', 0, walkedHi);
  walkedHi = 0;
  e.evictions += n;
  e.idle = 0;
  compact(e);
  return n;
}

/** Evicts back to capacity, oldest first (at most `steps` queue entries looked at); true when done. */
export function shrink(e: WorkerEntry, holders: HolderMasks, steps = Number.POSITIVE_INFINITY): boolean {
  let left = steps;
  const q = e.queue;
  while (e.held > e.capacity && q.size > 0) {
    if (left-- <= 0) return false;
    if (e.idle++ === 0) e.idleLimit = 2 * q.size + 2;
    let r = q.first();
    const t = q.firstTick();
    q.shift();
    if (r.t < 0) {
      // out of the Map since it was queued: its hash may be back as a new record
      const cur = e.recs.get(r.h);
      if (cur === undefined) continue;
      r = cur;
    }
    if (r.t === 0) continue; // evicted already
    if (r.t !== t) {
      // stamped again since: a second pass at its current stamp, from the back of the queue
      q.push(r, r.t);
      continue;
    }
    if (r.kids !== undefined && hasKid(e, r)) {
      if (e.idle <= e.idleLimit) {
        // a child still held: leaves first (the block stays as recent as its stamp)
        q.push(r, t);
        continue;
      }
      // no leaf met in two passes: the held blocks' children form a cycle; this block opens it
      e.cycleBreaks++;
      cycleBreakCounts.broken++;
    }
    release(e, holders, r, false);
    e.evictions++;
    e.idle = 0;
  }
  compact(e);
  return true;
}

/** Stops holding the block of `r` (held); the record leaves the Map unless it lists children
 *  (`tomb`: as a tombstone, see above). */
function release(e: WorkerEntry, holders: HolderMasks, r: BlockRec, tomb: boolean): void {
  r.t = 0;
  e.counts.held[e.slot] = --e.held;
  holders.drop(r.h, e.slot, tomb && e.capacity < KIDS_BELOW_CAPACITY);
  if (r.kids === undefined) forget(e, r, tomb);
}

/** `r` (not held, no children listed) leaves: a tombstone when asked and the entry keeps children. */
function forget(e: WorkerEntry, r: BlockRec, tomb: boolean): void {
  if (tomb && e.capacity < KIDS_BELOW_CAPACITY) {
    r.t = 0;
    e.tombs++;
    return;
  }
  e.recs.delete(r.h);
  r.t = -1;
}

/** Takes the tombstones out of the Map (pointers to them then stand for their hash). O(records). */
function sweep(e: WorkerEntry): void {
  for (const r of e.recs.values()) {
    if (r.t !== 0 || r.kids !== undefined) continue;
    e.recs.delete(r.h);
    r.t = -1;
  }
  e.tombs = 0;
}

/** Whether the block `r` stands for is held (a record out of the Map: its hash looked up again). */
function isHeld(e: WorkerEntry, r: BlockRec): boolean {
  if (r.t >= 0) return r.t > 0;
  const cur = e.recs.get(r.h);
  return cur !== undefined && cur.t > 0;
}

/** Records `kid`, just added to the entry, as a child of `parent` (a branch point's list is swept
 *  of gone children each time it doubles: bounded by twice the children held, amortised O(1)).
 *  Returns the parent's record. */
function addKid(e: WorkerEntry, parent: string, kid: BlockRec): BlockRec {
  let p = e.recs.get(parent);
  if (p === undefined) {
    p = new BlockRec(parent, 0, -1);
    e.recs.set(parent, p);
  } else if (p.t === 0 && p.kids === undefined) {
    // a tombstone revived, as the record a missing parent gets
    e.tombs--;
    p.seq = -1;
  }
  const v = p.kids;
  if (v === undefined) {
    p.kids = kid;
    e.kidLists++;
  } else if (v instanceof BlockRec) {
    // the same hash again: listed already (an older record of it now stands for the new one)
    p.kids = v.h === kid.h ? kid : [v, kid];
  } else {
    if (v.length >= 8 && (v.length & (v.length - 1)) === 0) {
      let k = 0;
      // the sweep sees the entry as before `kid` was added (it is pushed back below, at the end)
      for (const x of v) if (x.h !== kid.h && isHeld(e, x)) v[k++] = x;
      v.length = k;
    }
    if (v.length === 0 || v[v.length - 1].h !== kid.h) v.push(kid);
    else v[v.length - 1] = kid;
  }
  return p;
}

/** Whether a child of `r` (held, with children listed) is still held (gone children are dropped
 *  from its list on the way). */
function hasKid(e: WorkerEntry, r: BlockRec): boolean {
  const v = r.kids;
  if (v instanceof BlockRec) {
    if (isHeld(e, v)) return true;
  } else if (v !== undefined) {
    while (v.length > 0) {
      if (isHeld(e, v[v.length - 1])) return true;
      v.pop();
    }
  }
  r.kids = undefined;
  e.kidLists--;
  return false;
}

/** dropBelow's stack, reused: an eviction of a long chain called it once per block, and two
 *  arrays per call were most of the garbage a call made (nothing it calls re-enters it). Both are
 *  used up to a count of their own: `length = 0` would free their backing stores each call. */
const below: BlockRec[] = [];
let belowN = 0;
/** the most of `below` / `walked` used since each was last let go of */
let belowHi = 0;
let walkedHi = 0;
/** the blocks dropBelow's last walk reached, in order (the first: the block it started from) */
const walked: string[] = [];
let walkedN = 0;

/** Evicts what hangs below the evicted block `h` (unusable without it; `first`: the record it had
 *  before, if any): the blocks evicted. */
function dropBelow(e: WorkerEntry, holders: HolderMasks, first: BlockRec | undefined, h: string): number {
  let n = 0;
  walked[0] = h;
  walkedN = 1;
  belowN = 0;
  let b = first;
  while (b !== undefined) {
    const r = b.t >= 0 ? b : e.recs.get(b.h);
    const v = r?.kids;
    if (r !== undefined && v !== undefined) {
      r.kids = undefined;
      e.kidLists--;
      if (r.t === 0) forget(e, r, true);
      if (v instanceof BlockRec) n += dropKid(e, holders, v);
      else for (const k of v) n += dropKid(e, holders, k);
    }
    if (belowN === 0) break;
    b = below[--belowN];
    walked[walkedN++] = b.h;
  }
  // the stack lets go of what this walk put there (reachable until overwritten otherwise)
  below.fill(undefined as unknown as BlockRec, 0, belowHi);
  belowHi = 0;
  if (walkedN > walkedHi) walkedHi = walkedN;
  return n;
}

/** One child met by dropBelow: evicted if held, queued for its own children (a child gone already
 *  may still have some below it: a hole). */
function dropKid(e: WorkerEntry, holders: HolderMasks, k: BlockRec): number {
  const cur = k.t >= 0 ? k : e.recs.get(k.h);
  below[belowN++] = cur ?? k;
  if (belowN > belowHi) belowHi = belowN;
  if (cur === undefined || cur.t <= 0) return 0;
  release(e, holders, cur, true);
  return 1;
}

function compact(e: WorkerEntry): void {
  // (an entry whose capacity became a precise one's deletes at once from then on: swept now)
  if (e.tombs > 0 && (e.capacity >= KIDS_BELOW_CAPACITY || e.tombs > e.capacity * TOMB_SHARE + TOMB_MIN)) sweep(e);
  if (e.queue.size > 4 * e.held + 1024) {
    // too many stale entries (evicted or stamped again): rebuild from the live blocks in stamp
    // order, tails first within a stamp (the order they became held)
    const live: BlockRec[] = [];
    for (const r of e.recs.values()) if (r.t > 0) live.push(r);
    live.sort((a, b) => a.t - b.t || a.seq - b.seq);
    e.queue.reset(live, (r) => r.t);
    e.idle = 0;
  }
}
