// What: the resilient session store's marks (resilient-store.ts): per session, a write this replica
// holds that the primary has not had: a kept state, or a delete (a tombstone). A mark remembers the
// primary write version its writes continue (`base`) and the local write order of its last change
// (`seq`, from next()), so that a write-back or a write that answers late clears it only if nothing
// marked it again meanwhile (else a newer state saved during the write-back, or a delete, was never
// written back).
// Bounds: tombstones per tenant (the gateway passes its per-tenant session quota; the tenant's
// oldest delete is forgotten first, so one tenant's deletes never drop another's). A state mark
// needs no bound of its own: it stands for a state in the bounded local store, and a session the
// tenant quota evicts is deleted, which turns its mark into a tombstone.
// Complexity: every operation O(1) (first(n): O(n)).
export interface DirtyMark {
  readonly tenant: string;
  readonly sessionId: string;
  /** The primary's write version the marked write continues (undefined: none known; it then
   * yields to any stored state). */
  base: number | undefined;
  /** Local write order (DirtyMarks.next()) of the write the mark now stands for. */
  seq: number;
  /** A delete, not a state. */
  deleted: boolean;
}

export const keyOf = (tenant: string, sessionId: string): string => `${tenant}\u0000${sessionId}`;

export class DirtyMarks {
  private readonly marks = new Map<string, DirtyMark>();
  /** Per tenant, its tombstones by session id, oldest first (a Map, not an LRUCache: that
   * allocates its whole capacity up front, and most tenants never hold a tombstone). */
  private readonly tombs = new Map<string, Map<string, DirtyMark>>();
  private seq = 0;

  constructor(private readonly tombsPerTenant: number) {}

  get size(): number {
    return this.marks.size;
  }

  /** The next local write's order: taken when the write begins, before any await. */
  next(): number {
    return ++this.seq;
  }

  get(key: string): DirtyMark | undefined {
    return this.marks.get(key);
  }

  /** Up to `n` marks, oldest marked first. */
  first(n: number): DirtyMark[] {
    const out: DirtyMark[] = [];
    for (const m of this.marks.values()) {
      if (out.length >= n) break;
      out.push(m);
    }
    return out;
  }

  /** A state written locally at `seq` did not reach the primary. A mark changed after `seq` (a later
   * delete or write) stands; the first unwritten state continues `base` (the version last seen), and
   * later ones, or a state saved after a kept delete, continue what the mark already continues. */
  markState(tenant: string, sessionId: string, seq: number, base: number | undefined): void {
    const key = keyOf(tenant, sessionId);
    const d = this.marks.get(key);
    if (d === undefined) {
      this.marks.set(key, { tenant, sessionId, base, seq, deleted: false });
      return;
    }
    if (d.seq > seq) return;
    d.seq = seq;
    if (d.deleted) {
      d.deleted = false;
      this.forgetTomb(d);
    }
  }

  /** A delete (at `seq`) the primary may not have had; it continues what a kept state's mark
   * continues, else `base`. */
  markDeleted(tenant: string, sessionId: string, seq: number, base: number | undefined): void {
    const key = keyOf(tenant, sessionId);
    let d = this.marks.get(key);
    if (d === undefined) {
      d = { tenant, sessionId, base, seq, deleted: true };
      this.marks.set(key, d);
    } else {
      d.seq = seq;
      d.deleted = true;
    }
    let t = this.tombs.get(tenant);
    if (t === undefined) {
      t = new Map();
      this.tombs.set(tenant, t);
    }
    t.delete(sessionId); // newest last
    t.set(sessionId, d);
    if (t.size <= this.tombsPerTenant) return;
    // the tenant's oldest delete forgotten (its old state may come back after the outage)
    // (a session in `tombs` is always a deleted mark: markState and clearIf take it out)
    const id = t.keys().next().value as string;
    t.delete(id);
    this.marks.delete(keyOf(tenant, id));
  }

  /** Clears the mark if it still stands for the write at `seq` (else a later write or delete
   * marked it again; that one is still owed). */
  clearIf(key: string, seq: number): boolean {
    const d = this.marks.get(key);
    if (d === undefined || d.seq !== seq) return false;
    this.marks.delete(key);
    if (d.deleted) this.forgetTomb(d);
    return true;
  }

  /** A write of this replica that stands for the local write at `seq` landed in the primary as
   * version `version`: a mark from that write or before it is done (cleared); one from after it
   * continues it. */
  landed(key: string, seq: number, version: number | undefined): void {
    const d = this.marks.get(key);
    if (d === undefined) return;
    if (d.seq <= seq) this.clearIf(key, d.seq);
    else if (version !== undefined && (d.base === undefined || version > d.base)) d.base = version;
  }

  private forgetTomb(d: DirtyMark): void {
    const t = this.tombs.get(d.tenant);
    if (t === undefined) return;
    t.delete(d.sessionId);
    if (t.size === 0) this.tombs.delete(d.tenant);
  }
}
