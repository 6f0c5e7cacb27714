// Shared-prefix tracker: marks blocks that two or more different prompts pass through (a system
// prompt and tool schemas every session starts with). Each block remembers its first continuation;
// a different continuation marks it and all its ancestors shared. Shared-ness is prefix-closed
// along a chain, so sharedDepth is a binary search. Lets ctxgate tell "this worker holds the
// common root" (worth little: every worker can cache it) from "this worker holds this
// conversation" (worth keeping). insert O(log n + new blocks), ancestors marked once.
// Memory is bounded by two generations of at most maxBlocks/2 entries each: writes go to the
// young one, a block read from the old one while inserting is copied into the young one, and when
// the young one is full the old one is dropped whole and the young one becomes old: O(1), where
// deleting the oldest 10 % of a 1M-entry Map (and V8 compacting it) held the event loop for ms.
// A chain whose first block is not in the young generation is walked from its start, copying
// what the old one knows (its shared marks included): a root every session passes through is
// copied once per generation, and one whose generation was dropped is learned again from the
// start rather than left headless under deeper blocks that stayed.

export const DEFAULT_TRACKED_BLOCKS = 1_000_000;
const END = '';
const SHARED = '*';

export class SharedPrefixTracker {
  /** hash -> first continuation hash, END for none yet, SHARED once two continuations seen */
  private young = new Map<string, string>();
  private old = new Map<string, string>();
  private readonly generation: number;

  constructor(readonly maxBlocks: number = DEFAULT_TRACKED_BLOCKS) {
    this.generation = Math.max(1, Math.floor(maxBlocks / 2));
  }

  /** Blocks tracked (a block in both generations counts twice: at most maxBlocks). */
  get size(): number {
    return this.young.size + this.old.size;
  }

  private get(h: string): string | undefined {
    return this.young.get(h) ?? this.old.get(h);
  }

  private set(h: string, v: string): void {
    if (this.young.size >= this.generation && !this.young.has(h)) {
      this.old = this.young;
      this.young = new Map();
    }
    this.young.set(h, v);
  }

  insert(hashes: readonly string[]): void {
    this.inserting(hashes)(Number.POSITIVE_INFINITY);
  }

  /**
   * insert() in steps, for a chain long enough to hold the event loop: each call of the returned
   * function walks up to `blocks` more blocks of the chain (then the ancestors to mark) and returns
   * true when done. One step of every block is exactly insert(); between steps a lookup sees the
   * chain's head recorded and its tail not yet.
   */
  inserting(hashes: readonly string[]): (blocks: number) => boolean {
    const n = hashes.length;
    // blocks before the deepest known one were inserted with this same chain (a block's parent is
    // fixed by its hash), so only the divergence point and the new tail need work: O(log n + new)
    let lo = 0;
    // a chain whose first block is only in the old generation is walked (and copied) whole, once
    // per generation: a hot root keeps its shared marks across drops instead of losing its head
    if (n > 0 && this.young.has(hashes[0])) {
      let hi = n;
      while (lo < hi) {
        const mid = (lo + hi + 1) >>> 1;
        if (this.get(hashes[mid - 1]) !== undefined) lo = mid;
        else hi = mid - 1;
      }
    }
    let sharedUpTo = -1;
    let i = Math.max(0, lo - 1);
    /** next ancestor to mark shared (walking down from sharedUpTo), -1 when none is left */
    let mark = -2;
    return (blocks: number): boolean => {
      let left = blocks;
      for (; i < n && left > 0; i++, left--) {
        const cont = i + 1 < n ? hashes[i + 1] : END;
        const cur = this.get(hashes[i]);
        if (cur === undefined) this.set(hashes[i], cont);
        else if (cur === SHARED) {
          sharedUpTo = i;
          if (!this.young.has(hashes[i])) this.set(hashes[i], cur);
        } else if (cur === END) {
          this.set(hashes[i], cont === END ? END : cont); // the same prompt grew (or is read again)
        } else if (cont !== END && cont !== cur)
          sharedUpTo = i; // a second continuation: branch point
        else if (!this.young.has(hashes[i])) this.set(hashes[i], cur);
      }
      if (i < n) return false;
      if (mark === -2) mark = sharedUpTo;
      for (; mark >= 0 && left > 0; mark--, left--) {
        if (this.get(hashes[mark]) === SHARED && mark < sharedUpTo) {
          if (!this.young.has(hashes[mark])) this.set(hashes[mark], SHARED);
          mark = -1; // ancestors already marked
          break;
        }
        this.set(hashes[mark], SHARED);
      }
      return mark < 0;
    };
  }

  /**
   * Leading blocks of `hashes` (at most `held`) that another prompt shares: those already marked,
   * or all `held` when this prompt leaves the stored chain right after them (a new branch).
   */
  commonDepth(hashes: readonly string[], held: number): number {
    if (held > 0 && held < hashes.length) {
      const cont = this.get(hashes[held - 1]);
      if (cont !== undefined && cont !== END && cont !== SHARED && cont !== hashes[held]) return held;
    }
    return this.sharedDepth(hashes, held);
  }

  /** Leading blocks of `hashes` known to be shared by two or more prompts. */
  sharedDepth(hashes: readonly string[], limit: number = hashes.length): number {
    let lo = 0;
    let hi = Math.min(limit, hashes.length);
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.get(hashes[mid - 1]) === SHARED) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }
}
