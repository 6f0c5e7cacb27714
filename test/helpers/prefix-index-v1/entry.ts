// Test reference, frozen: the prefix index as it was with a hash-keyed entry (Maps keyed by block
// hash for stamps and children, a queue of hashes), before the entry kept one record per block.
// test/kvplanner/prefix-index-records.test.ts replays one stream on both and compares.
// One worker's entry of the prefix index: a second-chance LRU over block hashes. A block's stamp
// (one Map.set) and one queue entry are made when it is first held; eviction pops the oldest
// entry, skips it when the block is gone, sends it to the back at its current stamp when it was
// stamped again since (a block used again outlives blocks used once: measured on agent
// recordings, strict LRU by stamp kept fewer of a busy home's hot histories), and evicts leaves
// first, as vLLM's free queue does (a request frees its blocks tail first, so its cache never
// holds a block without its parent): a block with a child still held goes back to the queue
// instead. Each block's children (the next block of the chains through it, one string or, at a
// branch point, a list swept of gone ones as it doubles) are kept with a capacity of its own; an
// entry without one (a precise index: its engine's events say what left) keeps none.
// Cost: a stamped block O(1) Map operations; an eviction amortised O(1) queue entries (a block
// passed over for its child is evicted once that child went); the queue is compacted once mostly
// garbage (O(blocks log blocks), amortised over as many operations).
import type { HolderMasks } from '../../../kvplanner/prefix-index-holders.ts';

/** A held prefix is re-stamped once this share of the capacity was inserted since its stamp. */
const TOUCH_SLACK = 0.25;
/** Evenly spaced held-prefix stamps checked per insert (plus the first block). */
const STALE_SAMPLES = 4;
/** Entries with at least this capacity (a precise index's, unbounded) keep no children. */
export const KIDS_BELOW_CAPACITY = 2 ** 32;

export interface WorkerEntry {
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

export function newEntry(slot: number, capacity: number): WorkerEntry {
  return {
    slot,
    clock: 0,
    blocks: new Map(),
    qHash: [],
    qTick: [],
    head: 0,
    capacity,
    evictions: 0,
    gen: 0,
    kids: new Map(),
  };
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
  const blocks = e.blocks;
  for (let i = from; i >= to; i--) {
    const h = hashes[i];
    // one Map operation: the size says whether the block was new (set updates a held one's stamp)
    const size = blocks.size;
    blocks.set(h, t);
    if (blocks.size === size) continue;
    newFrom = i;
    holders.add(h, e.slot);
    if (i > 0 && e.capacity < KIDS_BELOW_CAPACITY) addKid(e, hashes[i - 1], h);
    e.qHash.push(h);
    e.qTick.push(t);
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
    if (now - (e.blocks.get(hashes[i]) ?? 0) > limit) return true;
  }
  return false;
}

/** Forgets hashes[from..] and what hangs below them: the blocks evicted. */
export function evictBlocks(e: WorkerEntry, holders: HolderMasks, hashes: readonly string[], from = 0): number {
  let n = 0;
  for (let i = from; i < hashes.length; i++) {
    const h = hashes[i];
    if (e.blocks.delete(h)) {
      holders.drop(h, e.slot);
      n++;
    }
    if (e.kids.size === 0) continue;
    n += dropBelow(e, holders, h);
    // the walk below h went down this chain: the blocks it reached are gone with their children
    // (nothing is added meanwhile), so their own turn would find nothing: skip them. Saves two
    // missing Map lookups per block of a chain evicted from its root (a correction, a take-back).
    for (let k = 1; k < walked.length && i + 1 < hashes.length && walked[k] === hashes[i + 1]; k++) i++;
  }
  e.evictions += n;
  compact(e);
  return n;
}

/** Evicts back to capacity, oldest first (at most `steps` queue entries looked at); true when done. */
export function shrink(e: WorkerEntry, holders: HolderMasks, steps = Number.POSITIVE_INFINITY): boolean {
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
    if (e.kids.size > 0 && hasKid(e, h)) {
      // a child still held: leaves first (the block stays as recent as its stamp)
      e.qHash.push(h);
      e.qTick.push(t);
      continue;
    }
    e.blocks.delete(h);
    holders.drop(h, e.slot);
    e.evictions++;
  }
  compact(e);
  return true;
}

/** Records `kid`, just added to the entry, as a child of `parent` (a branch point's list is swept
 *  of gone children each time it doubles: bounded by twice the children held, amortised O(1)). */
function addKid(e: WorkerEntry, parent: string, kid: string): void {
  const v = e.kids.get(parent);
  if (v === undefined) e.kids.set(parent, kid);
  else if (typeof v === 'string') {
    if (v !== kid) e.kids.set(parent, [v, kid]);
  } else {
    if (v.length >= 8 && (v.length & (v.length - 1)) === 0) {
      let k = 0;
      // the sweep sees the entry as before `kid` was added (it is pushed back below, at the end)
      for (const x of v) if (x !== kid && e.blocks.has(x)) v[k++] = x;
      v.length = k;
    }
    if (v[v.length - 1] !== kid) v.push(kid);
  }
}

/** Whether a child of `h` is still held (gone children are dropped from its list on the way). */
function hasKid(e: WorkerEntry, h: string): boolean {
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

/** dropBelow's stack, reused: an eviction of a long chain called it once per block, and two
 *  arrays per call were most of the garbage a call made (nothing it calls re-enters it). */
const below: string[] = [];
/** the blocks dropBelow's last walk reached, in order (the first: the block it started from) */
const walked: string[] = [];

/** Evicts what hangs below the evicted block `h` (unusable without it): the blocks evicted. */
function dropBelow(e: WorkerEntry, holders: HolderMasks, h: string): number {
  let n = 0;
  const todo = below;
  todo.length = 0;
  todo.push(h);
  walked.length = 0;
  for (let b = todo.pop(); b !== undefined; b = todo.pop()) {
    walked.push(b);
    const v = e.kids.get(b);
    if (v === undefined) continue;
    e.kids.delete(b);
    if (typeof v === 'string') {
      if (e.blocks.delete(v)) {
        holders.drop(v, e.slot);
        n++;
      }
      todo.push(v); // a child gone already may still have some below it (a hole)
      continue;
    }
    for (const k of v) {
      if (e.blocks.delete(k)) {
        holders.drop(k, e.slot);
        n++;
      }
      todo.push(k);
    }
  }
  return n;
}

function compact(e: WorkerEntry): void {
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
