// Shared-prefix tracker: marks blocks that two or more different prompts pass through (a system
// prompt and tool schemas every session starts with). Each block remembers its first continuation;
// a different continuation marks it and all its ancestors shared. Shared-ness is prefix-closed
// along a chain, so sharedDepth is a binary search. Lets ctxgate tell "this worker holds the
// common root" (worth little: every worker can cache it) from "this worker holds this
// conversation" (worth keeping). insert O(log n + new blocks), ancestors marked once.
// Memory is bounded by two generations of at most maxBlocks/2 entries each: writes go to the
// young one, a block read from the old one while inserting is copied into the young one, and when
// an insert would overfill the young one the old one is dropped whole and the young one becomes
// old: O(1), where deleting the oldest 10 % of a 1M-entry Map (and V8 compacting it) held the
// event loop for ms. A generation starts only before an insert, which leaves every chain it walked
// in the young one whole, so the young generation is prefix-closed along each chain: an insert
// binary-searches the young one for the chain's deepest young block and walks (copying) from
// there, so a block known only to the old generation, the root or a chain's middle, is copied
// before the old one is dropped, never lost under a young root. (A chain longer than maxBlocks/2,
// or stepped inserts interleaving with a new generation, can overfill the young one by one chain.)
// Each generation also keeps the set of its blocks marked shared (few: roots and branch points),
// so sharedDepth's binary search (a routing decision's read: a detour's migrate check, a new
// branch) probes two small sets that stay in the cache instead of two ~500k-entry Maps, each
// probe there a few cache misses (bucket, entry, key, value): the same answers, since a block is
// shared exactly when the young generation marks it, or the old one does and the young one does
// not list it. Cost: one small-set operation per block written.

export const DEFAULT_TRACKED_BLOCKS = 1_000_000;
const END = '';
const SHARED = '*';

export class SharedPrefixTracker {
  /** hash -> first continuation hash, END for none yet, SHARED once two continuations seen */
  private young = new Map<string, string>();
  private old = new Map<string, string>();
  /** the blocks each generation maps to SHARED (kept with every write) */
  private youngShared = new Set<string>();
  private oldShared = new Set<string>();
  private readonly generation: number;
  /** Generations started so far: a stepped insert that sees a new one walks its chain again. */
  private gen = 0;

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
    this.young.set(h, v);
    if (v === SHARED) this.youngShared.add(h);
    else if (this.youngShared.size !== 0) this.youngShared.delete(h);
  }

  /** get(h) === SHARED, from the two sets: the old generation's mark counts only where the young
   *  one does not list the block (its own value then decides). */
  private isShared(h: string): boolean {
    return this.youngShared.has(h) || (this.oldShared.has(h) && !this.young.has(h));
  }

  /** A new generation, when `adding` more entries would overfill the young one. */
  private roll(adding: number): void {
    if (this.young.size === 0 || this.young.size + adding <= this.generation) return;
    this.old = this.young;
    this.young = new Map();
    this.oldShared = this.youngShared;
    this.youngShared = new Set();
    this.gen++;
  }

  /** Deepest prefix of `hashes` in the young generation (prefix-closed along a chain). */
  private youngDepth(hashes: readonly string[]): number {
    let lo = 0;
    let hi = hashes.length;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.young.has(hashes[mid - 1])) lo = mid;
      else hi = mid - 1;
    }
    return lo;
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
    // blocks before the deepest young one were walked with this same chain (a block's parent is
    // fixed by its hash), so only the divergence point and the rest need work: O(log n + new).
    // The rest may be known to the old generation only: walking it copies it into the young one.
    let lo = this.youngDepth(hashes);
    this.roll(n - Math.max(0, lo - 1));
    if (this.young.size === 0) lo = 0;
    let g = this.gen;
    let sharedUpTo = -1;
    let i = Math.max(0, lo - 1);
    /** next ancestor to mark shared (walking down from sharedUpTo), -1 when none is left */
    let mark = -2;
    return (blocks: number): boolean => {
      let left = blocks;
      if (this.gen !== g) {
        // another insert started a generation between two steps: what this one walked is old now
        g = this.gen;
        i = 0;
        mark = -2;
      }
      // past a block neither generation holds, none of the chain's later blocks is held either
      // (both are prefix-closed along chains: a block's parent is fixed by its hash), so the rest
      // is stored without the two lookups each. Per step: between steps another insert may store
      // this chain's tail.
      let fresh = false;
      for (; i < n && left > 0; i++, left--) {
        const cont = i + 1 < n ? hashes[i + 1] : END;
        if (fresh) {
          this.set(hashes[i], cont);
          continue;
        }
        // one lookup for both questions: the value, and whether the young generation has it
        const young = this.young.get(hashes[i]);
        const cur = young ?? this.old.get(hashes[i]);
        if (cur === undefined) {
          this.set(hashes[i], cont);
          fresh = true;
        } else if (cur === SHARED) {
          sharedUpTo = i;
          if (young === undefined) this.set(hashes[i], cur);
        } else if (cur === END) {
          this.set(hashes[i], cont === END ? END : cont); // the same prompt grew (or is read again)
        } else if (cont !== END && cont !== cur) {
          sharedUpTo = i; // a second continuation: branch point
          if (young === undefined) this.set(hashes[i], cur);
        } else if (young === undefined) this.set(hashes[i], cur);
      }
      if (i < n) return false;
      if (mark === -2) mark = sharedUpTo;
      for (; mark >= 0 && left > 0; mark--, left--) {
        const young = this.young.get(hashes[mark]);
        if ((young ?? this.old.get(hashes[mark])) === SHARED && mark < sharedUpTo) {
          if (young === undefined) this.set(hashes[mark], SHARED);
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
      if (this.isShared(hashes[mid - 1])) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }
}
