// Index work a routing decision leaves for later, in steps: a pick's chain goes into the prefix
// index (and the shared-prefix tracker) when it is chosen, and a 240k-token prompt's ~4k new
// index blocks (~5-10 ms of Map work) would hold the gateway's event loop, and every other
// tenant's request behind it, at once. When the caller can defer (RouteInfo.defer), a long
// chain's work is queued and done `stepBlocks` at a time, one step per call of the caller's
// stepper (the gateway: one per turn of its event loop). Long chains' work runs in pick order;
// short work (an agent's turn) still runs at once, even past waiting work: it touches other
// blocks (another chain, mostly another tenant's salt), and where it shares a worker's entry only
// the two picks' queue order differs. Whoever acts on a pick's recorded blocks after the decision
// (its feedback) finishes that pick's work first; a flush or statistics finish all of it.
// A caller without defer (the fleet simulator, tests) gets everything done at once: exactly as
// before. Short work can also wait for its request's send (postpone, RouteInfo.sent): the gateway
// runs it once the body went upstream, while the worker computes, instead of before the send; it
// is done first by whatever acts on the index next (settleSoon: the policy's reads and writes of
// its index, this queue's steps, finish and settle), so every later operation sees the index as
// if it had run at once. At most one piece waits so (a second settles the first).
// Cost: O(1) per pick besides the work itself.

/** A resumable piece of work: does up to `blocks` of it, true once it is done. */
export type Work = (blocks: number) => boolean;

export class DeferredWork {
  private readonly queue: Work[] = [];
  /** a caller's stepper is running through the queue */
  private stepping = false;

  /**
   * @param minBlocks work of at most this many blocks runs at once (when nothing waits)
   * @param stepBlocks blocks one step walks
   */
  constructor(
    private readonly minBlocks: number,
    private readonly stepBlocks: number,
  ) {}

  /** short work postponed to its request's send (postpone), not done yet */
  private soon: Work | undefined;
  /** that request's `sent`: an error of its work goes there, whoever does the work */
  private soonSent: ((run: () => void) => void) | undefined;
  /** settleSoon, bound once: what a request's send runs */
  readonly settleSoonBound: () => void = this.settleSoon.bind(this);

  get waiting(): number {
    return this.queue.length;
  }

  /**
   * Short work (`run` would do it at once) left for after its request's send: `sent` runs
   * settleSoon once the body went upstream (the gateway's send gate), unless something that acts
   * on the index settles it first. Work already waiting so is done first.
   */
  postpone(work: Work, sent: (run: () => void) => void): void {
    this.settleSoon();
    this.soon = work;
    this.soonSent = sent;
    sent(this.settleSoonBound);
  }

  /** Does the postponed work now, if any (it is cleared first: one that throws is not retried).
   *  Its error goes to its own request's `sent` (the gateway logs and counts it there), not to
   *  whichever later decision, feedback or replica's batch happened to do the work. */
  settleSoon(): void {
    const work = this.soon;
    if (work === undefined) return;
    const sent = this.soonSent;
    this.soon = undefined;
    this.soonSent = undefined;
    try {
      work(Number.POSITIVE_INFINITY);
    } catch (err) {
      sent!(() => {
        throw err;
      });
    }
  }

  /**
   * Runs `work` (`blocks` of it) now, or, when `defer` is given and it is long, queues it and
   * returns it (pass it to finish() before acting on what it records).
   */
  run(work: Work, blocks: number, defer: ((step: () => boolean) => void) | undefined): Work | undefined {
    if (!defer || blocks <= this.minBlocks) {
      work(Number.POSITIVE_INFINITY);
      return undefined;
    }
    this.queue.push(work);
    if (!this.stepping) {
      this.stepping = true;
      defer(() => this.step());
    }
    return work;
  }

  /** Finishes `work` now if it still waits, and the work queued before it. */
  finish(work: Work): void {
    this.settleSoon();
    const i = this.queue.indexOf(work);
    for (let k = 0; k <= i; k++) this.queue.shift()!(Number.POSITIVE_INFINITY);
  }

  /** One step of the oldest waiting work; true once none is left. Work that throws is dropped
   *  (the error goes to the stepper; the next step goes on with the rest). */
  private step(): boolean {
    this.settleSoon();
    const work = this.queue[0];
    let done = true;
    try {
      done = work?.(this.stepBlocks) ?? true;
    } finally {
      if (done && work !== undefined && this.queue[0] === work) this.queue.shift();
    }
    if (this.queue.length > 0) return false;
    this.stepping = false;
    return true;
  }

  /** Finishes the waiting work now. */
  settle(): void {
    this.settleSoon();
    while (this.queue.length > 0) this.queue.shift()!(Number.POSITIVE_INFINITY);
  }
}
