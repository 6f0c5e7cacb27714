// The prefix index's global view: block hash -> which worker slots hold it, as one bitmask record
// per block (bit s: slot s holds it; `words` 32-bit words per record, all records in one shared
// Int32Array, freed records reused). PrefixIndex keeps it in step with its per-worker entries;
// matchAll (prefix-index-match-all.ts) reads it to run every worker's binary search at once.
// Cost: add/drop O(1) Map operations (O(words) to see whether a record emptied); widen() O(records)
// once per 32 worker slots.
// Tombstones: a block dropped by an entry's evict() (drop's `keep`) keeps its record, all zero
// (read as no holder: matchAll treats an all-zero mask as a missing one), so a chain evicted and
// inserted again makes no Map set/delete churn; swept (deleted, records freed) once there are more
// than TOMBS_OVER_LIVE plus the live records: an O(records) walk per that many tombstones made.
// Inactive (constructed so, until activate()): add and drop do nothing. PrefixIndex keeps it so
// while it has one worker slot, where matchAll is that worker's matchLength and the masks would
// only cost two Map operations per block stored or evicted.

/** Tombstones kept beyond the live records before a sweep. */
const TOMBS_OVER_LIVE = 32_768;

export class HolderMasks {
  /** block hash -> record number of its holder bitmask in `masks` */
  private readonly records = new Map<string, number>();
  /** holder bitmasks, `words` 32-bit words per record */
  masks = new Int32Array(1024);
  words = 1;
  /** records in use or freed; freed ones are reused (`free`) */
  private used = 0;
  private readonly free: number[] = [];
  /** records in the Map with an all-zero mask (tombstones) */
  private tombs = 0;

  /** @param active false: add/drop do nothing until activate() */
  constructor(private active = true) {}

  /** Whether add/drop keep the masks. */
  get isActive(): boolean {
    return this.active;
  }

  /** From now on add/drop keep the masks; the caller adds what its slots already hold. */
  activate(): void {
    this.active = true;
  }

  /** Blocks some slot holds. */
  get size(): number {
    return this.records.size - this.tombs;
  }

  /** Record number of `hash`'s mask, undefined when no slot holds it. */
  recordOf(hash: string): number | undefined {
    return this.records.get(hash);
  }

  /** Room for slot `slot`: one more word per record once it passes the current width. */
  fit(slot: number): void {
    if (slot >= this.words * 32) this.widen();
  }

  add(h: string, slot: number): void {
    if (!this.active) return;
    let r = this.records.get(h);
    const W = this.words;
    if (r === undefined) {
      if (this.free.length > 0) r = this.free.pop()!;
      else {
        r = this.used++;
        if ((r + 1) * W > this.masks.length) {
          const next = new Int32Array(this.masks.length * 2);
          next.set(this.masks);
          this.masks = next;
        }
      }
      this.records.set(h, r);
    } else if (this.tombs > 0 && this.isZero(r)) this.tombs--; // a tombstone revived
    this.masks[r * W + (slot >>> 5)] |= 1 << (slot & 31);
  }

  /** Slot `slot` no longer holds `h`; the record leaves once no slot does (`keep`: it stays, a
   *  tombstone, see above). */
  drop(h: string, slot: number, keep = false): void {
    if (!this.active) return;
    const r = this.records.get(h);
    if (r === undefined) return;
    const i = r * this.words + (slot >>> 5);
    const bit = 1 << (slot & 31);
    // not held by the slot: nothing changes (a record is never all zero unless a tombstone)
    if ((this.masks[i] & bit) === 0) return;
    this.masks[i] &= ~bit;
    if (!this.isZero(r)) return;
    if (keep) {
      if (++this.tombs > TOMBS_OVER_LIVE + this.records.size - this.tombs) this.sweep();
      return;
    }
    this.records.delete(h);
    this.free.push(r);
  }

  private isZero(r: number): boolean {
    const W = this.words;
    const o = r * W;
    for (let w = 0; w < W; w++) if (this.masks[o + w] !== 0) return false;
    return true;
  }

  /** Deletes the tombstones and frees their records. O(records). */
  private sweep(): void {
    for (const [h, r] of this.records) {
      if (!this.isZero(r)) continue;
      this.records.delete(h);
      this.free.push(r);
    }
    this.tombs = 0;
  }

  /** One more word per holder mask (a 33rd, 65th… worker slot): O(records) copy, rare. */
  private widen(): void {
    const W = this.words;
    const next = new Int32Array(Math.max(1024, this.used * 2) * (W + 1));
    for (let r = 0; r < this.used; r++) for (let w = 0; w < W; w++) next[r * (W + 1) + w] = this.masks[r * W + w];
    this.masks = next;
    this.words = W + 1;
  }
}
