// A SessionStore that never throws into the request path: Redis (or any primary) in front of a
// bounded local memory store. Every put lands locally first; a failed primary write marks the
// session dirty and is written back after the primary answers again. Reads race the primary
// against a short timeout and fall back to the local copy. When both exist and the primary gives
// write versions (SessionState.version, Redis), the local copy wins only while it holds writes the
// primary has not had and nothing was written there since the write they continue (so a state
// written during an outage is not lost on recovery, and one another replica wrote meanwhile is not
// hidden); without versions, the one with more calls (then the newer) wins.
// Write-backs run one at a time (a call asking for one while one runs shares it): every primary
// answer asks for one, and 50 concurrent ones after an outage each re-sent the same whole states
// (a state leaves the dirty set only once its own write answered), ~50 × 16 puts at once.
// A write-back never lands over a newer state (primary.putUnlessNewer: checked where the state is
// stored): between reading its local copy and writing it, this replica's own request, or another
// replica, may have written a newer one, which other replicas would otherwise briefly read older.
// "Newer" is by write version: each dirty session remembers the primary's version its writes
// continue (the last this replica read or wrote, kept per session), and its write-back lands only
// if no write landed after that one; calls and clocks do not enter (a session deleted or expired
// and started again elsewhere, or a replica's clock ahead, misordered the calls/updatedAt rule).
// A write-back or a late answer clears a session's mark only if nothing marked it again meanwhile
// (dirty-marks.ts: a state saved while the write-back ran is still written back after it). A delete
// the primary may not have had (down, or a write of the session in flight that could land after it)
// leaves a tombstone: reads treat the session as deleted, and the write-back deletes it in the
// primary unless a write landed after the one the delete continues (deleteUnlessNewer), so neither
// the kept state nor the older stored one comes back after the outage. A put and a delete of one
// session at once: the one called last wins in whichever order they reach the primary (a write that
// lands while a delete called before it is unanswered leaves its state owed until the delete is).
import { DirtyMarks, keyOf } from './dirty-marks.ts';
import { DEFAULT_LIST_LIMIT, DEFAULT_MAX_SESSIONS, MemorySessionStore } from './memory-store.ts';
import type { SessionState, SessionStore } from './store.ts';
import { StateTooLargeError, type StoreLog } from './redis-store.ts';
import { TenantVersions } from './tenant-versions.ts';

export const DEFAULT_PRIMARY_TIMEOUT_MS = 50;
export const MAX_WRITEBACK_PER_CALL = 16;
/** Sessions per tenant whose last read or written primary write version is kept, and states and
 * deletes per tenant kept for write-back (the gateway passes its per-tenant session quota, as the
 * local store's; a version forgotten counts as continuing none: its write-back yields to any state;
 * a state or delete forgotten is not written back, dirty-marks.ts). Per tenant, so one tenant's
 * many sessions never make another's outage writes yield or be forgotten. */
export const DEFAULT_VERSIONS_KEPT = DEFAULT_MAX_SESSIONS;

export interface ResilientStoreOptions {
  local?: SessionStore;
  timeoutMs?: number;
  log?: StoreLog;
  /** Write versions, and states and deletes to write back, kept per tenant (default DEFAULT_VERSIONS_KEPT). */
  versionsPerTenant?: number;
}

const TIMEOUT = Symbol('timeout');

export class ResilientSessionStore implements SessionStore {
  private readonly local: SessionStore;
  private readonly timeoutMs: number;
  private readonly log: StoreLog;
  /** Sessions with writes (states or deletes) the primary has not had. */
  private readonly dirty: DirtyMarks;
  /** Per session, the primary writes and deletes of it this replica has not had an answer to yet. */
  private readonly flying = new Map<string, number>();
  /** Per session, the primary deletes of it among `flying`. */
  private readonly deleting = new Map<string, number>();
  /** Per tenant, per session: the primary's write version this replica last read or wrote. */
  private readonly versions: TenantVersions;
  private healthy = true;
  private refusedLogged = false;
  /** The write-back running now, shared by whoever asks for one meanwhile. */
  private writing: Promise<number> | undefined;

  constructor(
    private readonly primary: SessionStore,
    opts: ResilientStoreOptions = {},
  ) {
    this.local = opts.local ?? new MemorySessionStore();
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_PRIMARY_TIMEOUT_MS;
    this.log = opts.log ?? (() => undefined);
    const perTenant = opts.versionsPerTenant ?? DEFAULT_VERSIONS_KEPT;
    this.versions = new TenantVersions(perTenant);
    this.dirty = new DirtyMarks(perTenant);
  }

  /** Whether the last primary operation succeeded. */
  get primaryHealthy(): boolean {
    return this.healthy;
  }

  /** Sessions a write-back would write (a state the primary refused waits for its next write). */
  get pendingWriteBacks(): number {
    return this.dirty.owed;
  }

  /** f through the timeout. `refused`: the primary answered, refusing the state (over its size
   * limit): not an outage, so the primary stays healthy. */
  private async tryPrimary<T>(
    op: string,
    f: () => Promise<T>,
  ): Promise<{ ok: true; value: T } | { ok: false; refused?: true }> {
    let timer: NodeJS.Timeout | undefined;
    try {
      const p = f();
      const value = await Promise.race([
        p,
        new Promise<typeof TIMEOUT>((res) => (timer = setTimeout(() => res(TIMEOUT), this.timeoutMs))),
      ]);
      if (value === TIMEOUT) {
        p.catch(() => undefined);
        throw new Error(`timed out after ${this.timeoutMs} ms`);
      }
      if (!this.healthy) this.log('session store primary is back', { op });
      this.healthy = true;
      return { ok: true, value: value as T };
    } catch (err) {
      if (err instanceof StateTooLargeError) {
        if (!this.refusedLogged)
          this.log("session state over the primary's size limit kept locally (logged once)", { op });
        this.refusedLogged = true;
        // the primary answered: it is up, and what this replica owes it can go now
        if (!this.healthy) this.log('session store primary is back', { op });
        this.healthy = true;
        return { ok: false, refused: true };
      }
      if (this.healthy)
        this.log('session store primary failed; serving local state', {
          op,
          error: String((err as Error)?.message ?? err),
        });
      this.healthy = false;
      return { ok: false };
    } finally {
      if (timer) clearTimeout(timer);
    }
  }

  async get(tenant: string, sessionId: string): Promise<SessionState | undefined> {
    const local = await this.local.get(tenant, sessionId).catch(() => undefined);
    const r = await this.tryPrimary('get', () => this.primary.get(tenant, sessionId));
    if (!r.ok) return local;
    void this.writeBack();
    const remote = r.value;
    if (!remote) return local;
    const d = this.dirty.get(keyOf(tenant, sessionId));
    if (remote.version !== undefined) this.versions.set(tenant, sessionId, remote.version);
    // a kept delete: the stored state is the deleted one, unless written after what the delete continues
    if (!local && d?.deleted !== true) return remote;
    if (remote.version === undefined) return local && d?.deleted !== true ? newer(local, remote) : local;
    return d !== undefined && remote.version <= (d.base ?? 0) ? local : remote;
  }

  async put(state: SessionState): Promise<void> {
    const { tenant, sessionId } = state;
    const seq = this.dirty.next();
    await this.local.put(state).catch(() => undefined);
    const r = await this.writeThrough('put', state, seq, () => this.primary.put(state).then(() => true));
    if (r.ok) void this.writeBack();
    else {
      this.dirty.markState(tenant, sessionId, seq, this.versions.get(tenant, sessionId));
      if (r.refused) {
        this.dirty.refuse(keyOf(tenant, sessionId), seq);
        void this.writeBack();
      }
    }
  }

  async delete(tenant: string, sessionId: string): Promise<void> {
    const key = keyOf(tenant, sessionId);
    const seq = this.dirty.next();
    // marked before any await: a write-back or a put answering meanwhile sees the delete
    this.dirty.markDeleted(tenant, sessionId, seq, this.versions.get(tenant, sessionId));
    this.versions.delete(tenant, sessionId);
    await this.local.delete(tenant, sessionId).catch(() => undefined);
    const r = await this.tryPrimary('delete', () =>
      this.track(key, () => this.primary.delete(tenant, sessionId), true),
    );
    // done, unless a write of the session sent before it may still land after it
    if (r.ok && !this.flying.has(key)) this.dirty.clearIf(key, seq);
    // a state a write-back kept owed while this delete was unanswered goes now
    if (r.ok) void this.writeBack();
  }

  /** A primary write of `st`, standing for the local write at `seq`, through tryPrimary. Written in
   * time or after the timeout (a stalled Redis runs it when it wakes), it counts as landed: a mark
   * from it or before is cleared, a later one continues its version (else that mark's write-back
   * would be refused as older than the late write). */
  private async writeThrough(op: string, st: SessionState, seq: number, f: () => Promise<boolean>) {
    let late = false;
    // a delete unanswered when this write is sent may reach the primary after it
    let delBefore = false;
    const r = await this.tryPrimary(op, () => {
      const key = keyOf(st.tenant, st.sessionId);
      delBefore = this.deleting.has(key);
      const p = this.track(key, f);
      p.then(
        (written) => {
          if (late && written) this.wrote(st, seq, delBefore);
        },
        () => undefined,
      );
      return p;
    });
    if (!r.ok) late = true;
    else if (r.value) this.wrote(st, seq, delBefore);
    return r;
  }

  private wrote(st: SessionState, seq: number, delBefore: boolean): void {
    const { tenant, sessionId } = st;
    if (st.version !== undefined) this.versions.set(tenant, sessionId, st.version);
    const key = keyOf(tenant, sessionId);
    const d = this.dirty.get(key);
    // A delete made before this write and still marked may have reached the primary after it (held,
    // retried, another connection; and answers that arrive together are handled in no set order,
    // so whether it is still in flight says nothing): the state is owed again, its write-back
    // refused if the primary holds this write (the delete reached it first), else written over it.
    if (d?.deleted === true && d.seq < seq) this.dirty.markState(tenant, sessionId, seq, d.base);
    // A delete unanswered when this write was sent: the state stays (or is again) owed, whatever
    // has answered since (answers are handled in no set order).
    else if (delBefore && d === undefined) this.dirty.markState(tenant, sessionId, seq, undefined);
    else if (delBefore && !d?.deleted && d?.seq === seq) return;
    else this.dirty.landed(key, seq, st.version);
  }

  /** f's promise, counted in `flying` for `key` until it settles (a timed-out write may land later;
   * a write or delete counted here may reach the primary after one sent later). */
  private track<T>(key: string, f: () => Promise<T>, isDelete = false): Promise<T> {
    this.flying.set(key, (this.flying.get(key) ?? 0) + 1);
    if (isDelete) this.deleting.set(key, (this.deleting.get(key) ?? 0) + 1);
    const settled = (): void => {
      const n = (this.flying.get(key) ?? 1) - 1;
      if (n > 0) this.flying.set(key, n);
      else this.flying.delete(key);
      if (!isDelete) return;
      const m = (this.deleting.get(key) ?? 1) - 1;
      if (m > 0) this.deleting.set(key, m);
      else this.deleting.delete(key);
    };
    let p: Promise<T>;
    try {
      p = f();
    } catch (err) {
      p = Promise.reject(err);
    }
    p.then(settled, settled);
    return p;
  }

  /** The primary's list without the sessions this replica deleted and the primary may still hold
   * (asked for as many more, so a full page stays full); the local one while the primary fails. A
   * kept delete that yields to another replica's newer write (get shows that state) hides the
   * session here until its write-back, which this answer starts, settles it. */
  async list(tenant: string, limit = DEFAULT_LIST_LIMIT): Promise<string[]> {
    const more = this.dirty.deletedOf(tenant).size;
    const r = await this.tryPrimary('list', () => this.primary.list(tenant, limit + more));
    if (!r.ok) return this.local.list(tenant, limit).catch(() => []);
    void this.writeBack();
    const deleted = this.dirty.deletedOf(tenant);
    return (deleted.size === 0 ? r.value : r.value.filter((id) => !deleted.has(id))).slice(0, limit);
  }

  /** Writes locally-held states back to the primary (bounded per call; the count written, a state
   *  the primary holds newer is dropped uncounted); while one runs, asking again returns that one. */
  writeBack(): Promise<number> {
    if (this.dirty.owed === 0) return Promise.resolve(0);
    this.writing ??= this.drain().finally(() => {
      this.writing = undefined;
    });
    return this.writing;
  }

  private async drain(): Promise<number> {
    let n = 0;
    for (const d of this.dirty.first(MAX_WRITEBACK_PER_CALL)) {
      const { tenant, sessionId, base, seq } = d;
      const key = keyOf(tenant, sessionId);
      if (this.dirty.get(key) !== d) continue; // written or cleared since
      // A write or delete of the session still unanswered may reach the primary after this one:
      // its answer settles the mark (wrote / delete), or the next write-back writes it.
      if (this.flying.has(key)) continue;
      if (d.deleted) {
        const r = await this.tryPrimary('writeback', () => this.track(key, () => this.deleteOlder(d), true));
        if (!r.ok) break;
        this.dirty.clearIf(key, seq);
        if (r.value) n++;
        continue;
      }
      // counted from the read: a delete answering before this write is sent must not clear its mark
      const st = await this.track(key, () => this.local.get(tenant, sessionId).catch(() => undefined));
      if (!st) {
        this.dirty.clearIf(key, seq);
        continue;
      }
      st.version = base;
      const r = await this.writeThrough('writeback', st, seq, () => this.writeOlder(st));
      if (!r.ok) {
        if (!r.refused) break; // the primary is down: the rest waits too
        this.dirty.refuse(key, seq); // the rest is still written back
        continue;
      }
      if (r.value) n++;
      // Refused: the primary holds a newer write, unless a delete of the session sent before it is
      // still unanswered and lands after that write (its state is then owed, not done).
      else if (!this.flying.has(key)) this.dirty.clearIf(key, seq);
    }
    return n;
  }

  /** A kept state written unless the primary holds a newer one (true: written). */
  private async writeOlder(st: SessionState): Promise<boolean> {
    if (this.primary.putUnlessNewer) return this.primary.putUnlessNewer(st);
    await this.primary.put(st);
    return true;
  }

  /** A kept delete made unless the primary holds a state written after the one it continues. */
  private async deleteOlder(d: { tenant: string; sessionId: string; base: number | undefined }): Promise<boolean> {
    if (this.primary.deleteUnlessNewer) return this.primary.deleteUnlessNewer(d.tenant, d.sessionId, d.base);
    await this.primary.delete(d.tenant, d.sessionId);
    return true;
  }

  async close(): Promise<void> {
    await this.primary.close().catch(() => undefined);
    await this.local.close().catch(() => undefined);
  }
}

/** Without write versions: more calls, then the later updatedAt. */
function newer(a: SessionState, b: SessionState): SessionState {
  if (a.calls !== b.calls) return a.calls > b.calls ? a : b;
  return a.updatedAt >= b.updatedAt ? a : b;
}
