// What: the resilient session store's marks (resilient-store.ts): per session, a write this replica
// holds that the primary has not had: a kept state, or a delete (a tombstone). A mark remembers the
// primary write version its writes continue (`base`) and the local write order of its last change
// (`seq`, from next()), so that a write-back or a write that answers late clears it only if nothing
// marked it again meanwhile (else a newer state saved during the write-back, or a delete, was never
// written back).
// Bounds: per tenant, kept states and tombstones each at most `perTenant` (the gateway passes its
// per-tenant session quota); past it the tenant's least recently marked of that kind is forgotten,
// so one tenant's marks never drop another's. A state mark needs its own bound although it stands
// for a state in the bounded local store: the local copy expires (memory-store.ts, 6 h TTL) or is
// evicted without the mark hearing of it, and the mark stays until a write-back reaches it (drain
// clears a mark whose copy is gone), i.e. after the outage; without the quota in front (the store
// alone) an outage longer than the TTL grew marks without end. A forgotten state mark is not
// written back (the primary keeps what it had); a forgotten tombstone is not deleted there (the
// state it deleted may come back after the outage). Behind the gateway's quota a tenant holds at
// most that many sessions, so no state mark of a live session is forgotten.
// A state the primary refused (over its size limit, not an outage) keeps its mark, so this replica
// reads its own copy rather than the older stored one, but is not written back: every write-back
// tried it first, encoded it again, failed and stopped there, so after an outage no other session,
// of any tenant, was ever written back. The session's next write tries the primary again.
// Complexity: every operation O(1) (first(n): O(n + refused marks)).
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
  /** The primary refused this state (over its size limit): not written back (each try would encode
   * it again and fail) until a later write of the session marks it again. */
  refused: boolean;
}

export const keyOf = (tenant: string, sessionId: string): string => `${tenant}\u0000${sessionId}`;

export class DirtyMarks {
  private readonly marks = new Map<string, DirtyMark>();
  /** Kept states, per tenant, least recently marked first. */
  private readonly states: TenantMarks;
  /** Tombstones, per tenant, least recently marked first. */
  private readonly tombs: TenantMarks;
  private seq = 0;
  private refusedCount = 0;

  constructor(perTenant: number) {
    this.states = new TenantMarks(perTenant);
    this.tombs = new TenantMarks(perTenant);
  }

  get size(): number {
    return this.marks.size;
  }

  /** Marks a write-back would write (all but the refused states). */
  get owed(): number {
    return this.marks.size - this.refusedCount;
  }

  /** The next local write's order: taken when the write begins, before any await. */
  next(): number {
    return ++this.seq;
  }

  get(key: string): DirtyMark | undefined {
    return this.marks.get(key);
  }

  /** Up to `n` marks a write-back would write, oldest marked first. */
  first(n: number): DirtyMark[] {
    const out: DirtyMark[] = [];
    for (const m of this.marks.values()) {
      if (out.length >= n) break;
      if (!m.refused) out.push(m);
    }
    return out;
  }

  /** A state written locally at `seq` did not reach the primary. A mark changed after `seq` (a later
   * delete or write) stands; the first unwritten state continues `base` (the version last seen), and
   * later ones, or a state saved after a kept delete, continue what the mark already continues. */
  markState(tenant: string, sessionId: string, seq: number, base: number | undefined): void {
    const key = keyOf(tenant, sessionId);
    let d = this.marks.get(key);
    if (d === undefined) {
      d = { tenant, sessionId, base, seq, deleted: false, refused: false };
      this.marks.set(key, d);
    } else {
      if (d.seq > seq) return;
      d.seq = seq;
      this.unrefuse(d);
      if (d.deleted) {
        d.deleted = false;
        this.tombs.remove(d);
      }
    }
    this.forget(this.states.add(d));
  }

  /** A delete (at `seq`) the primary may not have had; it continues what a kept state's mark
   * continues, else `base`. */
  markDeleted(tenant: string, sessionId: string, seq: number, base: number | undefined): void {
    const key = keyOf(tenant, sessionId);
    let d = this.marks.get(key);
    if (d === undefined) {
      d = { tenant, sessionId, base, seq, deleted: true, refused: false };
      this.marks.set(key, d);
    } else {
      d.seq = seq;
      this.unrefuse(d);
      if (!d.deleted) this.states.remove(d);
      d.deleted = true;
    }
    this.forget(this.tombs.add(d));
  }

  /** Clears the mark if it still stands for the write at `seq` (else a later write or delete
   * marked it again; that one is still owed). */
  clearIf(key: string, seq: number): boolean {
    const d = this.marks.get(key);
    if (d === undefined || d.seq !== seq) return false;
    this.drop(d);
    (d.deleted ? this.tombs : this.states).remove(d);
    return true;
  }

  /** The primary refused the state written locally at `seq` (over its size limit): its mark, if it
   * still stands for that write, is kept but not written back. */
  refuse(key: string, seq: number): void {
    const d = this.marks.get(key);
    if (d === undefined || d.seq !== seq || d.deleted || d.refused) return;
    d.refused = true;
    this.refusedCount++;
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

  /** The tenant's sessions with a kept delete (by session id; empty when none). */
  deletedOf(tenant: string): ReadonlyMap<string, DirtyMark> {
    return this.tombs.of(tenant);
  }

  /** A mark its tenant's bound pushed out (its write is not written back). */
  private forget(d: DirtyMark | undefined): void {
    if (d !== undefined) this.drop(d);
  }

  private drop(d: DirtyMark): void {
    this.marks.delete(keyOf(d.tenant, d.sessionId));
    this.unrefuse(d);
  }

  private unrefuse(d: DirtyMark): void {
    if (!d.refused) return;
    d.refused = false;
    this.refusedCount--;
  }
}

const NONE: ReadonlyMap<string, DirtyMark> = new Map();

/** One kind of mark per tenant by session id, in a Map's insertion order (least recently marked
 * first; re-adding moves a mark last), at most `perTenant` each. A Map, not an LRUCache: that
 * allocates its whole capacity up front, and most tenants never hold a mark. */
class TenantMarks {
  private readonly byTenant = new Map<string, Map<string, DirtyMark>>();

  constructor(private readonly perTenant: number) {}

  /** Adds `d` as its tenant's most recent; the tenant's oldest, if that put it over the bound. */
  add(d: DirtyMark): DirtyMark | undefined {
    let t = this.byTenant.get(d.tenant);
    if (t === undefined) {
      t = new Map();
      this.byTenant.set(d.tenant, t);
    }
    t.delete(d.sessionId); // newest last
    t.set(d.sessionId, d);
    if (t.size <= this.perTenant) return undefined;
    const [id, oldest] = t.entries().next().value as [string, DirtyMark];
    t.delete(id);
    return oldest;
  }

  of(tenant: string): ReadonlyMap<string, DirtyMark> {
    return this.byTenant.get(tenant) ?? NONE;
  }

  remove(d: DirtyMark): void {
    const t = this.byTenant.get(d.tenant);
    if (t === undefined) return;
    t.delete(d.sessionId);
    if (t.size === 0) this.byTenant.delete(d.tenant);
  }
}
