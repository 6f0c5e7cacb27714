// Shared-prefix tracker: marks blocks that two or more different prompts pass through (a system
// prompt and tool schemas every session starts with). Each block remembers its first continuation;
// a different continuation marks it and all its ancestors shared. Shared-ness is prefix-closed
// along a chain, so sharedDepth is a binary search. Lets ctxgate tell "this worker holds the
// common root" (worth little: every worker can cache it) from "this worker holds this
// conversation" (worth keeping). insert O(log n + new blocks), ancestors marked once; memory bounded by
// dropping the oldest-inserted entries past maxBlocks.

export const DEFAULT_TRACKED_BLOCKS = 1_000_000;
const END = '';
const SHARED = '*';

export class SharedPrefixTracker {
  /** hash -> first continuation hash, END for none yet, SHARED once two continuations seen */
  private readonly next = new Map<string, string>();

  constructor(readonly maxBlocks: number = DEFAULT_TRACKED_BLOCKS) {}

  get size(): number {
    return this.next.size;
  }

  insert(hashes: readonly string[]): void {
    this.inserting(hashes)(Number.POSITIVE_INFINITY);
  }

  /**
   * insert() in steps, for a chain long enough to hold the event loop: each call of the returned
   * function walks up to `blocks` more blocks of the chain (then the ancestors to mark, then the
   * oldest entries to drop past maxBlocks) and returns true when done. One step of every block is
   * exactly insert(); between steps a lookup sees the chain's head recorded and its tail not yet.
   */
  inserting(hashes: readonly string[]): (blocks: number) => boolean {
    const n = hashes.length;
    // blocks before the deepest known one were inserted with this same chain (a block's parent is
    // fixed by its hash), so only the divergence point and the new tail need work: O(log n + new)
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.next.has(hashes[mid - 1])) lo = mid;
      else hi = mid - 1;
    }
    let sharedUpTo = -1;
    let i = Math.max(0, lo - 1);
    /** next ancestor to mark shared (walking down from sharedUpTo), -1 when none is left */
    let mark = -2;
    /** dropping the oldest entries down to 0.9·maxBlocks (begun past maxBlocks) */
    let trimming = false;
    return (blocks: number): boolean => {
      let left = blocks;
      for (; i < n && left > 0; i++, left--) {
        const cont = i + 1 < n ? hashes[i + 1] : END;
        const cur = this.next.get(hashes[i]);
        if (cur === undefined) this.next.set(hashes[i], cont);
        else if (cur === SHARED) sharedUpTo = i;
        else if (cur === END) {
          if (cont !== END) this.next.set(hashes[i], cont); // the same prompt grew
        } else if (cont !== END && cont !== cur) sharedUpTo = i; // a second continuation: branch point
      }
      if (i < n) return false;
      if (mark === -2) mark = sharedUpTo;
      for (; mark >= 0 && left > 0; mark--, left--) {
        if (this.next.get(hashes[mark]) === SHARED && mark < sharedUpTo) {
          mark = -1; // ancestors already marked
          break;
        }
        this.next.set(hashes[mark], SHARED);
      }
      if (mark >= 0) return false;
      if (trimming || this.next.size > this.maxBlocks) {
        trimming = true;
        for (const k of this.next.keys()) {
          if (this.next.size <= this.maxBlocks * 0.9) break;
          if (left-- <= 0) return false;
          this.next.delete(k);
        }
      }
      return true;
    };
  }

  /**
   * Leading blocks of `hashes` (at most `held`) that another prompt shares: those already marked,
   * or all `held` when this prompt leaves the stored chain right after them (a new branch).
   */
  commonDepth(hashes: readonly string[], held: number): number {
    if (held > 0 && held < hashes.length) {
      const cont = this.next.get(hashes[held - 1]);
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
      if (this.next.get(hashes[mid - 1]) === SHARED) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }
}
