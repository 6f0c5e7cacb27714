// The eviction queue of a prefix-index entry (prefix-index-entry.ts): (record, tick) pairs in
// the order they were queued, as a ring buffer. On growing sessions, at capacity, every call's
// evictions pass over the earlier turns' blocks (each has its child still held: leaves first) and
// send them to the back, ~100 queue steps a call; with two growing arrays and a copy once the
// consumed head was half of them, that was most of a guessed index's insert. Here a step back is
// two stores into preallocated slots, and nothing is copied but when the ring doubles. The order
// of entries, and so every eviction, is the arrays' exactly.
// Cost: push and shift O(1) (amortised over doublings); memory: the most entries ever queued at
// once, rounded up to a power of two (reset() starts again from what is queued).

const MIN_SLOTS = 16;

export class RingQueue<T> {
  private items: Array<T | undefined>;
  private ticks: Float64Array;
  private head = 0;
  private mask: number;
  /** entries queued */
  size = 0;

  constructor(slots = MIN_SLOTS) {
    const n = slotsFor(slots);
    this.items = new Array<T | undefined>(n).fill(undefined);
    this.ticks = new Float64Array(n);
    this.mask = n - 1;
  }

  push(item: T, tick: number): void {
    if (this.size > this.mask) this.grow();
    const i = (this.head + this.size) & this.mask;
    this.items[i] = item;
    this.ticks[i] = tick;
    this.size++;
  }

  /** The oldest entry's item (the queue must not be empty). */
  first(): T {
    return this.items[this.head] as T;
  }

  /** The oldest entry's tick. */
  firstTick(): number {
    return this.ticks[this.head];
  }

  /** Drops the oldest entry (the slot lets go of its item). */
  shift(): void {
    this.items[this.head] = undefined;
    this.head = (this.head + 1) & this.mask;
    this.size--;
  }

  /** Each entry, oldest first (inspection: tests, diagnostics). */
  forEach(fn: (item: T, tick: number) => void): void {
    for (let k = 0; k < this.size; k++) {
      const i = (this.head + k) & this.mask;
      fn(this.items[i] as T, this.ticks[i]);
    }
  }

  /** Replaces the whole queue by `items` with their `tick`s, oldest first. */
  reset(items: readonly T[], tick: (item: T) => number): void {
    const n = slotsFor(items.length);
    this.items = new Array<T | undefined>(n).fill(undefined);
    this.ticks = new Float64Array(n);
    this.mask = n - 1;
    this.head = 0;
    this.size = items.length;
    for (let i = 0; i < items.length; i++) {
      this.items[i] = items[i];
      this.ticks[i] = tick(items[i]);
    }
  }

  private grow(): void {
    const n = 2 * (this.mask + 1);
    const items = new Array<T | undefined>(n).fill(undefined);
    const ticks = new Float64Array(n);
    for (let k = 0; k < this.size; k++) {
      const i = (this.head + k) & this.mask;
      items[k] = this.items[i];
      ticks[k] = this.ticks[i];
    }
    this.items = items;
    this.ticks = ticks;
    this.head = 0;
    this.mask = n - 1;
  }
}

/** The power of two ≥ max(n, MIN_SLOTS). */
function slotsFor(n: number): number {
  let s = MIN_SLOTS;
  while (s < n) s *= 2;
  return s;
}
