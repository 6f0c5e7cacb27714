// Every worker's matchLength at once (PrefixIndex.matchAll), over the holder bitmasks
// (prefix-index-holders.ts, one table row per block): the workers whose binary searches stand at
// the same interval form one group (a bitmask on a stack), and one lookup of the interval's probe
// block (its row's mask) splits the group by a mask AND into the workers that hold it and those
// that do not. O(k log n) lookups and
// O(k log n · slots/32) word operations, k the number of distinct depths (typically 2–3: the
// shared root on all workers, a conversation on one); no allocation once the scratch arrays reach
// their size. Each worker's result is exactly its matchLength (the same search path), even where
// evictions left holes in a chain. With the chain's keys (hash-keys.ts) a probe reads its key from
// one small typed array instead of the hash string: the same row, one cache miss fewer.
import { NOT_A_KEY } from './hash-keys.ts';
import type { HolderMasks } from './prefix-index-holders.ts';

export class BatchedMatch {
  /** the search stack: interval [lo, hi] per entry and the mask of the workers in it */
  private stackLo = new Int32Array(64);
  private stackHi = new Int32Array(64);
  private stackMask = new Int32Array(64);
  /** mask of the block just looked up */
  private probe = new Int32Array(1);

  constructor(private readonly holders: HolderMasks) {}

  /** the chain of the run in progress (its keys, when given: hash-keys.ts) */
  private hashes: readonly string[] = [];
  private keys: Int32Array | undefined;

  /** Depth of `hashes` on every slot into `out[slot]` (zeroed first); `hint` as matchLength's;
   *  `keys`: the chain's keys (hash-keys.ts), the same answers with fewer memory reads. */
  run(hashes: readonly string[], out: number[], hint = 0, keys?: Int32Array): void {
    out.fill(0);
    const n = hashes.length;
    if (n === 0) return;
    this.hashes = hashes;
    this.keys = keys;
    this.search(n, out, hint);
    // not kept past the run (a long prompt's chain)
    this.hashes = [];
    this.keys = undefined;
  }

  /** Row of block `i` of the chain (-1: no slot holds it). */
  private row(i: number): number {
    const k = this.keys;
    if (k !== undefined) {
      const hi = k[2 * i + 1];
      if (hi !== NOT_A_KEY) return this.holders.rowOfKey(k[2 * i], hi);
    }
    return this.holders.recordOf(this.hashes[i]);
  }

  private search(n: number, out: number[], hint: number): void {
    const H = this.holders;
    const r0 = this.row(0);
    if (r0 < 0) return;
    const W = H.words;
    const T = H.table;
    const S = H.stride;
    if (this.probe.length !== W) {
      // the masks widened (a 33rd, 65th… slot)
      this.probe = new Int32Array(W);
      this.stackMask = new Int32Array(this.stackLo.length * W);
    }
    this.reserve(4);
    for (let w = 0; w < W; w++) this.stackMask[w] = T[r0 * S + 2 + w];
    let top: number;
    // the first steps of matchLength(hashes, hint): entry 0 searches [1, hint-1] (or [1, n]
    // without a hint), entry 1 [hint+1, n]; each first probes its last block
    if (hint > 1 && hint <= n) {
      const f = this.split(0, hint - 1);
      let upper = (f & 2) !== 0;
      if (upper && hint === n) {
        this.take(1, -1, n, out);
        upper = false;
      } else if (upper) upper = this.take(1, hint, hint, out, true) && this.take(1, n - 1, n, out);
      const lower = (f & 1) !== 0 && this.take(0, hint - 2, hint - 1, out);
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
      top = this.take(0, n === 1 ? -1 : n - 1, n, out) ? 1 : 0;
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
        this.take(top, -1, lo, out);
        continue;
      }
      const mid = (lo + hi + 1) >>> 1;
      const r = this.row(mid - 1);
      if (r < 0) probe.fill(0);
      else for (let w = 0; w < W; w++) probe[w] = T[r * S + 2 + w];
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

  /** Splits stack entry `at` by the holders of block `block`: those without stay, those with go to
   *  entry at+1. Bit 1 of the result: some stayed; bit 2: some moved. */
  private split(at: number, block: number): number {
    const H = this.holders;
    const W = H.words;
    const r = this.row(block);
    const T = H.table;
    const o = r * H.stride + 2;
    const m = this.stackMask;
    let left = 0;
    let right = 0;
    for (let w = 0; w < W; w++) {
      const cur = m[at * W + w];
      const yes = r < 0 ? 0 : cur & T[o + w];
      m[(at + 1) * W + w] = yes;
      m[at * W + w] = cur & ~yes;
      left |= cur & ~yes;
      right |= yes;
    }
    return (left !== 0 ? 1 : 0) | (right !== 0 ? 2 : 0);
  }

  /** The workers of stack entry `at` that hold block `block` (all of them when -1; with
   *  `missing`, those that do not) stop at `depth` and leave the entry. Whether any remain. */
  private take(at: number, block: number, depth: number, out: number[], missing = false): boolean {
    const H = this.holders;
    const W = H.words;
    const r = block < 0 ? -1 : this.row(block);
    const T = H.table;
    const o = r * H.stride + 2;
    const m = this.stackMask;
    let rest = 0;
    for (let w = 0; w < W; w++) {
      const cur = m[at * W + w];
      const held = block < 0 ? cur : r < 0 ? 0 : cur & T[o + w];
      const stop = missing ? cur & ~held : held;
      if (stop !== 0) assign(stop, w, depth, out);
      m[at * W + w] = cur & ~stop;
      rest |= cur & ~stop;
    }
    return rest !== 0;
  }

  /** The stack holds at least `entries` entries. */
  private reserve(entries: number): void {
    const W = this.holders.words;
    if (this.stackLo.length >= entries && this.stackMask.length >= entries * W) return;
    const size = Math.max(entries * 2, this.stackLo.length);
    const lo = new Int32Array(size);
    lo.set(this.stackLo);
    const hi = new Int32Array(size);
    hi.set(this.stackHi);
    const m = new Int32Array(size * W);
    m.set(this.stackMask.subarray(0, Math.min(this.stackMask.length, m.length)));
    this.stackLo = lo;
    this.stackHi = hi;
    this.stackMask = m;
  }
}

/** out[slot] = depth for every slot whose bit is set in word `w` of a mask. */
function assign(bits: number, w: number, depth: number, out: number[]): void {
  let m = bits;
  while (m !== 0) {
    const low = m & -m;
    out[w * 32 + 31 - Math.clz32(low)] = depth;
    m ^= low;
  }
}
