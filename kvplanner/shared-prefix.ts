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
    for (let i = Math.max(0, lo - 1); i < n; i++) {
      const cont = i + 1 < n ? hashes[i + 1] : END;
      const cur = this.next.get(hashes[i]);
      if (cur === undefined) this.next.set(hashes[i], cont);
      else if (cur === SHARED) sharedUpTo = i;
      else if (cur === END) {
        if (cont !== END) this.next.set(hashes[i], cont); // the same prompt grew
      } else if (cont !== END && cont !== cur) sharedUpTo = i; // a second continuation: branch point
    }
    for (let i = sharedUpTo; i >= 0; i--) {
      if (this.next.get(hashes[i]) === SHARED && i < sharedUpTo) break; // ancestors already marked
      this.next.set(hashes[i], SHARED);
    }
    if (this.next.size > this.maxBlocks) {
      for (const k of this.next.keys()) {
        this.next.delete(k);
        if (this.next.size <= this.maxBlocks * 0.9) break;
      }
    }
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
