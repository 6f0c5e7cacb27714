// Which of a pending pick's guessed blocks it alone added. A policy keeping its own (approximate)
// index records a prompt's chain on the chosen worker at selection, before the engine has it, and
// takes back what the pick added ([held, n) of its chain) when the attempt fails. Another request
// routed to that worker meanwhile whose chain runs through those blocks makes the engine cache
// them too: they are its blocks as well and must stay. Per worker the picks that added blocks and
// await their outcome; each later pick or answered call on that worker whose chain passes through
// a claim's first still-unshared block shares the claim as far as the two chains agree (chained
// hashes: an equal block means an equal prefix up to it, not past it; a chain may branch right
// after). A take-back then evicts only from `kept` on.
// Cost: O(claims pending on that worker) per pick, answer and release (the requests in flight
// there, a handful), plus the blocks a cover shares.

export interface Claim {
  readonly workerId: string;
  readonly hashes: readonly string[];
  /** blocks of the chain the worker held before the pick added the rest */
  readonly held: number;
  /** blocks from the start another request relies on too (>= held): a take-back starts here */
  kept: number;
}

export class PendingClaims {
  private readonly byWorker = new Map<string, Claim[]>();

  /** `chain` was routed to (or answered on) `workerId`: it shares the claims it passes through. */
  cover(workerId: string, chain: readonly string[]): void {
    const list = this.byWorker.get(workerId);
    if (!list) return;
    for (const c of list) {
      let k = c.kept;
      const end = Math.min(c.hashes.length, chain.length);
      while (k < end && chain[k] === c.hashes[k]) k++;
      c.kept = k;
    }
  }

  /** A new pick: shares the earlier claims on its worker; records its own when it added blocks. */
  pick(claim: Claim): void {
    this.cover(claim.workerId, claim.hashes);
    if (claim.held >= claim.hashes.length) return;
    const list = this.byWorker.get(claim.workerId);
    if (list) list.push(claim);
    else this.byWorker.set(claim.workerId, [claim]);
  }

  /** The pick's outcome is known (or it was forgotten): it no longer claims anything. */
  release(claim: Claim): void {
    const list = this.byWorker.get(claim.workerId);
    if (!list) return;
    const i = list.indexOf(claim);
    if (i < 0) return;
    list[i] = list[list.length - 1];
    list.pop();
    if (list.length === 0) this.byWorker.delete(claim.workerId);
  }

  /** Claims pending on `workerId` (stats, tests). */
  count(workerId: string): number {
    return this.byWorker.get(workerId)?.length ?? 0;
  }
}
