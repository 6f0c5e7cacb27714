// ctxgate's shared-prefix tracker (shared-prefix.ts) with one pick postponed: an unpinned pick's
// chain enters the tracker after the decision, not inside select(). Every read and write goes
// through `shared`, which records the postponed chain first, so each sees the tracker as if it had
// been recorded at once, and a new session's call no longer waits for ~10–20 Map operations on a
// tracker cold in the cache (the policy's observe() records it, off the request path). Work the
// caller defers (RouteInfo.defer, a chain over the deferred-work threshold), or a pick while
// deferred work waits (writes stay in pick order), goes through DeferredWork as before.
// Cost: O(1) per pick besides the tracker's own insert; memory: at most one chain waits.
import type { DeferredWork, Work } from '../deferred-work.ts';
import { SharedPrefixTracker } from '../shared-prefix.ts';
import type { RouteInfo } from '../types.ts';

export class PostponedTracker {
  private readonly tracker = new SharedPrefixTracker();
  /** an unpinned pick's chain not yet in the tracker: recorded by the next flush(), or before the
   *  tracker's next read or write, whichever comes first */
  private unrecorded: readonly string[] | undefined;

  /**
   * @param later the policy's deferred index and tracker work (pick order is kept with it)
   * @param deferMinBlocks chains longer than this go through `later` when the caller can defer
   */
  constructor(
    private readonly later: DeferredWork,
    private readonly deferMinBlocks: number,
  ) {}

  /** The tracker, with every chain picked so far recorded. */
  get shared(): SharedPrefixTracker {
    this.flush();
    return this.tracker;
  }

  /** Records the postponed chain, if any. */
  flush(): void {
    const h = this.unrecorded;
    if (h === undefined) return;
    this.unrecorded = undefined;
    this.tracker.insert(h);
  }

  /** An unpinned pick's chain: postponed, or (deferred work) queued; the queued work is returned.
   *  One call deep on the common path (select() reaches it on a rare branch, where its callees run
   *  unoptimised: each call level costs there). */
  record(hashes: readonly string[], defer: RouteInfo['defer']): Work | undefined {
    if (this.unrecorded !== undefined) this.flush();
    if (this.later.waiting === 0 && (!defer || hashes.length <= this.deferMinBlocks)) {
      this.unrecorded = hashes;
      return undefined;
    }
    return this.later.run(this.tracker.inserting(hashes), hashes.length, defer);
  }
}
