// Which of a failed pick's guessed blocks to take back. A policy keeping its own (approximate)
// index records a prompt's chain on the chosen worker at selection, before the engine has it, and
// takes back what the pick added ([held, n) of its chain) when the attempt fails. What must stay
// is decided when the take-back runs, not when the picks are made (two picks that both fail must
// leave nothing behind):
//  - an answered call on that worker whose chain runs through a claim's blocks made the engine
//    cache them: they stay for good (`kept`, raised as far as the two chains agree: chained
//    hashes, so an equal block means an equal prefix up to it, not past it);
//  - a pick still pending on that worker whose chain runs through them will make the engine cache
//    them if it succeeds: they stay for now, and that pick inherits them (its `held` drops to
//    where the failed pick's take-back started), so if it fails too it takes them back itself.
// Every pick on a guessed worker is registered, even one that added nothing: it may inherit.
// Cost: O(picks pending on that worker) per pick, answer and release (the requests in flight
// there), plus the blocks the chains share past the take-back's start.

export interface Claim {
  readonly workerId: string;
  readonly hashes: readonly string[];
  /** blocks of the chain the worker held before the pick added the rest (lowered when the pick
   *  inherits another failed pick's blocks it runs through) */
  held: number;
  /** blocks from the start an answered call on the worker ran through (a take-back never goes below) */
  kept: number;
}

/** Blocks from `from` on where `a` and `b` still agree, plus `from`: their common prefix when
 *  they agree up to `from` (chained hashes: equality is monotone). */
function agree(a: readonly string[], b: readonly string[], from: number): number {
  const end = Math.min(a.length, b.length);
  let k = from;
  while (k < end && a[k] === b[k]) k++;
  return k;
}

export class PendingClaims {
  private readonly byWorker = new Map<string, Claim[]>();

  /** A call on `workerId` was answered: the engine holds `chain`; pending claims keep what it shares. */
  answered(workerId: string, chain: readonly string[]): void {
    const list = this.byWorker.get(workerId);
    if (!list) return;
    for (const c of list) c.kept = agree(c.hashes, chain, c.kept);
  }

  /** A new pick on a guessed worker (registered even when it added nothing: it may inherit). */
  pick(claim: Claim): void {
    const list = this.byWorker.get(claim.workerId);
    if (list) list.push(claim);
    else this.byWorker.set(claim.workerId, [claim]);
  }

  /**
   * The pick's outcome is known (or it was forgotten): it no longer claims anything. For a failed
   * pick, returns where its take-back starts (blocks from there on go; = hashes.length: nothing),
   * after the pending picks that run through its blocks inherited them. A claim no longer
   * registered (its worker was forgotten since) takes back nothing.
   */
  release(claim: Claim, failed = false): number {
    const list = this.byWorker.get(claim.workerId);
    const i = list ? list.indexOf(claim) : -1;
    if (!list || i < 0) return claim.hashes.length;
    list[i] = list[list.length - 1];
    list.pop();
    if (list.length === 0) this.byWorker.delete(claim.workerId);
    if (!failed) return claim.hashes.length;
    const from = Math.max(claim.held, claim.kept);
    let keep = from;
    for (const d of list) {
      const upTo =
        from < d.hashes.length && d.hashes[from] === claim.hashes[from] ? agree(claim.hashes, d.hashes, from) : from;
      if (upTo > from) {
        if (d.held > from) d.held = from;
        if (upTo > keep) keep = upTo;
      }
    }
    return Math.min(keep, claim.hashes.length);
  }

  /** The worker's guessed entry was cleared: its pending picks no longer added anything there. */
  forget(workerId: string): void {
    this.byWorker.delete(workerId);
  }

  /** Picks pending on `workerId` (stats, tests). */
  count(workerId: string): number {
    return this.byWorker.get(workerId)?.length ?? 0;
  }
}
